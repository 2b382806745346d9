import t from 'tap';
import {
  ageWarningDue,
  apiSessionTarget,
  codexEffortsFor,
  effortFor,
  expiryRulesFromConfig,
  latestDailyBoundary,
  memoryHookDue,
  nextCountAtThreshold,
  parseChatCommand,
  parseDirective,
  parseSessionKey,
  resetProvider,
  resolveModel,
  resolveProviderForModel,
  resolveTimezone,
  sessionIdFor,
  sessionKey,
  shouldExpire,
  withSessionId,
  type ExpiryRules,
  type ProviderSessions,
} from '../../machines/index.js';
import { defaultConfig } from '../../schemas/index.js';

const utc = (y: number, mo: number, d: number, h = 0, mi = 0, s = 0) => Date.UTC(y, mo - 1, d, h, mi, s);
const MIN = 60_000;
const HOUR = 3_600_000;
const code = (c: string) => ({ name: 'SvcError', code: c });

// ---------------------------------------------------------------- keys

await t.test('session keys: render and parse back', async (t) => {
  const rows: Array<[string, number, number | null | undefined, string]> = [
    ['api', 5, undefined, 'api:5'],
    ['api', 5, 7, 'api:5:7'],
    ['api', 5, null, 'api:5'],
    ['telegram', -1001234567890, 42, 'telegram:-1001234567890:42'],
    ['matrix', 0, 0, 'matrix:0:0'],
  ];
  for (const [transport, chat, topic, key] of rows) {
    t.equal(sessionKey(transport, chat, topic), key);
    t.same(parseSessionKey(key), { transport, chatId: chat, topicId: topic ?? null });
  }
  t.not(sessionKey('api', 5, 7), sessionKey('api', 5, 8), 'channels of one chat are isolated');
});

await t.test('session keys: bad input is rejected with invalid-session-key', async (t) => {
  for (const [transport, chat, topic] of [
    ['API', 5, null], ['', 5, null], ['a:b', 5, null], ['api', 1.5, null], ['api', Number.NaN, null],
    ['api', 5, 2 ** 60], ['api', '5', null], ['x'.repeat(33), 1, null],
  ] as Array<[string, number, number | null]>) {
    t.throws(() => sessionKey(transport, chat, topic), code('invalid-session-key'), `${transport}/${chat}/${topic}`);
  }
  for (const key of ['', 'api', 'api:', 'api:5:', 'api:05', 'api:-0', 'api:+5', 'api:5:7:9', 'api:5.0', ':5', 'api:abc', 'api:99999999999999999', 'a'.repeat(81), 'api:١']) {
    t.throws(() => parseSessionKey(key), code('invalid-session-key'), JSON.stringify(key));
  }
});

await t.test('direct API chat and topic (SPEC "Session key (direct API)")', async (t) => {
  const rows: Array<[string, Parameters<typeof apiSessionTarget>[0], { chatId: number; topicId: number | null }]> = [
    ['frame chat_id wins', { authChatId: 9, configChatId: 3, allowedUserIds: [7] }, { chatId: 9, topicId: null }],
    ['config chat_id', { configChatId: 3, allowedUserIds: [7] }, { chatId: 3, topicId: null }],
    ['config 0 falls to first allowed user', { configChatId: 0, allowedUserIds: [7, 8] }, { chatId: 7, topicId: null }],
    ['else 1', { configChatId: 0, allowedUserIds: [] }, { chatId: 1, topicId: null }],
    ['channel_id is the topic', { authChatId: 9, authChannelId: 4, configChatId: 0, allowedUserIds: [] }, { chatId: 9, topicId: 4 }],
    ['non-positive frame values ignored', { authChatId: -2, authChannelId: 0, configChatId: 3, allowedUserIds: [] }, { chatId: 3, topicId: null }],
    ['non-integer frame values ignored', { authChatId: '9', authChannelId: 1.5, configChatId: 0, allowedUserIds: [] }, { chatId: 1, topicId: null }],
  ];
  for (const [name, input, want] of rows) t.same(apiSessionTarget(input), want, name);
});

// ---------------------------------------------------------------- timezone

