// The direct API's HTTP side: /files against file_access, /upload streamed to disk, bearer auth,
// and startDirectApi's start-up rules. Real server on port 0, real files, node:http as the client.
import t, { type Test } from 'tap';
import { randomBytes } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { appendFileSync, existsSync, linkSync, mkdirSync, readFileSync, readdirSync, symlinkSync, truncateSync, writeFileSync } from 'node:fs';
import { request, type IncomingMessage } from 'node:http';
import { connect } from 'node:net';
import { join } from 'node:path';
import { Bus } from '../../bus/index.js';
import { FILE_CSP, receiveUpload, type DirectLimits } from '../../edges/index.js';
import { startDirectApi, type DirectApiServer } from '../fixtures/direct-api.js';
import { connectionMachine } from '../../machines/index.js';
import { SvcError, defaultConfig, type AgentConfig } from '../../schemas/index.js';
import { MemoryEventLog, ensureApiToken, homePaths, type HomePaths } from '../../store/index.js';
import { startSymlinkSwap } from '../fixtures/symlink-swap.js';

type T = Test;
const TOKEN = 'files-token-0123456789abcdef';
const AUTH = { authorization: `Bearer ${TOKEN}` };
// 2024-03-05 23:30 UTC is already 2024-03-06 in Tokyo.
const NOW = Date.parse('2024-03-05T23:30:00Z');

interface Env {
  base: string;
  paths: HomePaths;
  outside: string;
  cfg: AgentConfig;
  server: DirectApiServer;
  logs: { level: string; msg: string }[];
}

async function serve(t: T, limits?: Partial<DirectLimits>): Promise<Env> {
  const dir = t.testdir({ home: {}, outside: { 'o.txt': 'outside secret' } });
  const paths = homePaths(join(dir, 'home'));
  const outside = join(dir, 'outside');
  mkdirSync(join(paths.workspace, 'sub'), { recursive: true });
  mkdirSync(paths.configDir, { recursive: true });
  writeFileSync(paths.configFile, JSON.stringify({ api: { enabled: true, token: TOKEN } }));
  writeFileSync(join(paths.workspace, 'a.txt'), 'alpha');
  writeFileSync(join(paths.workspace, 'sub', 'b.bin'), Buffer.from([0, 1, 2, 255]));
  symlinkSync(join(outside, 'o.txt'), join(paths.workspace, 'link-out'));
  symlinkSync(paths.configFile, join(paths.workspace, 'link-home'));
  writeFileSync(paths.tasksFile, '[]');
  symlinkSync(paths.tasksFile, join(paths.workspace, 'link-tasks'));
  symlinkSync(outside, join(paths.workspace, 'dir-out'));
  const cfg = defaultConfig();
  cfg.api = { ...cfg.api, enabled: true, token: TOKEN };
  cfg.user_timezone = 'Asia/Tokyo';
  const bus = new Bus({ log: new MemoryEventLog(), clock: () => NOW });
  const logs: { level: string; msg: string }[] = [];
  bus.transient$.subscribe((m) => {
    if (m.type === 'log.line') logs.push(m.data as { level: string; msg: string });
  });
  const server = (await startDirectApi({
    bus, config: () => cfg, paths, providers: () => [], connectionMachine, host: '127.0.0.1', port: 0, ...(limits ? { limits } : {}),
  }))!;
  t.teardown(() => {
    server.close();
    bus.close();
  });
  return { base: `http://127.0.0.1:${server.port}`, paths, outside, cfg, server, logs };
}

interface Res {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
  json(): any;
}

/** One request on a fresh connection; `chunks` are written one by one (chunked unless a length is given). */
function call(url: string, opts: { method?: string; headers?: Record<string, string>; body?: Buffer | string; chunks?: Buffer[]; timeoutMs?: number } = {}): Promise<Res> {
  return new Promise((resolve, reject) => {
    const req = request(url, { agent: false, method: opts.method ?? 'GET', headers: { connection: 'close', ...opts.headers } }, (res) => {
      const parts: Buffer[] = [];
      res.on('data', (c: Buffer) => parts.push(c));
      res.on('end', () => {
        const body = Buffer.concat(parts);
        resolve({ status: res.statusCode!, headers: res.headers, body, json: () => JSON.parse(body.toString()) });
      });
      res.on('error', reject);
    });
    if (opts.timeoutMs) req.setTimeout(opts.timeoutMs, () => req.destroy(new Error(`no complete response within ${opts.timeoutMs} ms`)));
    // The server may answer (413, 401) before it has read everything we send.
    req.on('error', (e: NodeJS.ErrnoException) => (e.code === 'EPIPE' || e.code === 'ECONNRESET' ? undefined : reject(e)));
    if (opts.chunks) for (const c of opts.chunks) req.write(c);
    if (opts.body !== undefined) req.write(opts.body);
    req.end();
  });
}

