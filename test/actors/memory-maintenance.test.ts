import t from 'tap';
import * as fs from 'node:fs';
import { join } from 'node:path';
import { DailyJob, MemoryMaintenance, seedMemoryReview } from '../../actors/index.js';
import { Bus } from '../../bus/index.js';
import { MEMORY_REVIEW_JOB_ID, checkMemory, memoryReviewJob, sessionsPastMaxAge } from '../../machines/index.js';
import { AGENT_COMMANDS, MEMORY_MAINTENANCE_EVENTS, NOTIFICATION_COMMANDS, defaultConfig, type CreateNotification, type SessionEnd, type SessionSummary } from '../../schemas/index.js';
import { MemoryEventLog, homePaths, loadCronJobs, saveCronJobs } from '../../store/index.js';
import { TimerClock } from '../fixtures/timer-clock.js';
import { until } from '../fixtures/until.js';

const DAY = 86_400_000;
const NOW = Date.parse('2026-11-27T04:00:00.000Z');

await t.test('sessionsPastMaxAge: older than the limit, never busy or task sessions', async (t) => {
  const s = (key: string, ageDays: number, busy = false) => ({ key, createdMs: NOW - ageDays * DAY, busy });
  const list = [s('api:1', 31), s('api:2', 29), s('api:3', 45, true), s('task:x', 90), s('api:4', 30.001)];
  t.same(sessionsPastMaxAge(list, NOW, 30).map((x) => x.key), ['api:1', 'api:4']);
  t.same(sessionsPastMaxAge(list, NOW, 0), [], '0 keeps every session');
});

await t.test('checkMemory: modules over the limit (nested too) and Always Load entries that do not exist', async (t) => {
  const main = '# Main\n\n## Always Load\n\n| Module | Why |\n|---|---|\n| projects | work |\n| gone.md | removed |\n';
  const check = checkMemory(
    [
      { filename: 'MAINMEMORY.md', lines: 200 },
      { filename: 'modules/projects.md', lines: 80 },
      { filename: 'modules/big.md', lines: 81 },
      { filename: 'modules/people/alice.md', lines: 120 },
    ],
    main,
    80,
  );
  t.same(check.overLimit, [{ filename: 'modules/big.md', lines: 81 }, { filename: 'modules/people/alice.md', lines: 120 }], 'root files are not modules; 80 lines is within');
  t.same(check.missing, ['modules/gone.md']);
});

await t.test('the memory-review record: monthly at the memory check hour, for main', async (t) => {
  t.match(memoryReviewJob(4), { id: MEMORY_REVIEW_JOB_ID, schedule: '0 4 1 * *', agent: 'main', enabled: true });
});

function memoryWorkspace(base: string): string {
  const ws = join(base, 'ws');
  fs.mkdirSync(join(ws, 'memory_system', 'modules', 'nested'), { recursive: true });
  fs.writeFileSync(join(ws, 'memory_system', 'MAINMEMORY.md'), '# Main\n\n## Always Load\n\n| Module | Why |\n|---|---|\n| big | work |\n| missing | gone |\n');
  fs.writeFileSync(join(ws, 'memory_system', 'modules', 'big.md'), Array.from({ length: 100 }, (_, i) => `- fact ${i}`).join('\n') + '\n');
  fs.writeFileSync(join(ws, 'memory_system', 'modules', 'nested', 'deep.md'), Array.from({ length: 90 }, (_, i) => `- deep ${i}`).join('\n'));
  fs.writeFileSync(join(ws, 'memory_system', 'modules', 'small.md'), '- one\n');
  return ws;
}

function session(chat: number, ageDays: number, busy = false): SessionSummary {
  return {
    id: `main:api:${chat}`, agent: 'main', key: `api:${chat}`, transport: 'api', chat_id: chat, topic_id: null,
    created_at: new Date(NOW - ageDays * DAY).toISOString(), last_active: new Date(NOW - 1000).toISOString(), message_count: 4, providers: ['claude'], busy,
  };
}