await t.test('resolveTimezone: first valid IANA name, else UTC', async (t) => {
  const rows: Array<[string, string | null | undefined, string | null | undefined, string | null | undefined, string]> = [
    ['configured wins', 'Europe/Berlin', 'America/New_York', 'Asia/Tokyo', 'Europe/Berlin'],
    ['empty configured -> TZ', '', 'America/New_York', 'Asia/Tokyo', 'America/New_York'],
    ['invalid configured -> TZ', 'Mars/Olympus', 'America/New_York', null, 'America/New_York'],
    ['TZ with POSIX colon', '', ':Europe/Paris', null, 'Europe/Paris'],
    ['invalid TZ -> host', '', 'garbage', 'Asia/Tokyo', 'Asia/Tokyo'],
    ['host as zoneinfo path', undefined, undefined, '/usr/share/zoneinfo/Europe/Berlin', 'Europe/Berlin'],
    ['nothing -> UTC', undefined, undefined, undefined, 'UTC'],
    ['all invalid -> UTC', 'nope', '+01:00', '/etc/localtime', 'UTC'],
    ['case is canonicalised', 'europe/berlin', null, null, 'Europe/Berlin'],
    ['unicode -> UTC', 'Europe/Bérlin', null, null, 'UTC'],
    ['oversized -> UTC', 'A'.repeat(5000), null, null, 'UTC'],
  ];
  for (const [name, configured, env, host, want] of rows) t.equal(resolveTimezone(configured, env, host), want, name);
  t.equal(resolveTimezone(42 as never, null, null), 'UTC', 'wrong type');
});

// ---------------------------------------------------------------- expiry

const rules = (over: Partial<ExpiryRules> = {}): ExpiryRules => ({
  idleTimeoutMinutes: 0, dailyResetEnabled: false, dailyResetHour: 4, timezone: 'UTC', maxSessionMessages: null, ...over,
});
const session = (lastActiveAt: number, messageCount = 1) => ({ createdAt: lastActiveAt - HOUR, lastActiveAt, messageCount });

await t.test('idle expiry: at exactly the limit, not a ms before; 0 disables', async (t) => {
  const last = utc(2024, 1, 10, 12);
  const rows: Array<[string, number, number, string | null]> = [
    ['one ms before the limit', 60, last + 60 * MIN - 1, null],
    ['exactly at the limit', 60, last + 60 * MIN, 'idle'],
    ['past the limit', 60, last + 61 * MIN, 'idle'],
    ['0 disables', 0, last + 365 * 24 * HOUR, null],
    ['default 1440', 1440, last + 24 * HOUR, 'idle'],
    ['clock moved back', 60, last - HOUR, null],
  ];
  for (const [name, idle, now, want] of rows) t.equal(shouldExpire(session(last), now, rules({ idleTimeoutMinutes: idle })), want, name);
});