const BOUNDARY = '----svc-test-boundary-7MA4YWxkTrZu0gW';
function multipart(parts: { name: string; filename?: string; type?: string; data: Buffer | string }[], boundary = BOUNDARY, close = true): Buffer {
  const out: Buffer[] = [];
  for (const p of parts) {
    let head = `--${boundary}\r\nContent-Disposition: form-data; name="${p.name}"`;
    if (p.filename !== undefined) head += `; filename="${p.filename}"`;
    head += '\r\n';
    if (p.type) head += `Content-Type: ${p.type}\r\n`;
    out.push(Buffer.from(`${head}\r\n`), Buffer.from(p.data), Buffer.from('\r\n'));
  }
  if (close) out.push(Buffer.from(`--${boundary}--\r\n`));
  return Buffer.concat(out);
}
const MP = { 'content-type': `multipart/form-data; boundary=${BOUNDARY}` };

const filesIn = (dir: string): string[] => (existsSync(dir) ? readdirSync(dir, { recursive: true }).map(String) : []);

await t.test('/files follows file_access, by real path', async (t) => {
  const env = await serve(t);
  const { paths, outside } = env;
  const get = (p: string, headers: Record<string, string> = AUTH) => call(`${env.base}/files?path=${encodeURIComponent(p)}`, { headers });
  const ws = (p: string) => join(paths.workspace, p);

  const matrix: [mode: string, path: string, status: number][] = [
    ['workspace', ws('a.txt'), 200],
    ['workspace', 'a.txt', 200],
    ['workspace', 'sub/b.bin', 200],
    ['workspace', paths.configFile, 403],
    ['workspace', join(outside, 'o.txt'), 403],
    ['workspace', ws('link-out'), 403],
    ['workspace', ws('link-home'), 403],
    ['workspace', ws('dir-out/o.txt'), 403],
    ['workspace', ws('sub'), 400],
    ['workspace', ws('missing.txt'), 404],
    ['workspace', join(outside, 'missing.txt'), 403],
    ['nonsense', paths.configFile, 403],
    ['nonsense', ws('a.txt'), 200],
    ['home', join(paths.root, 'tasks.json'), 200],
    ['home', ws('link-tasks'), 200],
    ['home', paths.configFile, 403],
    ['home', ws('link-home'), 403],
    ['home', ws('link-out'), 403],
    ['home', join(outside, 'o.txt'), 403],
    ['all', join(outside, 'o.txt'), 200],
    ['all', ws('link-out'), 200],
    ['all', ws('missing'), 404],
  ];
  for (const [mode, p, status] of matrix) {
    env.cfg.file_access = mode;
    const r = await get(p);
    t.equal(r.status, status, `${mode} ${p.replace(paths.root, '~')} → ${status}`);
    if (status !== 200) t.type(r.json().error, 'string');
  }

  env.cfg.file_access = 'all';
  let r = await get(ws('sub/b.bin'));
  t.same([...r.body], [0, 1, 2, 255], 'bytes as on disk');
  t.equal(r.headers['content-type'], 'application/octet-stream');
  t.equal(r.headers['x-content-type-options'], 'nosniff');
  r = await get(ws('a.txt'));
  t.same([r.body.toString(), r.headers['content-type']], ['alpha', 'text/plain; charset=utf-8']);

  // Traversal is refused whatever the mode, in every spelling the query can carry.
  for (const raw of [`${ws('sub')}/%2e%2e/a.txt`, `${ws('sub')}/%2E%2E/%2E%2E/config/config.json`, '..%2fconfig%2fconfig.json', `${ws('sub')}/..%5c..%5cconfig`]) {
    r = await call(`${env.base}/files?path=${raw}`, { headers: AUTH });
    t.equal(r.status, 400, `traversal ${raw}`);
  }
  r = await call(`${env.base}/files?path=%252e%252e/a.txt`, { headers: AUTH });
  t.equal(r.status, 404, 'double-encoded dots are a literal name, not a traversal');
  t.equal((await call(`${env.base}/files`, { headers: AUTH })).status, 400, 'path is required');
  t.equal((await call(`${env.base}/files?path=a%00.txt`, { headers: AUTH })).status, 400, 'NUL');

  for (const headers of [{} as Record<string, string>, { authorization: 'Bearer wrong' }, { authorization: `Basic ${TOKEN}` }, { authorization: `Bearer ${TOKEN}x` }, { authorization: 'Bearer' }]) {
    r = await get(ws('a.txt'), headers);
    t.equal(r.status, 401, JSON.stringify(headers));
    t.match(r.json(), { error: /Bearer/ });
  }
  t.equal((await call(`${env.base}/files?path=a.txt`, { method: 'POST', headers: AUTH })).status, 405);
});

