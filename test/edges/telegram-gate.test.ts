import t from 'tap';
import { admit, type GateConfig, type InboundMessage } from '../../edges/index.js';

const CFG: GateConfig = { allowed_user_ids: [1], allowed_group_ids: [-100], group_mention_only: false };
const msg = (over: Partial<InboundMessage>): InboundMessage => ({ chatType: 'private', chatId: 1, senderId: 1, text: 'hi', botUsername: 'svc_bot', repliesToBot: false, ...over });

await t.test('private chats: only listed users; an empty list admits nobody', async (t) => {
  t.same(admit(msg({}), CFG), { admit: true, text: 'hi' });
  t.match(admit(msg({ senderId: 2, chatId: 2 }), CFG), { admit: false, why: /user 2 is not in allowed_user_ids/ });
  t.match(admit(msg({}), { ...CFG, allowed_user_ids: [] }), { admit: false }, 'a fresh bot answers no one');
});

await t.test('groups need both lists; mention-only admits mentions, replies and commands, and strips the leading mention', async (t) => {
  const group = (over: Partial<InboundMessage>) => msg({ chatType: 'supergroup', chatId: -100, ...over });
  t.same(admit(group({}), CFG), { admit: true, text: 'hi' });
  t.match(admit(group({ chatId: -200 }), CFG), { admit: false, why: /group -200 is not in allowed_group_ids/ });
  t.match(admit(group({ senderId: 9 }), CFG), { admit: false, why: /user 9/ }, 'a listed group does not admit an unlisted user');
  const only = { ...CFG, group_mention_only: true };
  t.match(admit(group({ text: 'chatting among ourselves' }), only), { admit: false, why: /group_mention_only/ });
  t.same(admit(group({ text: '@SVC_bot, deploy' }), only), { admit: true, text: 'deploy' }, 'case-insensitive, and the mention is taken off');
  t.same(admit(group({ text: 'ping @svc_bot please' }), only), { admit: true, text: 'ping @svc_bot please' });
  t.match(admit(group({ text: 'hi @svc_bot2' }), only), { admit: false }, 'another bot whose name starts the same is not a mention');
  t.same(admit(group({ text: 'thanks', repliesToBot: true }), only), { admit: true, text: 'thanks' });
  t.same(admit(group({ text: '/tasks' }), only), { admit: true, text: '/tasks' });
});

await t.test('a command addressed to another bot is not ours, anywhere; channels never', async (t) => {
  t.match(admit(msg({ text: '/new@other_bot' }), CFG), { admit: false, why: 'a command for @other_bot' });
  t.match(admit(msg({ chatType: 'supergroup', chatId: -100, text: '/stop@other_bot' }), CFG), { admit: false });
  t.same(admit(msg({ text: '/new@svc_bot' }), CFG), { admit: true, text: '/new@svc_bot' });
  t.match(admit(msg({ chatType: 'channel', chatId: -100 }), CFG), { admit: false, why: /channels/ });
});