await t.test('daily reset: a boundary in (lastActiveAt, now]', async (t) => {
  type Row = [string, Partial<ExpiryRules>, number, number, string | null];
  const berlin = { dailyResetEnabled: true, timezone: 'Europe/Berlin', dailyResetHour: 4 };
  const ny = { dailyResetEnabled: true, timezone: 'America/New_York' };
  const rows: Row[] = [
    ['disabled', { dailyResetEnabled: false }, utc(2024, 1, 14, 12), utc(2024, 1, 16, 12), null],
    ['UTC, same day before 04:00', { dailyResetEnabled: true }, utc(2024, 1, 15, 1), utc(2024, 1, 15, 3, 59), null],
    ['UTC, boundary exactly at now', { dailyResetEnabled: true }, utc(2024, 1, 15, 1), utc(2024, 1, 15, 4), 'daily_reset'],
    ['UTC, boundary exactly at lastActive is not in range', { dailyResetEnabled: true }, utc(2024, 1, 15, 4), utc(2024, 1, 15, 9), null],
    ['UTC, across midnight before the hour', { dailyResetEnabled: true }, utc(2024, 1, 14, 23), utc(2024, 1, 15, 3), null],
    ['UTC, hour 0 across midnight', { dailyResetEnabled: true, dailyResetHour: 0 }, utc(2024, 1, 14, 23), utc(2024, 1, 15, 0, 30), 'daily_reset'],
    ['UTC, days later', { dailyResetEnabled: true }, utc(2024, 1, 10, 5), utc(2024, 1, 15, 3), 'daily_reset'],
    // Berlin winter: 04:00 CET = 03:00 UTC
    ['Berlin winter, 1 ms before 04:00 local', berlin, utc(2024, 1, 15, 1), utc(2024, 1, 15, 3) - 1, null],
    ['Berlin winter, at 04:00 local', berlin, utc(2024, 1, 15, 1), utc(2024, 1, 15, 3), 'daily_reset'],
    ['Berlin winter, at 04:00 UTC is not the boundary', berlin, utc(2024, 1, 15, 3, 30), utc(2024, 1, 15, 4), null],
    // Berlin summer: 04:00 CEST = 02:00 UTC
    ['Berlin summer, at 04:00 local', berlin, utc(2024, 7, 1, 1), utc(2024, 7, 1, 2), 'daily_reset'],
    ['Berlin summer, before 04:00 local', berlin, utc(2024, 7, 1, 1), utc(2024, 7, 1, 1, 59), null],
    // Berlin midnight reset across local midnight (23:30 UTC on Jan 14 = 00:30 local Jan 15)
    ['Berlin hour 0 across local midnight', { ...berlin, dailyResetHour: 0 }, utc(2024, 1, 14, 22), utc(2024, 1, 14, 23, 30), 'daily_reset'],
    ['Berlin hour 0 before local midnight', { ...berlin, dailyResetHour: 0 }, utc(2024, 1, 14, 21), utc(2024, 1, 14, 22, 59), null],
    // Berlin DST starts 2024-03-31 02:00 CET -> 03:00 CEST (01:00 UTC); 04:00 CEST that day = 02:00 UTC
    ['Berlin DST day, before 04:00 CEST', berlin, utc(2024, 3, 30, 12), utc(2024, 3, 31, 1, 59), null],
    ['Berlin DST day, at 04:00 CEST (fixed +1 offset would say 03:00 UTC)', berlin, utc(2024, 3, 30, 12), utc(2024, 3, 31, 2), 'daily_reset'],
    ['Berlin DST day, skipped 02:00 resets at the jump', { ...berlin, dailyResetHour: 2 }, utc(2024, 3, 31, 0, 30), utc(2024, 3, 31, 1), 'daily_reset'],
    ['Berlin DST day, skipped 02:00, before the jump', { ...berlin, dailyResetHour: 2 }, utc(2024, 3, 31, 0, 30), utc(2024, 3, 31, 1) - 1, null],
    // Berlin DST ends 2024-10-27 03:00 CEST -> 02:00 CET; 04:00 CET = 03:00 UTC
    ['Berlin fall back, at 04:00 CET', berlin, utc(2024, 10, 27, 0), utc(2024, 10, 27, 3), 'daily_reset'],
    ['Berlin fall back, 04:00 UTC+2 is not it', berlin, utc(2024, 10, 27, 0), utc(2024, 10, 27, 2, 30), null],
    // New York: 04:00 EST = 09:00 UTC; 04:00 EDT = 08:00 UTC
    ['NY winter, at 04:00 EST', { ...ny, dailyResetHour: 4 }, utc(2024, 1, 15, 2), utc(2024, 1, 15, 9), 'daily_reset'],
    ['NY winter, before', { ...ny, dailyResetHour: 4 }, utc(2024, 1, 15, 2), utc(2024, 1, 15, 8, 59), null],
    ['NY local midnight is UTC 05:00 (across the UTC date)', { ...ny, dailyResetHour: 0 }, utc(2024, 1, 15, 4), utc(2024, 1, 15, 5), 'daily_reset'],
    // NY DST starts 2024-03-10 02:00 EST -> 03:00 EDT (07:00 UTC)
    ['NY spring forward, skipped 02:00 resets at 03:00 EDT', { ...ny, dailyResetHour: 2 }, utc(2024, 3, 10, 6, 59), utc(2024, 3, 10, 7), 'daily_reset'],
    ['NY spring forward, 04:00 EDT = 08:00 UTC', { ...ny, dailyResetHour: 4 }, utc(2024, 3, 10, 7, 30), utc(2024, 3, 10, 8), 'daily_reset'],
    ['NY spring forward, 09:00 UTC was winter 04:00', { ...ny, dailyResetHour: 4 }, utc(2024, 3, 10, 8), utc(2024, 3, 10, 9), null],
    // NY DST ends 2024-11-03 02:00 EDT -> 01:00 EST: 01:00 happens at 05:00 and 06:00 UTC; only the first resets
    ['NY fall back, first 01:00', { ...ny, dailyResetHour: 1 }, utc(2024, 11, 3, 4, 59), utc(2024, 11, 3, 5), 'daily_reset'],
    ['NY fall back, repeated 01:00 does not reset twice', { ...ny, dailyResetHour: 1 }, utc(2024, 11, 3, 5, 30), utc(2024, 11, 3, 6, 30), null],
  ];
  for (const [name, over, last, now, want] of rows) t.equal(shouldExpire(session(last), now, rules(over)), want, name);
});