await t.test('/upload streams the file into a dated folder', async (t) => {
  const env = await serve(t);
  const dayDir = join(env.paths.workspace, 'api_files', '2024-03-06');
  const bytes = randomBytes(700 * 1024 + 13);
  const body = multipart([
    { name: 'caption', data: 'please look at this ✓' },
    { name: 'file', filename: 'report 2024.pdf', type: 'application/pdf', data: bytes },
  ]);
  // Written in small pieces so parts straddle chunk boundaries.
  const chunks: Buffer[] = [];
  for (let i = 0; i < body.length; i += 4099) chunks.push(body.subarray(i, i + 4099));
  const r = await call(`${env.base}/upload`, { method: 'POST', headers: { ...AUTH, ...MP }, chunks });
  t.equal(r.status, 200, r.body.toString());
  const res = r.json();
  t.same(Object.keys(res).sort(), ['mime', 'name', 'path', 'prompt', 'size']);
  t.match(res, { name: 'report 2024.pdf', mime: 'application/pdf', size: bytes.length });
  t.equal(join(res.path, '..'), dayDir, 'dated by the user timezone');
  t.match(res.path, /\/[0-9a-f]{8}_report_2024\.pdf$/);
  t.ok(readFileSync(res.path).equals(bytes), 'bytes equal');
  t.match(res.prompt, res.path);
  t.match(res.prompt, /please look at this ✓/);
  t.same(filesIn(dayDir), [res.path.slice(dayDir.length + 1)], 'no temp file left');

  const again = await call(`${env.base}/upload`, {
    method: 'POST', headers: { ...AUTH, ...MP },
    body: multipart([{ name: 'file', filename: '../../..\\evil .sh', data: 'x' }, { name: 'other', data: 'ignored' }]),
  });
  t.equal(again.status, 200);
  const evil = again.json();
  t.equal(join(evil.path, '..'), dayDir, 'a hostile name stays in the dated folder');
  t.match(evil.path, /\/[0-9a-f]{8}_evil_\.sh$/);
  t.match(evil, { name: 'evil .sh', size: 1, mime: 'application/x-sh' }, 'the type from the extension');
  t.notMatch(evil.prompt, /\n/, 'no caption, one line');
});

await t.test('/upload refusals leave nothing behind', async (t) => {
  const env = await serve(t, { maxUploadBytes: 8 * 1024 });
  const apiFiles = join(env.paths.workspace, 'api_files');
  const post = (body: Buffer | string, headers: Record<string, string> = { ...AUTH, ...MP }) => call(`${env.base}/upload`, { method: 'POST', headers, body });
  const big = multipart([{ name: 'file', filename: 'big.bin', data: randomBytes(20 * 1024) }]);

  let r = await post(big);
  t.same([r.status, r.json().code], [413, 'body-too-large'], 'over the file limit');
  t.same(filesIn(apiFiles), [], 'partial file removed');

  // Chunked, far past the limit: refused mid-stream, the rest never buffered.
  const stream = [Buffer.from(`--${BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="s.bin"\r\n\r\n`)];
  for (let i = 0; i < 64; i++) stream.push(randomBytes(16 * 1024));
  r = await call(`${env.base}/upload`, { method: 'POST', headers: { ...AUTH, ...MP }, chunks: stream });
  t.equal(r.status, 413, 'chunked upload past the limit');
  t.same(filesIn(apiFiles), []);

  r = await post(Buffer.alloc(10), { ...AUTH, ...MP, 'content-length': String(10 * 1024 * 1024) });
  t.equal(r.status, 413, 'declared length past the cap');

  const malformed: [string, Buffer | string, Record<string, string>, number][] = [
    ['json body', '{"file":1}', { ...AUTH, 'content-type': 'application/json' }, 415],
    ['no content type', 'x', AUTH, 415],
    ['no boundary', big, { ...AUTH, 'content-type': 'multipart/form-data' }, 400],
    ['wrong boundary', big, { ...AUTH, 'content-type': 'multipart/form-data; boundary=other' }, 400],
    ['no closing boundary', multipart([{ name: 'file', filename: 'a.txt', data: 'abc' }], BOUNDARY, false), { ...AUTH, ...MP }, 400],
    ['truncated', multipart([{ name: 'file', filename: 'a.txt', data: 'abcdef' }]).subarray(0, 90), { ...AUTH, ...MP }, 400],
    ['no file part', multipart([{ name: 'caption', data: 'only words' }]), { ...AUTH, ...MP }, 400],
    ['file field without filename', multipart([{ name: 'file', data: 'abc' }]), { ...AUTH, ...MP }, 400],
    ['part without disposition', `--${BOUNDARY}\r\nContent-Type: text/plain\r\n\r\nabc\r\n--${BOUNDARY}--\r\n`, { ...AUTH, ...MP }, 400],
    ['garbage after boundary', `--${BOUNDARY}garbage\r\n\r\n`, { ...AUTH, ...MP }, 400],
    ['empty body', '', { ...AUTH, ...MP }, 400],
  ];
  for (const [what, body, headers, status] of malformed) {
    r = await post(body, headers);
    t.equal(r.status, status, what);
    t.type(r.json().error, 'string', `${what}: JSON error`);
  }
  t.same(filesIn(apiFiles), [], 'nothing written by any refusal');

  for (const headers of [{ ...MP }, { ...MP, authorization: 'Bearer nope' }]) {
    r = await post(multipart([{ name: 'file', filename: 'a.txt', data: 'abc' }]), headers);
    t.equal(r.status, 401);
  }
  t.same(filesIn(apiFiles), []);

  r = await post(multipart([{ name: 'file', filename: 'ok.txt', data: 'fine' }]));
  t.equal(r.status, 200, 'the server is still fine');
});

