import t from 'tap';
import { decideSession, evolveSession, type SessionCommand, type SessionFact, type SessionState } from '../../machines/index.js';
import { SESSION_EVENTS } from '../../schemas/index.js';
import { given as givenFacts, type Decider } from './given-when-then.js';

const session: Decider<SessionCommand, SessionState | null, SessionFact> = { decide: decideSession, evolve: evolveSession, initial: null };
const given = (facts: SessionFact[]) => givenFacts(session, facts);

const HOUR = 3_600_000;
const where = { agent: 'main', key: 'direct:1', transport: 'direct', chat_id: 1, topic_id: null };
const rules = { idleTimeoutMinutes: 60, dailyResetEnabled: false, dailyResetHour: 4, timezone: 'UTC', maxSessionMessages: 3 };
const startedAt = (now: number, reason = 'first'): SessionFact => ({ type: SESSION_EVENTS.started, data: { ...where, created_at: now, reason } });
const recorded = (n: number, at: number, extra: Partial<{ provider: string; session_id: string | null; session_reset: boolean; count_at_threshold: number | null }> = {}): SessionFact => ({
  type: SESSION_EVENTS.turn_recorded,
  data: { turn_id: `t${n}`, provider: 'claude', session_id: 's1', session_reset: false, message_count: n, count_at_threshold: null, at_ms: at, ...extra },
});
const begin = (now: number, freshAsked = false): SessionCommand => ({ type: 'begin-turn', where, freshAsked, rules, now });
const record = (now: number, extra: Partial<{ provider: string; session_id: string | null; session_reset: boolean; warningHours: number }> = {}): SessionCommand => ({
  type: 'record-turn', turn_id: 'tn', provider: 'claude', session_id: 's1', session_reset: false, warningHours: 0, now, ...extra,
});

await t.test('the first message of a chat opens its session', async (t) => {
  t.same(given([]).when(begin(1000)).facts(), [startedAt(1000, 'first')]);
});

await t.test('a live session carries on: no fact', async (t) => {
  t.same(given([startedAt(0), recorded(1, 1000)]).when(begin(2000)).facts(), []);
});

await t.test('new_session on the message opens a fresh one even when the old one is live', async (t) => {
  t.same(given([startedAt(0)]).when(begin(10, true)).facts(), [startedAt(10, 'new')]);
});

await t.test('expiry: idle, then the message cap, each named as the reason', async (t) => {
  t.same(given([startedAt(0), recorded(1, 0)]).when(begin(HOUR)).facts(), [startedAt(HOUR, 'idle')]);
  t.same(given([startedAt(0), recorded(1, 0), recorded(2, 1), recorded(3, 2)]).when(begin(3)).facts(), [startedAt(3, 'max_messages')]);
});

await t.test('a resume-only turn never opens a session: no session, a fresh one asked for, or an expired one is refused', async (t) => {
  const resumeOnly = (now: number, freshAsked = false): SessionCommand => ({ ...begin(now, freshAsked), resumeOnly: true } as SessionCommand);
  t.equal(given([]).when(resumeOnly(1000)).rejection(), 'no-session');
  t.equal(given([startedAt(0), recorded(1, 0)]).when(resumeOnly(HOUR)).rejection(), 'no-session', 'idle: the next message would start afresh');
  t.equal(given([startedAt(0), recorded(1, 0), recorded(2, 1), recorded(3, 2)]).when(resumeOnly(3)).rejection(), 'no-session', 'at the message cap');
  t.equal(given([startedAt(0)]).when(resumeOnly(10, true)).rejection(), 'no-session');
  const daily = { ...rules, idleTimeoutMinutes: 0, dailyResetEnabled: true, dailyResetHour: 4 };
  const evening = Date.parse('2026-11-27T20:00:00Z');
  const w = given([startedAt(evening - HOUR), recorded(1, evening)]).when({ ...resumeOnly(Date.parse('2026-11-28T08:00:00Z')), rules: daily } as SessionCommand);
  t.match(w.decision, { ok: false, code: 'no-session', message: /daily_reset/ }, 'past the daily reset');
  t.same(given([startedAt(0), recorded(1, 1000)]).when(resumeOnly(2000)).facts(), [], 'a live session carries on');
});

await t.test('/new and /reset always start over, keeping the reason', async (t) => {
  for (const reason of ['new', 'reset'] as const) {
    const w = given([startedAt(0), recorded(1, 5)]).when({ type: 'reset', where, reason, now: 9 });
    t.same(w.facts(), [startedAt(9, reason)]);
    t.match(w.state(), { createdAt: 9, messageCount: 0, providerSessions: {} });
  }
});

await t.test('a recorded turn counts the message and keeps the provider session to resume', async (t) => {
  const w = given([startedAt(0), recorded(1, 5)]).when(record(7, { session_id: 's2' }));
  t.same(w.facts(), [{ type: SESSION_EVENTS.turn_recorded, data: { turn_id: 'tn', provider: 'claude', session_id: 's2', session_reset: false, message_count: 2, count_at_threshold: null, at_ms: 7, warning_hours: 0 } }]);
  t.match(w.state(), { messageCount: 2, lastActiveAt: 7, providerSessions: { claude: 's2' } });
});

await t.test('a provider that dropped its session is not resumed', async (t) => {
  const w = given([startedAt(0), recorded(1, 5)]).when(record(7, { session_id: null, session_reset: true }));
  t.equal(w.state()?.providerSessions.claude, undefined);
});

await t.test('the age threshold is fixed once, at the first turn past it', async (t) => {
  const old = given([startedAt(0), recorded(1, 1)]);
  t.match(old.when(record(3 * HOUR, { warningHours: 2 })).facts(), [{ data: { count_at_threshold: 2 } }]);
  const fixed = given([startedAt(0), recorded(1, 1), recorded(2, 3 * HOUR, { count_at_threshold: 2 })]);
  t.match(fixed.when(record(4 * HOUR, { warningHours: 2 })).facts(), [{ data: { count_at_threshold: 2, message_count: 3 } }]);
});

await t.test('a turn recorded without a session is refused and changes nothing', async (t) => {
  const w = given([]).when(record(1));
  t.equal(w.rejection(), 'no-session');
  t.equal(w.state(), null);
});

await t.test('a message after an unknown fact type still folds (restore ignores what it does not know)', async (t) => {
  const unknown = { type: 'session.something_new', data: {} } as unknown as SessionFact;
  t.match(given([startedAt(0), unknown, recorded(1, 5)]).state, { messageCount: 1 });
});
