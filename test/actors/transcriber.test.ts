import t from 'tap';
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage } from 'node:http';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startTranscriber, transcribe, type TranscriberDeps } from '../../actors/index.js';
import { Bus } from '../../bus/index.js';
import {
  customCommandInvocation,
  planTranscription,
  transcriptionsUrl,
  whisperCppArgs,
  whisperOutputName,
  type TranscriptionSettings,
} from '../../machines/index.js';
import { SvcError, TRANSCRIPTION_COMMANDS } from '../../schemas/index.js';
import { until } from '../bin/cli-helpers.js';
import { MemoryEventLog, homePaths } from '../../store/index.js';
import { rawCommand } from '../fixtures/any-event.js';

const NODE = process.execPath;
const FAKE = fileURLToPath(new URL('../fixtures/transcription/fake-transcriber.mjs', import.meta.url));
const FAKE_WHISPER = fileURLToPath(new URL('../fixtures/transcription/fake-whisper.mjs', import.meta.url));

type TT = { testdir(): string; teardown(fn: () => void): void };

const command = (mode: string, ...extra: string[]) => [NODE, FAKE, mode, ...extra].map((a) => JSON.stringify(a)).join(' ');

/**
 * A home with an audio file, an empty bin dir as the whole PATH (so nothing real is ever found),
 * and helpers to put fake whisper / whisper-cli executables on it.
 */
function setup(t: TT, settings: Partial<TranscriptionSettings> = {}) {
  const dir = t.testdir();
  const paths = homePaths(join(dir, 'home'));
  const bin = join(dir, 'bin');
  mkdirSync(join(paths.workspace, 'api_files'), { recursive: true });
  mkdirSync(bin);
  const audio = join(paths.workspace, 'api_files', 'voice note.ogg');
  writeFileSync(audio, Buffer.from('OggS fake audio'));
  const cfg: { current: TranscriptionSettings } = { current: { language: 'auto', model: 'small', command: null, ...settings } };
  const env: Record<string, string> = { PATH: bin };
  const deps: TranscriberDeps = { paths, config: () => cfg.current, env, timeoutMs: 20_000, graceMs: 200 };
  const install = (name: 'whisper' | 'whisper-cli' | 'whisper-cpp') => {
    const role = name === 'whisper' ? 'whisper' : 'whisper-cli';
    const p = join(bin, name);
    writeFileSync(p, `#!/bin/sh\nexec ${JSON.stringify(NODE)} ${JSON.stringify(FAKE_WHISPER)} ${role} "$@"\n`);
    chmodSync(p, 0o755);
  };
  const installModel = (file = 'ggml-small.bin') => {
    mkdirSync(join(paths.root, 'models'), { recursive: true });
    writeFileSync(join(paths.root, 'models', file), 'model');
  };
  return { dir, paths, bin, audio, cfg, env, deps, install, installModel };
}

/** Alive and not a zombie: an orphan nobody reaps yet no longer runs anything. */
function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
  } catch {
    return false;
  }
}

/** The chain's final error message; anything else fails the test. */
async function unavailable(p: Promise<unknown>): Promise<string> {
  const e = await p.then(
    () => null,
    (err: unknown) => err,
  );
  if (!(e instanceof SvcError) || e.code !== 'transcription-unavailable') throw new Error(`expected transcription-unavailable, got ${String(e)}`);
  return e.message;
}

