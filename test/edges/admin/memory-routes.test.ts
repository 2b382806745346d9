import t from 'tap';
import * as fs from 'node:fs';
import { join } from 'node:path';
import { MEMORY_EVENTS } from '../../../schemas/index.js';
import { memoryVersion } from '../../../store/index.js';
import { LEAK, hostilePaths, plantLinks, serveContent, snapshot } from '../../fixtures/admin-content.js';

const mem = (root: string) => join(root, 'memory_system');
const enc = encodeURIComponent;

async function seeded(t: Parameters<typeof serveContent>[0]) {
  const s = await serveContent(t);
  const m = mem(s.paths.workspace);
  fs.writeFileSync(join(m, 'MAINMEMORY.md'), '# Main\n\n- fact one\n- fact two\n');
  fs.mkdirSync(join(m, 'modules', 'people'), { recursive: true });
  fs.writeFileSync(join(m, 'modules', 'projects.md'), 'alpha\nbeta\n');
  fs.writeFileSync(join(m, 'modules', 'people', 'alice.md'), 'Alice likes tea\n');
  fs.writeFileSync(join(mem(join(s.paths.agentsDir, 'coder', 'workspace')), 'MAINMEMORY.md'), 'coder memory\n');
  return s;
}

await t.test('main memory and modules in the WIRE.md shapes, nested modules percent-encoded in one segment', async (t) => {
  const s = await seeded(t);
  let r = await s.call('/api/memory');
  t.same({ status: r.status, body: r.body }, { status: 200, body: { filename: 'MAINMEMORY.md', content: '# Main\n\n- fact one\n- fact two\n', version: memoryVersion('# Main\n\n- fact one\n- fact two\n') } });
  r = await s.call('/api/memory/modules');
  t.equal(r.status, 200);
  t.same(r.body, [
    { name: 'MAINMEMORY', filename: 'MAINMEMORY.md', lines: 4, size: '30 B' },
    { name: 'people/alice', filename: 'modules/people/alice.md', lines: 1, size: '16 B' },
    { name: 'projects', filename: 'modules/projects.md', lines: 2, size: '11 B' },
  ]);
  r = await s.call(`/api/memory/modules/${enc('modules/people/alice.md')}`);
  t.same(r.body, { filename: 'modules/people/alice.md', content: 'Alice likes tea\n', version: memoryVersion('Alice likes tea\n') });

  r = await s.call(`/api/memory/modules/${enc('modules/people/bob.md')}`, { method: 'PUT', body: { content: 'Bob\nlikes coffee\n' } });
  t.same(r.body, { name: 'people/bob', filename: 'modules/people/bob.md', lines: 2, size: '17 B', created: true, version: memoryVersion('Bob\nlikes coffee\n') });
  t.equal(fs.readFileSync(join(mem(s.paths.workspace), 'modules', 'people', 'bob.md'), 'utf8'), 'Bob\nlikes coffee\n');
  r = await s.call('/api/memory', { method: 'PUT', body: { content: 'new main\n' } });
  t.match(r, { status: 200, body: { filename: 'MAINMEMORY.md', lines: 1, created: false } });
  t.equal(fs.readFileSync(join(mem(s.paths.workspace), 'MAINMEMORY.md'), 'utf8'), 'new main\n');
  r = await s.call('/api/memory/modules/modules%2Fdeep%2Fer%2Fnew.md', { method: 'PUT', body: { content: '' } });
  t.match(r, { status: 200, body: { filename: 'modules/deep/er/new.md', lines: 0, size: '0 B' } }, 'new folders under modules/ are made');

  r = await s.call('/api/memory?agent=coder');
  t.same(r.body, { filename: 'MAINMEMORY.md', content: 'coder memory\n', version: memoryVersion('coder memory\n') }, '?agent= reads that agent\'s memory');
  fs.rmSync(join(mem(s.paths.workspace), 'MAINMEMORY.md'));
  r = await s.call('/api/memory');
  t.same(r.body, { filename: 'MAINMEMORY.md', content: '', version: memoryVersion('') }, 'no MAINMEMORY.md yet: empty');

  t.same(s.internal, []);
});

