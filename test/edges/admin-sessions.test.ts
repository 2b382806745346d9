// GET /api/sessions and DELETE /api/sessions/{id}: the agents' live chat sessions, listed and ended
// through the runtime, which decides what each caller may see and end. Real daemon runtime, fake
// CLIs, the admin routes on a real uWS server.
import t from 'tap';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { agentsOf } from '../../bus/index.js';
import { startDaemon } from '../../bin/daemon.js';
import { ADMIN_STATUSES, sessionsRoutes, type AdminDeps } from '../../edges/index.js';
import { AGENT_COMMANDS, type Principal } from '../../schemas/index.js';
import { homePaths } from '../../store/index.js';
import { adminUser, testAdminJwt } from '../fixtures/admin-api.js';
import { serveSurfaces } from '../fixtures/http-server.js';
import { tempHome } from '../fixtures/temp-home.js';
import { until } from '../fixtures/until.js';

const BIN = fileURLToPath(new URL('../fixtures/bin', import.meta.url));
const PEOPLE = { ada: adminUser('ada', 'admin'), olga: adminUser('olga', 'operator'), vic: adminUser('vic', 'viewer'), rita: adminUser('rita', 'admin', ['ops']) };
const ASKER: Principal = { kind: 'user', id: null, acting_for: null, role: 'admin', allowed_agents: [], origin: { transport: 'api', chat_id: null, topic_id: null } };

async function boot(t: Parameters<typeof tempHome>[0], env: Record<string, string> = {}) {
  const scratch = tempHome(t);
  const root = join(scratch.dir, 'home');
  const d = await startDaemon({
    paths: homePaths(root),
    logToStderr: false,
    internalPort: 0,
    killGraceMs: 200,
    env: { PATH: `${BIN}:${process.env.PATH}`, HOME: root, ...env },
  });
  scratch.beforeRemove(() => d.stop('test'));
  const srv = await serveSurfaces(t, [
    { name: 'admin', routes: sessionsRoutes({ bus: d.bus } as AdminDeps), statuses: ADMIN_STATUSES, authenticators: [testAdminJwt(PEOPLE)] },
  ]);
  const call = async (method: string, path: string, as: string | null = 'ada') => {
    const r = await fetch(`http://127.0.0.1:${srv.port}${path}`, { method, headers: { connection: 'close', ...(as ? { authorization: `Bearer as:${as}` } : {}) } });
    return { status: r.status, body: (await r.json()) as unknown };
  };
  let n = 0;
  const ask = (text: string, chat_id = 1) =>
    agentsOf(d.bus).ask({ agent: 'main', transport: 'api', chat_id, topic_id: null, text, kind: 'foreground' }, ASKER, { requestId: `r${++n}` });
  return { d, call, ask };
}

await t.test('sessions are listed with their chat and size; a viewer may look, only an admin may end one', async (t) => {
  const { d, call, ask } = await boot(t);
  await ask('hello').outcome;
  await ask('again').outcome;
  await ask('other chat', 2).outcome;
  const list = await call('GET', '/api/sessions', 'vic');
  t.equal(list.status, 200);
  const sessions = list.body as { id: string; agent: string; chat_id: number; message_count: number; busy: boolean; providers: string[] }[];
  t.same(sessions.map((s) => [s.id, s.agent, s.chat_id, s.message_count, s.busy]).sort(), [
    ['main:api:1', 'main', 1, 2, false],
    ['main:api:2', 'main', 2, 1, false],
  ]);
  t.same(sessions[0]!.providers, ['claude']);

  t.match(await call('DELETE', '/api/sessions/main:api:1', 'vic'), { status: 403 }, 'a viewer cannot end a session');
  t.match(await call('DELETE', '/api/sessions/main:api:1', 'olga'), { status: 403 }, 'nor an operator (SPEC.md Roles: delete on sessions is admin)');
  t.same((await call('GET', '/api/sessions')).body instanceof Array && ((await call('GET', '/api/sessions')).body as unknown[]).length, 2, 'nothing changed');

  const ended = await call('DELETE', `/api/sessions/${encodeURIComponent('main:api:1')}`);
  t.same(ended, { status: 200, body: { ok: true, id: 'main:api:1', killed: 0 } });
  t.same(((await call('GET', '/api/sessions')).body as { id: string }[]).map((s) => s.id), ['main:api:2']);
  t.same(d.log.read({ stream: 'session:main:api:1' }).map((e) => e.type), ['session.started', 'session.turn_recorded', 'session.turn_recorded', 'session.ended']);
  // The chat's next message opens a fresh session instead of resuming the ended one.
  await ask('after').outcome;
  t.match(d.log.read({ stream: 'session:main:api:1' }).at(-2), { type: 'session.started', data: { reason: 'first' } });
  t.match(await call('DELETE', '/api/sessions/main:api:1'), { status: 200 }, 'the fresh one can be ended too');
});