await t.test('latestDailyBoundary lands on the local hour across DST', async (t) => {
  t.equal(latestDailyBoundary(utc(2024, 3, 31, 12), 4, 'Europe/Berlin'), utc(2024, 3, 31, 2));
  t.equal(latestDailyBoundary(utc(2024, 3, 31, 1), 4, 'Europe/Berlin'), utc(2024, 3, 30, 3), 'previous day when today is not reached');
  t.equal(latestDailyBoundary(utc(2024, 11, 3, 12), 1, 'America/New_York'), utc(2024, 11, 3, 5));
  t.equal(latestDailyBoundary(utc(2024, 1, 1, 0, 30), 0, 'UTC'), utc(2024, 1, 1, 0));
  t.equal(latestDailyBoundary(utc(2024, 3, 1, 0, 30), 4, 'UTC'), utc(2024, 2, 29, 4), 'leap day');
});

await t.test('max messages, order of reasons, and config mapping', async (t) => {
  const last = utc(2024, 1, 15, 12);
  const rows: Array<[string, number, number | null, string | null]> = [
    ['below the cap', 9, 10, null],
    ['at the cap', 10, 10, 'max_messages'],
    ['above the cap', 11, 10, 'max_messages'],
    ['null disables', 10_000, null, null],
    ['0 disables', 10, 0, null],
  ];
  for (const [name, count, cap, want] of rows) t.equal(shouldExpire(session(last, count), last + MIN, rules({ maxSessionMessages: cap })), want, name);
  t.equal(shouldExpire(session(last, 50), last + 2 * HOUR, rules({ idleTimeoutMinutes: 60, maxSessionMessages: 10 })), 'idle', 'idle reported first');
  const r = expiryRulesFromConfig({ ...defaultConfig(), daily_reset_enabled: true, max_session_messages: 3 }, 'Europe/Berlin');
  t.same(r, { idleTimeoutMinutes: 1440, dailyResetEnabled: true, dailyResetHour: 4, timezone: 'Europe/Berlin', maxSessionMessages: 3 });
});

await t.test('shouldExpire: bad input is a clear error', async (t) => {
  const s = session(utc(2024, 1, 1));
  t.throws(() => shouldExpire(s, Number.NaN, rules()), code('invalid-time'));
  t.throws(() => shouldExpire({ ...s, lastActiveAt: '1' as never }, 0, rules()), code('invalid-time'));
  t.throws(() => shouldExpire(s, 0, rules({ idleTimeoutMinutes: -1 })), code('invalid-session-rules'));
  t.throws(() => shouldExpire(s, 0, rules({ dailyResetHour: 24 })), code('invalid-session-rules'));
  t.throws(() => shouldExpire(s, 0, rules({ dailyResetHour: 3.5 })), code('invalid-session-rules'));
  t.throws(() => shouldExpire(s, 0, rules({ dailyResetEnabled: true, timezone: 'Mars/Olympus' })), /resolveTimezone/);
  t.throws(() => shouldExpire(s, 0, rules({ maxSessionMessages: -3 })), code('invalid-session-rules'));
  t.equal(shouldExpire(s, 0, rules({ timezone: 'bogus' })), null, 'timezone is only needed when daily reset is on');
});

// ---------------------------------------------------------------- cadences

