import t from 'tap';
import * as fs from 'node:fs';
import { join } from 'node:path';
import { SKILL_EVENTS } from '../../../schemas/index.js';
import { LEAK, hostilePaths, serveContent, snapshot } from '../../fixtures/admin-content.js';

const enc = encodeURIComponent;

function skill(root: string, name: string, doc: string, file = 'SKILL.md') {
  fs.mkdirSync(join(root, name), { recursive: true });
  fs.writeFileSync(join(root, name, file), doc);
}

async function seeded(t: Parameters<typeof serveContent>[0]) {
  const s = await serveContent(t);
  const own = join(s.paths.agentsDir, 'coder', 'workspace', 'skills');
  skill(s.paths.skillsDir, 'deploy', '---\nname: deploy\ndescription: Ship it safely\n---\n# Deploy\n');
  skill(s.paths.skillsDir, 'review', '# Review\n\nRead the diff first.\n', 'README.md');
  skill(own, 'deploy', '---\ndescription: "Coder\'s own deploy"\n---\nsteps\n');
  skill(own, 'lint', 'Run the linter.\n');
  fs.mkdirSync(join(own, 'empty'));
  return { ...s, own };
}

await t.test('scopes: merged marks per-agent entries that shadow a global one, own and global list one side', async (t) => {
  const s = await seeded(t);
  let r = await s.call('/api/agents/coder/skills');
  t.equal(r.status, 200);
  t.same(
    (r.body as { name: string; scope: string; overrides: boolean; description: string }[]).map((e) => [e.name, e.scope, e.overrides, e.description]),
    [
      ['deploy', 'agent', true, "Coder's own deploy"],
      ['empty', 'agent', false, ''],
      ['lint', 'agent', false, 'Run the linter.'],
      ['review', 'global', false, 'Read the diff first.'],
    ],
  );
  const lint = (r.body as Record<string, unknown>[]).find((e) => e.name === 'lint');
  t.match(lint, { name: 'lint', path: join(s.own, 'lint'), mtime: Number, size: 16, has_doc: true, doc_filename: 'SKILL.md', scope: 'agent', overrides: false });
  t.match((r.body as Record<string, unknown>[]).find((e) => e.name === 'empty'), { has_doc: false, doc_filename: null, size: 0 });
  r = await s.call('/api/agents/coder/skills?scope=own');
  t.same((r.body as { name: string }[]).map((e) => e.name), ['deploy', 'empty', 'lint']);
  r = await s.call('/api/agents/coder/skills?scope=global');
  t.same((r.body as { name: string }[]).map((e) => e.name), ['deploy', 'review']);
  r = await s.call('/api/skills');
  t.same((r.body as { name: string; description: string }[]).map((e) => [e.name, e.description]), [['deploy', 'Ship it safely'], ['review', 'Read the diff first.']]);
  t.match(await s.call('/api/agents/coder/skills?scope=all'), { status: 400, body: { code: 'invalid-query' } });
});

