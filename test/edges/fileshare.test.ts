import t from 'tap';
import * as fs from 'node:fs';
import { join } from 'node:path';
import { FILE_CSP, startFileshareServer } from '../../edges/index.js';
import { homePaths } from '../../store/index.js';
import { rawRequest } from '../fixtures/raw-http.js';

// The fileshare listener (SPEC.md FileshareConfig): read-only files of ~/.svc/fileshare, nothing else.

await t.test('serves the folder, and nothing outside it', async (t) => {
  const base = t.testdir();
  const paths = homePaths(join(base, 'home'));
  const dir = paths.fileshareDir;
  fs.mkdirSync(join(dir, 'reports'), { recursive: true });
  fs.mkdirSync(paths.secretsDir, { recursive: true });
  fs.writeFileSync(join(dir, 'hello.txt'), 'hello there\n');
  fs.writeFileSync(join(dir, 'reports', 'q1 résumé.csv'), 'a,b\n1,2\n');
  fs.writeFileSync(join(dir, 'page.html'), '<script>alert(1)</script>');
  fs.writeFileSync(join(dir, '.env'), 'TOKEN=x\n');
  fs.writeFileSync(join(base, 'outside.txt'), 'OUTSIDE-CONTENT\n');
  fs.writeFileSync(join(paths.secretsDir, 'users.json'), '{"secret":"S3CR3T"}');
  fs.symlinkSync(join(base, 'outside.txt'), join(dir, 'link-out.txt'));
  fs.symlinkSync(base, join(dir, 'dir-out'));
  fs.symlinkSync(join(dir, 'hello.txt'), join(dir, 'link-in.txt'));
  fs.linkSync(join(paths.secretsDir, 'users.json'), join(dir, 'hardlinked.json'));
  const big = Buffer.alloc(300 * 1024, 7);
  fs.writeFileSync(join(dir, 'big.bin'), big);

  const logs: string[] = [];
  const server = await startFileshareServer({ paths, host: '127.0.0.1', port: 0, allowPublic: false, log: (_l, m) => void logs.push(m) });
  t.teardown(() => server.close());
  t.equal(server.url, `http://127.0.0.1:${server.port}`);
  t.equal(server.dir, dir);
  const get = (path: string, init: RequestInit = {}) => fetch(`${server.url}${path}`, { ...init, headers: { connection: 'close' } });

  const hello = await get('/hello.txt');
  t.equal(hello.status, 200);
  t.equal(await hello.text(), 'hello there\n');
  t.match(hello.headers.get('content-type'), /^text\/plain/);
  t.equal(hello.headers.get('x-content-type-options'), 'nosniff');

  const nested = await get('/reports/q1%20r%C3%A9sum%C3%A9.csv');
  t.equal(nested.status, 200, 'a file in a subfolder, by its encoded name');
  t.equal(await nested.text(), 'a,b\n1,2\n');
  t.equal(await (await get('/link-in.txt')).text(), 'hello there\n', 'a link that stays inside is followed');
  const page = await get('/page.html');
  t.equal(page.headers.get('content-security-policy'), FILE_CSP, 'shared HTML runs no script on this origin');
  t.match(page.headers.get('content-security-policy'), /default-src 'none'.*; sandbox$/);
  t.match(page.headers.get('content-disposition'), /^inline; filename="page.html"/);
  t.equal(page.headers.get('x-content-type-options'), 'nosniff');
  t.equal(page.headers.get('cache-control'), 'no-store');
  await page.arrayBuffer();
  const whole = Buffer.from(await (await get('/big.bin')).arrayBuffer());
  t.ok(whole.equals(big), 'a file larger than one window arrives whole');

  const head = await get('/big.bin', { method: 'HEAD' });
  t.equal(head.status, 200);
  t.equal(head.headers.get('content-length'), String(big.length), 'HEAD tells the length');
  t.equal((await head.arrayBuffer()).byteLength, 0, 'and sends no body');

  for (const [path, why] of [
    ['/nothing.txt', 'missing'],
    ['/link-out.txt', 'a link leading out'],
    ['/dir-out/outside.txt', 'through a linked directory leading out'],
    ['/hardlinked.json', "a hard link to the service's secrets"],
    ['/.env', 'a dotfile'],
    ['/reports', 'a directory'],
    ['/%2Fetc%2Fpasswd', 'an encoded absolute path'],
    ['/', 'the folder itself'],
  ] as const) {
    const r = await get(path);
    t.equal(r.status, 404, `${why}: 404`);
    const text = await r.text();
    t.notMatch(text, /OUTSIDE-CONTENT|S3CR3T|root:x/, `${why}: nothing of it in the answer`);
  }

  for (const path of ['/../outside.txt', '/reports/../../outside.txt', '/%2e%2e/outside.txt', '/reports/%2E%2E%2F%2E%2E%2Foutside.txt', '/..%2f..%2fhome/_secrets/users.json']) {
    const r = await rawRequest(server.port, `GET ${path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`);
    t.match(r.status, /^HTTP\/1\.1 (400|404)/, `${path} refused`);
    t.notMatch(r.text, /OUTSIDE-CONTENT|S3CR3T/, `${path}: nothing leaks`);
  }

  const post = await get('/hello.txt', { method: 'POST', body: 'x' });
  t.equal(post.status, 405, 'read-only');
  await post.arrayBuffer();
  t.ok(logs.some((l) => l.includes('fileshare serving')));
});

await t.test('a link inside the folder leading to a dotfile or into a dot-folder is not served either', async (t) => {
  const base = t.testdir();
  const paths = homePaths(join(base, 'home'));
  const dir = paths.fileshareDir;
  fs.mkdirSync(join(dir, '.git'), { recursive: true });
  fs.mkdirSync(join(dir, 'reports', '.drafts'), { recursive: true });
  fs.writeFileSync(join(dir, '.env'), 'TOKEN=DOT-SECRET\n');
  fs.writeFileSync(join(dir, '.git', 'config'), '[remote] url = DOT-SECRET\n');
  fs.writeFileSync(join(dir, 'reports', '.drafts', 'q2.csv'), 'DOT-SECRET\n');
  fs.writeFileSync(join(dir, 'reports', 'q1.csv'), 'shared\n');
  fs.symlinkSync('.env', join(dir, 'env.txt'));
  fs.symlinkSync('.git', join(dir, 'g'));
  fs.symlinkSync('.drafts', join(dir, 'reports', 'd'));
  fs.symlinkSync(join(dir, 'reports', '.drafts', 'q2.csv'), join(dir, 'q2.csv'));
  fs.symlinkSync('reports/q1.csv', join(dir, 'q1.csv'));
  const server = await startFileshareServer({ paths, host: '127.0.0.1', port: 0, allowPublic: false, log: () => undefined });
  t.teardown(() => server.close());
  const get = (path: string) => fetch(`${server.url}${path}`, { headers: { connection: 'close' } });

  for (const path of ['/env.txt', '/g/config', '/reports/d/q2.csv', '/q2.csv']) {
    const r = await get(path);
    t.equal(r.status, 404, `${path}: 404`);
    t.notMatch(await r.text(), /DOT-SECRET/, `${path}: nothing of it in the answer`);
  }
  const ok = await get('/q1.csv');
  t.equal(ok.status, 200, 'a link to a shared file is still followed');
  t.equal(await ok.text(), 'shared\n');
});