await t.test('age warning: first message at 12 h, then every 10 messages after it', async (t) => {
  const created = utc(2024, 1, 1);
  const rows: Array<[string, number, number, number | null | undefined, number, boolean]> = [
    // [name, age ms, messageCount, countAtThreshold, hours, due]
    ['1 ms before 12 h', 12 * HOUR - 1, 5, undefined, 12, false],
    ['exactly 12 h, first message past it', 12 * HOUR, 5, undefined, 12, true],
    ['same message again (base just recorded)', 12 * HOUR, 5, 5, 12, false],
    ['9 after', 13 * HOUR, 14, 5, 12, false],
    ['10 after', 13 * HOUR, 15, 5, 12, true],
    ['11 after', 13 * HOUR, 16, 5, 12, false],
    ['20 after', 20 * HOUR, 25, 5, 12, true],
    ['0 hours disables', 100 * HOUR, 10, undefined, 0, false],
    ['custom threshold', 2 * HOUR, 1, null, 2, true],
  ];
  for (const [name, age, count, base, hours, want] of rows) {
    t.equal(ageWarningDue({ createdAt: created, messageCount: count, countAtThreshold: base }, created + age, hours), want, name);
  }
  t.equal(nextCountAtThreshold({ createdAt: created, messageCount: 3 }, created + HOUR, 12), null, 'young: nothing recorded');
  t.equal(nextCountAtThreshold({ createdAt: created, messageCount: 5 }, created + 12 * HOUR, 12), 5, 'first old message recorded');
  t.equal(nextCountAtThreshold({ createdAt: created, messageCount: 9, countAtThreshold: 5 }, created + 13 * HOUR, 12), 5, 'kept once set');
  t.throws(() => ageWarningDue({ createdAt: created, messageCount: -1 }, created, 12), code('invalid-message-count'));
  t.throws(() => ageWarningDue({ createdAt: created, messageCount: 1 }, created, -5), code('invalid-session-rules'));
  t.throws(() => ageWarningDue({ createdAt: created, messageCount: 1 }, Number.POSITIVE_INFINITY, 12), code('invalid-time'));
});

await t.test('memory hook every 6 messages', async (t) => {
  t.same([0, 1, 5, 6, 7, 12, 18, 19].map(memoryHookDue), [false, false, false, true, false, true, true, false]);
  t.throws(() => memoryHookDue(2.5), code('invalid-message-count'));
  t.throws(() => memoryHookDue(-6), code('invalid-message-count'));
});

// ---------------------------------------------------------------- directives and commands

await t.test('parseDirective', async (t) => {
  const long = 'a'.repeat(129);
  const rows: Array<[string, string, { model?: string; rest: string }]> = [
    ['model and text', '@sonnet explain this', { model: 'sonnet', rest: 'explain this' }],
    ['leading spaces, newline after id', '  @gpt-5.1-codex\nline two', { model: 'gpt-5.1-codex', rest: 'line two' }],
    ['id charset . _ : -', '@org:model_v1.2-x hi', { model: 'org:model_v1.2-x', rest: 'hi' }],
    ['directive alone', '@opus', { model: 'opus', rest: '' }],
    ['empty', '', { rest: '' }],
    ['only @', '@', { rest: '@' }],
    ['@ then space', '@ foo', { rest: '@ foo' }],
    ['email-like', 'bob@example.com hi', { rest: 'bob@example.com hi' }],
    ['@ inside id', '@foo@bar.com hi', { rest: '@foo@bar.com hi' }],
    ['punctuation after id', '@sonnet, explain', { rest: '@sonnet, explain' }],
    ['unicode in id', '@sönnet hi', { rest: '@sönnet hi' }],
    ['emoji', '@🤖 hi', { rest: '@🤖 hi' }],
    ['leading dot', '@... hi', { rest: '@... hi' }],
    ['not at start', 'use @sonnet please', { rest: 'use @sonnet please' }],
    ['id too long', `@${long} hi`, { rest: `@${long} hi` }],
    ['id at the limit', `@${'a'.repeat(128)} hi`, { model: 'a'.repeat(128), rest: 'hi' }],
    ['unicode text after', '@flash привет 👋', { model: 'flash', rest: 'привет 👋' }],
  ];
  for (const [name, text, want] of rows) t.same(parseDirective(text), want, name);
  t.same(parseDirective('@MyBot hello', { ignore: ['@mybot'] }), { rest: '@MyBot hello' }, 'bot mention is not a model');
  const huge = `@sonnet ${'x'.repeat(1_000_000)}`;
  t.equal(parseDirective(huge).rest.length, 1_000_000, 'very long text');
  t.throws(() => parseDirective(undefined as never), code('invalid-text'));
});

