import t from 'tap';
import { existsSync, mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startTranscriber } from '../../actors/index.js';
import { Bus } from '../../bus/index.js';
import { API_STATUSES, transcribeRoutes } from '../../edges/index.js';
import type { TranscriptionSettings } from '../../machines/index.js';
import { MemoryEventLog, homePaths } from '../../store/index.js';
import { TEST_ADMIN, serveSurfaces, testBearer } from '../fixtures/http-server.js';

const TOKEN = 'test-token-0123456789';
const FAKE = fileURLToPath(new URL('../fixtures/transcription/fake-transcriber.mjs', import.meta.url));
const command = (mode: string) => [process.execPath, FAKE, mode].map((a) => JSON.stringify(a)).join(' ');

type TT = { testdir(): string; teardown(fn: () => void): void };

/**
 * Bus, transcriber and routes on uWS. PATH is an empty directory and no key is set, so only the
 * custom command (when configured) can ever work and nothing on the network is contacted.
 */
async function serve(t: TT, principal = TEST_ADMIN) {
  const dir = t.testdir();
  const paths = homePaths(join(dir, 'home'));
  const day = join(paths.workspace, 'api_files', '2026-11-22');
  mkdirSync(day, { recursive: true });
  mkdirSync(join(dir, 'bin'));
  const audio = join(day, 'note.ogg');
  writeFileSync(audio, 'OggS');
  writeFileSync(join(dir, 'outside.ogg'), 'OggS');
  const access = { current: 'home' as string };
  const cfg: { current: TranscriptionSettings } = { current: { language: 'auto', model: 'small', command: command('ok') } };
  const bus = new Bus({ log: new MemoryEventLog() });
  const actor = startTranscriber({ bus, paths, config: () => cfg.current, env: { PATH: join(dir, 'bin') }, timeoutMs: 20_000, graceMs: 200 });
  const srv = await serveSurfaces(t, [{ name: 'api', routes: transcribeRoutes({ bus, paths, fileAccess: () => access.current }), statuses: API_STATUSES, authenticators: [testBearer(TOKEN, principal)] }]);
  const { internal } = srv;
  t.teardown(() => {
    actor.unsubscribe();
    bus.close();
  });
  const call = async (body: unknown, opts: { token?: string | null; raw?: string } = {}) => {
    const headers: Record<string, string> = { connection: 'close', 'content-type': 'application/json' };
    const token = opts.token === undefined ? TOKEN : opts.token;
    if (token !== null) headers.authorization = `Bearer ${token}`;
    const r = await fetch(`http://127.0.0.1:${srv.port}/api/transcribe`, { method: 'POST', headers, body: opts.raw ?? JSON.stringify(body) });
    const text = await r.text();
    return { status: r.status, body: text ? (JSON.parse(text) as Record<string, unknown>) : null };
  };
  return { dir, paths, audio, cfg, access, call, internal };
}

await t.test('POST /api/transcribe: {file_path} or {path} → {transcript}', async (t) => {
  const s = await serve(t);
  const expected = { status: 200, body: { transcript: 'heard note.ogg language=auto model=small' } };
  t.same(await s.call({ file_path: s.audio }), expected);
  t.same(await s.call({ path: s.audio }), expected, 'the path alias');
  t.same(await s.call({ file_path: 'api_files/2026-11-22/note.ogg' }), expected, 'relative paths are taken from the workspace');
  t.same(await s.call({ file_path: s.audio, path: '/etc/passwd' }), expected, 'file_path wins when both are given');
  t.same(await s.call({ file_path: join(s.paths.workspace, 'api_files', '..', 'api_files', '2026-11-22', 'note.ogg') }), expected, 'inner .. that stays inside is fine');
  t.same(s.internal, []);
});

await t.test('where the file is: outside the home 403, missing 404, not a file 400', async (t) => {
  const s = await serve(t);
  const outside = join(s.dir, 'outside.ogg');
  symlinkSync(outside, join(s.paths.workspace, 'link.ogg'));
  const cases: [unknown, number, RegExp][] = [
    [{ file_path: outside }, 403, /outside what file_access = home allows/],
    [{ file_path: '/etc/passwd' }, 403, /outside what file_access = home allows/],
    [{ file_path: '/nonexistent/x.ogg' }, 403, /outside what file_access = home allows/],
    [{ path: join(s.paths.workspace, '..', '..', 'outside.ogg') }, 403, /outside what file_access = home allows/],
    [{ file_path: '../../outside.ogg' }, 400, /'\.\.' segments are refused/],
    [{ file_path: join(s.paths.workspace, 'link.ogg') }, 403, /outside what file_access = home allows/],
    [{ file_path: join(s.paths.workspace, 'missing.ogg') }, 404, /no such file/],
    [{ path: join(s.paths.workspace, 'api_files', 'nope', 'x.ogg') }, 404, /no such file/],
    [{ file_path: join(s.paths.workspace, 'api_files') }, 400, /is a directory/],
  ];
  for (const [body, status, message] of cases) {
    const r = await s.call(body);
    t.equal(r.status, status, JSON.stringify(body));
    t.match(r.body, { error: message }, JSON.stringify(body));
  }
});

