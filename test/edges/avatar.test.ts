import t from 'tap';
import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { join } from 'node:path';
import { API_STATUSES, FILE_CSP, avatarRoutes } from '../../edges/index.js';
import { avatarsDir, homePaths, openAvatar } from '../../store/index.js';
import { serveSurfaces } from '../fixtures/http-server.js';

type TT = { testdir(): string; teardown(fn: () => void): void };

// A minimal valid 1x1 PNG.
const PNG = Buffer.from('89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c4890000000d4944415478da63f8cfc0f01f0005000201a5e3d3e70000000049454e44ae426082', 'hex');

async function serve(t: TT) {
  const dir = t.testdir();
  const paths = homePaths(join(dir, 'home'));
  const avatars = avatarsDir(paths);
  mkdirSync(avatars, { recursive: true });
  writeFileSync(join(avatars, 'main.png'), PNG);
  writeFileSync(join(avatars, 'main.jpg'), 'a jpeg that loses to the png');
  writeFileSync(join(avatars, 'coder.jpg'), 'jpeg bytes');
  writeFileSync(join(avatars, 'writer.webp'), 'webp bytes');
  writeFileSync(join(avatars, 'Bot_2-x.gif'), 'gif bytes');
  mkdirSync(join(avatars, 'dir.png'));
  mkdirSync(join(avatars, 'folder.png'));
  writeFileSync(join(dir, 'home', 'secret.png'), 'outside the avatars folder');
  mkdirSync(paths.configDir, { recursive: true });
  writeFileSync(paths.configFile, '{"api":{"token":"CONFIG-SECRET"}}');
  const srv = await serveSurfaces(t, [{ name: 'api', routes: avatarRoutes({ paths }), statuses: API_STATUSES }]);
  const { internal } = srv;
  /** Raw request: fetch would normalise `..` and `%2e%2e` segments away before they reach the server. */
  const get = (path: string) =>
    new Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: Buffer }>((resolve, reject) => {
      const req = request({ host: '127.0.0.1', port: srv.port, path, agent: false, headers: { connection: 'close' } }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks) }));
      });
      req.on('error', reject);
      req.end();
    });
  return { paths, get, internal };
}

await t.test('served without any Authorization header, with the content type of the file found first', async (t) => {
  const s = await serve(t);
  const r = await s.get('/api/agents/main/avatar');
  t.equal(r.status, 200);
  t.equal(r.headers['content-type'], 'image/png', 'png wins over jpg');
  t.equal(r.headers['cache-control'], 'public, max-age=300');
  t.equal(r.headers['x-content-type-options'], 'nosniff');
  t.equal(r.headers['content-security-policy'], FILE_CSP, 'sandboxed like every other served file');
  t.match(r.headers['content-security-policy'], /default-src 'none'.*; sandbox$/);
  t.match(r.headers['content-disposition'], /^inline; filename="[^"]+\.png"/);
  t.ok(r.body.equals(PNG), 'the bytes of the file');
  for (const [name, type, body] of [
    ['coder', 'image/jpeg', 'jpeg bytes'],
    ['writer', 'image/webp', 'webp bytes'],
    ['Bot_2-x', 'image/gif', 'gif bytes'],
  ] as const) {
    const x = await s.get(`/api/agents/${name}/avatar`);
    t.same([x.status, x.headers['content-type'], x.body.toString()], [200, type, body], name);
  }
  t.same(s.internal, []);
});

await t.test('names that could leave the folder are 400; no avatar is 404', async (t) => {
  const s = await serve(t);
  for (const path of [
    '/api/agents/%2e%2e/avatar',
    '/api/agents/..%2fsecret/avatar',
    '/api/agents/..%2F..%2Fetc%2Fpasswd/avatar',
    '/api/agents/main.png/avatar',
    '/api/agents/a%00b/avatar',
    '/api/agents/a%20b/avatar',
    '/api/agents/%E2%9C%93/avatar',
    '/api/agents/../avatar',
    `/api/agents/${'a'.repeat(65)}/avatar`,
  ]) {
    const r = await s.get(path);
    t.equal(r.status, 400, path);
    t.match(JSON.parse(r.body.toString()), { code: 'invalid-agent-name', error: /is not allowed/ }, path);
  }
  for (const name of ['ghost', 'dir', 'folder', 'secret']) {
    const r = await s.get(`/api/agents/${name}/avatar`);
    t.equal(r.status, 404, name);
    t.same(JSON.parse(r.body.toString()), { error: `agent "${name}" has no avatar`, code: 'not-found' }, name);
  }
  t.equal((await s.get('/api/agents/%zz/avatar')).status, 404, 'a segment that does not decode matches no route');
  const main = (await openAvatar(s.paths, 'main'))!;
  t.equal(main.extension, 'png');
  await main.handle.close();
  await t.rejects(openAvatar(s.paths, '../main'), { code: 'invalid-agent-name' });
  t.same(s.internal, []);
});

await t.test('a symlink in avatars/ is never followed, whatever it points at; only raster images are served', async (t) => {
  const s = await serve(t);
  const dir = avatarsDir(s.paths);
  symlinkSync('/etc/passwd', join(dir, 'evil.png'));
  symlinkSync('../config/config.json', join(dir, 'cfg.png'));
  symlinkSync(join(dir, 'main.png'), join(dir, 'alias.png'));
  symlinkSync(join(s.paths.root, 'secret.png'), join(dir, 'out.gif'));
  // A link shadows a real file of a later extension: the link is skipped, the real file served.
  symlinkSync('/etc/passwd', join(dir, 'coder.png'));
  writeFileSync(join(dir, 'vector.svg'), '<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>');
  for (const name of ['evil', 'cfg', 'alias', 'out', 'vector']) {
    const r = await s.get(`/api/agents/${name}/avatar`);
    t.equal(r.status, 404, name);
    t.notMatch(r.body.toString(), /root:|CONFIG-SECRET|outside the avatars|<svg/, `${name}: nothing of the target leaks`);
  }
  const coder = await s.get('/api/agents/coder/avatar');
  t.same([coder.status, coder.headers['content-type'], coder.body.toString()], [200, 'image/jpeg', 'jpeg bytes']);
  t.same(s.internal, []);
});