await t.test('a write naming the version it loaded is refused 409 memory-conflict when the file changed since, and writes nothing', async (t) => {
  const s = await seeded(t);
  const file = join(mem(s.paths.workspace), 'modules', 'projects.md');
  const path = `/api/memory/modules/${enc('modules/projects.md')}`;
  const loaded = await s.call(path);
  t.equal(loaded.body.version, memoryVersion('alpha\nbeta\n'));
  // Another tab (or the agent) changes it after this editor loaded it.
  fs.writeFileSync(file, 'alpha\nbeta\ngamma\n');
  let r = await s.call(path, { method: 'PUT', body: { content: 'mine\n', base_version: loaded.body.version } });
  t.match(r, { status: 409, body: { code: 'memory-conflict', error: /changed since it was loaded/ } });
  t.equal(fs.readFileSync(file, 'utf8'), 'alpha\nbeta\ngamma\n', 'nothing overwritten');
  t.equal([...s.log.read()].filter((e) => e.type === MEMORY_EVENTS.module_written).length, 0, 'no fact of a write');
  // With the current version it saves, and the reply's version is the next base.
  const now = (await s.call(path)).body.version;
  r = await s.call(path, { method: 'PUT', body: { content: 'mine\n', base_version: now } });
  t.match(r, { status: 200, body: { filename: 'modules/projects.md', version: memoryVersion('mine\n') } });
  // Without base_version it overwrites, as before.
  t.match(await s.call(path, { method: 'PUT', body: { content: 'again\n' } }), { status: 200 });
  t.equal(fs.readFileSync(file, 'utf8'), 'again\n');
  // The main memory too; a module not there yet has the version of empty text.
  t.match(await s.call('/api/memory', { method: 'PUT', body: { content: 'x', base_version: memoryVersion('stale') } }), { status: 409, body: { code: 'memory-conflict' } });
  t.match(await s.call(`/api/memory/modules/${enc('modules/fresh.md')}`, { method: 'PUT', body: { content: 'new', base_version: memoryVersion('') } }), { status: 200, body: { created: true } });
  t.match(await s.call(path, { method: 'PUT', body: { content: 'x', base_version: 'not a version!' } }), { status: 400, body: { code: 'invalid-body', error: /base_version/ } });
  t.match(await s.call(path, { method: 'PUT', as: 'viewer', body: { content: 'x', base_version: now } }), { status: 403 });
  t.equal(fs.readFileSync(file, 'utf8'), 'again\n');
  t.same(s.internal, []);
});

await t.test('writes are recorded as facts with the module name, never the content', async (t) => {
  const s = await seeded(t);
  await s.call(`/api/memory/modules/${enc('modules/projects.md')}`, { method: 'PUT', body: { content: 'secret plans\n' } });
  const events = [...s.log.read()].filter((e) => e.type === MEMORY_EVENTS.module_written);
  t.equal(events.length, 1);
  t.same(events[0]!.data, { agent: 'main', filename: 'modules/projects.md', bytes: 13, created: false });
  t.equal(events[0]!.stream, 'memory:main');
});

await t.test('roles: viewer 403 on everything, operator reads but may not write, admin writes', async (t) => {
  const s = await seeded(t);
  const before = snapshot(s.dir);
  for (const [path, method] of [['/api/memory', 'GET'], ['/api/memory/modules', 'GET'], [`/api/memory/modules/${enc('modules/projects.md')}`, 'GET']] as const) {
    t.equal((await s.call(path, { method, as: 'viewer' })).status, 403, `viewer ${method} ${path}`);
    t.equal((await s.call(path, { method, as: 'operator' })).status, 200, `operator ${method} ${path}`);
  }
  for (const path of ['/api/memory', `/api/memory/modules/${enc('modules/projects.md')}`]) {
    t.equal((await s.call(path, { method: 'PUT', as: 'viewer', body: { content: 'x' } })).status, 403);
    t.equal((await s.call(path, { method: 'PUT', as: 'operator', body: { content: 'x' } })).status, 403);
  }
  t.equal((await s.call('/api/memory', { as: null })).status, 401);
  t.same(snapshot(s.dir), before, 'nothing changed');
});

await t.test('allowed_agents: a restricted user reaches only its agents; another agent is refused and unchanged', async (t) => {
  const s = await seeded(t);
  let r = await s.call('/api/memory?agent=coder', { as: 'coderOperator' });
  t.equal(r.status, 200);
  const before = snapshot(s.dir);
  const seq = s.log.lastSeq();
  r = await s.call('/api/memory', { as: 'coderOperator' });
  t.match(r, { status: 403, body: { code: 'agent-not-allowed' } }, 'main by default, not in the list');
  r = await s.call('/api/memory/modules?agent=writer', { as: 'coderOperator' });
  t.match(r, { status: 403, body: { code: 'agent-not-allowed' } });
  r = await s.call('/api/memory?agent=main', { method: 'PUT', as: 'coderAdmin', body: { content: 'overwritten' } });
  t.match(r, { status: 403, body: { code: 'agent-not-allowed' } });
  r = await s.call('/api/memory?agent=ghost', { as: 'admin' });
  t.match(r, { status: 404, body: { code: 'unknown-agent' } });
  r = await s.call('/api/memory?agent=ghost', { as: 'coderAdmin' });
  t.match(r, { status: 403, body: { code: 'agent-not-allowed' } }, 'a restricted user does not learn which agents exist');
  r = await s.call(`/api/memory?agent=${enc('../main')}`);
  t.match(r, { status: 400, body: { code: 'invalid-agent-name' } });
  t.same(snapshot(s.dir), before);
  t.equal(s.log.lastSeq(), seq, 'no fact recorded');
});

