// Cron end to end on the real daemon with the fake CLIs: each run status a CLI run can end with
// (success, folder missing, provider binary not found, timeout, exit code) through a manual run, a
// cron_task webhook sharing the runner, and a daemon SIGKILLed during a cron run: at restart the
// run is recorded failed, its orphaned CLI is gone, and that fire never runs again.
import t from 'tap';
import { spawn } from 'node:child_process';
import { mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { SimulatedClock } from 'xstate';
import { prepareCronJobFolder } from '../../actors/index.js';
import { startDaemon } from '../../bin/daemon.js';
import { AUTOMATION_EVENTS, CRON_COMMANDS, ONESHOT_EVENTS, type AnyEnvelope, type CronJobRecord, type Principal } from '../../schemas/index.js';
import { homePaths, saveCronJobs } from '../../store/index.js';
import { tempHome } from '../fixtures/temp-home.js';
import { exited, until, processAlive } from './cli-helpers.js';

const BIN = fileURLToPath(new URL('../fixtures/bin', import.meta.url));
const CHILD = fileURLToPath(new URL('../fixtures/daemon-cron-child.ts', import.meta.url));
const TS_LOADER = import.meta.resolve('@tapjs/typescript/import');
const ADMIN: Principal = { kind: 'system', id: null, acting_for: null, role: 'admin', allowed_agents: [], origin: { transport: 'internal', chat_id: null, topic_id: null } };

const alive = processAlive;

await t.test('run statuses through a real daemon and the fake CLIs', async (t) => {
  const scratch = tempHome(t);
  const root = join(scratch.dir, 'home');
  mkdirSync(join(root, 'config'), { recursive: true });
  // Long enough for a fake CLI to answer on a loaded CI machine; `slow` holds until it runs out.
  writeFileSync(join(root, 'config', 'config.json'), JSON.stringify({ cli_timeout: 5, timeouts: { extend_on_activity: false }, webhooks: { enabled: true, host: '127.0.0.1', token: 'w'.repeat(40) } }));
  // Only claude and codex on PATH: a job on gemini finds no binary.
  const bin = join(scratch.dir, 'bin');
  mkdirSync(bin);
  for (const p of ['claude', 'codex']) symlinkSync(join(BIN, p), join(bin, p));
  const paths = homePaths(root);
  const job = (id: string, description: string, extra: Record<string, unknown> = {}) => ({ id, title: `Job ${id}`, schedule: '0 0 1 1 *', agent: 'main', enabled: true, description, ...extra });
  const jobs = [
    job('ok', 'say hello', { provider: 'codex', cli_parameters: { codex: ['--skip-git-repo-check'] } }),
    job('nofolder', 'say hello'),
    job('gem', 'say hello', { provider: 'gemini' }),
    job('slow', '[[hold]] wait'),
    job('fail', '[[fail]] now'),
    // No provider: the model's (gpt-5 is codex's), or the agent's own model's (claude by default).
    job('bymodel', 'say hello', { model: 'gpt-5', cli_parameters: { codex: ['--codex-only'], claude: ['--claude-only'] } }),
    job('byagent', 'say hello', { cli_parameters: { codex: ['--codex-only'], claude: ['--claude-only'] } }),
  ];
  saveCronJobs(paths, jobs as unknown as CronJobRecord[]);
  for (const j of jobs) if (j.id !== 'nofolder') prepareCronJobFolder(paths, j.id);
  writeFileSync(join(root, 'webhooks.json'), JSON.stringify([{ id: 'build', agent: 'main', enabled: true, mode: 'cron_task', prompt_template: 'build {{what}}', dependency: 'nightly' }]));
  const d = await startDaemon({ paths, logToStderr: false, internalPort: 0, webhookPort: 0, killGraceMs: 200, env: { PATH: `${bin}:/usr/bin:/bin`, HOME: root, FAKE_CLI_RECORD: join(scratch.dir, 'argv.log') } });
  scratch.beforeRemove(() => d.stop('test'));
  const finished = (id: string) => d.log.read({ stream: `cron:${id}` }).find((e) => e.type === AUTOMATION_EVENTS.run_finished);
  for (const j of jobs) t.same(await d.bus.send(CRON_COMMANDS.run, { principal: ADMIN, id: j.id }), { started: true }, `run ${j.id}`);
  const status = async (id: string) => (await until(`${id} to finish`, () => finished(id), 20_000)).data.status;
  t.equal(await status('ok'), 'success');
  t.equal(await status('nofolder'), 'error:folder_missing');
  t.equal(await status('gem'), 'error:cli_not_found_gemini');
  t.equal(await status('slow'), 'error:timeout', 'cli_timeout applies');
  t.equal(await status('fail'), 'error:exit_1');
  t.match(finished('ok')!.data, { result: /echo: say hello/ });
  // A run's session is never resumed: it ends with the run, and a restart does not bring it back.
  const okRun = finished('ok')!.data.run_id as string;
  await until('the run\'s session to end', () => d.log.read({ stream: `session:main:task:${okRun}` }).some((e) => e.type === 'session.ended'));
  t.equal(await status('bymodel'), 'success');
  t.equal(await status('byagent'), 'success');
  // Only once every run has finished (bymodel and byagent ran until just now); each ends its session right after its run.
  const sessions = (type: string) => d.log.read({ streamPrefix: 'session:main:task:' }).filter((e) => e.type === type).length;
  t.ok(await until(() => `every run's session to end: ${sessions('session.started')} started, ${sessions('session.ended')} ended`, () => sessions('session.started') === sessions('session.ended')), 'every run that opened a session ended it');
  const argv = readFileSync(join(scratch.dir, 'argv.log'), 'utf8');
  t.match(argv, /--skip-git-repo-check/, 'the job’s own CLI parameters');
  t.notMatch(argv, /resume/, 'never a resumed session');
  // Task-level parameters of the provider that runs, resolved as the agent resolves it, not merged.
  const ran = argv.trim().split('\n').map((l) => JSON.parse(l) as { provider: string; argv: string[]; cwd: string });
  const of = (id: string) => ran.find((r) => r.cwd.endsWith(`/cron_tasks/${id}`))!;
  t.equal(of('bymodel').provider, 'codex', 'model gpt-5 runs on codex');
  t.ok(of('bymodel').argv.includes('--codex-only'), 'with the job’s codex parameters');
  t.notOk(of('bymodel').argv.includes('--claude-only'));
  t.equal(of('byagent').provider, 'claude', 'no model: the agent’s own (claude)');
  t.ok(of('byagent').argv.includes('--claude-only'), 'with the job’s claude parameters');
  t.notOk(of('byagent').argv.includes('--codex-only'));
  const records = JSON.parse(readFileSync(paths.cronJobsFile, 'utf8')) as Record<string, unknown>[];
  t.match(records.find((r) => r.id === 'ok'), { last_status: 'success', execution_count: 1 });
  t.match(records.find((r) => r.id === 'fail'), { last_status: 'error:exit_1' });
  await t.rejects(d.bus.send(CRON_COMMANDS.run, { principal: ADMIN, id: 'nope' }), { code: 'not-found' });

  // A cron_task webhook runs through the same runner (its folder is made on its first run).
  const res = await fetch(`http://127.0.0.1:${d.webhookPort}/hooks/build`, { method: 'POST', headers: { connection: 'close', 'content-type': 'application/json', authorization: `Bearer ${'w'.repeat(40)}` }, body: JSON.stringify({ what: 'docs' }) });
  t.equal(res.status, 202);
  const runs = () => d.log.read({ streamPrefix: 'oneshot:' });
  const queued = await until('the webhook run', () => runs().find((e) => e.type === ONESHOT_EVENTS.queued && e.data.source === 'webhook:build'));
  t.match(queued.data, { folder: 'webhook_build', dependency: 'nightly' });
  const done = await until('its end', () => runs().find((e) => e.type === ONESHOT_EVENTS.finished && e.data.run_id === queued.data.run_id), 20_000);
  t.equal(done.data.status, 'success');
});

await t.test('a daemon SIGKILLed during a cron run: recorded failed at restart, the fire never runs twice', async (t) => {
  const scratch = tempHome(t);
  const root = join(scratch.dir, 'home');
  const paths = homePaths(root);
  const start = Math.floor(Date.now() / 60_000) * 60_000 + 30_000;
  saveCronJobs(paths, [{ id: 'tick', title: 'Tick', schedule: '* * * * *', agent: 'main', enabled: true, description: '[[hold]] tick', created_at: Math.floor(start / 1000) }] as unknown as CronJobRecord[]);
  prepareCronJobFolder(paths, 'tick');
  const child = spawn(process.execPath, [`--import=${TS_LOADER}`, CHILD, root, String(start)], { env: { ...process.env, TS_NODE_TRANSPILE_ONLY: '1' }, stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  child.stdout.on('data', (b) => (out += b));
  const [, fireId] = await until('the fire', () => /fired (\S+)/.exec(out), 30_000);
  const [, pidText] = await until('its CLI', () => /spawned (\d+)/.exec(out), 30_000);
  child.kill('SIGKILL');
  await exited(child);
  const cliPid = Number(pidText);
  t.ok(alive(cliPid), 'the CLI outlived the daemon');

  // Restart 30 s after that fire: its minute is past, the next one not yet due.
  const clock = new SimulatedClock();
  const scheduled = Date.parse(fireId!.slice('tick@'.length));
  clock.set(scheduled + 30_000);
  const d = await startDaemon({ paths, logToStderr: false, internalPort: 0, killGraceMs: 200, clock: () => clock.now(), cronClock: clock, env: { PATH: `${BIN}:${process.env.PATH}`, HOME: root } });
  scratch.beforeRemove(() => d.stop('test'));
  const facts = (): AnyEnvelope[] => d.log.read({ stream: 'cron:tick' });
  const cut = await until('the cut run to be recorded', () => facts().find((e) => e.type === AUTOMATION_EVENTS.run_finished && e.data.fire_id === fireId));
  t.equal(cut.data.status, 'error:interrupted');
  t.ok(d.log.read({ streamPrefix: 'oneshot:' }).some((e) => e.type === ONESHOT_EVENTS.finished && e.data.status === 'error:interrupted'), 'its one-shot run too');
  await until('the orphaned CLI to be gone', () => !alive(cliPid), 10_000);
  t.equal(facts().filter((e) => e.type === AUTOMATION_EVENTS.fired).length, 1, 'nothing fired again at restart');
  clock.increment(40_000);
  await until('the next minute to fire', () => facts().filter((e) => e.type === AUTOMATION_EVENTS.fired).length === 2);
  const ids = facts().filter((e) => e.type === AUTOMATION_EVENTS.fired).map((e) => e.data.fire_id);
  t.equal(ids[1], `tick@${new Date(scheduled + 60_000).toISOString()}`);
  t.equal(new Set(ids).size, 2, 'each fire once');
});
