// The admin panel's built files, served by the HTTP server for GET/HEAD requests no route matches:
// hashed assets cached for a year, index.html for the SPA's own routes, a strict CSP on every
// reply, nothing outside the directory ever read. Real uWS on port 0, real files.
import t, { type Test } from 'tap';
import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import { PANEL_SECURITY_HEADERS, json, panelFiles, panelPathOf, type Surface } from '../../edges/index.js';
import { serveSurfaces } from '../fixtures/http-server.js';
import { rawRequest } from '../fixtures/raw-http.js';

const INDEX = '<!doctype html><html><head><script type="module" src="/assets/index-3f9a1c2b.js"></script></head><body><div id="app"></div></body></html>\n';
const SCRIPT = `export const panel = ${JSON.stringify('x'.repeat(4000))};\nconsole.log(panel.length);\n`;

/** A built panel as `npm run build` leaves it, plus a secret beside it that links inside try to reach. */
function builtPanel(t: Test): { dir: string; secret: string } {
  const root = t.testdir({
    'secret.txt': 'TOP SECRET\n',
    panel: {
      'index.html': INDEX,
      'favicon.svg': '<svg xmlns="http://www.w3.org/2000/svg"/>',
      'version.json': JSON.stringify({ version: '0.1.0', built_at: '2026-11-28T00:00:00Z' }),
      '.hidden': 'not served',
      assets: { 'index-3f9a1c2b.js': SCRIPT, 'index-77aa.css': 'body{margin:0}' },
    },
  });
  const dir = join(root, 'panel');
  symlinkSync(join(root, 'secret.txt'), join(dir, 'assets', 'leak.js'));
  symlinkSync(root, join(dir, 'up'));
  return { dir, secret: 'TOP SECRET' };
}

/** A surface with an API route, so unknown endpoints beside it can be told from the panel. */
const api: Surface = {
  name: 'api',
  statuses: {},
  routes: [
    { method: 'GET', pattern: '/api/thing', auth: 'public', handler: () => json(200, { ok: true }) },
    { method: 'POST', pattern: '/upload', auth: 'public', handler: () => json(200, { ok: true }) },
  ],
};

async function serve(t: Test, dir: string) {
  const files = panelFiles({ dir });
  return serveSurfaces(t, [api], { fallback: (req) => files.reply(req) });
}

const get = (port: number, path: string, headers: Record<string, string> = {}, method = 'GET') =>
  fetch(`http://127.0.0.1:${port}${path}`, { method, headers: { connection: 'close', ...headers } });

function securityHeaders(t: Test, r: Response, what: string) {
  for (const [k, v] of Object.entries(PANEL_SECURITY_HEADERS)) t.equal(r.headers.get(k), v, `${what}: ${k}`);
}

await t.test('hashed assets: a year immutable, their type, compressed for a client that takes it', async (t) => {
  const { dir } = builtPanel(t);
  const { port } = await serve(t, dir);

  const plain = await get(port, '/assets/index-3f9a1c2b.js', { 'accept-encoding': 'identity' });
  t.equal(plain.status, 200);
  t.equal(plain.headers.get('cache-control'), 'public, max-age=31536000, immutable');
  t.match(plain.headers.get('content-type'), /^(text|application)\/javascript/);
  t.equal(plain.headers.get('content-encoding'), null);
  t.equal(await plain.text(), SCRIPT);
  securityHeaders(t, plain, 'asset');

  // Raw bytes, so the test sees what went over the wire, not what fetch decoded.
  const br = await rawRequest(port, 'GET /assets/index-3f9a1c2b.js HTTP/1.1\r\nHost: x\r\nAccept-Encoding: gzip, deflate, br\r\nConnection: close\r\n\r\n');
  t.match(br.text, /\r\ncontent-encoding: br\r\n/i);
  t.match(br.text, /\r\nvary: Accept-Encoding\r\n/i);
  const brBody = Buffer.from(br.text.slice(br.text.indexOf('\r\n\r\n') + 4), 'latin1');
  t.ok(brBody.length < SCRIPT.length / 10, `brotli sends ${brBody.length} bytes for ${SCRIPT.length}`);
  t.equal(brotliDecompressSync(brBody).toString(), SCRIPT);

  const gz = await rawRequest(port, 'GET /assets/index-3f9a1c2b.js HTTP/1.1\r\nHost: x\r\nAccept-Encoding: gzip, br;q=0\r\nConnection: close\r\n\r\n');
  t.match(gz.text, /\r\ncontent-encoding: gzip\r\n/i, 'br;q=0 refuses brotli');
  t.equal(gunzipSync(Buffer.from(gz.text.slice(gz.text.indexOf('\r\n\r\n') + 4), 'latin1')).toString(), SCRIPT);

  const css = await get(port, '/assets/index-77aa.css');
  t.match(css.headers.get('content-type'), /^text\/css/);
  t.equal(await css.text(), 'body{margin:0}', 'too small to compress: sent as it is');

  const icon = await get(port, '/favicon.svg');
  t.equal(icon.headers.get('content-type'), 'image/svg+xml');
  t.equal(icon.headers.get('cache-control'), 'no-cache', 'a name without a hash is revalidated');
});

