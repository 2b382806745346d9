// Issue 13's "done when" for tasks, through the agent tool scripts a CLI runs: create_task.py starts
// a task, ask_parent.py (run as the task's CLI would, with its SVC_TASK_ID) asks the parent and
// blocks, the question reaches the admin chat, the parent answers with resume_task.py, the task
// finishes and its result reaches the parent's chat. The real daemon, real SQLite, real sockets; the
// fake claude held at a gate until the test opens it; every wait is on a fact of the log.
import t from 'tap';
import { spawn } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startDaemon } from '../../bin/daemon.js';
import { homePaths } from '../../store/index.js';
import { tempHome } from '../fixtures/temp-home.js';
import { until } from './cli-helpers.js';

const BIN = fileURLToPath(new URL('../fixtures/bin', import.meta.url));
const TOOLS = fileURLToPath(new URL('../../home-defaults/workspace/tools/', import.meta.url));

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

function tool(name: string, args: string[], env: NodeJS.ProcessEnv): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn('/usr/bin/python3', [join(TOOLS, name), ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d));
    child.stderr.on('data', (d: Buffer) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

await t.test('a task made by create_task.py asks its parent, is answered with resume_task.py and reports back', async (t) => {
  const scratch = tempHome(t);
  const root = join(scratch.dir, 'home');
  const gate = join(scratch.dir, 'gate');
  mkdirSync(gate);
  mkdirSync(join(root, 'config'), { recursive: true });
  const paths = homePaths(root);
  const d = await startDaemon({ paths, logToStderr: false, internalPort: 0, killGraceMs: 200, env: { PATH: `${BIN}:${process.env.PATH}`, HOME: root, FAKE_CLI_GATE_DIR: gate } });
  scratch.beforeRemove(() => d.stop('test'));
  const token = (JSON.parse(readFileSync(paths.mainAgentTokenFile, 'utf8')) as { token: string }).token;
  // What svc hands the main agent's CLI, so its tools act as main.
  const mainEnv = { PATH: process.env.PATH, SVC_INTERAGENT_PORT: String(d.internalPort), SVC_AGENT_NAME: 'main', SVC_INTERAGENT_TOKEN: token };
  const merged = (kind: string) => d.log.read({ types: ['chat.messages_merged'] }).filter((e) => JSON.stringify(e.data).includes(`"kind":"${kind}"`));

  const created = await tool('create_task.py', ['--name', 'research', 'Find', 'the', 'year'], mainEnv);
  t.equal(created.code, 0, created.stderr);
  const id = created.stdout.trim();
  t.match(id, /^[A-Za-z0-9_-]+$/);
  await until('the task run at the gate', () => d.log.read({ streamPrefix: 'turn:', types: ['turn.started'] }).some((e) => e.correlation === `task:${id}`));

  // The task's CLI asks; its tool blocks until the parent answers.
  const asking = tool('ask_parent.py', ['Which', 'year?'], { ...mainEnv, SVC_TASK_ID: id });
  await until('the question asked', () => d.log.read({ stream: `task:${id}`, types: ['task.question_asked'] }).length > 0);
  const question = await until('the question in the admin chat', () => merged('task_question')[0]);
  t.match(JSON.stringify(question.data), /Which year\?/);
  t.match(JSON.parse(readFileSync(paths.tasksFile, 'utf8')), [{ task_id: id, status: 'waiting', name: 'research' }], 'shown as waiting for an answer');

  // Another local process without main's token can neither answer nor steer the task.
  const intruder = await tool('resume_task.py', [id, 'forged'], { ...mainEnv, SVC_INTERAGENT_TOKEN: 'x'.repeat(43) });
  t.equal(intruder.code, 1);
  t.match(intruder.stderr, /HTTP 401/);

  const answered = await tool('resume_task.py', [id, '2025'], mainEnv);
  t.same([answered.code, answered.stdout], [0, `${id}\n`], answered.stderr);
  t.same(await asking, { code: 0, stdout: '2025\n', stderr: '' }, 'ask_parent.py prints the answer');

  writeFileSync(join(gate, 'open'), '');
  await until('the task done', () => d.log.read({ stream: `task:${id}`, types: ['task.completed'] }).length > 0);
  const result = await until('the result in the admin chat', () => merged('task_result')[0]);
  t.match(JSON.stringify(result.data), new RegExp(id));
  await until('the result reached the parent session', () =>
    d.log.read({ streamPrefix: 'turn:', types: ['turn.started'] }).some((e) => (e.data as { prompt?: string }).prompt?.includes(`(${id}) finished]`)),
  );

  const listed = await tool('list_tasks.py', [], mainEnv);
  t.same([listed.code, listed.stdout], [0, `${id}\tdone\tresearch\n`]);
  const deleted = await tool('delete_task.py', [id], mainEnv);
  t.same([deleted.code, deleted.stdout], [0, `deleted ${id}\n`]);
  t.same((await tool('list_tasks.py', [], mainEnv)).stdout, 'no tasks\n');
});
