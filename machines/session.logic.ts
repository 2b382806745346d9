import { PROVIDERS, REASONING_EFFORTS, SvcError, type AgentConfig, type Provider } from '../schemas/index.js';
import { resolveProvider } from './config.logic.js';

/*
 * Chat-session rules shared by every transport: session keys, expiry (idle, daily reset, message
 * cap), the age reminder, the memory hook cadence, `@model` directives, chat commands, model and
 * reasoning-effort choice, and per-provider CLI session ids. Pure: time arrives as epoch ms, the
 * timezone as an IANA name; `Intl` is the only source of calendar facts.
 */

// ---------------------------------------------------------------- session key

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

// ---------------------------------------------------------------- timezone

/** IANA names start with a letter; this also keeps offset strings ("+01:00") out, which newer engines accept. */
const ZONE_NAME = /^[A-Za-z][A-Za-z0-9_+\-/]{0,63}$/;

/** The canonical spelling of an IANA zone name, or null when the runtime does not know it. */
export function canonicalTimeZone(name: unknown): string | null {
  if (typeof name !== 'string') return null;
  const trimmed = name.trim();
  if (!ZONE_NAME.test(trimmed)) return null;
  try {
    return new Intl.DateTimeFormat('en-US', { timeZone: trimmed }).resolvedOptions().timeZone;
  } catch {
    return null;
  }
}

export function isValidTimeZone(name: unknown): boolean {
  return canonicalTimeZone(name) !== null;
}

/**
 * SPEC.md "Model and timezone resolution": configured name, then `TZ`, then the host's zone, then UTC;
 * the first one the runtime knows wins. `TZ` may carry POSIX's leading ':'; the host zone may be given
 * as the `/etc/localtime` link target (`/usr/share/zoneinfo/Europe/Berlin`).
 */
