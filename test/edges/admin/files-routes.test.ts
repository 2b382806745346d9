import t from 'tap';
import * as fs from 'node:fs';
import { join } from 'node:path';
import { USER_FILES_EVENTS } from '../../../schemas/index.js';
import { FILE_CSP } from '../../../edges/index.js';
import { LEAK, hostilePaths, plantLinks, serveContent, snapshot } from '../../fixtures/admin-content.js';

const enc = encodeURIComponent;

async function seeded(t: Parameters<typeof serveContent>[0]) {
  const s = await serveContent(t);
  const ws = s.paths.workspace;
  fs.mkdirSync(join(ws, 'output_to_user'), { recursive: true });
  fs.writeFileSync(join(ws, 'output_to_user', 'report.pdf'), '%PDF-1.4 report');
  fs.writeFileSync(join(ws, 'notes.txt'), 'hello notes\n');
  fs.writeFileSync(join(s.paths.agentsDir, 'coder', 'workspace', 'code.ts'), 'export {};\n');
  return s;
}

await t.test('list, download, mkdir, delete in the WIRE.md shapes', async (t) => {
  const s = await seeded(t);
  let r = await s.call('/api/files/list');
  t.equal(r.status, 200);
  const byName = Object.fromEntries((r.body as { name: string }[]).map((e) => [e.name, e]));
  t.match(byName.output_to_user, { name: 'output_to_user', path: 'output_to_user', size: 0, mime: 'inode/directory', isDir: true, modified: Number });
  t.match(byName['notes.txt'], { name: 'notes.txt', path: 'notes.txt', size: 12, mime: 'text/plain', isDir: false });
  t.ok((r.body as { isDir: boolean }[])[0]!.isDir, 'directories first');
  r = await s.call('/api/files/list?path=output_to_user');
  t.same(
    (r.body as object[]).map((e) => ({ ...e, modified: 0 })),
    [{ name: 'report.pdf', path: 'output_to_user/report.pdf', size: 15, mime: 'application/pdf', modified: 0, isDir: false }],
  );
  r = await s.call('/api/files/list?agent=coder');
  t.same((r.body as { name: string }[]).map((e) => e.name), ['memory_system', 'code.ts']);

  r = await s.call('/api/files/download?relative_path=output_to_user%2Freport.pdf');
  t.equal(r.status, 200);
  t.equal(r.body, '%PDF-1.4 report');
  t.equal(r.headers['content-type'], 'application/pdf');
  t.match(r.headers['content-disposition'], /^attachment; filename="report.pdf"/);
  t.equal(r.headers['x-content-type-options'], 'nosniff');
  t.equal(r.headers['content-security-policy'], FILE_CSP, 'sandboxed like every other served file');
  t.match(r.headers['content-security-policy'], /default-src 'none'.*; sandbox$/);
  t.equal(r.headers['cache-control'], 'private, no-store');
  r = await s.call('/api/files/download?path=notes.txt');
  t.equal(r.body, 'hello notes\n', 'path= as WIRE.md allows');

  r = await s.call('/api/files/mkdir', { method: 'POST', body: { agent: 'main', relative_path: 'projects/2026' } });
  t.same({ status: r.status, body: r.body }, { status: 201, body: { agent: 'main', relative_path: 'projects/2026' } });
  t.ok(fs.statSync(join(s.paths.workspace, 'projects', '2026')).isDirectory());
  r = await s.call('/api/files/mkdir', { method: 'POST', body: { name: 'inbox' } });
  t.equal(r.status, 201, '{name} makes a folder at the top');
  r = await s.call('/api/files/mkdir', { method: 'POST', body: { name: 'inbox' } });
  t.match(r, { status: 409, body: { code: 'file-exists' } });

  r = await s.call('/api/files', { method: 'DELETE', body: { agent: 'main', relative_path: 'projects' } });
  t.same({ status: r.status, body: r.body }, { status: 200, body: { agent: 'main', relative_path: 'projects', deleted: true } });
  t.notOk(fs.existsSync(join(s.paths.workspace, 'projects')));
  r = await s.call('/api/files', { method: 'DELETE', body: { relative_path: 'notes.txt' } });
  t.equal(r.status, 200);
  t.notOk(fs.existsSync(join(s.paths.workspace, 'notes.txt')));
  r = await s.call('/api/files', { method: 'DELETE', body: { relative_path: 'notes.txt' } });
  t.match(r, { status: 404, body: { code: 'not-found' } });

  const types = s.log.read().map((e) => e.type).filter((ty) => ty.startsWith('files.'));
  t.same(types, [USER_FILES_EVENTS.directory_created, USER_FILES_EVENTS.directory_created, USER_FILES_EVENTS.deleted, USER_FILES_EVENTS.deleted]);
  t.same(s.internal, []);
});