await t.test('pure rules: order, applicability, arguments', async (t) => {
  const s: TranscriptionSettings = { language: 'auto', model: 'small', command: '  ' };
  const none = { apiKey: false, whisper: null, whisperCpp: null, whisperCppModel: null };
  t.same(planTranscription(s, none).map((p) => [p.backend, p.run]), [['command', false], ['api', false], ['whisper', false], ['whisper-cpp', false]], 'a blank command counts as unset');
  const all = planTranscription({ ...s, command: 'x' }, { apiKey: true, whisper: '/b/whisper', whisperCpp: '/b/whisper-cli', whisperCppModel: '/m' });
  t.same(all.map((p) => [p.backend, p.run]), [['command', true], ['api', true], ['whisper', true], ['whisper-cpp', true]], 'SPEC.md order');
  const noModel = planTranscription(s, { ...none, whisperCpp: '/b/whisper-cli' })[3]!;
  t.match(noModel, { run: false, reason: /ggml-small\.bin/ }, 'whisper.cpp without a model is skipped, naming the file');
  t.same(customCommandInvocation(' my-stt --fast ', '/a/b c.ogg'), { command: '/bin/sh', args: ['-c', 'my-stt --fast "$1"', 'svc-transcribe', '/a/b c.ogg'] }, 'the path is a parameter, never pasted into the line');
  t.equal(whisperOutputName('/x/voice note.ogg'), 'voice note.txt');
  t.equal(whisperOutputName('/x/a.b.wav'), 'a.b.txt');
  t.equal(whisperOutputName('/x/.hidden'), '.hidden.txt');
  t.same(whisperCppArgs('/a.wav', '/m.bin', { ...s, language: 'de' }), ['-m', '/m.bin', '-f', '/a.wav', '-nt', '-np', '-l', 'de']);
  t.equal(transcriptionsUrl('https://api.openai.com/v1/'), 'https://api.openai.com/v1/audio/transcriptions');
  t.equal(transcriptionsUrl('http://127.0.0.1:9'), 'http://127.0.0.1:9/v1/audio/transcriptions');
});

await t.test('custom command: called with the path and the two env vars; its trimmed stdout is the transcript', async (t) => {
  const s = setup(t, { command: command('ok'), language: 'de', model: 'tiny' });
  const r = await transcribe(s.deps, s.audio);
  t.same(r, { transcript: 'heard voice note.ogg language=de model=tiny', backend: 'command', attempts: [] });

  // Hot reload: the config is read on every call.
  s.cfg.current = { ...s.cfg.current, language: 'auto', model: 'base' };
  t.equal((await transcribe(s.deps, s.audio)).transcript, 'heard voice note.ogg language=auto model=base');
});

await t.test('a command that exits non-zero falls through to the local whisper CLI', async (t) => {
  const s = setup(t, { command: command('fail'), language: 'en' });
  s.install('whisper');
  const r = await transcribe(s.deps, s.audio);
  t.equal(r.backend, 'whisper');
  t.equal(r.transcript, 'whisper heard voice note.ogg\nmodel=small language=en', 'read from the .txt whisper wrote');
  t.match(r.attempts, [
    { backend: 'command', outcome: 'failed', reason: /exited with code 3: boom: cannot decode audio/ },
    { backend: 'api', outcome: 'skipped', reason: /no OPENAI_API_KEY/ },
  ]);
});

await t.test('a command that prints nothing falls through to whisper.cpp (stdout), model from the home', async (t) => {
  const s = setup(t, { command: command('empty') });
  s.install('whisper-cli');
  let r = await transcribe(s.deps, s.audio).catch((e: unknown) => e);
  t.match(r, { code: 'transcription-unavailable', message: /whisper\.cpp CLI: skipped, no model file ggml-small\.bin/ }, 'no model: skipped');
  s.installModel();
  r = await transcribe(s.deps, s.audio);
  t.match(r, {
    backend: 'whisper-cpp',
    transcript: 'whisper.cpp heard voice note.ogg model=ggml-small.bin language=auto',
    attempts: [{ backend: 'command', outcome: 'failed', reason: /empty output/ }, { backend: 'api' }, { backend: 'whisper', outcome: 'skipped' }],
  });
});

await t.test('a command past the deadline is killed and the chain goes on', async (t) => {
  const s = setup(t);
  const pidFile = join(s.dir, 'hang.pid');
  s.cfg.current.command = command('hang', pidFile);
  const message = await unavailable(transcribe({ ...s.deps, timeoutMs: 1500 }, s.audio));
  t.match(message, /custom command \(transcription\.command\): failed, timed out after 1500 ms; killed/);
  const pid = Number(readFileSync(pidFile, 'utf8'));
  t.ok(pid > 0, 'the command had started');
  await until('the killed command to be gone', () => !isAlive(pid), 8000);
  t.notOk(isAlive(pid), 'and is gone');
});

await t.test('nothing available: one error naming every backend and how to install one', async (t) => {
  const s = setup(t);
  const message = await unavailable(transcribe(s.deps, s.audio));
  for (const re of [
    /custom command \(transcription\.command\): skipped, transcription\.command is not set/,
    /hosted speech-to-text API: skipped, no OPENAI_API_KEY in the environment or \.env/,
    /local whisper CLI: skipped, whisper not found on PATH/,
    /whisper\.cpp CLI: skipped, whisper-cli, whisper-cpp not found on PATH/,
    /pip install openai-whisper/,
    /set OPENAI_API_KEY in .*\.env/,
    /install whisper\.cpp/,
  ]) {
    t.match(message, re);
  }
  await t.rejects(transcribe(s.deps, join(s.paths.workspace, 'missing.ogg')), { code: 'not-found' }, 'a missing file is not-found, not unavailable');
});