export function resolveTimezone(configured: string | null | undefined, envTZ: string | null | undefined, hostZone: string | null | undefined): string {
  const env = typeof envTZ === 'string' ? envTZ.trim().replace(/^:/, '') : envTZ;
  const host = typeof hostZone === 'string' ? hostZone.trim().replace(/^.*\/zoneinfo\//, '') : hostZone;
  for (const candidate of [configured, env, host]) {
    const zone = canonicalTimeZone(candidate);
    if (zone !== null) return zone;
  }
  return 'UTC';
}

// ---------------------------------------------------------------- wall clock

interface WallClock {
  year: number;
  month: number;
  day: number;
  hour: number;
  minute: number;
  second: number;
}

const DAY_MS = 86_400_000;
const formatters = new Map<string, Intl.DateTimeFormat>();

function formatterFor(timeZone: string): Intl.DateTimeFormat {
  let f = formatters.get(timeZone);
  if (!f) {
    f = new Intl.DateTimeFormat('en-US', {
      timeZone, hourCycle: 'h23', year: 'numeric', month: 'numeric', day: 'numeric', hour: 'numeric', minute: 'numeric', second: 'numeric',
    });
    formatters.set(timeZone, f);
  }
  return f;
}

function wallClock(ms: number, timeZone: string): WallClock {
  const out: Record<string, number> = {};
  for (const part of formatterFor(timeZone).formatToParts(ms)) {
    if (part.type !== 'literal') out[part.type] = Number(part.value);
  }
  return { year: out.year!, month: out.month!, day: out.day!, hour: out.hour!, minute: out.minute!, second: out.second! };
}

/** The wall-clock reading at `ms`, encoded as if it were a UTC instant (seconds precision). */
function wallAsUtc(ms: number, timeZone: string): number {
  const w = wallClock(ms, timeZone);
  return Date.UTC(w.year, w.month - 1, w.day, w.hour, w.minute, w.second);
}

function offsetAt(ms: number, timeZone: string): number {
  return wallAsUtc(ms, timeZone) - Math.floor(ms / 1000) * 1000;
}

/**
 * The instant the wall clock in `timeZone` first reads `hour`:00 on the given local date. When DST
 * repeats that hour, the first occurrence; when DST skips it, the instant the clock jumps over it
 * (so a day without 02:00 still gets its reset, at 03:00).
 */
function localHourInstant(year: number, month: number, day: number, hour: number, timeZone: string): number {
  const target = Date.UTC(year, month - 1, day, hour);
  // Offsets a day either side bracket any one transition near the target.
  const offsets = new Set([offsetAt(target - DAY_MS, timeZone), offsetAt(target, timeZone), offsetAt(target + DAY_MS, timeZone)]);
  const candidates = [...offsets].map((o) => target - o);
  const exact = candidates.filter((t) => wallAsUtc(t, timeZone) === target);
  if (exact.length > 0) return Math.min(...exact);
  // Skipped hour: find the first second whose wall reading is at or past the target.
  let lo = Math.min(...candidates);
  let hi = Math.max(...candidates);
  while (hi - lo > 1000) {
    const mid = lo + Math.floor((hi - lo) / 2000) * 1000;
    if (wallAsUtc(mid, timeZone) >= target) hi = mid;
    else lo = mid;
  }
  return hi;
}

/** The latest daily boundary (`hour`:00 local) at or before `now`. */
export function latestDailyBoundary(now: number, hour: number, timeZone: string): number {
  const w = wallClock(now, timeZone);
  const today = localHourInstant(w.year, w.month, w.day, hour, timeZone);
  if (today <= now) return today;
  const y = wallClock(Date.UTC(w.year, w.month - 1, w.day) - DAY_MS, 'UTC');
  return localHourInstant(y.year, y.month, y.day, hour, timeZone);
}

// ---------------------------------------------------------------- expiry

export interface SessionActivity {
  createdAt: number;
  lastActiveAt: number;
  /** Messages already in the session, before the one about to be handled. */
  messageCount: number;
}

export interface ExpiryRules {
  /** 0 disables idle expiry. */
  idleTimeoutMinutes: number;
  dailyResetEnabled: boolean;
  /** Hour 0..23 in `timezone`. */
  dailyResetHour: number;
  /** A valid IANA name (see resolveTimezone). */
  timezone: string;
  /** null (or 0) disables the cap. */
  maxSessionMessages: number | null;
}

export type ExpiryReason = 'idle' | 'daily_reset' | 'max_messages';

function checkTime(value: unknown, field: string): number {
  if (typeof value !== 'number' || !Number.isFinite(value)) {
    throw new SvcError('invalid-time', `${field} = ${JSON.stringify(value) ?? String(value)} is not allowed (epoch milliseconds, a finite number)`);
  }
  return value;
}

function checkRules(rules: ExpiryRules): void {
  const bad = (field: string, value: unknown, allowed: string): never => {
    throw new SvcError('invalid-session-rules', `session rules ${field} = ${JSON.stringify(value) ?? String(value)} is not allowed (${allowed})`);
  };
  const r = rules as Partial<Record<keyof ExpiryRules, unknown>>;
  if (typeof r.idleTimeoutMinutes !== 'number' || !Number.isFinite(r.idleTimeoutMinutes) || r.idleTimeoutMinutes < 0) bad('idleTimeoutMinutes', r.idleTimeoutMinutes, 'a number >= 0');
  if (typeof r.dailyResetEnabled !== 'boolean') bad('dailyResetEnabled', r.dailyResetEnabled, 'true or false');
  if (typeof r.dailyResetHour !== 'number' || !Number.isInteger(r.dailyResetHour) || r.dailyResetHour < 0 || r.dailyResetHour > 23) bad('dailyResetHour', r.dailyResetHour, 'a whole number from 0 to 23');
  if (r.dailyResetEnabled && !isValidTimeZone(r.timezone)) bad('timezone', r.timezone, 'an IANA time zone name; resolve it with resolveTimezone first');
  if (r.maxSessionMessages !== null && (typeof r.maxSessionMessages !== 'number' || !Number.isInteger(r.maxSessionMessages) || r.maxSessionMessages < 0)) {
    bad('maxSessionMessages', r.maxSessionMessages, 'null or a whole number >= 0');
  }
}

/** The expiry rules of an agent config, with the timezone already resolved by the caller. */
export function expiryRulesFromConfig(
  config: Pick<AgentConfig, 'idle_timeout_minutes' | 'daily_reset_enabled' | 'daily_reset_hour' | 'max_session_messages'>,
  timezone: string,
): ExpiryRules {
  return {
    idleTimeoutMinutes: config.idle_timeout_minutes,
    dailyResetEnabled: config.daily_reset_enabled,
    dailyResetHour: config.daily_reset_hour,
    timezone,
    maxSessionMessages: config.max_session_messages,
  };
}

/**
 * Whether a session must be replaced before the next message, and why. Asked when a message arrives
 * (`now`), before it is counted. Reported in this order when several apply: idle, daily reset, cap.
 * A `lastActiveAt` later than `now` (clock moved back) expires nothing by time.
 */
export function shouldExpire(session: SessionActivity, now: number, rules: ExpiryRules): ExpiryReason | null {
  checkTime(now, 'now');
  const last = checkTime(session.lastActiveAt, 'lastActiveAt');
  checkTime(session.createdAt, 'createdAt');
  checkRules(rules);
  const elapsed = now - last;
  if (rules.idleTimeoutMinutes > 0 && elapsed >= rules.idleTimeoutMinutes * 60_000) return 'idle';
  if (rules.dailyResetEnabled && elapsed > 0) {
    const boundary = latestDailyBoundary(now, rules.dailyResetHour, rules.timezone);
    if (boundary > last) return 'daily_reset';
  }
  const cap = rules.maxSessionMessages;
  if (cap !== null && cap > 0 && session.messageCount >= cap) return 'max_messages';
  return null;
}

// ---------------------------------------------------------------- cadences

/** SPEC.md Limits "session warning": every 10 messages once the session is old. */
export const AGE_WARNING_EVERY = 10;
/** SPEC.md Limits "memory hook": every 6 messages. */
export const MEMORY_HOOK_EVERY = 6;

export interface AgeWarningSession {
  createdAt: number;
  /** Messages in the session including the one just handled. */
  messageCount: number;
  /** `messageCount` when the first message past the threshold was handled; null/absent until then. */
  countAtThreshold?: number | null;
}

function checkCount(value: unknown, field: string): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) {
    throw new SvcError('invalid-message-count', `${field} = ${JSON.stringify(value) ?? String(value)} is not allowed (a whole number >= 0)`);
  }
  return value;
}