await t.test('roles: viewer 403, operator reads and signs but may not change, admin changes', async (t) => {
  const s = await seeded(t);
  const before = snapshot(s.dir);
  for (const path of ['/api/files/list', '/api/files/download?relative_path=notes.txt']) {
    t.equal((await s.call(path, { as: 'viewer' })).status, 403);
    t.equal((await s.call(path, { as: 'operator' })).status, 200);
  }
  t.equal((await s.call('/api/files/sign-url', { method: 'POST', as: 'viewer', body: { relative_path: 'notes.txt' } })).status, 403);
  t.equal((await s.call('/api/files/sign-url', { method: 'POST', as: 'operator', body: { relative_path: 'notes.txt' } })).status, 200);
  for (const who of ['viewer', 'operator'] as const) {
    t.equal((await s.call('/api/files/mkdir', { method: 'POST', as: who, body: { relative_path: 'x' } })).status, 403);
    t.equal((await s.call('/api/files', { method: 'DELETE', as: who, body: { relative_path: 'notes.txt' } })).status, 403);
  }
  t.equal((await s.call('/api/files/list', { as: null })).status, 401);
  t.same(snapshot(s.dir), before);
});

await t.test('allowed_agents: another agent is refused on every route and unchanged', async (t) => {
  const s = await seeded(t);
  t.equal((await s.call('/api/files/list?agent=coder', { as: 'coderAdmin' })).status, 200);
  const before = snapshot(s.dir);
  const seq = s.log.lastSeq();
  const refused = [
    await s.call('/api/files/list', { as: 'coderAdmin' }),
    await s.call('/api/files/list?agent=writer', { as: 'coderOperator' }),
    await s.call('/api/files/download?agent=main&relative_path=notes.txt', { as: 'coderAdmin' }),
    await s.call('/api/files/sign-url', { method: 'POST', as: 'coderAdmin', body: { agent: 'main', relative_path: 'notes.txt' } }),
    await s.call('/api/files/mkdir', { method: 'POST', as: 'coderAdmin', body: { agent: 'main', relative_path: 'x' } }),
    await s.call('/api/files', { method: 'DELETE', as: 'coderAdmin', body: { agent: 'main', relative_path: 'notes.txt' } }),
    await s.call('/api/files', { method: 'DELETE', as: 'coderAdmin', body: { agent: 'ghost', relative_path: 'x' } }),
  ];
  for (const r of refused) t.match(r, { status: 403, body: { code: 'agent-not-allowed' } });
  t.match(await s.call('/api/files/list?agent=ghost'), { status: 404, body: { code: 'unknown-agent' } });
  t.same(snapshot(s.dir), before);
  t.equal(s.log.lastSeq(), seq);
});