await t.test('read falls back to the global copy; writes go to the agent; PUT on a global-only skill makes the override', async (t) => {
  const s = await seeded(t);
  let r = await s.call('/api/agents/coder/skills/review');
  t.match(r.body, { name: 'review', scope: 'global', doc_filename: 'README.md', content: '# Review\n\nRead the diff first.\n' });
  r = await s.call('/api/agents/coder/skills/deploy');
  t.match(r.body, { scope: 'agent', content: '---\ndescription: "Coder\'s own deploy"\n---\nsteps\n' });

  r = await s.call('/api/agents/coder/skills', { method: 'POST', body: { name: 'test-runner', content: '---\ndescription: Runs tests\n---\n' } });
  t.match({ status: r.status, body: r.body }, { status: 201, body: { name: 'test-runner', description: 'Runs tests', scope: 'agent', doc_filename: 'SKILL.md' } });
  t.equal(fs.readFileSync(join(s.own, 'test-runner', 'SKILL.md'), 'utf8'), '---\ndescription: Runs tests\n---\n');
  t.match(await s.call('/api/agents/coder/skills', { method: 'POST', body: { name: 'test-runner', content: 'x' } }), { status: 409, body: { code: 'skill-exists' } });

  const globalBefore = snapshot(s.paths.skillsDir);
  r = await s.call('/api/agents/coder/skills/review', { method: 'PUT', body: { content: 'coder review\n' } });
  t.match(r, { status: 200, body: { name: 'review', scope: 'agent' } });
  t.equal(fs.readFileSync(join(s.own, 'review', 'SKILL.md'), 'utf8'), 'coder review\n');
  t.same(snapshot(s.paths.skillsDir), globalBefore, 'the global skill is untouched');
  r = await s.call('/api/agents/coder/skills?scope=merged');
  t.match((r.body as { name: string }[]).find((e) => e.name === 'review'), { scope: 'agent', overrides: true });
  r = await s.call('/api/agents/coder/skills/lint', { method: 'PUT', body: { content: 'v2' } });
  t.equal(r.status, 200);
  t.match(await s.call('/api/agents/coder/skills/nope', { method: 'PUT', body: { content: 'v2' } }), { status: 404 });

  r = await s.call('/api/agents/coder/skills/review', { method: 'DELETE' });
  t.same({ status: r.status, body: r.body }, { status: 200, body: { name: 'review', deleted: true } });
  t.notOk(fs.existsSync(join(s.own, 'review')));
  t.ok(fs.existsSync(join(s.paths.skillsDir, 'review')), 'deleting the override leaves the global skill');
  t.match(await s.call('/api/agents/coder/skills/review', { method: 'DELETE' }), { status: 404 }, 'the global copy is not deleted through an agent');

  r = await s.call('/api/skills', { method: 'POST', body: { name: 'global-new', content: 'hi' } });
  t.equal(r.status, 201);
  t.ok(fs.existsSync(join(s.paths.skillsDir, 'global-new', 'SKILL.md')));
  t.match(await s.call('/api/skills/global-new'), { status: 200, body: { content: 'hi', scope: 'global' } });
  t.equal((await s.call('/api/skills/global-new', { method: 'PUT', body: { content: 'v2' } })).status, 200);
  t.equal((await s.call('/api/skills/global-new', { method: 'DELETE' })).status, 200);
  t.notOk(fs.existsSync(join(s.paths.skillsDir, 'global-new')));

  const types = s.log.read().map((e) => e.type).filter((ty) => ty.startsWith('skill.'));
  t.same(types, [SKILL_EVENTS.written, SKILL_EVENTS.written, SKILL_EVENTS.written, SKILL_EVENTS.deleted, SKILL_EVENTS.written, SKILL_EVENTS.written, SKILL_EVENTS.deleted]);
  t.same(s.internal, []);
});

await t.test('roles and allowed_agents: viewer 403, operator reads, global scope admin only, restricted users stay in their agents', async (t) => {
  const s = await seeded(t);
  const before = snapshot(s.dir);
  const seq = s.log.lastSeq();
  t.equal((await s.call('/api/agents/coder/skills', { as: 'viewer' })).status, 403);
  t.equal((await s.call('/api/agents/coder/skills', { as: 'operator' })).status, 200);
  t.equal((await s.call('/api/agents/coder/skills/lint', { as: 'operator' })).status, 200);
  t.equal((await s.call('/api/agents/coder/skills', { method: 'POST', as: 'operator', body: { name: 'x', content: 'x' } })).status, 403);
  t.equal((await s.call('/api/agents/coder/skills/lint', { method: 'PUT', as: 'operator', body: { content: 'x' } })).status, 403);
  t.equal((await s.call('/api/agents/coder/skills/lint', { method: 'DELETE', as: 'operator' })).status, 403);
  for (const [method, path, body] of [['GET', '/api/skills'], ['GET', '/api/skills/deploy'], ['POST', '/api/skills', { name: 'x', content: 'x' }], ['PUT', '/api/skills/deploy', { content: 'x' }], ['DELETE', '/api/skills/deploy']] as const) {
    t.equal((await s.call(path, { method, as: 'operator', body })).status, 403, `operator ${method} ${path}`);
  }
  // Restricted: its agent fine, another refused, the global scope read-only.
  t.equal((await s.call('/api/agents/coder/skills', { as: 'coderOperator' })).status, 200);
  t.match(await s.call('/api/agents/main/skills', { as: 'coderOperator' }), { status: 403, body: { code: 'agent-not-allowed' } });
  t.match(await s.call('/api/agents/writer/skills/deploy', { as: 'coderAdmin' }), { status: 403, body: { code: 'agent-not-allowed' } });
  t.match(await s.call('/api/agents/main/skills', { method: 'POST', as: 'coderAdmin', body: { name: 'x', content: 'x' } }), { status: 403, body: { code: 'agent-not-allowed' } });
  t.match(await s.call('/api/agents/main/skills/deploy', { method: 'DELETE', as: 'coderAdmin' }), { status: 403 });
  t.equal((await s.call('/api/skills', { as: 'coderAdmin' })).status, 200);
  t.match(await s.call('/api/skills/deploy', { method: 'PUT', as: 'coderAdmin', body: { content: 'x' } }), { status: 403, body: { code: 'agent-not-allowed' } });
  t.match(await s.call('/api/skills/deploy', { method: 'DELETE', as: 'coderAdmin' }), { status: 403 });
  t.match(await s.call('/api/agents/ghost/skills'), { status: 404, body: { code: 'unknown-agent' } });
  t.same(snapshot(s.dir), before);
  t.equal(s.log.lastSeq(), seq);
});

