// GET /api/openapi.json describes exactly the routes the daemon's API server serves (no route
// undescribed, no described route missing), with request bodies and queries from the schemas that
// parse them. Real daemon with the API enabled, real HTTP.
import t from 'tap';
import * as v from 'valibot';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startDaemon } from '../../bin/daemon.js';
import { openApiDocument, withBody, withQuery, type MountedRoute } from '../../edges/index.js';
import { homePaths } from '../../store/index.js';
import { tempHome } from '../fixtures/temp-home.js';

type Doc = {
  openapi: string;
  paths: Record<string, Record<string, { requestBody?: { content: Record<string, { schema: Record<string, unknown> }> }; parameters?: { name: string; in: string }[]; security?: unknown[] }>>;
  components: { securitySchemes: Record<string, unknown> };
};

/** POSTs and PUTs that take no body at all (the action is in the path). */
const NO_BODY = new Set([
  'POST /api/notifications/read-all',
  'PUT /api/notifications/:id/read',
  'POST /api/cron/:id/run',
  'POST /api/tasks/:id/cancel',
  'POST /api/workflows/runs/:run_id/cancel',
  'POST /api/chat/sessions/:id/archive',
  'POST /api/chat/sessions/:id/unarchive',
  'POST /api/auth/2fa/setup',
  'POST /api/dashboard/errors/ack',
]);

await t.test('the description matches the mounted routes one for one, bodies and queries included', async (t) => {
  const scratch = tempHome(t);
  const root = join(scratch.dir, 'home');
  mkdirSync(join(root, 'config'), { recursive: true });
  writeFileSync(join(root, 'config', 'config.json'), JSON.stringify({ api: { enabled: true, host: '127.0.0.1', port: 0 } }));
  const d = await startDaemon({ paths: homePaths(root), logToStderr: false, internalPort: 0, apiPort: 0, env: { PATH: process.env.PATH ?? '', HOME: root } });
  scratch.beforeRemove(() => d.stop('test'));

  const r = await fetch(`http://127.0.0.1:${d.apiPort}/api/openapi.json`, { headers: { connection: 'close' } });
  t.equal(r.status, 200, 'public: no credentials needed');
  const doc = (await r.json()) as Doc;
  t.equal(doc.openapi, '3.1.0');

  const routes = d.apiRoutes();
  const served = routes.map((rt) => `${rt.method} ${rt.pattern.replace(/:([A-Za-z0-9_]+)/g, '{$1}')}`).sort();
  const described = Object.entries(doc.paths).flatMap(([path, ops]) => Object.keys(ops).map((m) => `${m.toUpperCase()} ${path}`)).sort();
  t.same(described, served, 'every served route is described, and only those');
  for (const want of ['GET /health', 'GET /api/openapi.json', 'GET /files', 'POST /upload', 'GET /api/sessions', 'POST /api/chat/sessions']) {
    t.ok(served.includes(want), `${want} is served and described`);
  }

  for (const rt of routes) {
    const op = doc.paths[rt.pattern.replace(/:([A-Za-z0-9_]+)/g, '{$1}')]![rt.method.toLowerCase()]!;
    const key = `${rt.method} ${rt.pattern}`;
    if ((rt.method === 'POST' || rt.method === 'PUT') && !NO_BODY.has(key)) {
      t.ok(rt.body ?? rt.bodyType, `${key} declares its body (withBody, or bodyType for multipart)`);
      t.ok(op.requestBody, `${key}: described with a request body`);
    }
    for (const name of rt.pattern.match(/:([A-Za-z0-9_]+)/g) ?? []) {
      t.ok(op.parameters?.some((p) => p.in === 'path' && p.name === name.slice(1)), `${key}: path parameter ${name}`);
    }
    if (rt.auth === 'public') t.same(op.security, [], `${key} is described as public`);
    else t.ok(op.security && op.security.length > 0, `${key} names the credentials it accepts`);
  }
  const create = doc.paths['/api/chat/sessions']!.post!.requestBody!.content['application/json']!.schema;
  t.match(create, { type: 'object', properties: { agent: {}, title: {} } }, 'a body is the JSON Schema of the valibot schema that parses it');
  t.match(doc.paths['/files']!.get!.parameters, [{ name: 'path', in: 'query' }]);
});

await t.test('withBody and withQuery parse with the schema they declare', async (t) => {
  const Body = v.strictObject({ n: v.number() });
  const Query = v.object({ q: v.string() });
  const route = { method: 'POST', pattern: '/x/:id', auth: 'public', surface: 'test', statuses: {}, ...withBody(Body, (body) => ({ status: 200, json: body })) } as MountedRoute;
  t.equal(route.body, Body);
  const req = { method: 'POST', path: '/x/1', query: new URLSearchParams('q=a'), headers: {}, params: { id: '1' }, body: Buffer.from('{"n":2}'), remoteAddress: '' };
  t.same(await (route.handler as (r: typeof req) => unknown)(req), { status: 200, json: { n: 2 } });
  t.throws(() => (route.handler as (r: typeof req) => unknown)({ ...req, body: Buffer.from('{"n":"2"}') }), { code: 'invalid-body' });
  const q = withQuery(Query, (query) => ({ status: 200, json: query }));
  t.same(await q.handler(req), { status: 200, json: { q: 'a' } });
  t.throws(() => q.handler({ ...req, query: new URLSearchParams('q=a&q=b') }), { code: 'invalid-query' }, 'a parameter given twice is not a string');
  const doc = openApiDocument([route], { title: 't', version: '0' }) as Doc;
  t.match(doc.paths['/x/{id}']!.post!.requestBody!.content['application/json']!.schema, { type: 'object', properties: { n: { type: 'number' } }, required: ['n'], additionalProperties: false });
});
