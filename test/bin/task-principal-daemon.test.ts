// Work runs with the rights of whoever caused it: a token-less (legacy) sub-agent's calls prove
// nothing, so its task, the wake turn that reports the task's result and the wake turn that
// delivers an async reply all run the CLI at the viewer's permission mode (`default`), also after
// a restart; the main agent, proven by its token, keeps the framework's admin mode. The real
// daemon, the fake claude recording its argv (FAKE_CLI_RECORD), waits on facts of the log.
import t from 'tap';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startDaemon, type RunningDaemon } from '../../bin/daemon.js';
import { homePaths } from '../../store/index.js';
import { tempHome } from '../fixtures/temp-home.js';
import { until } from './cli-helpers.js';

const BIN = fileURLToPath(new URL('../fixtures/bin', import.meta.url));

interface Spawn {
  argv: string[];
}

await t.test("a token-less caller's tasks, task results and async replies run at the viewer's permission mode", async (t) => {
  const scratch = tempHome(t);
  const root = join(scratch.dir, 'home');
  const record = join(scratch.dir, 'argv.jsonl');
  mkdirSync(join(root, 'config'), { recursive: true });
  mkdirSync(join(root, '_secrets'), { recursive: true, mode: 0o700 });
  writeFileSync(join(root, 'config', 'config.json'), JSON.stringify({ tasks: { max_parallel: 2, timeout_seconds: 100 } }));
  // dave: legacy, no interagent_token (and no can_call).
  writeFileSync(join(root, '_secrets', 'agents.json'), JSON.stringify([{ name: 'dave', telegram_token: '3:x' }]));
  const paths = homePaths(root);
  const boot = () => startDaemon({ paths, logToStderr: false, internalPort: 0, killGraceMs: 200, env: { PATH: `${BIN}:${process.env.PATH}`, HOME: root, FAKE_CLI_RECORD: record } });
  let d: RunningDaemon = await boot();
  let running = true;
  scratch.beforeRemove(() => (running ? d.stop('test') : undefined));

  const mainToken = () => (JSON.parse(readFileSync(paths.mainAgentTokenFile, 'utf8')) as { token: string }).token;
  const call = async (path: string, body: unknown, token: string | null) => {
    const r = await fetch(`http://127.0.0.1:${d.internalPort}${path}`, {
      method: 'POST',
      headers: { connection: 'close', 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
      body: JSON.stringify(body),
    });
    return { status: r.status, body: (await r.json()) as any };
  };
  const spawns = (): Spawn[] => (existsSync(record) ? readFileSync(record, 'utf8').trim().split('\n').filter(Boolean).map((l) => JSON.parse(l) as Spawn) : []);
  const prompt = (s: Spawn) => s.argv.slice(s.argv.indexOf('--') + 1).join(' ');
  const modeOf = (s: Spawn) => s.argv[s.argv.indexOf('--permission-mode') + 1];
  const spawnOf = (what: string, match: (p: string) => boolean) => until(what, () => spawns().find((s) => match(prompt(s))));
  const facts = (id: string) => d.log.read({ stream: `task:${id}` });

  // Token-less dave creates a task, with no credentials at all.
  const created = await call('/tasks/create', { from: 'dave', prompt: 'Legacy job' }, null);
  t.equal(created.status, 200, 'legacy mode keeps working');
  const daveTask = created.body.task_id as string;
  t.equal(modeOf(await spawnOf("dave's task run", (p) => p.startsWith('Legacy job'))), 'default', "the task's CLI runs at the viewer's mode");
  t.equal(modeOf(await spawnOf("dave's wake turn with the result", (p) => p.startsWith(`[Task "Legacy job" (${daveTask}) finished]`))), 'default', 'so does the wake turn reporting its result');
  t.match(facts(daveTask)[0]!.data, { caller_user: null, caller_role: 'viewer' }, 'the role rides with the task');

  // The main agent, proven by its token and acting for no person: the framework's admin mode.
  const mainTask = (await call('/tasks/create', { from: 'main', prompt: 'Main job' }, mainToken())).body.task_id as string;
  t.equal(modeOf(await spawnOf("main's task run", (p) => p.startsWith('Main job'))), 'bypassPermissions', 'a token-authenticated caller keeps its role');
  t.equal(modeOf(await spawnOf("main's wake turn", (p) => p.startsWith(`[Task "Main job" (${mainTask}) finished]`))), 'bypassPermissions');

  // An async call by dave: the callee's turn and the wake turn delivering the reply both as a viewer.
  const asked = await call('/interagent/send_async', { from: 'dave', to: 'main', message: 'Async question' }, null);
  t.equal(asked.status, 200);
  t.equal(modeOf(await spawnOf("main's turn for dave's call", (p) => p.includes('Async question') && !p.startsWith('[Reply'))), 'default');
  t.equal(modeOf(await spawnOf("dave's wake turn with the reply", (p) => p.startsWith(`[Reply from agent "main" to your async request ${asked.body.task_id as string}]`))), 'default', 'the reply wakes dave as a viewer');

  // After a restart, a resume of dave's task still runs at the viewer's mode.
  await d.stop('test');
  running = false;
  d = await boot();
  running = true;
  t.equal((await call('/tasks/resume', { task_id: daveTask, prompt: 'Again after restart', from: 'dave' }, null)).status, 200);
  t.equal(modeOf(await spawnOf("dave's resumed run", (p) => p.startsWith('Again after restart'))), 'default', 'the resumed run too');
  await until('the resumed run ended', () => facts(daveTask).filter((e) => e.type === 'task.completed').length === 2);
  t.equal(modeOf(await spawnOf("dave's second wake turn", (p) => p.startsWith(`[Task "Legacy job" (${daveTask}) finished]`) && spawns().filter((s) => prompt(s).startsWith(`[Task "Legacy job"`)).length === 2)), 'default');
});