await t.test('index.html for / and the SPA routes; the API keeps its JSON 404s; missing assets are a plain 404', async (t) => {
  const { dir } = builtPanel(t);
  const { port } = await serve(t, dir);
  for (const path of ['/', '/index.html', '/agents/main', '/chat', '/settings/users?tab=2']) {
    const r = await get(port, path);
    t.equal(r.status, 200, path);
    t.match(r.headers.get('content-type'), /^text\/html/, path);
    t.equal(r.headers.get('cache-control'), 'no-cache', path);
    t.equal(await r.text(), INDEX, path);
    securityHeaders(t, r, path);
  }
  const etag = (await get(port, '/')).headers.get('etag')!;
  t.equal((await get(port, '/chat', { 'if-none-match': etag })).status, 304, 'revalidation: not modified');

  t.same(await (await get(port, '/api/thing')).json(), { ok: true }, 'routes still win');
  for (const path of ['/api/nope', '/api', '/ws/nope', '/health/x', '/hooks/x', '/files/x', '/upload/x']) {
    const r = await get(port, path);
    t.equal(r.status, 404, path);
    t.match(await r.json(), { code: 'not-found' }, `${path}: the API's JSON 404`);
  }
  const post = await get(port, '/chat', {}, 'POST');
  t.equal(post.status, 404, 'POST to an unknown path is still a 404');
  t.match(await post.json(), { code: 'not-found' });
  t.equal((await get(port, '/upload')).status, 405, 'a known route with another method stays 405');

  const missing = await get(port, '/assets/index-00000000.js');
  t.equal(missing.status, 404, 'a missing asset is not index.html');
  t.match(missing.headers.get('content-type'), /^text\/plain/);
  securityHeaders(t, missing, 'the 404');
  t.equal((await get(port, '/.hidden')).status, 200, 'a hidden file is not served: the SPA answers');
  t.not(await (await get(port, '/.hidden')).text(), 'not served');
});

await t.test('HEAD answers as GET without the body', async (t) => {
  const { dir } = builtPanel(t);
  const { port } = await serve(t, dir);
  const r = await rawRequest(port, 'HEAD /agents/main HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
  t.match(r.status, /^HTTP\/1\.1 200/);
  t.match(r.text, new RegExp(`\\r\\ncontent-length: ${Buffer.byteLength(INDEX)}\\r\\n`, 'i'));
  t.match(r.text, /\r\ncontent-security-policy: default-src 'self'/i);
  t.equal(r.text.slice(r.text.indexOf('\r\n\r\n') + 4), '', 'no body');
});

await t.test('nothing outside the directory is read: dot segments, encoded or not, NUL, backslashes, links out', async (t) => {
  const { dir, secret } = builtPanel(t);
  const { port } = await serve(t, dir);
  const attempts = [
    '/../secret.txt',
    '/assets/../../secret.txt',
    '/%2e%2e/secret.txt',
    '/assets/%2E%2E/%2e%2e/secret.txt',
    '/%2e%2e%2fsecret.txt',
    '/assets/..%5c..%5csecret.txt',
    '/assets\\..\\..\\secret.txt',
    '/index.html%00.js',
    '/assets/leak.js',
    '/up/secret.txt',
    '/up/panel/index.html',
    '/%ff',
  ];
  for (const path of attempts) {
    const r = await rawRequest(port, `GET ${path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`);
    t.notMatch(r.text, secret, `${path}: the secret is not sent`);
    t.notMatch(r.status, /^HTTP\/1\.1 5/, `${path}: no server error (${r.status})`);
  }
  t.equal((await get(port, '/assets/leak.js')).status, 404, 'a link out of the directory is not a file of the panel');
  t.equal(panelPathOf('/%2e%2e/x'), null);
  t.equal(panelPathOf('/a\\b'), null);
  t.equal(panelPathOf('/a%00b'), null);
  t.equal(panelPathOf('/agents/main'), '/agents/main');
});

await t.test('no built panel: / explains how to build it with a 503, and the API is unaffected', async (t) => {
  const dir = join(t.testdir(), 'dist', 'panel');
  const { port } = await serve(t, dir);
  for (const path of ['/', '/chat']) {
    const r = await get(port, path);
    t.equal(r.status, 503, path);
    t.match(await r.text(), /npm run build/);
    securityHeaders(t, r, path);
  }
  t.equal((await get(port, '/api/nope')).status, 404);

  // Built after the server started: picked up without a restart.
  mkdirSync(join(dir, 'assets'), { recursive: true });
  writeFileSync(join(dir, 'index.html'), INDEX);
  const r = await get(port, '/');
  t.equal(r.status, 200);
  t.equal(await r.text(), INDEX);
});