await t.test('ending a session kills its running turn and cancels what waits behind it', async (t) => {
  const { call, ask } = await boot(t, { FAKE_CLI_HANG: '1' });
  const running = ask('never ends');
  const waiting = ask('behind it');
  await running.accepted;
  await waiting.accepted;
  // Accepted is not yet running: the CLI starts in the daemon's own time, and the API is all that shows it.
  let listed: { id: string; busy: boolean }[] = [];
  await until(
    () => `a busy session (listed ${JSON.stringify(listed)})`,
    async () => (listed = (await call('GET', '/api/sessions')).body as typeof listed).some((s) => s.busy),
    15_000,
  );
  t.same(listed.map((s) => [s.id, s.busy]), [['main:api:1', true]]);
  t.same(await call('DELETE', '/api/sessions/main:api:1'), { status: 200, body: { ok: true, id: 'main:api:1', killed: 1 } });
  t.match(await running.outcome, { status: 'aborted' });
  t.match(await waiting.outcome, { status: 'aborted', text: /session was ended/ });
  t.same((await call('GET', '/api/sessions')).body, []);
});

await t.test('allowed_agents: a restricted user neither sees nor ends sessions of other agents', async (t) => {
  const { call, ask } = await boot(t);
  await ask('hello').outcome;
  t.same(await call('GET', '/api/sessions', 'rita'), { status: 200, body: [] });
  t.match(await call('DELETE', '/api/sessions/main:api:1', 'rita'), { status: 404 }, 'answered as if there were no such session');
  t.equal(((await call('GET', '/api/sessions')).body as unknown[]).length, 1, 'it is still there');
});

await t.test('ids that name no session are 404, credentials are checked first', async (t) => {
  const { call, ask } = await boot(t);
  await ask('hello').outcome;
  for (const id of ['nocolon', 'main:', ':api:1', 'ghost:api:1', 'main:api:99', '..%2F..%2Fetc', 'main:api:1%00']) {
    t.match(await call('DELETE', `/api/sessions/${id}`), { status: 404 }, id);
  }
  t.match(await call('DELETE', `/api/sessions/${'x'.repeat(300)}`), { status: 400 }, 'an oversized id is refused by its schema');
  t.match(await call('GET', '/api/sessions', null), { status: 401 });
  t.match(await call('DELETE', '/api/sessions/main:api:1', null), { status: 401 });
  t.equal(((await call('GET', '/api/sessions')).body as unknown[]).length, 1);
});

await t.test('a /stop while a session end waits behind the killed turn does not cancel the end', async (t) => {
  const { mkdirSync, writeFileSync, rmSync, readdirSync } = await import('node:fs');
  const gate = join(tempHome(t).dir, 'gate');
  mkdirSync(gate, { recursive: true });
  writeFileSync(join(gate, 'open'), '');
  // The CLI ignores SIGTERM: a killed turn takes the whole grace to end, and the end waits behind it.
  const { d, ask } = await boot(t, { FAKE_CLI_GATE_DIR: gate, FAKE_CLI_IGNORE_TERM: '1' });
  await ask('first').outcome;
  rmSync(join(gate, 'open'));
  const held = ask('held at the gate');
  await held.accepted;
  const atGate = () => readdirSync(gate).some((n) => n.endsWith('.running'));
  await until('the held turn\'s CLI to wait at the gate', atGate);
  const ending = d.bus.send(AGENT_COMMANDS.endSession, { id: 'main:api:1', principal: ASKER, request_id: 'end-1' });
  // The end kills the turn and queues itself in one synchronous step: once the CLI has its SIGTERM (its gate marker
  // gone), the end is queued, so the /stop below comes after it, whatever the machine's load.
  await until('the end\'s SIGTERM to reach the held CLI', () => !atGate());
  await agentsOf(d.bus).abort(1, ASKER);
  t.same(await ending, { killed: 1 });
  t.equal(d.log.read({ stream: 'session:main:api:1' }).at(-1)!.type, 'session.ended', 'the session did end');
  await held.outcome.catch(() => undefined);
});