await t.test('parseChatCommand', async (t) => {
  const rows: Array<[string, string, ReturnType<typeof parseChatCommand>]> = [
    ['new', '/new', { cmd: 'new' }],
    ['reset', '/reset', { cmd: 'reset' }],
    ['stop', ' /stop ', { cmd: 'stop' }],
    ['model alone', '/model', { cmd: 'model' }],
    ['model with id', '/model  sonnet ', { cmd: 'model', arg: 'sonnet' }],
    ['retry', '/retry', { cmd: 'retry' }],
    ['retry addressed to the bot', '/retry@svc_bot', { cmd: 'retry' }],
    ['not retry', '/retryall', null],
    ['agent_restart', '/agent_restart research', { cmd: 'agent_restart', arg: 'research' }],
    ['agent_restart without name', '/agent_restart', { cmd: 'agent_restart' }],
    ['@botname form', '/model@svc_bot opus', { cmd: 'model', arg: 'opus' }],
    ['upper case', '/NEW', { cmd: 'new' }],
    ['multiline arg', '/model opus\nmore', { cmd: 'model', arg: 'opus\nmore' }],
    ['empty', '', null],
    ['slash only', '/', null],
    ['unknown command', '/deploy now', null],
    ['workflow', '/workflow run review --var a=b', { cmd: 'workflow', arg: 'run review --var a=b' }],
    ['prefix of a command', '/newest', null],
    ['glued path', '/new/x', null],
    ['not at start', 'please /new', null],
    ['space after slash', '/ new', null],
    ['unicode command', '/новый', null],
    ['lone @', '/new@', null],
    ['over-long name', `/${'n'.repeat(40)}`, null],
    ['tasks', '/tasks', { cmd: 'tasks' }],
    ['a /tasks button pressed', ' tsc:cancel:abc ', { cmd: 'tasks', arg: 'tsc:cancel:abc' }],
    ['tsc: not at the start', 'see tsc:refresh', null],
  ];
  for (const [name, text, want] of rows) t.same(parseChatCommand(text), want, name);
  t.same(parseChatCommand('/stop@svc_bot', { botName: 'SVC_BOT' }), { cmd: 'stop' }, 'our bot, any case');
  t.equal(parseChatCommand('/stop@other_bot', { botName: 'svc_bot' }), null, 'addressed to another bot');
  t.same(parseChatCommand(`/model ${'x'.repeat(100_000)}`)?.arg?.length, 100_000, 'very long arg');
  t.throws(() => parseChatCommand(42 as never), code('invalid-text'));
});

// ---------------------------------------------------------------- model and effort

await t.test('resolveModel priority: @directive, session override, topic default, model', async (t) => {
  const topicDefaults = { '7': { model: 'flash' }, '8': { model: '  ' } };
  const override = { provider: 'codex', model: 'gpt-5.1-codex' };
  const rows: Array<[string, Parameters<typeof resolveModel>[0], { model: string; source: string }]> = [
    ['directive beats all', { directive: 'haiku', sessionOverride: override, topicId: 7, topicDefaults, configModel: 'opus' }, { model: 'haiku', source: 'directive' }],
    ['override beats topic', { sessionOverride: override, topicId: 7, topicDefaults, configModel: 'opus' }, { model: 'gpt-5.1-codex', source: 'session' }],
    ['topic beats config', { topicId: 7, topicDefaults, configModel: 'opus' }, { model: 'flash', source: 'topic' }],
    ['topic id as string', { topicId: '7', topicDefaults, configModel: 'opus' }, { model: 'flash', source: 'topic' }],
    ['unknown topic', { topicId: 9, topicDefaults, configModel: 'opus' }, { model: 'opus', source: 'config' }],
    ['blank topic default skipped', { topicId: 8, topicDefaults, configModel: 'opus' }, { model: 'opus', source: 'config' }],
    ['reset override (both null)', { sessionOverride: { provider: null, model: null }, configModel: 'opus' }, { model: 'opus', source: 'config' }],
    ['empty directive skipped', { directive: '', configModel: 'opus' }, { model: 'opus', source: 'config' }],
    ['prototype key is no topic', { topicId: 'constructor', topicDefaults, configModel: 'opus' }, { model: 'opus', source: 'config' }],
  ];
  for (const [name, input, want] of rows) t.same(resolveModel(input), want, name);
  t.throws(() => resolveModel({ configModel: ' ' }), code('invalid-model'));
});