await t.test('hosted API: only with a key; OpenAI-compatible multipart POST to OPENAI_BASE_URL', async (t) => {
  const s = setup(t, { language: 'fr' });
  const seen: { path?: string; auth?: string; type?: string; body?: string }[] = [];
  let status = 200;
  const server = createServer((req: IncomingMessage, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      seen.push({ path: req.url, auth: req.headers.authorization, type: req.headers['content-type'], body: Buffer.concat(chunks).toString('latin1') });
      res.writeHead(status, { 'content-type': 'application/json', connection: 'close' });
      res.end(JSON.stringify(status === 200 ? { text: ' bonjour \n' } : { error: { message: 'invalid api key' } }));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.teardown(() => {
    server.closeAllConnections();
    server.close();
  });
  const port = (server.address() as { port: number }).port;

  // Without a key the API is skipped even though a base URL is set: nothing is contacted.
  s.env.OPENAI_BASE_URL = `http://127.0.0.1:${port}/v1`;
  const message = await unavailable(transcribe(s.deps, s.audio));
  t.match(message, /hosted speech-to-text API: skipped, no OPENAI_API_KEY/);
  t.equal(seen.length, 0, 'no request without a key');

  // The key from the home's .env is enough.
  writeFileSync(s.paths.envFile, 'OPENAI_API_KEY=sk-test-123\n');
  const r = await transcribe(s.deps, s.audio);
  t.same(r, { transcript: 'bonjour', backend: 'api', attempts: [{ backend: 'command', outcome: 'skipped', reason: 'transcription.command is not set' }] });
  t.equal(seen.length, 1);
  const req = seen[0]!;
  t.equal(req.path, '/v1/audio/transcriptions');
  t.equal(req.auth, 'Bearer sk-test-123');
  t.match(req.type, /^multipart\/form-data; boundary=/);
  t.match(req.body, /name="file"; filename="voice note.ogg"[\s\S]*OggS fake audio/, 'the audio bytes');
  t.match(req.body, /name="model"\r\n\r\nwhisper-1\r\n/);
  t.match(req.body, /name="language"\r\n\r\nfr\r\n/);

  // An error answer falls through, with the server's message in the reason.
  status = 401;
  const failed = await unavailable(transcribe(s.deps, s.audio));
  t.match(failed, /hosted speech-to-text API: failed, http:\/\/127\.0\.0\.1:\d+\/v1\/audio\/transcriptions answered HTTP 401: invalid api key/);
});

await t.test('the bus command: validated data, result without the attempts', async (t) => {
  const s = setup(t, { command: command('ok') });
  const bus = new Bus({ log: new MemoryEventLog() });
  const sub = startTranscriber({ ...s.deps, bus });
  t.teardown(() => {
    sub.unsubscribe();
    bus.close();
  });
  t.same(await bus.send(TRANSCRIPTION_COMMANDS.transcribe, { file_path: s.audio }), {
    transcript: 'heard voice note.ogg language=auto model=small',
    backend: 'command',
  });
  for (const data of [{}, { file_path: 42 }, { file_path: '' }, { file_path: s.audio, extra: 1 }, null]) {
    await t.rejects(bus.send(rawCommand(TRANSCRIPTION_COMMANDS.transcribe.type), data), { code: 'invalid-command', message: /^transcription\.transcribe data/ }, JSON.stringify(data));
  }
  await until('the backend group recorded', () => bus.log.read({ streamPrefix: 'proc:' }).length === 2);
  const facts = bus.log.read({ streamPrefix: 'proc:' });
  t.same(
    facts.map((e) => e.type),
    ['process.spawned', 'process.exited'],
    'only the backend process group is recorded (so a crash can end it), never the audio or transcript',
  );
  t.equal(new Set(facts.map((e) => e.stream)).size, 1);
  t.match(facts[0]!.data, { purpose: 'transcription', pid: Number, start_time: Number });
  t.equal(bus.log.lastSeq(), 2);
});