await t.test('startDirectApi: only when enabled, token generated once, public bind warned', async (t) => {
  const dir = t.testdir({});
  const paths = homePaths(dir);
  mkdirSync(paths.configDir, { recursive: true });
  writeFileSync(paths.configFile, JSON.stringify({ model: 'keep-me', api: { enabled: true } }, null, 2));
  const bus = new Bus({ log: new MemoryEventLog() });
  t.teardown(() => bus.close());
  const logs: { level: string; msg: string }[] = [];
  const log = (level: string, msg: string) => logs.push({ level, msg });
  const cfg = defaultConfig();
  const deps = { bus, config: () => cfg, paths, providers: () => [], connectionMachine, log, port: 0 };

  t.equal(await startDirectApi(deps), null, 'disabled: nothing starts');
  t.same(JSON.parse(readFileSync(paths.configFile, 'utf8')).api, { enabled: true }, 'and nothing is written');

  cfg.api.enabled = true;
  const server = (await startDirectApi({ ...deps, host: '0.0.0.0', generateToken: () => 'generated-token-abcdefghijkl' }))!;
  t.teardown(() => server.close());
  const onDisk = JSON.parse(readFileSync(paths.configFile, 'utf8'));
  t.same(onDisk.api, { enabled: true, token: 'generated-token-abcdefghijkl' });
  t.equal(onDisk.model, 'keep-me', 'other keys kept');
  t.ok(logs.some((l) => l.level === 'warn' && /0\.0\.0\.0/.test(l.msg)), 'wildcard bind without allow_public warns');
  const r = await call(`http://127.0.0.1:${server.port}/files?path=x`, { headers: { authorization: 'Bearer generated-token-abcdefghijkl' } });
  t.equal(r.status, 404, 'the generated token is the one in force');
  t.same(ensureApiToken(paths, () => 'never-used-token-xxxxxxxx'), { token: 'generated-token-abcdefghijkl', generated: false });
  t.throws(() => ensureApiToken(homePaths(join(dir, 'nohome')), () => 'x'.repeat(20)), 'a missing config file is an error');

  logs.length = 0;
  cfg.api.allow_public = false;
  const local = (await startDirectApi({ ...deps, host: '127.0.0.1' }))!;
  local.close();
  t.notOk(logs.some((l) => l.level === 'warn'), 'loopback does not warn');
});

await t.test('/files under a symlink-swap race never serves what the link reaches outside the root', async (t) => {
  const env = await serve(t);
  env.cfg.file_access = 'workspace';
  const ws = env.paths.workspace;
  mkdirSync(join(ws, 'real'));
  writeFileSync(join(ws, 'real', 'passwd'), 'harmless\n');
  const secret = readFileSync('/etc/passwd', 'utf8').split('\n')[0]!;
  // The directory itself is swapped for a link to /etc and back: a check of the path can pass
  // on the directory and an open by name land in /etc.
  const stopSwap = await startSymlinkSwap(t, join(ws, 'real'), '/etc', 60000);

  const statuses = new Map<number, number>();
  let leaks = 0;
  let broken = 0;
  let done = 0;
  // Bounded by count, not time: each request has its own timeout; the swapper flips until stopped (at most 60 s).
  const worker = async () => {
    while (done < 2000) {
      done++;
      try {
        const r = await call(`${env.base}/files?path=${encodeURIComponent(join(ws, 'real', 'passwd'))}`, { headers: AUTH, timeoutMs: 5_000 });
        statuses.set(r.status, (statuses.get(r.status) ?? 0) + 1);
        if (r.body.includes(secret) || /root:/.test(r.body.toString())) leaks++;
      } catch {
        // More bytes than the Content-Length of the file that was checked (another file was sent),
        // or fewer and a hang.
        broken++;
      }
    }
  };
  await Promise.all(Array.from({ length: 8 }, worker));
  await stopSwap();
  t.equal(broken, 0, 'no response broke off (a swapped file of another size)');
  t.equal(leaks, 0, `no response carried /etc/passwd (statuses ${JSON.stringify([...statuses])})`);
  t.ok(statuses.get(200), 'the file inside was served while the link pointed there');
  t.ok(statuses.get(403), 'and refused while it pointed out');
  t.same([...statuses.keys()].filter((s) => s !== 200 && s !== 403 && s !== 404), [], 'nothing but 200, 403 or 404');
});