await t.test('the daily run on a simulated clock: old sessions ended through the agents, big modules reported once and left whole', async (t) => {
  const ws = memoryWorkspace(t.testdir());
  const bigBefore = fs.readFileSync(join(ws, 'memory_system', 'modules', 'big.md'), 'utf8');
  const clock = new TimerClock();
  clock.set(Date.parse('2026-11-27T00:00:00.000Z'));
  const log = new MemoryEventLog();
  const bus = new Bus({ log, clock: () => clock.now() });
  const ended: SessionEnd[] = [];
  const notes: CreateNotification[] = [];
  bus.handle(AGENT_COMMANDS.sessions, 'fake', () => [session(1, 31), session(2, 3), session(3, 40, true)]);
  bus.handle(AGENT_COMMANDS.endSession, 'fake', (cmd) => {
    ended.push(cmd.data);
    return { killed: 0 };
  });
  bus.handle(NOTIFICATION_COMMANDS.create, 'fake', (cmd) => {
    notes.push(cmd.data);
    return { persisted: false as const };
  });
  const cfg = defaultConfig().memory;
  const maintenance = new MemoryMaintenance({ bus, agents: () => ['main'], configOf: () => cfg, workspaceOf: () => ws });
  const job = new DailyJob({ clock, now: () => clock.now(), hour: () => cfg.check_hour, timeZone: () => 'UTC', run: async (at) => void (await maintenance.run(at)), onError: (m) => t.fail(m) });
  t.teardown(async () => {
    await job.stop();
    bus.close();
  });
  job.start();
  const facts = () => log.read({ stream: 'housekeeping' });
  clock.increment(4 * 3_600_000 - 1);
  t.same(clock.pending(), [clock.now() + 1], 'not run yet: the one timer is due at the check hour');
  t.same(ended, [], 'nothing before the check hour');
  clock.increment(1);
  await until('the first run\'s fact', () => facts().length === 1);
  t.same(ended.map((e) => [e.id, e.principal.kind]), [['main:api:1', 'system']], 'the 31-day-old idle session is ended; the busy one waits');
  t.equal(notes.length, 1);
  t.match(notes[0]!.body, /modules\/big\.md has 100 lines[\s\S]*modules\/nested\/deep\.md has 90 lines/);
  t.equal(fs.readFileSync(join(ws, 'memory_system', 'modules', 'big.md'), 'utf8'), bigBefore, 'a module over the limit is not truncated');
  t.equal(facts().length, 1);
  t.match(facts()[0]!.data, {
    sessions_expired: 1,
    over_limit: [{ agent: 'main', filename: 'modules/big.md', lines: 100 }, { agent: 'main', filename: 'modules/nested/deep.md', lines: 90 }],
    line_limit: 80,
    missing: [{ agent: 'main', filename: 'modules/missing.md' }],
  });
  clock.increment(DAY);
  await until('the next day\'s fact', () => facts().length === 2);
  t.equal(facts().length, 2, 'the next day runs again');
  t.equal(notes.length, 1, 'the same modules are not reported every day');
});

await t.test('the memory-review cron record is seeded once; a user who deletes it does not get it back', async (t) => {
  const paths = homePaths(t.testdir());
  fs.mkdirSync(paths.root, { recursive: true });
  saveCronJobs(paths, [{ id: 'mine', title: 'Mine', schedule: '0 9 * * *', agent: 'main', enabled: true, description: '' }]);
  const log = new MemoryEventLog();
  const bus = new Bus({ log, clock: () => NOW });
  t.teardown(() => bus.close());
  const seededBefore = () => log.read({ stream: 'housekeeping', types: [MEMORY_MAINTENANCE_EVENTS.review_seeded] }).length > 0;
  const deps = { bus, paths, seededBefore, checkHour: 4 };
  t.equal(await seedMemoryReview(deps), 'seeded');
  t.same(loadCronJobs(paths).map((j) => j.id), ['mine', MEMORY_REVIEW_JOB_ID], 'the user\'s jobs are kept');
  t.equal(await seedMemoryReview(deps), 'already-seeded', 'idempotent');
  t.equal(loadCronJobs(paths).length, 2);
  saveCronJobs(paths, loadCronJobs(paths).filter((j) => j.id !== MEMORY_REVIEW_JOB_ID));
  t.equal(await seedMemoryReview(deps), 'already-seeded');
  t.same(loadCronJobs(paths).map((j) => j.id), ['mine'], 'deleted stays deleted');
  t.equal(log.read({ stream: 'housekeeping' }).length, 1, 'one fact, the first time');
});