function isOld(session: AgeWarningSession, now: number, warningHours: number): boolean {
  checkTime(now, 'now');
  checkTime(session.createdAt, 'createdAt');
  if (typeof warningHours !== 'number' || !Number.isFinite(warningHours) || warningHours < 0) {
    throw new SvcError('invalid-session-rules', `session_age_warning_hours = ${String(warningHours)} is not allowed (a number >= 0; 0 disables)`);
  }
  return warningHours > 0 && now - session.createdAt >= warningHours * 3_600_000;
}

/**
 * Whether to append the "/new" reminder to this reply: on the first message handled once the session
 * is `warningHours` old, then on every 10th message after that one. 0 hours disables the reminder.
 */
export function ageWarningDue(session: AgeWarningSession, now: number, warningHours: number): boolean {
  const count = checkCount(session.messageCount, 'messageCount');
  if (!isOld(session, now, warningHours)) return false;
  const base = session.countAtThreshold;
  if (base === undefined || base === null) return true;
  const since = count - checkCount(base, 'countAtThreshold');
  return since > 0 && since % AGE_WARNING_EVERY === 0;
}

/** The `countAtThreshold` to store after handling a message (unchanged once set). */
export function nextCountAtThreshold(session: AgeWarningSession, now: number, warningHours: number): number | null {
  const count = checkCount(session.messageCount, 'messageCount');
  const base = session.countAtThreshold ?? null;
  if (base !== null) return base;
  return isOld(session, now, warningHours) ? count : null;
}

/** Whether the memory reminder hook runs for this message (`messageCount` includes it). */
export function memoryHookDue(messageCount: number): boolean {
  const count = checkCount(messageCount, 'messageCount');
  return count > 0 && count % MEMORY_HOOK_EVERY === 0;
}

// ---------------------------------------------------------------- directives and commands

export const MODEL_ID_MAX_LENGTH = 128;
/** SPEC's id charset `[A-Za-z0-9._:-]`, starting with a letter or digit so "@..." or "@-" stay text. */
const MODEL_ID = /^[A-Za-z0-9][A-Za-z0-9._:-]*$/;

export function isModelId(value: unknown): value is string {
  return typeof value === 'string' && value.length <= MODEL_ID_MAX_LENGTH && MODEL_ID.test(value);
}

function checkText(text: unknown): string {
  if (typeof text !== 'string') throw new SvcError('invalid-text', `message text = ${JSON.stringify(text) ?? String(text)} is not allowed (a string)`);
  return text;
}

export interface Directive {
  model?: string;
  rest: string;
}