await t.test('the service secrets are refused in every file_access mode, through links too', async (t) => {
  const env = await serve(t);
  const { paths } = env;
  mkdirSync(paths.secretsDir, { recursive: true });
  const sub = homePaths(join(paths.agentsDir, 'helper'));
  mkdirSync(sub.configDir, { recursive: true });
  const secrets: Record<string, string> = {
    [paths.usersFile]: 'USERS-SECRET',
    [paths.mainAgentTokenFile]: 'TOKEN-SECRET',
    [paths.envFile]: 'ENV-SECRET=1',
    [paths.eventsDb]: 'EVENTS-SECRET',
    [`${paths.eventsDb}-wal`]: 'WAL-SECRET',
    [`${paths.eventsDb}-shm`]: 'SHM-SECRET',
    [paths.pidFile]: 'PID-SECRET',
    [paths.legacyAgentsRegistry]: 'REGISTRY-SECRET',
    [sub.configFile]: 'SUB-CONFIG-SECRET',
  };
  for (const [p, text] of Object.entries(secrets)) writeFileSync(p, text);
  secrets[paths.configFile] = TOKEN;
  const links: string[] = [];
  for (const p of Object.keys(secrets)) {
    const link = join(paths.workspace, `to-${links.length}`);
    symlinkSync(p, link);
    links.push(link);
  }
  symlinkSync(paths.secretsDir, join(paths.workspace, 'secrets-dir'));
  links.push(join(paths.workspace, 'secrets-dir', 'users.json'));
  // A hard link has its own real path: what an agent could make with `ln config/config.json x`.
  for (const p of [paths.configFile, paths.usersFile, paths.envFile]) {
    const hard = join(paths.workspace, `hard-${links.length}.json`);
    linkSync(p, hard);
    links.push(hard);
  }
  for (const mode of ['all', 'home', 'workspace']) {
    env.cfg.file_access = mode;
    for (const p of [...Object.keys(secrets), ...links]) {
      if (mode === 'workspace' && !p.startsWith(paths.workspace)) continue;
      const r = await call(`${env.base}/files?path=${encodeURIComponent(p)}`, { headers: AUTH });
      t.equal(r.status, 403, `${mode}: ${p.replace(paths.root, '~')}`);
      t.notMatch(r.body.toString(), /SECRET|files-token/, 'no content in the refusal');
    }
  }
  env.cfg.file_access = 'all';
  const r = await call(`${env.base}/files?path=${encodeURIComponent(join(paths.workspace, 'a.txt'))}`, { headers: AUTH });
  t.equal(r.body.toString(), 'alpha', 'ordinary files are still served');
  linkSync(join(paths.workspace, 'a.txt'), join(paths.workspace, 'a-again.txt'));
  const again = await call(`${env.base}/files?path=${encodeURIComponent(join(paths.workspace, 'a-again.txt'))}`, { headers: AUTH });
  t.equal(again.body.toString(), 'alpha', 'and so are hard links among them');
});

/** Waits for a response to finish, however it finishes; fails the test past a bounded wait. */
function download(url: string, onResponse: (res: IncomingMessage) => void | Promise<void>): Promise<{ status: number; headers: IncomingMessage['headers']; body: Buffer; complete: boolean }> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('the response did not finish within 20 s')), 20_000);
    const req = request(url, { agent: false, headers: { ...AUTH, connection: 'close' } }, (res) => {
      const parts: Buffer[] = [];
      res.on('data', (c: Buffer) => parts.push(c));
      const finish = () => {
        clearTimeout(timer);
        resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(parts), complete: res.complete });
      };
      res.on('end', finish);
      res.on('close', finish);
      res.on('error', () => undefined);
      void onResponse(res);
    });
    req.on('error', (e) => {
      clearTimeout(timer);
      reject(e);
    });
    req.end();
  });
}