await t.test('hostile skill names, links out of the skills root, bad bodies: 4xx, nothing read from outside, nothing changed', async (t) => {
  const s = await seeded(t);
  const outside = join(s.dir, 'outside');
  fs.mkdirSync(outside);
  fs.writeFileSync(join(outside, 'SKILL.md'), 'LOOT-CONTENT\n');
  fs.symlinkSync(outside, join(s.own, 'escape'));
  fs.symlinkSync(s.paths.secretsDir, join(s.own, 'secrets'));
  fs.mkdirSync(join(s.own, 'leaky'));
  fs.symlinkSync(join(s.paths.secretsDir, 'users.json'), join(s.own, 'leaky', 'SKILL.md'));
  fs.symlinkSync(outside, join(s.paths.skillsDir, 'gescape'));
  const before = snapshot(s.dir);
  const seq = s.log.lastSeq();

  let r = await s.call('/api/agents/coder/skills?scope=own');
  t.same((r.body as { name: string }[]).map((e) => e.name), ['deploy', 'empty', 'lint'], 'links leading out (and a document that is one) are not listed');
  const ownLinks = ['escape', 'secrets', 'leaky'];
  const globalLinks = ['gescape'];
  const names = [...hostilePaths(s.paths), ...ownLinks, ...globalLinks, 'a.b', 'a b', '.hidden', 'x'.repeat(129)];
  for (const name of names) {
    const label = JSON.stringify(name.slice(0, 40));
    for (const base of ['/api/agents/coder/skills/', '/api/skills/']) {
      for (const url of [`${base}${enc(name)}`, `${base}${enc(enc(name))}`]) {
        r = await s.call(url);
        t.ok(r.status >= 400 && r.status < 500, `GET ${url.slice(0, 60)} ${label} → ${r.status}`);
        t.notMatch(JSON.stringify(r.body), LEAK);
        t.ok((await s.call(url, { method: 'PUT', body: { content: 'pwned' } })).status >= 400, `PUT ${label}`);
        t.ok((await s.call(url, { method: 'DELETE' })).status >= 400, `DELETE ${label}`);
      }
    }
    // A link in one root is a free name in the other: creating a skill there is fine and not tried here.
    if (!globalLinks.includes(name)) t.ok((await s.call('/api/agents/coder/skills', { method: 'POST', body: { name, content: 'pwned' } })).status >= 400, `POST ${label}`);
    if (!ownLinks.includes(name)) t.ok((await s.call('/api/skills', { method: 'POST', body: { name, content: 'pwned' } })).status >= 400, `POST global ${label}`);
  }
  t.match(await s.call('/api/agents/coder/skills', { method: 'POST', raw: '{"name":' }), { status: 400, body: { code: 'invalid-json' } });
  t.match(await s.call('/api/agents/coder/skills', { method: 'POST', body: { name: 'ok', content: 'x', scope: 'global' } }), { status: 400, body: { code: 'invalid-body' } });
  t.match(await s.call('/api/agents/coder/skills', { method: 'POST', body: { name: 'ok' } }), { status: 400, body: { code: 'invalid-body' } });
  t.match(await s.call('/api/agents/coder/skills/lint', { method: 'PUT', body: { content: ['x'] } }), { status: 400 });
  t.match(await s.call('/api/agents/coder/skills', { method: 'POST', body: { name: 'big', content: 'x'.repeat(512 * 1024 + 1) } }), { status: 413, body: { code: 'file-too-large' } });
  t.match(await s.call(`/api/agents/${enc('../main')}/skills`), { status: 400, body: { code: 'invalid-agent-name' } });
  t.same(snapshot(s.dir), before, 'nothing created, changed or removed');
  t.equal(s.log.lastSeq(), seq);
  t.same(s.internal, []);
});