/**
 * A leading `@<model>` directive ("@sonnet explain this"): the id must be followed by whitespace or
 * the end. Anything else ("@", "@ foo", "a@b.c", "@foo@bar", "@söng") is plain text, returned as is.
 * `ignore` lists names that are mentions, not models (the bot's own @username in a group).
 */
export function parseDirective(text: string, opts: { ignore?: readonly string[] } = {}): Directive {
  const input = checkText(text);
  const m = /^\s*@(\S+)/.exec(input);
  if (!m) return { rest: input };
  const id = m[1]!;
  if (!isModelId(id)) return { rest: input };
  const lower = id.toLowerCase();
  if ((opts.ignore ?? []).some((name) => name.replace(/^@/, '').toLowerCase() === lower)) return { rest: input };
  return { model: id, rest: input.slice(m[0].length).trimStart() };
}

export const CHAT_COMMANDS = ['new', 'reset', 'stop', 'model', 'retry', 'agent_restart'] as const;
export type ChatCommandName = (typeof CHAT_COMMANDS)[number];

export interface ChatCommand {
  cmd: ChatCommandName;
  /** Trimmed text after the command; absent when empty (handlers answer `/agent_restart` alone with usage). */
  arg?: string;
}

const COMMAND_SET = new Set<string>(CHAT_COMMANDS);

/**
 * `/new`, `/reset`, `/stop`, `/model [id]`, `/retry` (ask again what a restart cut off),
 * `/agent_restart <name>`, also as `/cmd@botname`. With
 * `botName` set, a command addressed to another bot is not ours (null). Anything else: null.
 */
export function parseChatCommand(text: string, opts: { botName?: string } = {}): ChatCommand | null {
  const input = checkText(text);
  const m = /^\s*\/([A-Za-z0-9_]{1,32})(?:@([A-Za-z0-9_]{1,64}))?(?=\s|$)([\s\S]*)$/.exec(input);
  if (!m) return null;
  const cmd = m[1]!.toLowerCase();
  if (!COMMAND_SET.has(cmd)) return null;
  const target = m[2];
  if (target !== undefined && opts.botName && target.toLowerCase() !== opts.botName.replace(/^@/, '').toLowerCase()) return null;
  const arg = m[3]!.trim();
  return arg === '' ? { cmd: cmd as ChatCommandName } : { cmd: cmd as ChatCommandName, arg };
}

// ---------------------------------------------------------------- model and provider

export type ModelSource = 'directive' | 'session' | 'topic' | 'config';

export interface ModelChoiceInput {
  /** From parseDirective. */
  directive?: string | null;
  topicId?: number | string | null;
  /** config `topic_defaults`, keyed by topic id as a string. */
  topicDefaults?: Readonly<Record<string, { model: string }>>;
  /** Per-session provider override; both null means none. */
  sessionOverride?: { provider: string | null; model: string | null } | null;
  /** config `model`. */
  configModel: string;
}

const filled = (s: unknown): s is string => typeof s === 'string' && s.trim() !== '';

/** Priority: `@directive`, per-session override, topic default, config `model`. Blank values are skipped. */
export function resolveModel(input: ModelChoiceInput): { model: string; source: ModelSource } {
  if (filled(input.directive)) return { model: input.directive.trim(), source: 'directive' };
  const override = input.sessionOverride?.model;
  if (filled(override)) return { model: override.trim(), source: 'session' };
  if (input.topicId !== undefined && input.topicId !== null && input.topicDefaults) {
    const key = String(input.topicId);
    const topic = Object.hasOwn(input.topicDefaults, key) ? input.topicDefaults[key]?.model : undefined;
    if (filled(topic)) return { model: topic.trim(), source: 'topic' };
  }
  if (!filled(input.configModel)) {
    throw new SvcError('invalid-model', `model = ${JSON.stringify(input.configModel)} is not allowed (a non-empty model id)`);
  }
  return { model: input.configModel.trim(), source: 'config' };
}

/** Which provider serves a model id; the rule lives in config.logic.ts (SPEC.md "Model and timezone resolution"). */
export function resolveProviderForModel(model: string, discoveredGemini: readonly string[] = []): Provider {
  return resolveProvider(model, discoveredGemini);
}

// ---------------------------------------------------------------- reasoning effort

export type EffortLevel = (typeof REASONING_EFFORTS)[number];