await t.test('a file whose size is not what stat said ends its response at once', async (t) => {
  const env = await serve(t);
  env.cfg.file_access = 'all';
  const url = (p: string) => `${env.base}/files?path=${encodeURIComponent(p)}`;

  // procfs says 0 bytes: the reply carries the real content and its real length.
  let r = await download(url('/proc/meminfo'), () => undefined);
  t.equal(r.status, 200);
  t.match(r.body.toString(), /^MemTotal:/);
  t.equal(Number(r.headers['content-length']), r.body.length, 'Content-Length is what was read, not 0');
  // A procfs file past the first window goes out chunked until its end.
  r = await download(url('/proc/kallsyms'), () => undefined);
  t.ok(r.complete && r.body.length > 64 * 1024, `kallsyms complete (${r.body.length} bytes)`);
  t.equal(r.headers['transfer-encoding'], 'chunked');
  // A process's own procfs files are its secrets by another path: its environment above all.
  for (const p of ['/proc/self/environ', `/proc/${process.pid}/environ`, '/proc/self/cmdline', '/proc/self/status', `/proc/${process.pid}/task/${process.pid}/environ`]) {
    r = await download(url(p), () => undefined);
    t.equal(r.status, 403, `${p} refused`);
    t.notMatch(r.body.toString(), /PATH=|HOME=/, `${p}: nothing of the environment`);
  }
  const sysfs = '/sys/kernel/mm/transparent_hugepage/enabled';
  if (existsSync(sysfs)) {
    r = await download(url(sysfs), () => undefined);
    t.equal(Number(r.headers['content-length']), r.body.length, 'sysfs: stat says 4096, the length is the content');
    t.equal(r.body.toString(), readFileSync(sysfs, 'utf8'));
  }

  // Shrinks under a slow reader: the client sees a short, unfinished body promptly, not a hang.
  const big = join(env.paths.workspace, 'shrinks.bin');
  writeFileSync(big, Buffer.alloc(32 * 1024 * 1024, 7));
  r = await download(url(big), (res) => {
    res.pause();
    truncateSync(big, 1024 * 1024);
    res.resume();
  });
  t.equal(Number(r.headers['content-length']), 32 * 1024 * 1024, 'announced what stat said');
  t.ok(r.body.length < 32 * 1024 * 1024, `truncated body (${r.body.length} bytes)`);
  t.notOk(r.complete, 'the client knows the body is incomplete');

  // Grows meanwhile: the reply stops at the announced size.
  const grows = join(env.paths.workspace, 'grows.bin');
  writeFileSync(grows, Buffer.alloc(200 * 1024, 1));
  r = await download(url(grows), (res) => {
    res.pause();
    appendFileSync(grows, Buffer.alloc(1024 * 1024, 2));
    res.resume();
  });
  t.ok(r.complete);
  t.equal(r.body.length, 200 * 1024);
  t.equal(Number(r.headers['content-length']), 200 * 1024);

  const after = await call(url(join(env.paths.workspace, 'a.txt')), { headers: AUTH });
  t.equal(after.body.toString(), 'alpha', 'the server is fine afterwards');
});

await t.test('served files: type from mime-types, RFC 6266 disposition with an ASCII fallback', async (t) => {
  const env = await serve(t);
  const name = 'naïve "q" (1)*\\%.json';
  writeFileSync(join(env.paths.workspace, name), '{}');
  writeFileSync(join(env.paths.workspace, 'page.html'), '<script>1</script>');
  let r = await call(`${env.base}/files?path=${encodeURIComponent(name)}`, { headers: AUTH });
  t.equal(r.status, 200);
  t.equal(r.headers['content-type'], 'application/json; charset=utf-8');
  t.equal(r.headers['content-disposition'], `inline; filename="na_ve _q_ (1)*__.json"; filename*=UTF-8''na%C3%AFve%20%22q%22%20%281%29%2A%5C%25.json`);
  r = await call(`${env.base}/files?path=page.html`, { headers: AUTH });
  t.equal(r.headers['content-type'], 'text/html; charset=utf-8');
  t.equal(r.headers['content-security-policy'], FILE_CSP, 'HTML cannot run as this origin');
  t.match(r.headers['content-security-policy'], /default-src 'none'.*; sandbox$/);
  t.equal(r.headers['x-content-type-options'], 'nosniff');
  t.equal(r.headers['cache-control'], 'private, no-store');
});

