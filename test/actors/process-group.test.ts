import t from 'tap';
import { existsSync, readFileSync } from 'node:fs';
import { delimiter, join, resolve } from 'node:path';
import {
  claudeAdapter,
  codexAdapter,
  geminiAdapter,
  runProcess,
  type ProcessExit,
  type ProviderAdapter,
  type RunOptions,
  type StreamEvent,
  type TurnRequest,
} from '../../actors/index.js';
import { until } from '../fixtures/until.js';

const BIN = resolve(import.meta.dirname, '../fixtures/bin');
const ADAPTERS = { claude: claudeAdapter, codex: codexAdapter, gemini: geminiAdapter } as const;
// The suite sets it for the daemons other files start; here it would only be one more SVC_ variable the CLIs inherit.
delete process.env.SVC_PANEL_LISTEN;

interface Run {
  events: StreamEvent[];
  lines: string[];
  oversize: number[];
  stderr: string;
  exit: ProcessExit;
}

/** Alive and not a zombie: an unreaped orphan no longer runs anything. */
function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
  } catch {
    return false;
  }
}

function request(dir: string, over: Partial<TurnRequest>): TurnRequest {
  return {
    provider: 'claude',
    prompt: 'hello',
    permissionMode: 'acceptEdits',
    additionalDirectories: [],
    cliParameters: [],
    streaming: true,
    cwd: dir,
    ...over,
  };
}

function start(req: TurnRequest, fakeEnv: Record<string, string>, opts: RunOptions = {}) {
  const adapter: ProviderAdapter = ADAPTERS[req.provider];
  const inv = adapter.buildInvocation(req, { tempDir: join(req.cwd, 'tmp-turn') });
  const parser = adapter.createParser(req.resumeSessionId ? { sessionId: req.resumeSessionId } : {});
  const run: Omit<Run, 'exit'> = { events: [], lines: [], oversize: [], stderr: '' };
  const env = { ...inv.env, ...fakeEnv, PATH: `${BIN}${delimiter}${process.env['PATH'] ?? ''}` };
  const handle = runProcess(
    { ...inv, env, cwd: req.cwd },
    {
      onLine: (line) => {
        run.lines.push(line);
        run.events.push(...parser.push(line));
      },
      onStderr: (chunk) => (run.stderr += chunk),
      onOversizeLine: (n) => run.oversize.push(n),
    },
    opts,
  );
  const finished = handle.done.then((exit): Run => {
    run.events.push(...parser.end());
    return { ...run, exit };
  });
  return { handle, run, finished, inv };
}