await t.test('hostile paths and links out of the workspace: 4xx on every route, nothing served, nothing changed', async (t) => {
  const s = await seeded(t);
  const links = plantLinks(s.paths.workspace, s.paths, join(s.dir, 'outside'));
  const before = snapshot(s.dir);
  const seq = s.log.lastSeq();
  const hostile = [
    ...hostilePaths(s.paths),
    ...links,
    'out-dir/loot.md',
    'out-dir/new',
    'secrets-dir/users.json',
    'secrets-dir/new',
    'notes.txt/../../x',
  ];
  // The traps are live: followed as a careless reader would, they hold what LEAK looks for, so "nothing leaked" below means something.
  for (const trap of ['out-dir/loot.md', 'users.md', 'env.md']) t.match(fs.readFileSync(join(s.paths.workspace, trap), 'utf8'), LEAK, `the trap ${trap} is armed`);
  // The same routes serve what is inside, so each refusal below is the guard's, not a reader that serves nothing.
  t.match(await s.call(`/api/files/download?relative_path=${enc('notes.txt')}`), { status: 200, body: 'hello notes\n' });
  t.match(await s.call(`/api/files/list?path=${enc('output_to_user')}`), { status: 200, body: [{ name: 'report.pdf' }] });
  for (const p of hostile) {
    const label = JSON.stringify(p.slice(0, 60));
    for (const url of [`/api/files/download?relative_path=${enc(p)}`, `/api/files/download?relative_path=${enc(enc(p))}`, `/api/files/list?path=${enc(p)}`]) {
      const r = await s.call(url);
      // A link to a directory inside nothing: listing one that leads out is refused too.
      t.ok(r.status >= 400 && r.status < 500, `GET ${url.split('?')[0]} ${label} → ${r.status}`);
      t.notMatch(typeof r.body === 'string' ? r.body : JSON.stringify(r.body), LEAK, `nothing leaked for ${label}`);
    }
    for (const [url, method, body] of [
      ['/api/files/mkdir', 'POST', { relative_path: p }],
      ['/api/files', 'DELETE', { relative_path: p }],
      ['/api/files/sign-url', 'POST', { relative_path: p }],
    ] as const) {
      const r = await s.call(url, { method, body });
      t.ok(r.status >= 400 && r.status < 500, `${method} ${url} ${label} → ${r.status}`);
    }
  }
  // The area's root is never deleted or re-made, however it is named.
  for (const p of ['', '.', './', 'output_to_user/..', '/']) {
    t.ok((await s.call('/api/files', { method: 'DELETE', body: { relative_path: p } })).status >= 400, `DELETE ${JSON.stringify(p)}`);
  }
  // The listing of the root shows none of the links that lead out.
  const names = ((await s.call('/api/files/list')).body as { name: string }[]).map((e) => e.name);
  t.same(names.filter((n) => links.includes(n)), [], 'links leading out are not listed');
  t.same(snapshot(s.dir), before, 'nothing created, changed or removed');
  t.equal(s.log.lastSeq(), seq);
  t.same(s.internal, []);
});

await t.test('deleting a link removes the link, never what it points at; a folder with links inside keeps their targets', async (t) => {
  const s = await seeded(t);
  const outside = join(s.dir, 'outside');
  fs.mkdirSync(outside);
  fs.writeFileSync(join(outside, 'keep.txt'), 'keep');
  fs.mkdirSync(join(s.paths.workspace, 'box'));
  fs.symlinkSync(outside, join(s.paths.workspace, 'box', 'link'));
  fs.symlinkSync(join(s.paths.workspace, 'notes.txt'), join(s.paths.workspace, 'alias.txt'));
  let r = await s.call('/api/files', { method: 'DELETE', body: { relative_path: 'alias.txt' } });
  t.equal(r.status, 200);
  t.ok(fs.existsSync(join(s.paths.workspace, 'notes.txt')), 'the target of an in-area link stays');
  r = await s.call('/api/files', { method: 'DELETE', body: { relative_path: 'box' } });
  t.equal(r.status, 200);
  t.equal(fs.readFileSync(join(outside, 'keep.txt'), 'utf8'), 'keep', 'a link inside a deleted folder is unlinked, not followed');
});

await t.test('bad bodies and queries: 4xx, nothing changed', async (t) => {
  const s = await seeded(t);
  const before = snapshot(s.dir);
  t.match(await s.call('/api/files/mkdir', { method: 'POST', raw: '{' }), { status: 400, body: { code: 'invalid-json' } });
  t.match(await s.call('/api/files/mkdir', { method: 'POST', body: { relative_path: 'a', mode: 777 } }), { status: 400, body: { code: 'invalid-body' } });
  t.match(await s.call('/api/files/mkdir', { method: 'POST', body: { relative_path: 5 } }), { status: 400, body: { code: 'invalid-body' } });
  t.match(await s.call('/api/files/mkdir', { method: 'POST', body: { relative_path: 'a', name: 'b' } }), { status: 400, body: { code: 'invalid-body' } });
  t.match(await s.call('/api/files/mkdir', { method: 'POST', body: {} }), { status: 400, body: { code: 'invalid-body' } });
  t.match(await s.call('/api/files', { method: 'DELETE', body: { relative_path: 'notes.txt', recursive: true } }), { status: 400 });
  t.match(await s.call('/api/files', { method: 'DELETE', raw: JSON.stringify({ relative_path: 'x'.repeat(20000) }) }), { status: 413 });
  t.match(await s.call('/api/files/download'), { status: 400, body: { code: 'invalid-query' } });
  t.match(await s.call('/api/files/download?relative_path=notes.txt&path=notes.txt'), { status: 400, body: { code: 'invalid-query' } });
  t.match(await s.call('/api/files/download?relative_path=output_to_user'), { status: 400, body: { code: 'invalid-path' } }, 'a directory is not downloaded');
  t.match(await s.call('/api/files/list?path=notes.txt'), { status: 400, body: { code: 'invalid-path' } });
  t.match(await s.call('/api/files/sign-url', { method: 'POST', body: { relative_path: 'notes.txt', ttl: 86400 } }), { status: 400, body: { code: 'invalid-body' } });
  t.match(await s.call('/api/files/sign-url', { method: 'POST', body: { relative_path: 'notes.txt', ttl: 1.5 } }), { status: 400 });
  t.match(await s.call('/api/files/sign-url', { method: 'POST', body: { relative_path: 'missing.txt' } }), { status: 404 });
  t.same(snapshot(s.dir), before);
});

