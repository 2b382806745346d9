import type { AgentConfig } from '../../schemas/index.js';

/*
 * Who the Matrix bot answers, and under which chat id (SPEC.md MatrixConfig allowed_rooms and
 * allowed_users, AgentConfig group_mention_only). Pure. In a direct room (the bot and one person)
 * the sender must be in allowed_users; in any other room the room must be in allowed_rooms, and
 * then either the sender is in allowed_users or, with group_mention_only, the message mentions or
 * replies to the bot (SPEC.md: for Matrix rooms that flag is the gate, not only a filter). A
 * message that is not admitted gets nothing, not even a refusal.
 */

export interface MatrixInbound {
  roomId: string;
  /** The room's canonical and alternative aliases (`#name:server`), which allowed_rooms may name instead of its id. */
  roomAliases: readonly string[];
  /** Joined and invited members, the bot included: two is a direct chat. */
  memberCount: number;
  sender: string;
  text: string;
  /** The bot's user id, `@bot:server`. */
  botUserId: string;
  /** The bot's display name in that room, which people type to address it. */
  botName: string;
  /** The sender listed the bot in the event's `m.mentions`. */
  mentionsBot: boolean;
  /** The message replies to one of the bot's. */
  repliesToBot: boolean;
}

export type MatrixAdmission = { admit: true; text: string } | { admit: false; why: string };

export type MatrixGateConfig = Pick<AgentConfig, 'group_mention_only'> & { matrix: Pick<AgentConfig['matrix'], 'allowed_rooms' | 'allowed_users'> };

function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** The name forms people address the bot by: its user id, its localpart and its display name. */
function namesOf(m: MatrixInbound): string[] {
  const local = /^@([^:]+):/.exec(m.botUserId)?.[1];
  return [...new Set([m.botUserId, local, m.botName].filter((n): n is string => !!n && n.trim() !== ''))];
}

function mentions(m: MatrixInbound): boolean {
  return m.mentionsBot || namesOf(m).some((n) => new RegExp(`(^|[^\\w@])@?${escapeRegExp(n)}(?![\\w])`, 'i').test(m.text));
}

/** The text without the `bot:` or `@bot` that addresses it at the start (as Element's mention pills put it). */
function withoutLeadingMention(m: MatrixInbound): string {
  for (const n of namesOf(m)) {
    const rest = m.text.replace(new RegExp(`^\\s*@?${escapeRegExp(n)}\\b[\\s,:]*`, 'i'), '');
    if (rest !== m.text) return rest.trim() || m.text.trim();
  }
  return m.text.trim();
}

export function admitMatrix(m: MatrixInbound, cfg: MatrixGateConfig): MatrixAdmission {
  const allowedUser = cfg.matrix.allowed_users.includes(m.sender);
  if (m.memberCount <= 2) {
    // An empty list admits nobody, so a fresh bot answers no one.
    return allowedUser ? { admit: true, text: m.text.trim() } : { admit: false, why: `${m.sender} is not in matrix.allowed_users` };
  }
  const rooms = cfg.matrix.allowed_rooms;
  if (!rooms.includes(m.roomId) && !m.roomAliases.some((a) => rooms.includes(a))) return { admit: false, why: `room ${m.roomId} is not in matrix.allowed_rooms` };
  const addressed = m.repliesToBot || mentions(m) || /^\s*\//.test(m.text);
  if (cfg.group_mention_only) {
    return addressed ? { admit: true, text: withoutLeadingMention(m) } : { admit: false, why: 'group_mention_only: the message neither mentions nor replies to the bot' };
  }
  if (!allowedUser) return { admit: false, why: `${m.sender} is not in matrix.allowed_users` };
  return { admit: true, text: withoutLeadingMention(m) };
}

/**
 * Whether an invite is one to take: from someone in allowed_users, or into a room allowed_rooms
 * names (by id; an alias is not known before joining). Anyone else's invite is left unanswered.
 */
export function acceptsInvite(roomId: string, inviter: string, cfg: MatrixGateConfig): boolean {
  return cfg.matrix.allowed_users.includes(inviter) || cfg.matrix.allowed_rooms.includes(roomId);
}
