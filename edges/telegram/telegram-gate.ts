import type { AgentConfig } from '../../schemas/index.js';

/*
 * Who the bot answers (SPEC.md AgentConfig: allowed_user_ids, allowed_group_ids,
 * group_mention_only). Pure; an update that is not admitted gets nothing at all, not even a
 * refusal, so the bot gives a stranger no sign that it is there.
 */

export interface InboundMessage {
  chatType: 'private' | 'group' | 'supergroup' | 'channel';
  chatId: number;
  senderId: number;
  text: string;
  /** The bot's username, without the `@`. */
  botUsername: string;
  /** The message replies to one of the bot's. */
  repliesToBot: boolean;
}

export type Admission = { admit: true; text: string } | { admit: false; why: string };

export type GateConfig = Pick<AgentConfig, 'allowed_user_ids' | 'allowed_group_ids' | 'group_mention_only'>;

/** `@bot` anywhere, or a command addressed as `/cmd@bot`. */
function mentions(text: string, bot: string): boolean {
  return new RegExp(`(^|[\\s/\\w])@${escapeRegExp(bot)}(?![\\w])`, 'i').test(text);
}

function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** The text without the bot's own `@name` (a mention that starts the message, the usual way to address a bot in a group). */
function withoutLeadingMention(text: string, bot: string): string {
  return text.replace(new RegExp(`^\\s*@${escapeRegExp(bot)}\\b[\\s,:]*`, 'i'), '').trim() || text.trim();
}

export function admit(m: InboundMessage, cfg: GateConfig): Admission {
  // `/cmd@otherbot` in a group with several bots is that bot's, whoever sends it.
  const addressee = /^\s*\/[A-Za-z0-9_]+@([A-Za-z0-9_]+)/.exec(m.text)?.[1];
  if (addressee !== undefined && addressee.toLowerCase() !== m.botUsername.toLowerCase()) return { admit: false, why: `a command for @${addressee}` };
  // Both lists must name them in a group (SPEC.md); an empty user list admits nobody, so a fresh bot answers no one.
  if (!cfg.allowed_user_ids.includes(m.senderId)) return { admit: false, why: `user ${m.senderId} is not in allowed_user_ids` };
  if (m.chatType === 'private') return { admit: true, text: m.text };
  if (m.chatType === 'channel') return { admit: false, why: 'channels are not chats the bot answers in' };
  if (!cfg.allowed_group_ids.includes(m.chatId)) return { admit: false, why: `group ${m.chatId} is not in allowed_group_ids` };
  const addressed = m.repliesToBot || mentions(m.text, m.botUsername) || /^\s*\//.test(m.text);
  if (cfg.group_mention_only && !addressed) return { admit: false, why: 'group_mention_only: the message neither mentions nor replies to the bot' };
  return { admit: true, text: withoutLeadingMention(m.text, m.botUsername) };
}