await t.test('signed URL: works without other credentials until it expires, bound to its path, refused when altered', async (t) => {
  const s = await seeded(t);
  const r = await s.call('/api/files/sign-url', { method: 'POST', body: { relative_path: 'output_to_user/report.pdf', ttl: 60 } });
  t.equal(r.status, 200);
  t.equal(r.body.expires_at, Math.floor(Date.parse('2026-11-25T10:00:00.000Z') / 1000) + 60);
  const url = r.body.url as string;
  t.match(url, /^\/api\/files\/signed\?agent=main&path=output_to_user%2Freport\.pdf&exp=\d+&sig=[A-Za-z0-9_-]{43}$/);
  let d = await s.call(url, { as: null });
  t.equal(d.status, 200);
  t.equal(d.body, '%PDF-1.4 report');

  const q = new URL(url, 'http://x').searchParams;
  const tampered = (k: string, v: string) => {
    const p = new URLSearchParams(q);
    p.set(k, v);
    return `/api/files/signed?${p.toString()}`;
  };
  for (const bad of [
    tampered('path', 'notes.txt'),
    tampered('path', '../_secrets/users.json'),
    tampered('agent', 'coder'),
    tampered('exp', String(Number(q.get('exp')) + 1000)),
    // The first character: the last one of 43 carries two padding bits, so A and B there can decode alike.
    tampered('sig', `${q.get('sig')!.startsWith('A') ? 'B' : 'A'}${q.get('sig')!.slice(1)}`),
  ]) {
    d = await s.call(bad, { as: null });
    t.match(d, { status: 403, body: { code: 'signature-invalid' } }, bad);
  }
  t.match(await s.call(tampered('sig', 'short'), { as: null }), { status: 400, body: { code: 'invalid-query' } });
  t.match(await s.call('/api/files/signed?agent=main&path=notes.txt', { as: null }), { status: 400 });

  s.advance(60_000);
  t.match(await s.call(url, { as: null }), { status: 410, body: { code: 'link-expired' } }, 'expired on the injected clock');

  // A signed file swapped for a link to the secrets is not served: the descriptor is checked at download.
  const r2 = await s.call('/api/files/sign-url', { method: 'POST', body: { relative_path: 'notes.txt' } });
  fs.rmSync(join(s.paths.workspace, 'notes.txt'));
  fs.symlinkSync(join(s.paths.secretsDir, 'users.json'), join(s.paths.workspace, 'notes.txt'));
  d = await s.call(r2.body.url, { as: null });
  t.equal(d.status, 403);
  t.notMatch(JSON.stringify(d.body), LEAK);
});

await t.test('sign-url takes a file an answer named by its absolute path, inside the workspace only', async (t) => {
  const s = await seeded(t);
  const inside = join(s.paths.workspace, 'output_to_user', 'report.pdf');
  const r = await s.call('/api/files/sign-url', { method: 'POST', body: { path: inside, ttl: 60 } });
  t.equal(r.status, 200, JSON.stringify(r.body));
  const url = (r.body as { url: string }).url;
  t.match(url, /path=output_to_user%2Freport\.pdf/, 'signed for the workspace-relative path');
  const got = await s.call(url, { as: null });
  t.equal(got.status, 200);
  t.equal(got.body, '%PDF-1.4 report', 'the link downloads the file');

  const before = snapshot(s.dir);
  for (const p of ['/etc/passwd', join(s.dir, 'outside.txt'), s.paths.workspace, `${s.paths.workspace}/../secrets`, join(s.paths.agentsDir, 'coder', 'workspace', 'code.ts')]) {
    const refused = await s.call('/api/files/sign-url', { method: 'POST', body: { path: p, ttl: 60 } });
    t.equal(refused.status, 400, `${p} → ${refused.status}`);
  }
  t.same(snapshot(s.dir), before);
});