await t.test('/upload with busboy: hostile and unusual multipart bodies', async (t) => {
  const env = await serve(t, { maxUploadBytes: 64 * 1024 });
  const apiFiles = join(env.paths.workspace, 'api_files');
  const post = (body: Buffer | string, contentType = MP['content-type']) => call(`${env.base}/upload`, { method: 'POST', headers: { ...AUTH, 'content-type': contentType }, body });
  const part = (disposition: string, data: string, boundary = BOUNDARY) => `--${boundary}\r\nContent-Disposition: ${disposition}\r\n\r\n${data}\r\n`;
  const end = (boundary = BOUNDARY) => `--${boundary}--\r\n`;
  const file = multipart([{ name: 'file', filename: 'a.txt', data: 'abc' }]);

  const refused: [string, Buffer | string, string, number, RegExp][] = [
    ['a longer media type is not form-data', file, `multipart/form-data-foo; boundary=${BOUNDARY}`, 415, /not allowed/],
    ['multipart/mixed', file, `multipart/mixed; boundary=${BOUNDARY}`, 415, /not allowed/],
    ['missing boundary', file, 'multipart/form-data; charset=utf-8', 400, /boundary/],
    ['truncated inside the file part', file.subarray(0, file.length - 20), MP['content-type'], 400, /multipart body/],
    ['truncated inside the part headers', file.subarray(0, 60), MP['content-type'], 400, /multipart body/],
    ['two files', multipart([{ name: 'file', filename: 'a.txt', data: 'a' }, { name: 'file', filename: 'b.txt', data: 'b' }]), MP['content-type'], 400, /more than one file/],
    ['a file under another field', multipart([{ name: 'other', filename: 'a.txt', data: 'a' }]), MP['content-type'], 400, /must be the field "file"/],
    ['many parts', part('form-data; name="x"', 'y').repeat(11) + end(), MP['content-type'], 400, /more than/],
    ['oversized caption', multipart([{ name: 'caption', data: 'c'.repeat(64 * 1024 + 1) }, { name: 'file', filename: 'a.txt', data: 'a' }]), MP['content-type'], 400, /caption exceeds/],
    ['a filename* with a bad charset stays a file, but no name decodes', part(`form-data; name="file"; filename*=nope''%ZZ`, 'x') + end(), MP['content-type'], 200, /./],
  ];
  for (const [what, body, type, status, error] of refused) {
    const r = await post(body, type);
    t.equal(r.status, status, what);
    if (status !== 200) t.match(r.json(), { error }, what);
  }
  // The 200 above stored one file; everything else left nothing.
  t.equal(filesIn(apiFiles).filter((f) => !/^\d{4}-\d\d-\d\d$/.test(f)).length, 1, `only the accepted upload is on disk: ${filesIn(apiFiles)}`);

  const accepted: [string, Buffer | string, string, string][] = [
    ['filename* in UTF-8', part(`form-data; name="file"; filename*=UTF-8''na%C3%AFve%20%E2%9C%93.txt`, 'x') + end(), MP['content-type'], 'naïve ✓.txt'],
    ['filename* in ISO-8859-1', part(`form-data; name="file"; filename*=iso-8859-1''caf%E9.txt`, 'x') + end(), MP['content-type'], 'café.txt'],
    ['a boundary= inside a quoted parameter is not the boundary', part('form-data; name="file"; filename="q.txt"', 'x', 'REAL') + end('REAL'), 'multipart/form-data; foo="a; boundary=evil"; boundary=REAL', 'q.txt'],
    ['a quoted boundary', part('form-data; name="file"; filename="q2.txt"', 'x', 'a b;c') + end('a b;c'), 'multipart/form-data; boundary="a b;c"', 'q2.txt'],
    ['an epilogue after the closing boundary', Buffer.concat([file, Buffer.from('epilogue bytes\r\n')]), MP['content-type'], 'a.txt'],
  ];
  for (const [what, body, type, name] of accepted) {
    const r = await post(body, type);
    t.equal(r.status, 200, `${what}: ${r.body.toString().slice(0, 200)}`);
    if (r.status === 200) t.equal(r.json().name, name, what);
  }
});

await t.test('stored upload names: no separator, NUL, leading dot or overlong name survives', async (t) => {
  const env = await serve(t);
  const cases: [string, RegExp][] = [
    ['..\\\\..\\\\.hidden', /^[0-9a-f]{8}_hidden$/],
    ['a\u0000b.txt', /^[0-9a-f]{8}_a_b\.txt$/],
    ['....', /^[0-9a-f]{8}_file$/],
    [`${'字'.repeat(200)}.txt`, /^[0-9a-f]{8}_字+\.txt$/],
  ];
  for (const [clientName, stored] of cases) {
    const body = `--${BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="${clientName}"\r\n\r\nx\r\n--${BOUNDARY}--\r\n`;
    const r = await call(`${env.base}/upload`, { method: 'POST', headers: { ...AUTH, ...MP }, body });
    t.equal(r.status, 200, JSON.stringify(clientName).slice(0, 40));
    const name = r.json().path.split('/').pop() as string;
    t.match(name, stored, JSON.stringify(clientName).slice(0, 40));
    t.ok(Buffer.byteLength(name) <= 9 + 120, `${Buffer.byteLength(name)} bytes`);
  }
});

