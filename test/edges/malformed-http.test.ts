// Malformed and unauthenticated HTTP on the direct and internal APIs, sent as raw bytes over real
// sockets: every request the routes can see gets a 4xx status line, and none of them writes anything.
import t, { type Test } from 'tap';
import { mkdirSync, writeFileSync } from 'node:fs';
import { Bus, type LogLine } from '../../bus/index.js';
import { json } from '../../edges/index.js';
import { startDirectApi } from '../fixtures/direct-api.js';
import { connectionMachine } from '../../machines/index.js';
import { defaultConfig, type Envelope } from '../../schemas/index.js';
import { MemoryEventLog, homePaths } from '../../store/index.js';
import { MAIN_TOKEN, serveInternal } from '../fixtures/internal-api.js';
import { rawRequest } from '../fixtures/raw-http.js';

const TOKEN = 'test-token-0123456789abcdef';

async function serveDirect(t: Test) {
  const dir = t.testdir({});
  const paths = homePaths(dir);
  mkdirSync(paths.configDir, { recursive: true });
  writeFileSync(paths.configFile, JSON.stringify({ api: { enabled: true, token: TOKEN } }));
  const cfg = defaultConfig();
  cfg.api = { ...cfg.api, enabled: true, token: TOKEN };
  const log = new MemoryEventLog();
  const bus = new Bus({ log });
  const logs: LogLine[] = [];
  bus.transient$.subscribe((m) => m.type === 'log.line' && logs.push(m.data as LogLine));
  const server = (await startDirectApi({
    bus, config: () => cfg, paths, providers: () => [], connectionMachine, host: '127.0.0.1', port: 0,
    surfaces: [{ name: 'api', statuses: {}, routes: [{ method: 'GET', pattern: '/api/ping', auth: 'public', handler: () => json(200, { pong: true }) }] }],
  }))!;
  t.teardown(() => {
    server.close();
    bus.close();
  });
  return { port: server.port, log, logs };
}

const get = (path: string, extra = '') => `GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n${extra}\r\n`;

await t.test('direct API: unknown paths, /ws without upgrade and wrong methods get 4xx answers at once', async (t) => {
  const { port, log } = await serveDirect(t);
  const cases: [string, string, string, RegExp][] = [
    ['unknown path', get('/nope'), 'HTTP/1.1 404 Not Found', /"code":"not-found"/],
    ['unknown nested path', get('/a/b/c?x=1'), 'HTTP/1.1 404 Not Found', /no such endpoint: GET \/a\/b\/c/],
    ['root', get('/'), 'HTTP/1.1 404 Not Found', /not-found/],
    ['/ws without upgrade', get('/ws'), 'HTTP/1.1 426 Upgrade Required', /\r\nupgrade: websocket\r\n[\s\S]*"code":"upgrade-required"/i],
    ['POST /ws', `POST /ws HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nConnection: close\r\n\r\nhi`, 'HTTP/1.1 405 Method Not Allowed', /method-not-allowed/],
    ['DELETE /health', `DELETE /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`, 'HTTP/1.1 405 Method Not Allowed', /method-not-allowed/],
    ['/files without a token', get('/files?path=/etc/passwd'), 'HTTP/1.1 401 Unauthorized', /unauthorized/],
    ['/upload without a token', `POST /upload HTTP/1.1\r\nHost: x\r\nContent-Type: multipart/form-data; boundary=b\r\nContent-Length: 4\r\nConnection: close\r\n\r\n--b-`, 'HTTP/1.1 401 Unauthorized', /unauthorized/],
    ['unknown /api path', get('/api/nope'), 'HTTP/1.1 404 Not Found', /not-found/],
  ];
  for (const [name, request, status, body] of cases) {
    const res = await rawRequest(port, request);
    t.equal(res.status, status, name);
    t.match(res.text, body, `${name}: says why`);
  }
  t.equal((await rawRequest(port, get('/health'))).status, 'HTTP/1.1 200 OK', 'routes mounted before the catch-all still answer');
  t.match((await rawRequest(port, get('/api/ping'))).text, /"pong":true/, 'and so does /api/* beside it');
  t.same(log.read(), [], 'nothing was recorded');
});

await t.test('direct API: requests uWS cannot parse never reach a route, and do not hold up anyone else', async (t) => {
  const { port, log, logs } = await serveDirect(t);
  // uWS 20.30 answers none of these: it waits for a request it can parse and closes the socket at its
  // 10 s HTTP idle timeout (see the report on issue 9). What is ours to check: they change nothing.
  const hostile = [Buffer.from('GET /hea\0lth HTTP/1.1\r\nHost: x\r\n\r\n'), 'GET /health HTTP/1.0\r\n\r\n', 'HELLO\r\n\r\n', 'GET /health HTTP/9.9\r\nHost: x\r\n\r\n'];
  const pending = hostile.map((req) => rawRequest(port, req, 200));
  t.equal((await rawRequest(port, get('/health'))).status, 'HTTP/1.1 200 OK', 'a healthy request is served meanwhile');
  for (const r of await Promise.all(pending)) t.notMatch(r.status, /^HTTP\/1\.1 [23]/, 'no success answer to a malformed request');
  t.same(log.read(), []);
  t.same(logs.filter((l) => l.level !== 'info'), [], 'and no log lines');
});

await t.test('internal API: unknown paths are 404, bad tokens are 401, and neither publishes anything', async (t) => {
  const { port, bus, rt } = await serveInternal(t);
  const published: Envelope[] = [];
  bus.events$.subscribe((e) => published.push(e));
  const send = (token: string, from: string) => {
    const body = JSON.stringify({ from, to: 'carol', message: 'x' });
    return `POST /interagent/send_async HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`;
  };
  t.equal((await rawRequest(port, get('/nope'))).status, 'HTTP/1.1 404 Not Found');
  t.equal((await rawRequest(port, get('/'))).status, 'HTTP/1.1 404 Not Found');
  t.equal((await rawRequest(port, get('/interagent/send'))).status, 'HTTP/1.1 405 Method Not Allowed');
  for (let i = 0; i < 20; i++) t.equal((await rawRequest(port, send('x'.repeat(40), i % 2 ? 'main' : 'bob'))).status, 'HTTP/1.1 401 Unauthorized');
  t.same(published, [], 'no interagent.requested for a caller that did not authenticate');
  t.equal(rt!.received.length, 0);
  t.equal((await rawRequest(port, send(MAIN_TOKEN, 'main'))).status, 'HTTP/1.1 200 OK', 'the right token still works');
});