/**
 * Canonical table of which `model_reasoning_effort` values a codex model accepts (first matching row
 * wins). Sending an effort the model lacks makes the API reject the whole turn, so an unsupported one
 * is dropped and the model's default applies. Same rows as actors/providers/codex.ts, which should
 * import this one (actors may import machines; machines may not import actors).
 */
const CODEX_EFFORTS: ReadonlyArray<{ match: RegExp; efforts: readonly EffortLevel[] }> = [
  { match: /codex-max/, efforts: ['low', 'medium', 'high', 'xhigh'] }, // xhigh arrived with gpt-5.1-codex-max
  { match: /codex-mini|-mini\b/, efforts: ['low', 'medium', 'high'] }, // small models stop at high
  { match: /^gpt-5\.[2-9]/, efforts: ['low', 'medium', 'high', 'xhigh'] }, // gpt-5.2 and later accept xhigh
  { match: /^(gpt-5|o\d)/, efforts: ['low', 'medium', 'high'] }, // reasoning models before xhigh
  { match: /^gpt-4|^gpt-3/, efforts: [] }, // not reasoning models
  { match: /(?:)/, efforts: ['low', 'medium', 'high'] }, // unset/unknown: codex's own default, a gpt-5-class model
];

export function codexEffortsFor(model: string | null | undefined): readonly EffortLevel[] {
  const id = (model ?? '').trim().toLowerCase();
  return CODEX_EFFORTS.find((r) => r.match.test(id))?.efforts ?? [];
}

const EFFORT_SET = new Set<string>(REASONING_EFFORTS);

/**
 * The effort flag value for a turn, or null to pass none: claude takes all four (`--effort`), gemini
 * has no such flag, codex only what the model supports (`-c model_reasoning_effort=`).
 */
export function effortFor(provider: Provider, model: string | null | undefined, requested: string | null | undefined): EffortLevel | null {
  if (requested === null || requested === undefined || requested === '') return null;
  if (!EFFORT_SET.has(requested)) {
    throw new SvcError('invalid-reasoning-effort', `reasoning_effort = ${JSON.stringify(requested)} is not allowed (one of ${REASONING_EFFORTS.join(', ')})`);
  }
  const effort = requested as EffortLevel;
  switch (provider) {
    case 'claude':
      return effort;
    case 'gemini':
      return null;
    case 'codex':
      return codexEffortsFor(model).includes(effort) ? effort : null;
    default:
      throw new SvcError('invalid-provider', `provider = ${JSON.stringify(provider)} is not allowed (one of ${PROVIDERS.join(', ')})`);
  }
}

// ---------------------------------------------------------------- per-provider CLI sessions

/**
 * CLI session ids of one chat/topic session, one per provider (PROVIDERS.md): switching provider
 * keeps the other's id, so switching back resumes where it left off. Plain JSON; never mutated.
 */
export type ProviderSessions = Readonly<Partial<Record<Provider, string>>>;

export const SESSION_ID_MAX_LENGTH = 512;
const PROVIDER_SET = new Set<string>(PROVIDERS);

function checkProvider(provider: unknown): Provider {
  if (typeof provider !== 'string' || !PROVIDER_SET.has(provider)) {
    throw new SvcError('invalid-provider', `provider = ${JSON.stringify(provider) ?? String(provider)} is not allowed (one of ${PROVIDERS.join(', ')})`);
  }
  return provider as Provider;
}

export function sessionIdFor(sessions: ProviderSessions, provider: Provider): string | null {
  const p = checkProvider(provider);
  return Object.hasOwn(sessions, p) ? (sessions[p] ?? null) : null;
}

export function withSessionId(sessions: ProviderSessions, provider: Provider, id: string): ProviderSessions {
  const p = checkProvider(provider);
  if (typeof id !== 'string' || id.trim() === '' || id.length > SESSION_ID_MAX_LENGTH || /[\u0000-\u001f\u007f]/.test(id)) {
    throw new SvcError('invalid-session-id', `${p} session id = ${JSON.stringify(id) ?? String(id)} is not allowed (a non-empty string of at most ${SESSION_ID_MAX_LENGTH} characters without control characters)`);
  }
  return { ...sessions, [p]: id };
}

/** Forget one provider's id (e.g. after its CLI was killed); the others stay. */
export function resetProvider(sessions: ProviderSessions, provider: Provider): ProviderSessions {
  const p = checkProvider(provider);
  const { [p]: _dropped, ...rest } = sessions;
  return rest;
}