function records(file: string): Record<string, unknown>[] {
  return readFileSync(file, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
}

await t.test('claude fake through runProcess: normalised events, argv after --, env and cwd recorded', async (t) => {
  const dir = t.testdir();
  const rec = join(dir, 'rec.jsonl');
  const { finished, inv } = start(request(dir, { prompt: 'hi there', resumeSessionId: 's-old' }), {
    FAKE_CLI_RECORD: rec,
    FAKE_CLI_TOOLS: 'Read,Bash',
    FAKE_CLI_CHUNKS: '2',
    FAKE_CLI_REPLY: 'abcdef',
    SVC_AGENT_NAME: 'main',
    SVC_CHAT_ID: '42',
  });
  const run = await finished;
  t.same(run.exit, { code: 0, signal: null, stderr: '', killReason: null, spawnError: null });
  t.same(run.events, [
    { kind: 'init', sessionId: 's-old' },
    { kind: 'tool', name: 'Read' },
    { kind: 'tool', name: 'Bash' },
    { kind: 'status', status: 'thinking' },
    { kind: 'text', text: 'abc' },
    { kind: 'text', text: 'def' },
    { kind: 'result', sessionId: 's-old', text: 'abcdef', isError: false, usage: { input_tokens: 10, output_tokens: 5, cached_tokens: 2 }, costUsd: 0.001, durationMs: 12, numTurns: 1 },
  ]);
  const [r] = records(rec);
  t.same(r?.['argv'], inv.args);
  t.equal(r?.['cwd'], dir);
  t.same(r?.['envKeys'], { SVC_AGENT_NAME: 'main', SVC_CHAT_ID: '42' });
});

await t.test('claude one-shot prints a single result', async (t) => {
  const dir = t.testdir();
  const run = await start(request(dir, { streaming: false, prompt: 'x' }), {}).finished;
  t.same(run.events, [
    { kind: 'result', sessionId: 'fake-claude-session', text: 'echo: x', isError: false, usage: { input_tokens: 10, output_tokens: 5, cached_tokens: 2 }, costUsd: 0.001, durationMs: 12, numTurns: 1 },
  ]);
});

await t.test('codex fake: stdin delivered with memory prepended, text not repeated, tools mapped', async (t) => {
  const dir = t.testdir();
  const rec = join(dir, 'rec.jsonl');
  const run = await start(request(dir, { provider: 'codex', systemPrompt: 'MEMORY', prompt: 'ünïcode prompt' }), {
    FAKE_CLI_RECORD: rec,
    FAKE_CLI_TOOLS: 'Bash,Edit,search_docs',
    FAKE_CLI_CHUNKS: '2',
    FAKE_CLI_REPLY: 'Hi!!',
    FAKE_CLI_SESSION: 'th-42',
    FAKE_CLI_DELAY_MS: '5',
  }).finished;
  t.equal(records(rec)[0]?.['stdin'], 'MEMORY\n\nünïcode prompt');
  t.same(run.events, [
    { kind: 'init', sessionId: 'th-42' },
    { kind: 'status', status: 'thinking' },
    { kind: 'tool', name: 'Bash' },
    { kind: 'tool', name: 'Edit' },
    { kind: 'tool', name: 'search_docs' },
    { kind: 'text', text: 'Hi' },
    { kind: 'text', text: '!!' },
    { kind: 'result', sessionId: 'th-42', text: 'Hi\n\n!!', isError: false, usage: { input_tokens: 10, output_tokens: 5, cached_tokens: 2 } },
  ]);
  t.equal(codexAdapter.errorText(run.exit.stderr), '', 'the stdin notice is not an error');
});

await t.test('codex resume keeps the thread id', async (t) => {
  const dir = t.testdir();
  const run = await start(request(dir, { provider: 'codex', resumeSessionId: 'th-7' }), {}).finished;
  t.match(run.events[0], { kind: 'init', sessionId: 'th-7' });
  t.match(run.events.at(-1), { kind: 'result', sessionId: 'th-7', text: 'echo: hello' });
});

await t.test('gemini fake: system text in a temp file during the run, removed after; warning is not a failure', async (t) => {
  const dir = t.testdir();
  const rec = join(dir, 'rec.jsonl');
  const { finished, inv } = start(request(dir, { provider: 'gemini', systemPrompt: 'SYSTEM TEXT', prompt: 'q' }), {
    FAKE_CLI_RECORD: rec,
    FAKE_CLI_TOOLS: 'run_shell_command',
  });
  const run = await finished;
  const r = records(rec)[0];
  t.equal(r?.['systemMd'], 'SYSTEM TEXT');
  t.equal(r?.['stdin'], 'q');
  const tmp = inv.tempFiles[0]?.path ?? '';
  t.equal(tmp, join(dir, 'tmp-turn', 'gemini-system.md'));
  t.notOk(existsSync(tmp), 'temp file removed after exit');
  t.same(run.events, [
    { kind: 'init', sessionId: 'fake-gemini-session' },
    { kind: 'tool', name: 'run_shell_command' },
    { kind: 'text', text: 'echo: q' },
    { kind: 'result', sessionId: 'fake-gemini-session', text: 'echo: q', isError: false, usage: { input_tokens: 10, output_tokens: 5, cached_tokens: 2 }, durationMs: 12 },
  ]);
});

await t.test('a > 1 MiB line is reported once and the stream continues', async (t) => {
  const dir = t.testdir();
  const run = await start(request(dir, {}), { FAKE_CLI_HUGE: '1' }).finished;
  t.equal(run.oversize.length, 1);
  t.ok((run.oversize[0] ?? 0) > 1024 * 1024);
  t.notOk(run.lines.some((l) => l.length > 1024 * 1024), 'the huge line never reached onLine');
  t.match(run.events.at(-1), { kind: 'result', text: 'echo: hello', isError: false });
});

await t.test('interleaved non-JSON lines become malformed events without stopping the turn', async (t) => {
  const dir = t.testdir();
  const run = await start(request(dir, { provider: 'gemini' }), { FAKE_CLI_MALFORMED: '1' }).finished;
  const bad = run.events.filter((e) => e.kind === 'malformed');
  t.equal(bad.length, run.lines.length / 2);
  t.match(bad[0], { kind: 'malformed', sample: 'this is not json {0' });
  t.match(run.events.filter((e) => e.kind !== 'malformed'), [
    { kind: 'init' }, { kind: 'text', text: 'echo: hello' }, { kind: 'result', text: 'echo: hello', isError: false },
  ]);
});

await t.test('no result line: the streamed text is all there is', async (t) => {
  const dir = t.testdir();
  const run = await start(request(dir, { provider: 'codex' }), { FAKE_CLI_NO_RESULT: '1' }).finished;
  t.notOk(run.events.some((e) => e.kind === 'result'));
  t.same(run.events.filter((e) => e.kind === 'text'), [{ kind: 'text', text: 'echo: hello' }]);
});

await t.test('non-zero exit with stderr', async (t) => {
  const dir = t.testdir();
  const run = await start(request(dir, { provider: 'codex' }), { FAKE_CLI_EXIT: '3', FAKE_CLI_STDERR: 'model not found' }).finished;
  t.equal(run.exit.code, 3);
  t.same(run.events, []);
  t.equal(run.exit.stderr, 'Reading prompt from stdin...\nmodel not found');
  t.equal(run.stderr, run.exit.stderr, 'handler saw the same stderr');
  t.equal(codexAdapter.errorText(run.exit.stderr), 'model not found');

  const failed = await start(request(dir, { prompt: 'please [[fail]]' }), {}).finished;
  t.equal(failed.exit.code, 1);
  t.equal(claudeAdapter.errorText(failed.exit.stderr), 'boom');
});

await t.test('a missing binary or cwd is a spawn error, not a throw', async (t) => {
  const dir = t.testdir();
  const h = runProcess({ command: 'svc-no-such-cli', args: [], stdin: 'x', env: {}, tempFiles: [], cwd: dir }, { onLine: () => {}, onStderr: () => {} });
  const exit = await h.done;
  t.equal(h.pid, null);
  t.match(exit, { code: null, signal: null, spawnError: /ENOENT/ });
  await h.kill('late');
  const h2 = runProcess({ command: 'node', args: ['-e', ''], stdin: null, env: {}, tempFiles: [], cwd: join(dir, 'missing') }, { onLine: () => {}, onStderr: () => {} });
  t.match(await h2.done, { spawnError: /ENOENT/ });
});

await t.test('abort mid-stream kills the whole tree, including a grandchild that ignores SIGTERM', async (t) => {
  const dir = t.testdir();
  const pidFile = join(dir, 'grandchild.pid');
  const { handle, run, finished } = start(
    request(dir, { provider: 'codex' }),
    { FAKE_CLI_HANG: '1', FAKE_CLI_IGNORE_TERM: '1', FAKE_CLI_CHILD_PID_FILE: pidFile },
    { graceMs: 300 },
  );
  await until('init line and grandchild pid', () => run.events.some((e) => e.kind === 'init') && existsSync(pidFile));
  const grandchild = Number(readFileSync(pidFile, 'utf8'));
  t.ok(isAlive(grandchild), 'grandchild running before the abort');
  t.ok(handle.pid !== null && isAlive(handle.pid), 'leader running before the abort');

  await handle.kill('user-abort');
  const done = await finished;
  t.equal(done.exit.signal, 'SIGKILL', 'the leader ignored SIGTERM, so SIGKILL ended it');
  t.equal(done.exit.killReason, 'user-abort');
  await until('grandchild to be gone', () => !isAlive(grandchild), 5000);
  t.pass('grandchild gone');
  await handle.kill('again');
  t.equal((await handle.done).killReason, 'user-abort', 'a second kill changes nothing');
});

await t.test('abort of a cooperative CLI ends it with SIGTERM, well before the grace period', async (t) => {
  const dir = t.testdir();
  const { handle, run, finished } = start(request(dir, { provider: 'gemini', systemPrompt: 'S' }), { FAKE_CLI_HANG: '1' }, { graceMs: 60_000 });
  await until('init line', () => run.events.length > 0);
  const started = Date.now();
  await handle.kill('timeout');
  const done = await finished;
  t.equal(done.exit.signal, 'SIGTERM');
  t.equal(done.exit.killReason, 'timeout');
  t.ok(Date.now() - started < 30_000, 'did not wait for the grace period');
  t.notOk(existsSync(join(dir, 'tmp-turn', 'gemini-system.md')), 'temp file removed after a kill too');
});

await t.test('a straggler holding stdout after the CLI exits does not hold the turn; kill still reaps it', async (t) => {
  const dir = t.testdir();
  const pidFile = join(dir, 'grandchild.pid');
  const { handle, finished } = start(
    request(dir, { provider: 'claude' }),
    { FAKE_CLI_IGNORE_TERM: '1', FAKE_CLI_CHILD_PID_FILE: pidFile },
    { graceMs: 200, closeWaitMs: 200 },
  );
  const run = await finished;
  t.equal(run.exit.code, 0);
  t.equal(run.exit.killReason, null);
  t.match(run.events.at(-1), { kind: 'result', text: 'echo: hello' });
  const grandchild = Number(readFileSync(pidFile, 'utf8'));
  t.ok(isAlive(grandchild), 'the straggler outlived the CLI');
  await handle.kill('cleanup');
  await until('straggler to be gone', () => !isAlive(grandchild), 5000);
  t.pass('straggler gone');
});

await t.test('argv runProcess cannot pass (NUL byte) is a spawn error and leaves no temp file', async (t) => {
  const dir = t.testdir();
  const tmp = join(dir, 't', 'f.md');
  const h = runProcess({ command: 'node', args: ['-e', 'a\0b'], stdin: null, env: {}, tempFiles: [{ path: tmp, content: 'x' }], cwd: dir }, { onLine: () => {}, onStderr: () => {} });
  t.match(await h.done, { code: null, spawnError: /null bytes|NUL|\\0/i });
  t.notOk(existsSync(tmp));
});

await t.test('an unwritable temp file is a spawn error, nothing runs', async (t) => {
  const dir = t.testdir({ blocker: 'a file, not a dir' });
  const rec = join(dir, 'rec.jsonl');
  const h = runProcess(
    { command: join(BIN, 'gemini'), args: [], stdin: 'x', env: { FAKE_CLI_RECORD: rec }, tempFiles: [{ path: join(dir, 'blocker', 'sys.md'), content: 'x' }], cwd: dir },
    { onLine: () => {}, onStderr: () => {} },
  );
  t.match(await h.done, { code: null, spawnError: /ENOTDIR|EEXIST/ });
  t.notOk(existsSync(rec), 'the CLI never started');
});