await t.test('hostile filenames and links out of memory_system: 4xx, nothing read from outside, nothing written', async (t) => {
  const s = await seeded(t);
  const modules = join(mem(s.paths.workspace), 'modules');
  const links = plantLinks(modules, s.paths, join(s.dir, 'outside'));
  fs.writeFileSync(join(s.dir, 'outside', 'x.md'), 'LOOT-CONTENT\n');
  const before = snapshot(s.dir);
  const seq = s.log.lastSeq();
  const names = [
    ...hostilePaths(s.paths),
    ...links.map((l) => `modules/${l}`),
    'modules/out-dir/loot.md',
    'modules/out-dir/new.md',
    'modules/secrets-dir/users.json',
    'modules/secrets-dir/new.md',
    'modules/projects.txt',
    'notes.md',
    'modules',
    'modules/',
    'modules/./projects.md',
  ];
  for (const name of names) {
    for (const url of [`/api/memory/modules/${enc(name)}`, `/api/memory/modules/${enc(enc(name))}`]) {
      const get = await s.call(url);
      t.ok(get.status >= 400 && get.status < 500, `GET ${JSON.stringify(name.slice(0, 60))} → ${get.status}`);
      t.notMatch(JSON.stringify(get.body), LEAK, 'nothing from outside in the reply');
      const put = await s.call(url, { method: 'PUT', body: { content: 'pwned\n' } });
      t.ok(put.status >= 400 && put.status < 500, `PUT ${JSON.stringify(name.slice(0, 60))} → ${put.status}`);
      t.match(put.body, { error: String, code: String });
    }
  }
  // Encodings a raw URL carries: the router decodes once, so a second layer stays literal and is refused.
  for (const raw of ['..%2F..%2F_secrets%2Fusers.json', '%2e%2e%2fx.md', '%252e%252e%252f_secrets%252fusers.json', '%2Fetc%2Fpasswd', 'modules%2F..%2F..%2F..%2F.env']) {
    t.ok((await s.call(`/api/memory/modules/${raw}`)).status >= 400, raw);
    t.ok((await s.call(`/api/memory/modules/${raw}`, { method: 'PUT', body: { content: 'pwned' } })).status >= 400, raw);
  }
  t.same(snapshot(s.dir), before, 'nothing created, changed or removed anywhere');
  t.equal(s.log.lastSeq(), seq, 'no fact recorded');
  t.same(s.internal, [], 'every refusal is a clear 4xx, not an internal error');
});

await t.test('bad bodies: malformed JSON, unknown fields, wrong types, oversized: 4xx and nothing written', async (t) => {
  const s = await seeded(t);
  const before = snapshot(s.dir);
  const url = `/api/memory/modules/${enc('modules/projects.md')}`;
  t.match(await s.call(url, { method: 'PUT', raw: '{"content": ' }), { status: 400, body: { code: 'invalid-json' } });
  t.match(await s.call(url, { method: 'PUT', body: { content: 'x', extra: 1 } }), { status: 400, body: { code: 'invalid-body' } });
  t.match(await s.call(url, { method: 'PUT', body: { content: 42 } }), { status: 400, body: { code: 'invalid-body' } });
  t.match(await s.call(url, { method: 'PUT', body: ['content'] }), { status: 400, body: { code: 'invalid-body' } });
  t.match(await s.call(url, { method: 'PUT', body: { content: 'x'.repeat(1024 * 1024 + 1) } }), { status: 413, body: { code: 'file-too-large' } });
  t.equal((await s.call(url, { method: 'PUT', raw: JSON.stringify({ content: 'x'.repeat(3 * 1024 * 1024) }) })).status, 413, 'over the body limit');
  t.match(await s.call('/api/memory', { method: 'PUT', body: {} }), { status: 400, body: { code: 'invalid-body' } });
  t.same(snapshot(s.dir), before);
});

await t.test('a write is atomic: an existing module keeps its mode, no temp file is left, a symlinked module is not written through', async (t) => {
  const s = await seeded(t);
  const file = join(mem(s.paths.workspace), 'modules', 'projects.md');
  fs.chmodSync(file, 0o600);
  await s.call(`/api/memory/modules/${enc('modules/projects.md')}`, { method: 'PUT', body: { content: 'v2\n' } });
  t.equal(fs.statSync(file).mode & 0o777, 0o600);
  t.same(fs.readdirSync(join(mem(s.paths.workspace), 'modules')).filter((n) => n.endsWith('.tmp')), []);
  fs.symlinkSync('projects.md', join(mem(s.paths.workspace), 'modules', 'alias.md'));
  const r = await s.call(`/api/memory/modules/${enc('modules/alias.md')}`, { method: 'PUT', body: { content: 'via link\n' } });
  t.match(r, { status: 400, body: { code: 'invalid-path' } });
  t.equal(fs.readFileSync(file, 'utf8'), 'v2\n');
});

await t.test('a hard link to a secret inside memory_system is not read, however it is named', async (t) => {
  const s = await seeded(t);
  const link = join(mem(s.paths.workspace), 'modules', 'innocent.md');
  // The test dir holds the home and the workspace: one filesystem, so the link is always possible.
  fs.linkSync(s.paths.usersFile, link);
  const r = await s.call(`/api/memory/modules/${enc('modules/innocent.md')}`);
  t.match(r, { status: 403, body: { code: 'forbidden' } });
  t.notMatch(JSON.stringify(r.body), LEAK);
});