await t.test('resolveProviderForModel delegates to the config resolver', async (t) => {
  const rows: Array<[string, string]> = [
    ['opus', 'claude'], ['sonnet', 'claude'], ['flash', 'gemini'], ['gemini-2.5-pro', 'gemini'],
    ['auto-gemini-2.5', 'gemini'], ['gpt-5.1-codex', 'codex'], ['o3', 'codex'],
  ];
  for (const [model, provider] of rows) t.equal(resolveProviderForModel(model), provider, model);
  t.equal(resolveProviderForModel('my-local-gem', ['my-local-gem']), 'gemini', 'discovered gemini model');
});

await t.test('effortFor: claude all four, gemini none, codex when the model supports it', async (t) => {
  const rows: Array<[string, 'claude' | 'codex' | 'gemini', string | undefined, string | null | undefined, string | null]> = [
    ['claude low', 'claude', 'opus', 'low', 'low'],
    ['claude xhigh', 'claude', 'sonnet', 'xhigh', 'xhigh'],
    ['gemini never', 'gemini', 'pro', 'high', null],
    ['codex-max xhigh', 'codex', 'gpt-5.1-codex-max', 'xhigh', 'xhigh'],
    ['gpt-5.1-codex no xhigh', 'codex', 'gpt-5.1-codex', 'xhigh', null],
    ['gpt-5.1-codex high', 'codex', 'gpt-5.1-codex', 'high', 'high'],
    ['codex-mini no xhigh', 'codex', 'gpt-5.1-codex-mini', 'xhigh', null],
    ['gpt-5.2 xhigh', 'codex', 'gpt-5.2', 'xhigh', 'xhigh'],
    ['gpt-4o none', 'codex', 'gpt-4o', 'low', null],
    ['codex default model medium', 'codex', undefined, 'medium', 'medium'],
    ['nothing requested', 'claude', 'opus', undefined, null],
    ['null requested', 'codex', 'o3', null, null],
  ];
  for (const [name, provider, model, requested, want] of rows) t.equal(effortFor(provider, model, requested), want, name);
  t.same(codexEffortsFor('GPT-4.1'), [], 'case-insensitive');
  t.throws(() => effortFor('claude', 'opus', 'max'), code('invalid-reasoning-effort'));
  t.throws(() => effortFor('copilot' as never, 'x', 'low'), code('invalid-provider'));
});

// ---------------------------------------------------------------- provider sessions

await t.test('per-provider session ids: switching provider keeps the other id', async (t) => {
  let s: ProviderSessions = {};
  t.equal(sessionIdFor(s, 'claude'), null);
  s = withSessionId(s, 'claude', 's-1');
  s = withSessionId(s, 'codex', 'th-42');
  t.equal(sessionIdFor(s, 'claude'), 's-1', 'claude id kept after codex started');
  t.equal(sessionIdFor(s, 'codex'), 'th-42');
  const before = s;
  s = resetProvider(s, 'claude');
  t.same(s, { codex: 'th-42' }, 'only claude forgotten');
  t.same(before, { claude: 's-1', codex: 'th-42' }, 'input not mutated');
  s = withSessionId(s, 'codex', 'th-43');
  t.same(s, { codex: 'th-43' }, 'new id replaces');
  t.same(resetProvider({}, 'gemini'), {}, 'reset of an absent id');
  t.equal(JSON.stringify(withSessionId({}, 'gemini', 'g-1')), '{"gemini":"g-1"}', 'plain JSON');
  for (const bad of ['', '   ', 'a\nb', 'x'.repeat(513), 5 as never]) {
    t.throws(() => withSessionId({}, 'claude', bad), code('invalid-session-id'), JSON.stringify(bad));
  }
  t.throws(() => withSessionId({}, 'openai' as never, 'x'), code('invalid-provider'));
  t.throws(() => sessionIdFor({}, 'toString' as never), code('invalid-provider'));
  t.throws(() => resetProvider({}, '' as never), code('invalid-provider'));
});
