import t from 'tap';
import { deliveryRoute, transportStatuses } from '../../machines/index.js';
import { defaultConfig } from '../../schemas/index.js';

const TOKEN = `123456789:${'A'.repeat(35)}`;
const cfg = (over: Record<string, unknown>) => ({ ...defaultConfig(), ...over }) as ReturnType<typeof defaultConfig>;

await t.test('both messengers are built; one a build would leave out is off for that reason alone, with nothing to fix', async (t) => {
  t.same(transportStatuses(cfg({ telegram_token: TOKEN })), [
    { name: 'telegram', on: true, why: 'bot token set', fix: null },
    { name: 'matrix', on: false, why: 'not listed in transports', fix: 'add "matrix" to transports in config.json' },
  ]);
  t.same(transportStatuses(cfg({ telegram_token: TOKEN }), ['telegram'])[1], { name: 'matrix', on: false, why: 'not included in this version of svc yet', fix: null });
});

await t.test('once built: on with credentials, otherwise off naming what is missing and how to fix it', async (t) => {
  const both = ['telegram', 'matrix'] as const;
  const [tg, mx] = transportStatuses(cfg({}), both);
  t.match(tg, { name: 'telegram', on: false, why: 'no telegram_token in config.json', fix: /@BotFather/ });
  t.match(mx, { name: 'matrix', on: false, why: 'not listed in transports', fix: 'add "matrix" to transports in config.json' });
  t.match(transportStatuses(cfg({ telegram_token: TOKEN }), both)[0], { on: true, fix: null });
  const matrix = (m: Record<string, string>) =>
    transportStatuses(cfg({ transports: ['matrix'], matrix: { ...defaultConfig().matrix, ...m } }), both)[1]!;
  t.match(matrix({}), { on: false, why: 'no matrix.homeserver, matrix.user_id, matrix.password or matrix.access_token in config.json' });
  t.match(matrix({ homeserver: 'https://m.example', user_id: '@bot:m.example', access_token: 'x' }), { on: true, why: 'as @bot:m.example on https://m.example' });
  t.match(transportStatuses(cfg({ transports: ['matrix'], telegram_token: 'x' }), both)[0], { on: false, why: 'not listed in transports' }, 'transports, when set, decides');
  for (const bad of ['1:x', 'abc:' + 'A'.repeat(35), `123:${'A'.repeat(35)} extra`, `123:${'A'.repeat(20)}`]) {
    t.match(transportStatuses(cfg({ telegram_token: bad }))[0], { on: false, why: /not a bot token/, fix: /@BotFather/ }, `${bad} can never log in: off, without asking Telegram`);
  }
});

await t.test('deliveryRoute: a running transport that reaches the chat gets it; otherwise the admin chat, with why', async (t) => {
  const running = (name: string) => ({ name, state: 'running' as const, detail: 'up' });
  t.same(deliveryRoute('api', running('api'), true), { kind: 'origin' });
  t.same(deliveryRoute('telegram', running('telegram'), true), { kind: 'origin' }, 'a running telegram transport gets its chats');
  t.same(deliveryRoute('telegram', null, false), { kind: 'admin-chat', reason: 'transport telegram is not running' }, 'built but not configured');
  t.same(deliveryRoute('telegram', { name: 'telegram', state: 'retrying', detail: 'Unauthorized (bad telegram_token?)' }, false), {
    kind: 'admin-chat',
    reason: 'transport telegram is reconnecting (Unauthorized (bad telegram_token?))',
  });
  t.same(deliveryRoute('matrix', null, false), { kind: 'admin-chat', reason: 'transport matrix is not running' }, 'built but not configured');
  t.same(deliveryRoute('internal', null, false), { kind: 'admin-chat', reason: 'transport internal has no chat delivery in svc' });
  t.same(deliveryRoute('api', running('api'), false), { kind: 'admin-chat', reason: 'no api connection of that chat is open' }, 'the direct API keeps no history');
  t.same(deliveryRoute('telegram', running('telegram'), false), { kind: 'admin-chat', reason: 'telegram cannot reach that chat' });
});
