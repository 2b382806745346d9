// One rule for an agent acting for a person (schemas `actingUser`): a task created for a user who
// is removed since runs for nobody — its next run fails `unknown-user`, the same refusal the
// internal API gives a call naming that user — instead of running with a stand-in role and no
// `allowed_agents` (which would reach every agent). The real daemon and the fake claude.
import t from 'tap';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startDaemon, type RunningDaemon } from '../../bin/daemon.js';
import { TASK_EVENTS } from '../../schemas/index.js';
import { homePaths } from '../../store/index.js';
import { tempHome } from '../fixtures/temp-home.js';
import { until } from './cli-helpers.js';

const BIN = fileURLToPath(new URL('../fixtures/bin', import.meta.url));

await t.test('a task created for a user who is then removed runs for nobody: its resume fails unknown-user, as a call for them is refused', async (t) => {
  const scratch = tempHome(t);
  const root = join(scratch.dir, 'home');
  const record = join(scratch.dir, 'argv.jsonl');
  mkdirSync(join(root, 'config'), { recursive: true });
  mkdirSync(join(root, '_secrets'), { recursive: true, mode: 0o700 });
  writeFileSync(join(root, 'config', 'config.json'), JSON.stringify({ tasks: { max_parallel: 2, timeout_seconds: 100 } }));
  const paths = homePaths(root);
  const erin = { username: 'erin', role: 'operator', allowed_agents: ['main'] };
  writeFileSync(paths.usersFile, JSON.stringify([erin]), { mode: 0o600 });
  const boot = () => startDaemon({ paths, logToStderr: false, internalPort: 0, killGraceMs: 200, env: { PATH: `${BIN}:${process.env.PATH}`, HOME: root, FAKE_CLI_RECORD: record } });
  let d: RunningDaemon = await boot();
  let running = true;
  scratch.beforeRemove(() => (running ? d.stop('test') : undefined));
  const token = () => (JSON.parse(readFileSync(paths.mainAgentTokenFile, 'utf8')) as { token: string }).token;
  const call = async (path: string, body: unknown, user?: string) => {
    const r = await fetch(`http://127.0.0.1:${d.internalPort}${path}`, {
      method: 'POST',
      headers: { connection: 'close', 'content-type': 'application/json', authorization: `Bearer ${token()}`, ...(user ? { 'x-svc-caller-user-id': user } : {}) },
      body: JSON.stringify(body),
    });
    return { status: r.status, body: (await r.json()) as any };
  };
  const prompts = () => (existsSync(record) ? readFileSync(record, 'utf8').trim().split('\n').filter(Boolean).map((l) => (JSON.parse(l) as { argv: string[] }).argv.join(' ')) : []);
  const facts = (id: string) => d.log.read({ stream: `task:${id}` });

  const created = await call('/tasks/create', { from: 'main', prompt: 'Job for erin' }, 'erin');
  t.equal(created.status, 200);
  const id = created.body.task_id as string;
  t.match(facts(id)[0]!.data, { caller_user: 'erin', caller_role: 'operator' });
  await until('the first run ended', () => facts(id).some((e) => e.type === TASK_EVENTS.completed));

  // erin is removed while the daemon is down.
  await d.stop('test');
  running = false;
  writeFileSync(paths.usersFile, JSON.stringify([]), { mode: 0o600 });
  d = await boot();
  running = true;

  t.match(await call('/tasks/create', { from: 'main', prompt: 'Another for erin' }, 'erin'), { status: 403, body: { code: 'unknown-user' } }, 'a call naming erin is refused');
  t.equal((await call('/tasks/resume', { task_id: id, prompt: 'Again for erin', from: 'main' })).status, 200, 'the resume is accepted: the task is resumable');
  const failed = await until('the resumed run ended', () => facts(id).find((e) => e.type === TASK_EVENTS.failed));
  t.match(failed.data, { reason: 'unknown-user', result: /erin.*no user record/ }, 'its run fails, naming why');
  t.notOk(prompts().some((p) => p.includes('Again for erin')), 'no CLI ran for the removed user');
  const row = await until('tasks.json shows it failed', () => (JSON.parse(readFileSync(paths.tasksFile, 'utf8')) as { task_id: string; status: string; reason: string }[]).find((x) => x.task_id === id && x.status === 'failed'));
  t.equal(row.reason, 'unknown-user');
});
