import { SvcError } from '../schemas/index.js';

/*
 * Session keys: which conversation a message belongs to. `api:5`, `api:5:7`,
 * `telegram:-1001234:42`; different topics of one chat are different sessions.
 */

export interface SessionKeyParts {
  transport: string;
  chatId: number;
  /** Topic / channel inside the chat; null means chat-scoped. */
  topicId: number | null;
}

const TRANSPORT_NAME = /^[a-z][a-z0-9_-]{0,31}$/;
/** Canonical decimal integers only, so parse → render is the identity ("05", "-0", "+5" are not keys). */
const KEY_INT = /^(0|-?[1-9]\d{0,15})$/;

function checkKeyInt(value: unknown, field: string): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value)) {
    throw new SvcError('invalid-session-key', `session key ${field} = ${JSON.stringify(value) ?? String(value)} is not allowed (a whole number)`);
  }
  return value;
}

/** `api:5`, `api:5:7`, `telegram:-1001234:42`. Different topics of one chat are different sessions. */
export function sessionKey(transport: string, chatId: number, topicId?: number | null): string {
  if (typeof transport !== 'string' || !TRANSPORT_NAME.test(transport)) {
    throw new SvcError('invalid-session-key', `session key transport = ${JSON.stringify(transport)} is not allowed (lowercase letters, digits, _ or -, starting with a letter, at most 32)`);
  }
  const chat = checkKeyInt(chatId, 'chat_id');
  if (topicId === undefined || topicId === null) return `${transport}:${chat}`;
  return `${transport}:${chat}:${checkKeyInt(topicId, 'topic_id')}`;
}

export function parseSessionKey(key: string): SessionKeyParts {
  const bad = (why: string): never => {
    throw new SvcError('invalid-session-key', `session key ${JSON.stringify(key)} is not allowed (${why}; expected "<transport>:<chat_id>" or "<transport>:<chat_id>:<topic_id>")`);
  };
  if (typeof key !== 'string' || key.length > 80) return bad('not a short string');
  const parts = key.split(':');
  if (parts.length !== 2 && parts.length !== 3) return bad('wrong number of parts');
  const [transport, chat, topic] = parts as [string, string, string | undefined];
  if (!TRANSPORT_NAME.test(transport)) return bad('bad transport');
  if (!KEY_INT.test(chat)) return bad('chat_id is not a whole number');
  if (topic !== undefined && !KEY_INT.test(topic)) return bad('topic_id is not a whole number');
  const chatId = Number(chat);
  const topicId = topic === undefined ? null : Number(topic);
  if (!Number.isSafeInteger(chatId) || (topicId !== null && !Number.isSafeInteger(topicId))) return bad('number out of range');
  return { transport, chatId, topicId };
}

const positiveInt = (x: unknown): x is number => typeof x === 'number' && Number.isSafeInteger(x) && x > 0;

/**
 * The direct API's chat and topic (SPEC.md "Session key (direct API)", WIRE.md auth frame): the auth
 * frame's positive `chat_id`, else `api.chat_id` (0 means unset), else the first allowed user id, else 1;
 * topic is the frame's positive `channel_id`. Non-positive or non-integer frame values are ignored.
 */
export function apiSessionTarget(input: {
  authChatId?: unknown;
  authChannelId?: unknown;
  configChatId: number;
  allowedUserIds: readonly number[];
}): { chatId: number; topicId: number | null } {
  const first = input.allowedUserIds[0];
  const chatId = positiveInt(input.authChatId) ? input.authChatId
    : input.configChatId ? input.configChatId
      : first ? first : 1;
  return { chatId, topicId: positiveInt(input.authChannelId) ? input.authChannelId : null };
}
