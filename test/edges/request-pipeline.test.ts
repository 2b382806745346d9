// One request pipeline (issue 21 item 7): every route of a real daemon that declares a body or
// query schema refuses a field the schema does not name (400 naming it, nothing changed), and a
// field of the wrong type likewise; the bodies WIRE.md §2 says the panel sends are still taken,
// the webhook create body `{id, name, url, method, agent, description}` included.
import t from 'tap';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startDaemon } from '../../bin/daemon.js';
import { AUDIT_STREAM, CONFIG_EVENTS, REGISTRY_EVENTS, SKILL_SYNC_STREAM } from '../../schemas/index.js';
import { homePaths } from '../../store/index.js';
import { parseUsers, userRow } from '../fixtures/admin-auth-stand.js';
import { tempHome } from '../fixtures/temp-home.js';

const BIN = fileURLToPath(new URL('../fixtures/bin', import.meta.url));
const ODD = 'zz_unknown_field';

await t.test('a real daemon: unknown and mistyped fields on every schema route are 400 naming them and change nothing; the panel bodies pass', async (t) => {
  const scratch = tempHome(t);
  const root = join(scratch.dir, 'home');
  const paths = homePaths(root);
  mkdirSync(paths.configDir, { recursive: true });
  mkdirSync(paths.secretsDir, { recursive: true, mode: 0o700 });
  writeFileSync(paths.configFile, JSON.stringify({ api: { enabled: true, host: '127.0.0.1', port: 0 } }));
  writeFileSync(paths.agentsRegistry, JSON.stringify([{ name: 'coder', telegram_token: '1:x', additional_directories: [] }]));
  writeFileSync(paths.usersFile, JSON.stringify({ users: parseUsers([await userRow('root', 'admin', 'root-password')]) }));
  const d = await startDaemon({ paths, logToStderr: false, internalPort: 0, apiPort: 0, killGraceMs: 200, env: { PATH: `${BIN}:${process.env.PATH}`, HOME: root } });
  scratch.beforeRemove(() => d.stop('test'));
  const base = `http://127.0.0.1:${d.apiPort}`;
  let token = '';
  const send = async (method: string, path: string, body?: unknown, lang = 'en') => {
    const headers: Record<string, string> = { connection: 'close', 'accept-language': lang, 'content-type': 'application/json' };
    if (token) headers.authorization = `Bearer ${token}`;
    const r = await fetch(base + path, { method, headers, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
    const text = await r.text();
    let json: any = text;
    try {
      json = JSON.parse(text);
    } catch {
      // not JSON
    }
    return { status: r.status, json };
  };
  const login = await send('POST', '/api/auth/login', { username: 'root', password: 'root-password' });
  t.equal(login.status, 200);
  token = login.json.access_token;

  /**
   * Facts a request could have caused: a refused one causes none. The audit trail records refusals
   * too; the start-up's own watchers (config, registry, skill sync) write in their own time.
   */
  const echoes = new Set<string>([...Object.values(CONFIG_EVENTS), ...Object.values(REGISTRY_EVENTS)]);
  let seen = 0;
  const facts = () => {
    const fresh = d.log.read({ after: seen }).filter((e) => e.stream !== AUDIT_STREAM && e.stream !== SKILL_SYNC_STREAM && !echoes.has(e.type));
    seen = d.log.lastSeq();
    return fresh.map((e) => `${e.stream} ${e.type}`);
  };
  const path = (pattern: string) => pattern.replace(/:[A-Za-z]+/g, 'main').replace(/\*$/, 'x');

  // The routes this admin's token reaches (the direct API's need its own token).
  const routes = d.apiRoutes().filter((r) => !r.streamBody && (r.auth === 'public' || r.auth.accepts.includes('admin-jwt')));
  const withBody = routes.filter((r) => r.body !== undefined && r.method !== 'GET');
  const withQuery = routes.filter((r) => r.query !== undefined);
  t.ok(withBody.length >= 20, `the route table can be enumerated: ${withBody.length} body schemas`);
  t.ok(withQuery.length >= 10, `${withQuery.length} query schemas`);
  facts();
  for (const r of withBody) {
    const res = await send(r.method, path(r.pattern), { [ODD]: 1 });
    t.equal(res.status, 400, `${r.method} ${r.pattern}: an unknown body field is 400`);
    t.match(res.json, { error: new RegExp(`body\\.${ODD}: unknown field`), code: 'invalid-body' }, `${r.method} ${r.pattern}: names it`);
    t.same(facts(), [], `${r.method} ${r.pattern}: nothing changed`);
  }
  for (const r of withQuery) {
    const res = await send(r.method, `${path(r.pattern)}?${ODD}=1`, r.body !== undefined ? {} : undefined);
    t.equal(res.status, 400, `${r.method} ${r.pattern}: an unknown query parameter is 400`);
    t.match(res.json, { error: new RegExp(`query\\.${ODD}: unknown field`), code: 'invalid-query' }, `${r.method} ${r.pattern}: names it`);
    t.same(facts(), [], `${r.method} ${r.pattern}: nothing changed`);
  }

  // Representative routes: the extra key, the wrong type, localised, and what still passes.
  const sessions = async () => (await send('GET', '/api/chat/sessions')).json.length;
  const n = await sessions();
  let r = await send('POST', '/api/chat/sessions', { agent: 'main', title: 'x', extra: true });
  t.match(r, { status: 400, json: { error: 'body.extra: unknown field' } }, 'POST /api/chat/sessions with an extra key');
  r = await send('POST', '/api/chat/sessions', { agent: 7 });
  t.match(r, { status: 400, json: { error: /^body\.agent: / } }, 'a mistyped field is named');
  t.equal(await sessions(), n, 'no session was created');
  t.equal((await send('POST', '/api/chat/sessions', { agent: 'main', title: 'ok' })).status, 201, 'the panel body passes');

  const jobs = (await send('GET', '/api/cron')).json.length;
  r = await send('POST', '/api/cron', { title: 'T', schedule: '0 9 * * *', agent: 'main', description: '', enabled: false, every: 'day' });
  t.match(r, { status: 400, json: { error: 'body.every: unknown field' } });
  r = await send('POST', '/api/cron', { title: 'T', schedule: '0 9 * * *', agent: 'main', every: 'day' }, 'ru');
  t.match(r, { status: 400, json: { error: 'Некорректные данные в теле запроса', detail: 'body.every: unknown field', code: 'invalid-body' } }, 'in Russian, the field in detail');
  r = await send('POST', '/api/cron', { title: 'T', schedule: '0 9 * * *', agent: 'main', enabled: 'yes' });
  t.match(r, { status: 400, json: { error: /^body\.enabled: must be true or false/ } });
  t.equal((await send('GET', '/api/cron')).json.length, jobs, 'no cron job was created');

  r = await send('GET', '/api/logs?agnet=main');
  t.match(r, { status: 400, json: { error: 'query.agnet: unknown field' } }, 'a query typo');
  t.equal((await send('GET', '/api/logs?agent=main&_=1712345')).status, 200, 'a cache-buster (`_`-prefixed) is not a field');
  r = await send('GET', '/api/logs?lines=1&lines=2');
  t.match(r, { status: 400, json: { error: 'query.lines: given 2 times; give it once' } });

  // WIRE.md §2 webhook create, exactly as the panel sends it.
  const hooksFile = () => {
    try {
      return readFileSync(paths.webhooksFile, 'utf8');
    } catch {
      return '';
    }
  };
  const panelHook = { id: 'deploy', name: 'Deploy', url: '/hooks/deploy', method: 'POST', agent: 'main', description: 'deploys' };
  for (const [bad, field] of [
    [{ ...panelHook, url: '/hooks/other' }, 'url'],
    [{ ...panelHook, url: '/elsewhere' }, 'url'],
    [{ ...panelHook, method: 'GET' }, 'method'],
    [{ ...panelHook, verb: 'POST' }, 'verb'],
  ] as const) {
    const before = hooksFile();
    r = await send('POST', '/api/webhooks', bad);
    t.match(r, { status: 400, json: { error: new RegExp(`^body\\.${field}: `) } }, `webhook create with a bad ${field}`);
    t.equal(hooksFile(), before, 'webhooks.json unchanged');
  }
  r = await send('POST', '/api/webhooks', panelHook);
  t.match(r, { status: 201, json: { id: 'deploy', name: 'Deploy', url: '/hooks/deploy', method: 'POST', agent: 'main', description: 'deploys' } }, 'the panel create body');
  r = await send('POST', '/api/webhooks', { ...panelHook, id: undefined, name: 'Full', url: 'https://svc.example/hooks/full' });
  t.match(r, { status: 201, json: { id: 'full', url: '/hooks/full' } }, 'a full URL ending with /hooks/<id>, the id taken from it');
  t.notOk(JSON.parse(hooksFile()).some((h: Record<string, unknown>) => 'method' in h || 'url' in h), 'url and method are derived, not stored');

  // Files: each of WIRE.md's path spellings.
  t.equal((await send('POST', '/api/files/mkdir', { agent: 'main', relative_path: 'a' })).status, 201, 'mkdir {relative_path}');
  t.equal((await send('POST', '/api/files/mkdir', { agent: 'main', name: 'b' })).status, 201, 'mkdir {name}');
  t.equal((await send('POST', '/api/files/sign-url', { agent: 'main', path: 'a', ttl: 60 })).status, 400, 'sign-url of a folder is refused by the files actor, not the parse');
});