await t.test('receiveUpload settles once when busboy reports an error and then a finish', async (t) => {
  const dir = t.testdir({});
  const opts = { baseDir: dir, day: '2024-01-01', maxFileBytes: 1024 };
  const body = multipart([{ name: 'file', filename: 'a.txt', data: 'abcdef'.repeat(50) }]);
  async function* pieces(...chunks: Buffer[]) {
    for (const c of chunks) yield c;
  }
  const errors: unknown[] = [];
  const onError = (e: unknown) => errors.push(e);
  process.on('uncaughtException', onError);
  process.on('unhandledRejection', onError);
  t.teardown(() => {
    process.off('uncaughtException', onError);
    process.off('unhandledRejection', onError);
  });
  // Cut inside the file part: Dicer emits 'error', then 'finish'.
  await t.rejects(receiveUpload(pieces(body.subarray(0, 150)), MP['content-type'], opts), { code: 'invalid-body', message: /Unexpected end/ });
  // The client goes away mid-body.
  async function* gone() {
    yield body.subarray(0, 150);
    throw new SvcError('client-gone', 'the client went away mid-upload');
  }
  await t.rejects(receiveUpload(gone(), MP['content-type'], opts), { code: 'client-gone' });
  // Past the size limit in one piece, then the rest of the body still arrives.
  const big = multipart([{ name: 'file', filename: 'b.bin', data: randomBytes(4096) }]);
  await t.rejects(receiveUpload(pieces(big.subarray(0, 2000), big.subarray(2000)), MP['content-type'], opts), { code: 'body-too-large' });
  // Asserting that nothing came, so there is no event to await: Node reports an unhandled rejection once the
  // microtask queue has drained, so one from the calls above is reported before the next macrotask turn.
  await new Promise((r) => setImmediate(r));
  t.same(errors, [], 'no late error escaped');
  t.same(filesIn(dir), [], 'no partial file, no empty dated folder');
  const ok = await receiveUpload(pieces(multipart([{ name: 'file', filename: 'c.txt', data: 'fine' }])), MP['content-type'], opts);
  t.equal(readFileSync(ok.path, 'utf8'), 'fine');
});

await t.test('a FIFO or a device is refused at once, not waited on', async (t) => {
  const env = await serve(t);
  env.cfg.file_access = 'all';
  const fifo = join(env.paths.workspace, 'pipe.txt');
  execFileSync('mkfifo', [fifo]);
  for (const p of [fifo, '/dev/zero', '/dev/null']) {
    const r = await call(`${env.base}/files?path=${encodeURIComponent(p)}`, { headers: AUTH, timeoutMs: 10_000 });
    t.same([r.status, r.json().code], [400, 'invalid-path'], p);
  }
});

await t.test('/upload: a body still arriving after the answer is dropped, and a body without a length is capped', async (t) => {
  let env = await serve(t);
  const port = Number(new URL(env.base).port);
  // No token, a declared 4 MiB, sent in full although the 401 comes first: the server must neither
  // crash nor buffer it (it once paused a finished response and died on uWS's assertion).
  const declared = 4 * 1024 * 1024;
  const head = `POST /upload HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: multipart/form-data; boundary=${BOUNDARY}\r\nContent-Length: ${declared}\r\n\r\n`;
  const answer = await new Promise<string>((resolve, reject) => {
    const sock = connect(port, '127.0.0.1');
    let text = '';
    const send = async () => {
      sock.write(head);
      const chunk = Buffer.alloc(256 * 1024, 0x61);
      for (let sent = 0; sent < declared && !sock.destroyed; sent += chunk.length) {
        if (!sock.write(chunk)) await new Promise((r) => sock.once('drain', r));
      }
      sock.end();
    };
    sock.on('connect', () => void send().catch(reject));
    sock.on('data', (d) => (text += d.toString('latin1')));
    sock.on('error', () => undefined);
    sock.on('close', () => resolve(text));
    sock.setTimeout(10_000, () => sock.destroy());
  });
  t.match(answer, /^HTTP\/1\.1 401 /, 'answered 401 at once');
  const health = await call(`${env.base}/health`);
  t.equal(health.status, 200, 'and still serving');

  // Chunked, so no Content-Length to refuse up front: the stream itself stops past the cap.
  env = await serve(t, { maxUploadBytes: 64 * 1024 });
  const big = Buffer.alloc(512 * 1024, 0x62);
  const r = await call(`${env.base}/upload`, {
    method: 'POST',
    headers: { authorization: `Bearer ${TOKEN}`, 'content-type': `multipart/form-data; boundary=${BOUNDARY}` },
    chunks: [multipart([{ name: 'file', filename: 'big.bin', data: big }])],
    timeoutMs: 10_000,
  });
  t.equal(r.status, 413);
  t.equal((await call(`${env.base}/health`)).status, 200);
  const dated = join(env.paths.workspace, 'api_files');
  t.same(existsSync(dated) ? readdirSync(dated, { recursive: true }).filter((f) => String(f).endsWith('.bin')) : [], [], 'no partial file left');
});