await t.test('bad bodies 400, no token 401', async (t) => {
  const s = await serve(t);
  for (const [body, message] of [
    [{}, /needs file_path \(or its alias path\)/],
    [{ file_path: '' }, /^body\.file_path: must not be empty$/],
    [{ file_path: 42 }, /^body\.file_path: must be a string$/],
    [{ path: null }, /^body\.path: must be a string$/],
    [{ file_path: 'a\0b' }, /^body\.file_path: must not contain NUL$/],
    [{ file_path: 'x'.repeat(4097) }, /^body\.file_path: must be at most 4096/],
    [[s.audio], /^body: /],
  ] as [unknown, RegExp][]) {
    const r = await s.call(body);
    t.match(r, { status: 400, body: { error: message, code: 'invalid-body' } }, JSON.stringify(body).slice(0, 60));
  }
  for (const raw of ['{"file_path":', 'nope']) t.match(await s.call(null, { raw }), { status: 400, body: { code: 'invalid-json' } }, raw);
  t.equal((await s.call(null, { raw: JSON.stringify({ file_path: 'x'.repeat(20_000) }) })).status, 413);
  for (const token of [null, 'wrong']) {
    t.same(await s.call({ file_path: s.audio }, { token }), { status: 401, body: { error: 'missing or wrong bearer token', code: 'unauthorized' } });
    t.equal((await s.call({ file_path: '/etc/passwd' }, { token })).status, 401, 'authorisation comes before the path check');
  }
});

await t.test('every backend failing is 503 with what was tried and install hints', async (t) => {
  const s = await serve(t);
  s.cfg.current = { ...s.cfg.current, command: command('fail') };
  let r = await s.call({ file_path: s.audio });
  t.equal(r.status, 503);
  t.equal(r.body!.code, 'transcription-unavailable');
  const error = String(r.body!.error);
  for (const re of [/custom command .*failed, exited with code 3: boom/, /no OPENAI_API_KEY/, /pip install openai-whisper/, /set OPENAI_API_KEY in /, /install whisper\.cpp/]) t.match(error, re);

  s.cfg.current = { ...s.cfg.current, command: null };
  r = await s.call({ path: s.audio });
  t.equal(r.status, 503, 'nothing configured or installed');
  t.match(r.body!.error, /transcription\.command is not set/);

  s.cfg.current = { ...s.cfg.current, command: command('ok') };
  t.equal((await s.call({ path: s.audio })).status, 200, 'the config is read per request');
  t.same(s.internal, []);
});

await t.test('file_access decides like /files; secrets are refused even under all', async (t) => {
  const s = await serve(t);
  const inHome = join(s.paths.root, 'voice.ogg');
  writeFileSync(inHome, 'OggS');
  mkdirSync(s.paths.configDir, { recursive: true });
  writeFileSync(join(s.paths.configDir, 'memo.ogg'), 'SECRET');
  writeFileSync(s.paths.eventsDb, 'SECRET');
  symlinkSync(s.paths.eventsDb, join(s.paths.workspace, 'events.ogg'));
  const outside = join(s.dir, 'outside.ogg');
  const cases: [mode: string, path: string, status: number][] = [
    ['workspace', s.audio, 200],
    ['workspace', inHome, 403],
    ['workspace', outside, 403],
    ['nonsense', inHome, 403],
    ['home', inHome, 200],
    ['home', outside, 403],
    ['all', outside, 200],
    ['all', join(s.paths.configDir, 'memo.ogg'), 403],
    ['all', s.paths.eventsDb, 403],
    ['all', join(s.paths.workspace, 'events.ogg'), 403],
    ['home', join(s.paths.workspace, 'events.ogg'), 403],
  ];
  for (const [mode, path, status] of cases) {
    s.access.current = mode;
    const r = await s.call({ file_path: path });
    t.equal(r.status, status, `${mode}: ${path.replace(s.dir, '')}`);
    t.notMatch(JSON.stringify(r.body), /SECRET/, 'nothing of the file in the answer');
  }
});

await t.test('the backend gets a private copy read from the checked descriptor, removed afterwards', async (t) => {
  const s = await serve(t);
  writeFileSync(s.audio, 'the audio bytes');
  s.cfg.current = { ...s.cfg.current, command: command('where') };
  const r = await s.call({ file_path: s.audio });
  t.equal(r.status, 200);
  const seen = JSON.parse(String(r.body!.transcript)) as { path: string; content: string };
  t.equal(seen.content, 'the audio bytes');
  t.equal(basename(seen.path), 'note.ogg', 'named like the original');
  t.notOk(seen.path.startsWith(s.paths.root), 'not a path inside the home that could be swapped');
  t.notOk(existsSync(dirname(seen.path)), 'the copy is gone once answered');
});

await t.test("POST /api/transcribe: a caller restricted by allowed_agents reads only its agents' workspaces", async (t) => {
  const coderOnly = { ...TEST_ADMIN, id: 'co', role: 'operator' as const, allowed_agents: ['coder'] };
  const s = await serve(t, coderOnly);
  const coderWs = join(s.paths.agentsDir, 'coder', 'workspace');
  const writerWs = join(s.paths.agentsDir, 'writer', 'workspace');
  mkdirSync(coderWs, { recursive: true });
  mkdirSync(join(writerWs, 'memory_system'), { recursive: true });
  writeFileSync(join(coderWs, 'voice.ogg'), 'OggS');
  writeFileSync(join(writerWs, 'memory_system', 'MAINMEMORY.md'), 'writer secrets');
  symlinkSync(join(writerWs, 'memory_system', 'MAINMEMORY.md'), join(coderWs, 'leak.ogg'));
  for (const [what, path] of [
    ["another agent's memory file", join(writerWs, 'memory_system', 'MAINMEMORY.md')],
    ["main's workspace", s.audio],
    ['a relative path (taken from main\'s workspace)', 'api_files/2026-11-22/note.ogg'],
    ["a link in its own workspace to another agent's file", join(coderWs, 'leak.ogg')],
  ] as const) {
    const r = await s.call({ file_path: path });
    t.equal(r.status, 403, what);
    t.match(r.body, { code: 'agent-not-allowed' }, what);
  }
  t.same(await s.call({ file_path: join(coderWs, 'voice.ogg') }), { status: 200, body: { transcript: 'heard voice.ogg language=auto model=small' } }, 'its own agent\'s file');
});
