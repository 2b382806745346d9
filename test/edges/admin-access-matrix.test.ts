// The admin API's authorisation as one matrix: every admin route the daemon mounts × every role ×
// three allowed_agents buckets, over real HTTP against a real daemon (temp home, fake CLIs, real
// logins). The expectations below are written from SPEC.md ("Roles", "Agent-scoped access", the
// "Admin REST" tables), not read from schemas/admin-access.ts, so a wrong entry there fails here;
// and the route list is the one the OpenAPI document is built from, so a new route without an
// expectation fails too.
import t from 'tap';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { agentsOf } from '../../bus/index.js';
import { startDaemon } from '../../bin/daemon.js';
import type { MountedRoute } from '../../edges/index.js';
import { AUDIT_STREAM, CONFIG_EVENTS, NOTIFICATION_COMMANDS, REGISTRY_EVENTS, SKILL_SYNC_STREAM, type Principal } from '../../schemas/index.js';
import { homePaths } from '../../store/index.js';
import { parseUsers, userRow } from '../fixtures/admin-auth-stand.js';
import { snapshot } from '../fixtures/admin-content.js';
import { tempHome } from '../fixtures/temp-home.js';
import { until } from '../bin/cli-helpers.js';

type Role = 'viewer' | 'operator' | 'admin';
/**
 * How SPEC.md's "Agent-scoped access" bears on a route, for a request that names the agent `coder`:
 * - `none`: the route names no agent; allowed_agents plays no part.
 * - `filtered`: a list; a caller restricted to other agents gets it without coder's entries.
 * - `validated`: the named agent is checked; a caller restricted to other agents is refused.
 * - `all-agents`: only an unrestricted caller, because the write reaches agents the caller may not
 *   use: a user's allowed_agents (a restricted admin could lift their own restriction), a global
 *   skill (every agent reads it). SPEC.md's list is silent here; its intent is not.
 */
type Acl = 'none' | 'filtered' | 'validated' | 'all-agents';

// ─── The expectations: least role and agent scope per route, with the SPEC.md words behind them ───
// SPEC.md "Roles": admin = full access (create/update/delete on users, cron, webhooks, memory, tasks,
// sessions, config; export/import; audit; avatars; RAG config); operator = read all resources, run
// cron jobs, cancel tasks, create and manage chat sessions, view logs; viewer = read-only on
// dashboards, agents, tasks, cron jobs, webhooks, sessions, activity. What the viewer's list does not
// name is an operator's read; a write the operator's list does not name is the admin's.
const EXPECT: Record<string, readonly [Role, Acl, string]> = {
  // Own account: every signed-in user, on their own row only.
  'GET /api/auth/me': ['viewer', 'none', 'Admin REST auth: current user'],
  'PUT /api/auth/profile': ['viewer', 'none', 'Admin REST auth: update own display name, password, avatar'],
  'POST /api/auth/2fa/setup': ['viewer', 'none', 'Admin REST auth: TOTP for the current user'],
  'POST /api/auth/2fa/verify': ['viewer', 'none', 'Admin REST auth: TOTP for the current user'],
  'POST /api/auth/2fa/disable': ['viewer', 'none', 'Admin REST auth: TOTP for the current user'],
  'POST /api/dashboard/errors/ack': ['viewer', 'none', 'Admin REST system: "viewer role or above"'],
  // Dashboards, system, activity.
  'GET /api/system/status': ['viewer', 'none', 'Roles: viewer reads dashboards'],
  'PUT /api/system/instance-name': ['admin', 'none', 'Roles: a write the operator is not given'],
  'GET /api/dashboard/summary': ['viewer', 'filtered', 'Roles: dashboards; "cache per language and ACL bucket"'],
  'GET /api/activity': ['viewer', 'filtered', 'Roles: activity; Agent-scoped: activity (filtered)'],
  'GET /api/activity/recent': ['viewer', 'filtered', 'Roles: activity; Agent-scoped: activity (filtered)'],
  'GET /api/activity/:id': ['viewer', 'validated', 'Agent-scoped: activity (filtered): an event the list hides is not served by id'],
  'GET /api/config': ['operator', 'none', 'Roles: operator reads all resources; viewer list lacks config'],
  'GET /api/logs': ['operator', 'validated', 'Roles: operator views logs; Agent-scoped: logs (agent param validated)'],
  'GET /api/logs/poll': ['operator', 'validated', 'Roles: operator views logs; Agent-scoped: log polling (agent param validated)'],
  // Agents.
  'GET /api/agents': ['viewer', 'filtered', 'Roles: viewer reads agents; Agent-scoped: only listed visible'],
  'GET /api/agents/:name': ['viewer', 'validated', 'Agent-scoped: agents (only listed visible)'],
  'PUT /api/agents/:name': ['admin', 'validated', 'Admin REST agents: "admin only"; an agent not visible is not writable'],
  'POST /api/agents/:name/avatar': ['admin', 'validated', 'Admin REST agents: "admin only"; Roles: avatar upload'],
  'DELETE /api/agents/:name/avatar': ['admin', 'validated', 'Admin REST agents: "admin only"; Roles: avatar delete'],
  'GET /api/agents/:name/metrics': ['viewer', 'validated', 'Roles: agents; Agent-scoped: agent metrics (name validated)'],
  'GET /api/agents/:name/metrics/history': ['viewer', 'validated', 'Roles: agents; Agent-scoped: agent metrics (name validated)'],
  // SPEC.md is silent on these two; the provider listing is part of what an agent runs on (agents),
  // the command list is fixed help text, no resource.
  'GET /api/providers/available': ['viewer', 'none', 'Provider listing: agent_default_provider/model (agents)'],
  'GET /api/commands': ['viewer', 'none', 'not a resource: the chat commands help'],
  // Chat: viewer "read-only on ... sessions" (the panel's sessions are chat sessions, issue 21);
  // operator "create and manage chat sessions". Marking read moves only the caller's own marker.
  'GET /api/chat': ['viewer', 'validated', 'Roles: viewer reads sessions; Agent-scoped: chat sessions (read validated)'],
  'POST /api/chat/:agentId': ['operator', 'validated', 'Roles: operator chats; Agent-scoped: chat (write validated)'],
  'GET /api/chat/sessions': ['viewer', 'filtered', 'Roles: viewer reads sessions; Agent-scoped: chat sessions (filtered)'],
  'POST /api/chat/sessions': ['operator', 'validated', 'Agent-scoped: chat sessions (create validated)'],
  'PUT /api/chat/sessions/:id': ['operator', 'validated', 'Roles: manage chat sessions; Agent-scoped: write validated'],
  'DELETE /api/chat/sessions/:id': ['operator', 'validated', 'Roles: manage chat sessions; Agent-scoped: delete validated'],
  'POST /api/chat/sessions/:id/archive': ['operator', 'validated', 'Roles: manage chat sessions; Agent-scoped: write validated'],
  'POST /api/chat/sessions/:id/unarchive': ['operator', 'validated', 'Roles: manage chat sessions; Agent-scoped: write validated'],
  'POST /api/chat/sessions/:id/provider': ['operator', 'validated', 'Roles: manage chat sessions; Agent-scoped: write validated'],
  'GET /api/chat/sessions/:id/messages': ['viewer', 'validated', 'Roles: viewer reads sessions; Agent-scoped: chat sessions (read validated)'],
  'PUT /api/chat/sessions/:id/messages': ['operator', 'validated', 'Agent-scoped: chat sessions (write validated)'],
  'POST /api/chat/sessions/:id/read': ['viewer', 'validated', 'Roles: the reader\'s own marker, as errors/ack; Agent-scoped: chat sessions (read validated)'],
  'POST /api/transcribe': ['operator', 'none', 'part of chatting (WIRE.md §2); names no agent'],
  // Notifications: the dashboard's bell, each about a cron job, webhook or task of one agent, so
  // scoped as those are ("WebSocket broadcasts are ACL-aware per socket": the bell the same).
  'GET /api/notifications': ['viewer', 'filtered', 'dashboards; about cron jobs, webhooks, tasks (filtered by agent)'],
  'GET /api/notifications/unread-count': ['viewer', 'none', 'dashboards; a count, of what the list shows'],
  'PUT /api/notifications/:id/read': ['viewer', 'validated', 'dashboards; one the list hides is not the caller\'s to mark'],
  'POST /api/notifications/read-all': ['viewer', 'filtered', 'dashboards; marks what the caller is shown, not what the list hides'],
  // Cron jobs and webhooks.
  'GET /api/cron': ['viewer', 'filtered', 'Roles: viewer reads cron jobs; Agent-scoped: filtered by job agent'],
  'POST /api/cron': ['admin', 'validated', 'Roles: create on cron jobs is admin; Agent-scoped: create needs the agent'],
  'PUT /api/cron/:id': ['admin', 'validated', 'Roles: update on cron jobs is admin; Agent-scoped: update needs the agent'],
  'DELETE /api/cron/:id': ['admin', 'validated', 'Roles: delete on cron jobs is admin; Agent-scoped: delete needs the agent'],
  'POST /api/cron/:id/run': ['operator', 'validated', 'Roles: operator runs cron jobs; Agent-scoped: run needs the agent'],
  'GET /api/cron/:id/runs': ['viewer', 'validated', 'Roles: viewer reads cron jobs; Agent-scoped: a run history is as visible as its job'],
  'GET /api/webhooks': ['viewer', 'filtered', 'Roles: viewer reads webhooks; Agent-scoped: filtered by job agent'],
  'POST /api/webhooks': ['admin', 'validated', 'Roles: create on webhooks is admin; Agent-scoped: create needs the agent'],
  'PUT /api/webhooks/:id': ['admin', 'validated', 'Roles: update on webhooks is admin; Agent-scoped: update needs the agent'],
  'DELETE /api/webhooks/:id': ['admin', 'validated', 'Roles: delete on webhooks is admin; Agent-scoped: delete needs the agent'],
  // Not a write, and not in the operator's list: an operator reads all resources, a webhook's secret included.
  'POST /api/webhooks/:id/verify': ['operator', 'validated', 'Agent-scoped: verify needs the agent'],
  'GET /api/webhooks/:id/runs': ['viewer', 'validated', 'Roles: viewer reads webhooks; Agent-scoped: a call history is as visible as its hook'],
  // Tasks and agent sessions.
  'GET /api/tasks': ['viewer', 'filtered', 'Roles: viewer reads tasks; Agent-scoped: filtered by parent_agent or agent'],
  'GET /api/tasks/:id': ['viewer', 'validated', 'Agent-scoped: tasks (get validated)'],
  'POST /api/tasks': ['admin', 'validated', 'Roles: create on tasks is admin; Agent-scoped: create validated'],
  'POST /api/tasks/:id/cancel': ['operator', 'validated', 'Roles: operator cancels tasks; Agent-scoped: cancel validated'],
  'DELETE /api/tasks/:id': ['admin', 'validated', 'Roles: delete on tasks is admin; Agent-scoped: tasks validated'],
  'POST /api/tasks/:id/answer': ['operator', 'validated', 'steering a running task, as a cancel (docs/admin-api.md); Agent-scoped: tasks validated'],
  // Workflows: read as tasks; a run is run like a cron job's; scoped by the agents its steps ask.
  'GET /api/workflows': ['viewer', 'filtered', 'read like tasks; Agent-scoped: by the agents a workflow asks'],
  'GET /api/workflows/runs/:run_id': ['viewer', 'validated', 'read like tasks; Agent-scoped: by the agents the run asks'],
  'POST /api/workflows/:id/run': ['operator', 'validated', 'run like a cron job; Agent-scoped: by the agents the workflow asks'],
  'POST /api/workflows/runs/:run_id/cancel': ['operator', 'validated', 'cancel like a task; Agent-scoped: by the agents the run asks'],
  'GET /api/sessions': ['viewer', 'filtered', 'Roles: viewer reads sessions; Agent-scoped: sessions filtered'],
  'DELETE /api/sessions/:id': ['admin', 'validated', 'Roles: delete on sessions is admin; Agent-scoped: delete validated'],
  // Memory, RAG, skills, files: not in the viewer's list. "agents (only listed visible)": an agent
  // a caller may not see has no memory, skills or files for them either.
  'GET /api/memory': ['operator', 'validated', 'Roles: operator reads all; agent not visible'],
  'PUT /api/memory': ['admin', 'validated', 'Roles: update on memory is admin'],
  'GET /api/memory/modules': ['operator', 'validated', 'Roles: operator reads all; agent not visible'],
  'GET /api/memory/modules/:filename': ['operator', 'validated', 'Roles: operator reads all; agent not visible'],
  'PUT /api/memory/modules/:filename': ['admin', 'validated', 'Roles: update on memory is admin'],
  'GET /api/rag/status': ['operator', 'none', 'Roles: operator reads all'],
  'PUT /api/rag/config': ['admin', 'all-agents', 'Admin REST RAG: "admin only"; the settings reach every agent'],
  'GET /api/agents/:agent/skills': ['operator', 'validated', 'Roles: operator reads all; agent not visible'],
  'POST /api/agents/:agent/skills': ['admin', 'validated', 'Roles: a write the operator is not given'],
  'GET /api/agents/:agent/skills/:skill': ['operator', 'validated', 'Roles: operator reads all; agent not visible'],
  'PUT /api/agents/:agent/skills/:skill': ['admin', 'validated', 'Roles: a write the operator is not given'],
  'DELETE /api/agents/:agent/skills/:skill': ['admin', 'validated', 'Roles: a write the operator is not given'],
  'GET /api/skills': ['admin', 'none', 'WIRE.md §2: the global scope is admin only'],
  'POST /api/skills': ['admin', 'all-agents', 'WIRE.md §2: admin only; a global skill reaches every agent'],
  'GET /api/skills/:skill': ['admin', 'none', 'WIRE.md §2: the global scope is admin only'],
  'PUT /api/skills/:skill': ['admin', 'all-agents', 'WIRE.md §2: admin only; a global skill reaches every agent'],
  'DELETE /api/skills/:skill': ['admin', 'all-agents', 'WIRE.md §2: admin only; a global skill reaches every agent'],
  'GET /api/files/list': ['operator', 'validated', 'Roles: operator reads all; agent not visible'],
  'GET /api/files/download': ['operator', 'validated', 'Roles: operator reads all; agent not visible'],
  'POST /api/files/sign-url': ['operator', 'validated', 'a download, deferred: as the download'],
  'POST /api/files/mkdir': ['admin', 'validated', 'Roles: a write the operator is not given'],
  'DELETE /api/files': ['admin', 'validated', 'Roles: a write the operator is not given'],
  // WIRE.md §2: /upload also takes the admin session; placing the file in an agent's folder is a files write.
  'POST /upload': ['admin', 'validated', 'Roles: a write the operator is not given; Agent-scoped: files of an agent not visible'],
  // Users, audit, export/import: "admin only" in their table.
  'GET /api/users': ['admin', 'none', 'Admin REST users: "admin only"'],
  'POST /api/users': ['admin', 'all-agents', 'Admin REST users: "admin only"'],
  'PUT /api/users/:username': ['admin', 'all-agents', 'Admin REST users: "admin only"'],
  'DELETE /api/users/:username': ['admin', 'all-agents', 'Admin REST users: "admin only"'],
  'GET /api/audit': ['admin', 'none', 'Admin REST audit: "admin only"'],
  'GET /api/export': ['admin', 'none', 'Admin REST export: "admin only"'],
  'POST /api/import': ['admin', 'validated', 'Admin REST import: "admin only"; it creates cron jobs, whose create needs the agent'],
};

/** Served to anyone (SPEC.md: login and its 2FA step, refresh, logout; the avatar is "public"; health). */
const PUBLIC = [
  'POST /api/auth/login',
  'POST /api/auth/2fa/login',
  'POST /api/auth/refresh',
  'POST /api/auth/logout',
  'GET /api/agents/:name/avatar',
  // Its signature is the credential (WIRE.md §2: "the only place a credential may ride in a query string").
  'GET /api/files/signed',
  'GET /health',
  'GET /api/openapi.json',
  // A plain GET on the direct API's socket path (answered 426).
  'GET /ws',
];

const ROLES: readonly Role[] = ['viewer', 'operator', 'admin'];
/** allowed_agents of each bucket: every request below names `coder`. */
const BUCKETS = { unrestricted: [], named: ['coder'], others: ['writer'] } as const satisfies Record<string, string[]>;
type Bucket = keyof typeof BUCKETS;
const RANK: Record<Role, number> = { viewer: 1, operator: 2, admin: 3 };

type Expected = { refused: 'role' | 'scope' | 'agent' } | { refused: false; hides: boolean };

/** The role is checked first: a viewer is refused an admin route whatever agents they may use. */
function expected(route: string, role: Role, bucket: Bucket): Expected {
  const [least, acl] = EXPECT[route]!;
  if (RANK[role] < RANK[least]) return { refused: 'role' };
  if (acl === 'all-agents' && bucket !== 'unrestricted') return { refused: 'scope' };
  if (bucket === 'others' && acl === 'validated') return { refused: 'agent' };
  return { refused: false, hides: bucket === 'others' && acl === 'filtered' };
}

const BIN = fileURLToPath(new URL('../fixtures/bin', import.meta.url));
// A minimal valid 1x1 PNG.
const PNG = Buffer.from('89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c4890000000d4944415478da63f8cfc0f01f0005000201a5e3d3e70000000049454e44ae426082', 'hex');
const ASKER: Principal = { kind: 'user', id: null, acting_for: null, role: 'admin', allowed_agents: [], origin: { transport: 'api', chat_id: null, topic_id: null } };

/**
 * A request of one cell: everything names `coder`. `shows`: what stands for coder's entries in a
 * filtered answer (default: the name itself).
 */
type Req = { path: string; body?: unknown; form?: FormData; shows?: string };

await t.test('every admin route × role × allowed_agents answers as SPEC.md says, and a refusal changes nothing', async (t) => {
  const scratch = tempHome(t);
  const root = join(scratch.dir, 'home');
  const paths = homePaths(root);
  mkdirSync(paths.configDir, { recursive: true });
  mkdirSync(paths.secretsDir, { recursive: true, mode: 0o700 });
  // Each login comes from its own client address through a trusted proxy, so the per-IP login limit stays out of it.
  // One task runs per chat: the first holds the slot (its fake CLI prints nothing until killed), so
  // every later task waits in the queue and no CLI starts, ends or reports mid-matrix (a refused
  // cell sees no stray fact).
  writeFileSync(paths.configFile, JSON.stringify({ api: { enabled: true, host: '127.0.0.1', port: 0, trusted_proxies: ['127.0.0.1'] }, tasks: { max_parallel: 1 } }));
  // additional_directories as PUT /api/agents/coder will write it, so that write changes no agent (no restart mid-matrix).
  const agent = (name: string) => ({ name, telegram_token: '1:x', additional_directories: [] });
  writeFileSync(paths.agentsRegistry, JSON.stringify([agent('coder'), agent('writer')]));
  const people: string[] = [];
  const rows = [await userRow('root', 'admin', 'root-password'), await userRow('victim', 'viewer', 'victim-password')];
  for (const role of ROLES) {
    for (const [bucket, allowed] of Object.entries(BUCKETS)) {
      people.push(`${role}_${bucket}`);
      rows.push(await userRow(`${role}_${bucket}`, role, 'password-123', { allowed_agents: [...allowed] }));
    }
  }
  writeFileSync(paths.usersFile, JSON.stringify({ users: parseUsers(rows) }));
  // A workflow per agent; a run waits at its first step forever, so it never asks anyone mid-matrix.
  mkdirSync(paths.workflowsDir, { recursive: true });
  for (const agent of ['coder', 'writer']) {
    writeFileSync(join(paths.workflowsDir, `${agent}-flow.yaml`), `name: ${agent} flow\nsteps:\n  - { id: q, type: wait_for_reply, message: "ready?" }\n  - { id: ask, type: ask_agent, agent: ${agent}, prompt: "go" }\n`);
  }

  const d = await startDaemon({ paths, logToStderr: false, internalPort: 0, apiPort: 0, killGraceMs: 200, env: { PATH: `${BIN}:${process.env.PATH}`, HOME: root } });
  scratch.beforeRemove(() => d.stop('test'));
  const base = `http://127.0.0.1:${d.apiPort}`;
  let client = 0;
  const send = async (method: string, req: Req, token: string | null) => {
    const headers: Record<string, string> = { connection: 'close', 'accept-language': 'en', 'x-forwarded-for': `192.0.2.${(client = (client % 250) + 1)}` };
    if (token !== null) headers.authorization = `Bearer ${token}`;
    let body: string | FormData | undefined;
    if (req.form) body = req.form;
    else if (req.body !== undefined) {
      body = JSON.stringify(req.body);
      headers['content-type'] = 'application/json';
    }
    const r = await fetch(base + req.path, { method, headers, ...(body === undefined ? {} : { body }) });
    const text = await r.text();
    let json: any = text;
    try {
      json = JSON.parse(text);
    } catch {
      // A download: the text is the body.
    }
    return { status: r.status, json, text };
  };
  const tokens: Record<string, string> = {};
  for (const name of ['root', ...people]) {
    const r = await send('POST', { path: '/api/auth/login', body: { username: name, password: name === 'root' ? 'root-password' : 'password-123' } }, null);
    t.equal(r.status, 200, `${name} logs in`);
    tokens[name] = r.json.access_token;
  }
  /** Set-up calls, as the unrestricted admin; they must work. */
  const admin = async (method: string, path: string, body?: unknown) => {
    const r = await send(method, { path, body }, tokens.root!);
    if (r.status >= 300) throw new Error(`set-up ${method} ${path}: ${r.status} ${r.text}`);
    return r.json;
  };

  // ─── Resources of coder (what the requests name) and of writer (what a coder-less list still shows) ───
  for (const agent of ['coder', 'writer']) {
    await admin('POST', '/api/cron', { id: `${agent}-job`, title: `${agent}-job`, schedule: '0 9 * * *', agent, enabled: false, dependency: 'matrix' });
    await admin('POST', '/api/webhooks', { id: `${agent}-hook`, agent, secret: 'hook-secret-0123456789' });
    await admin('POST', `/api/agents/${agent}/skills`, { name: `${agent}-skill`, content: '# skill\n' });
    await admin('PUT', `/api/memory/modules/modules%2Fnotes.md?agent=${agent}`, { content: 'notes\n' });
    await admin('POST', '/api/files/mkdir', { agent, relative_path: `${agent}-dir` });
    writeFileSync(join(paths.agentsDir, agent, 'workspace', 'f.txt'), 'file\n');
    await agentsOf(d.bus).ask({ agent, transport: 'api', chat_id: 1, topic_id: null, text: `hello ${agent}`, kind: 'foreground' }, ASKER, { timeoutMs: 30_000 }).outcome;
  }
  await admin('POST', '/api/skills', { name: 'global-skill', content: '# global\n' });
  // Tasks exist only through the hub (tasks.json is its projection): the holder takes the chat's
  // one slot, and the tasks the cells name wait behind it.
  const holder = (await admin('POST', '/api/tasks', { name: 'holder', agent: 'coder', prompt: '[[hold]]' })) as { task_id: string };
  await until('the holder running', () =>
    d.log.read({ types: ['turn.spawned'] }).some((e) => d.log.read({ stream: e.stream, types: ['turn.started'] })[0]?.correlation === `task:${holder.task_id}`));
  // Cron runs the same way: a held run takes the `matrix` dependency queue, so a run-now cell only
  // queues (its fire and queue facts are in before its 202) and no CLI reports mid-matrix.
  await admin('POST', '/api/cron', { id: 'holder-job', title: 'holder-job', schedule: '0 9 * * *', agent: 'coder', enabled: false, description: '[[hold]]', dependency: 'matrix' });
  await admin('POST', '/api/cron/holder-job/run');
  await until('the cron holder running', () =>
    d.log.read({ types: ['turn.spawned'] }).some((e) => d.log.read({ stream: e.stream, types: ['turn.started'] })[0]?.correlation?.startsWith('oneshot:')));
  const taskOf = async (agent: string) => ((await admin('POST', '/api/tasks', { name: `${agent}-task`, agent, prompt: 'p' })) as { task_id: string }).task_id;
  const coderTask = await taskOf('coder');
  // A coder workflow run, ended before the matrix (its message delivered first): status reads it, cancel finds it ended.
  const before = d.log.lastSeq();
  const coderRun = ((await admin('POST', '/api/workflows/coder-flow/run', {})) as { run_id: string }).run_id;
  await until('the run waits with its message delivered', () => d.log.read({ after: before }).some((e) => e.type === 'chat.messages_merged'));
  await admin('POST', `/api/workflows/runs/${coderRun}/cancel`);
  await taskOf('writer');
  /** An unread notification about a webhook run of `agent`, through the notifier, as the webhook runner files one. */
  const notify = async (agent: string) => {
    const r = await d.bus.send(NOTIFICATION_COMMANDS.create, { source: 'webhook', outcome: 'success', title: `${agent}-hook ran`, body: 'ok then', agent, source_id: `${agent}-hook` });
    if (!r.persisted) throw new Error('set-up: notification not filed');
    return r.notification.id;
  };
  await notify('coder');
  await notify('writer');
  const chat = (await admin('POST', '/api/chat/sessions', { agent: 'coder', title: 'coder-chat' })) as { id: string };
  await admin('POST', '/api/chat/sessions', { agent: 'writer', title: 'writer-chat' });
  await admin('PUT', `/api/chat/sessions/${chat.id}/messages`, { messages: [{ id: 'm1', sender: 'user', content: 'hi', timestamp: '2026-11-25T10:00:00.000Z' }] });
  const recent = (await admin('GET', '/api/activity/recent?limit=100')) as { id: string; agent_name: string | null }[];
  const coderEvent = recent.find((e) => e.agent_name === 'coder');
  t.ok(coderEvent, 'an activity event of coder to ask for by id');

  // A resource a destructive call may use up, made anew for each cell.
  let n = 0;
  const fresh = () => `x${++n}`;
  let uploads = 0;
  const CALLS: Record<string, () => Req | Promise<Req>> = {
    'GET /api/auth/me': () => ({ path: '/api/auth/me' }),
    'PUT /api/auth/profile': () => ({ path: '/api/auth/profile', body: { display_name: 'Someone' } }),
    'POST /api/auth/2fa/setup': () => ({ path: '/api/auth/2fa/setup' }),
    'POST /api/auth/2fa/verify': () => ({ path: '/api/auth/2fa/verify', body: { code: '000000' } }),
    'POST /api/auth/2fa/disable': () => ({ path: '/api/auth/2fa/disable', body: { code: '000000', password: 'password-123' } }),
    'POST /api/dashboard/errors/ack': () => ({ path: '/api/dashboard/errors/ack' }),
    'GET /api/system/status': () => ({ path: '/api/system/status' }),
    'PUT /api/system/instance-name': () => ({ path: '/api/system/instance-name', body: { instance_name: 'Lab' } }),
    'GET /api/dashboard/summary': () => ({ path: '/api/dashboard/summary' }),
    'GET /api/activity': () => ({ path: '/api/activity' }),
    'GET /api/activity/recent': () => ({ path: '/api/activity/recent?limit=100' }),
    'GET /api/activity/:id': () => ({ path: `/api/activity/${encodeURIComponent(coderEvent!.id)}` }),
    'GET /api/config': () => ({ path: '/api/config' }),
    'GET /api/logs': () => ({ path: '/api/logs?agent=coder&lines=10' }),
    'GET /api/logs/poll': () => ({ path: '/api/logs/poll?agent=coder&after=0' }),
    'GET /api/agents': () => ({ path: '/api/agents' }),
    'GET /api/agents/:name': () => ({ path: '/api/agents/coder' }),
    'PUT /api/agents/:name': () => ({ path: '/api/agents/coder', body: { additional_directories: [] } }),
    'POST /api/agents/:name/avatar': () => {
      const form = new FormData();
      form.append('file', new Blob([PNG], { type: 'image/png' }), 'me.png');
      return { path: '/api/agents/coder/avatar', form };
    },
    'DELETE /api/agents/:name/avatar': () => ({ path: '/api/agents/coder/avatar' }),
    'POST /upload': () => {
      const form = new FormData();
      form.append('file', new Blob(['notes']), `up-${++uploads}.txt`);
      return { path: '/upload?agent=coder&relative_path=', form };
    },
    'GET /api/agents/:name/metrics': () => ({ path: '/api/agents/coder/metrics?period=24h' }),
    'GET /api/agents/:name/metrics/history': () => ({ path: '/api/agents/coder/metrics/history?period=24h' }),
    'GET /api/providers/available': () => ({ path: '/api/providers/available' }),
    'GET /api/commands': () => ({ path: '/api/commands' }),
    'GET /api/chat': () => ({ path: '/api/chat?agent=coder' }),
    'POST /api/chat/:agentId': () => ({ path: '/api/chat/coder', body: { message: 'hi' } }),
    'GET /api/chat/sessions': () => ({ path: '/api/chat/sessions' }),
    'POST /api/chat/sessions': () => ({ path: '/api/chat/sessions', body: { agent: 'coder', title: fresh() } }),
    'PUT /api/chat/sessions/:id': () => ({ path: `/api/chat/sessions/${chat.id}`, body: { title: 'coder-chat' } }),
    'DELETE /api/chat/sessions/:id': async () => ({ path: `/api/chat/sessions/${((await admin('POST', '/api/chat/sessions', { agent: 'coder', title: fresh() })) as { id: string }).id}` }),
    'POST /api/chat/sessions/:id/archive': () => ({ path: `/api/chat/sessions/${chat.id}/archive` }),
    'POST /api/chat/sessions/:id/unarchive': () => ({ path: `/api/chat/sessions/${chat.id}/unarchive` }),
    'POST /api/chat/sessions/:id/provider': () => ({ path: `/api/chat/sessions/${chat.id}/provider`, body: { provider: null, model: null } }),
    'GET /api/chat/sessions/:id/messages': () => ({ path: `/api/chat/sessions/${chat.id}/messages` }),
    'PUT /api/chat/sessions/:id/messages': () => ({ path: `/api/chat/sessions/${chat.id}/messages?merge=true`, body: { messages: [{ id: 'm1', sender: 'user', content: 'hi', timestamp: '2026-11-25T10:00:00.000Z' }] } }),
    'POST /api/chat/sessions/:id/read': () => ({ path: `/api/chat/sessions/${chat.id}/read`, body: { last_read_message_id: 'm1' } }),
    'POST /api/transcribe': () => ({ path: '/api/transcribe', body: { file_path: 'missing.ogg' } }),
    'GET /api/notifications': () => ({ path: '/api/notifications' }),
    'GET /api/notifications/unread-count': () => ({ path: '/api/notifications/unread-count' }),
    'PUT /api/notifications/:id/read': async () => ({ path: `/api/notifications/${await notify('coder')}/read` }),
    // A fresh unread one each time: whether the caller's read-all marked it is in the answer's ids.
    'POST /api/notifications/read-all': async () => ({ path: '/api/notifications/read-all', shows: await notify('coder') }),
    'GET /api/cron': () => ({ path: '/api/cron' }),
    'POST /api/cron': () => ({ path: '/api/cron', body: { id: fresh(), title: 't', schedule: '0 9 * * *', agent: 'coder', enabled: false } }),
    'PUT /api/cron/:id': () => ({ path: '/api/cron/coder-job', body: { description: 'd' } }),
    'DELETE /api/cron/:id': async () => {
      const id = fresh();
      await admin('POST', '/api/cron', { id, title: id, schedule: '0 9 * * *', agent: 'coder', enabled: false });
      return { path: `/api/cron/${id}` };
    },
    'POST /api/cron/:id/run': () => ({ path: '/api/cron/coder-job/run' }),
    'GET /api/cron/:id/runs': () => ({ path: '/api/cron/coder-job/runs' }),
    'GET /api/webhooks': () => ({ path: '/api/webhooks' }),
    'POST /api/webhooks': () => ({ path: '/api/webhooks', body: { id: fresh(), agent: 'coder' } }),
    'PUT /api/webhooks/:id': () => ({ path: '/api/webhooks/coder-hook', body: { description: 'd' } }),
    'DELETE /api/webhooks/:id': async () => {
      const id = fresh();
      await admin('POST', '/api/webhooks', { id, agent: 'coder' });
      return { path: `/api/webhooks/${id}` };
    },
    'GET /api/webhooks/:id/runs': () => ({ path: '/api/webhooks/coder-hook/runs' }),
    'POST /api/webhooks/:id/verify': () => ({ path: '/api/webhooks/coder-hook/verify', body: { payload: '{}', signature: 'sha256=00' } }),
    'GET /api/tasks': () => ({ path: '/api/tasks' }),
    'GET /api/tasks/:id': () => ({ path: `/api/tasks/${coderTask}` }),
    'POST /api/tasks': () => ({ path: '/api/tasks', body: { name: 'n', agent: 'coder', prompt: 'p' } }),
    'POST /api/tasks/:id/cancel': () => ({ path: `/api/tasks/${coderTask}/cancel` }),
    'DELETE /api/tasks/:id': async () => {
      const id = await taskOf('coder');
      await admin('POST', `/api/tasks/${id}/cancel`);
      return { path: `/api/tasks/${id}` };
    },
    // Queued behind the holder, so not waiting: allowed cells get 409 task-state.
    'POST /api/tasks/:id/answer': () => ({ path: `/api/tasks/${coderTask}/answer`, body: { answer: 'a' } }),
    'GET /api/workflows': () => ({ path: '/api/workflows', shows: 'coder-flow' }),
    'GET /api/workflows/runs/:run_id': () => ({ path: `/api/workflows/runs/${coderRun}` }),
    // A variable the workflow does not declare: allowed cells get 400 after the checks, and no run starts mid-matrix.
    'POST /api/workflows/:id/run': () => ({ path: '/api/workflows/coder-flow/run', body: { variables: { nope: 'x' } } }),
    'POST /api/workflows/runs/:run_id/cancel': () => ({ path: `/api/workflows/runs/${coderRun}/cancel` }),
    'GET /api/sessions': () => ({ path: '/api/sessions' }),
    'DELETE /api/sessions/:id': async () => {
      const chatId = 100 + ++n;
      await agentsOf(d.bus).ask({ agent: 'coder', transport: 'api', chat_id: chatId, topic_id: null, text: 'x', kind: 'foreground' }, ASKER, { timeoutMs: 30_000 }).outcome;
      return { path: `/api/sessions/coder:api:${chatId}` };
    },
    'GET /api/memory': () => ({ path: '/api/memory?agent=coder' }),
    'PUT /api/memory': () => ({ path: '/api/memory?agent=coder', body: { content: 'memory\n' } }),
    'GET /api/memory/modules': () => ({ path: '/api/memory/modules?agent=coder' }),
    'GET /api/memory/modules/:filename': () => ({ path: '/api/memory/modules/modules%2Fnotes.md?agent=coder' }),
    'PUT /api/memory/modules/:filename': () => ({ path: '/api/memory/modules/modules%2Fnotes.md?agent=coder', body: { content: 'notes\n' } }),
    'GET /api/rag/status': () => ({ path: '/api/rag/status' }),
    'PUT /api/rag/config': () => ({ path: '/api/rag/config', body: { top_k_final: 5 } }),
    'GET /api/agents/:agent/skills': () => ({ path: '/api/agents/coder/skills' }),
    'POST /api/agents/:agent/skills': () => ({ path: '/api/agents/coder/skills', body: { name: fresh(), content: '# s\n' } }),
    'GET /api/agents/:agent/skills/:skill': () => ({ path: '/api/agents/coder/skills/coder-skill' }),
    'PUT /api/agents/:agent/skills/:skill': () => ({ path: '/api/agents/coder/skills/coder-skill', body: { content: '# skill\n' } }),
    'DELETE /api/agents/:agent/skills/:skill': async () => {
      const name = fresh();
      await admin('POST', '/api/agents/coder/skills', { name, content: '# s\n' });
      return { path: `/api/agents/coder/skills/${name}` };
    },
    'GET /api/skills': () => ({ path: '/api/skills' }),
    'POST /api/skills': () => ({ path: '/api/skills', body: { name: fresh(), content: '# g\n' } }),
    'GET /api/skills/:skill': () => ({ path: '/api/skills/global-skill' }),
    'PUT /api/skills/:skill': () => ({ path: '/api/skills/global-skill', body: { content: '# global\n' } }),
    'DELETE /api/skills/:skill': async () => {
      const name = fresh();
      await admin('POST', '/api/skills', { name, content: '# g\n' });
      return { path: `/api/skills/${name}` };
    },
    'GET /api/files/list': () => ({ path: '/api/files/list?agent=coder&path=' }),
    'GET /api/files/download': () => ({ path: '/api/files/download?agent=coder&relative_path=f.txt' }),
    'POST /api/files/sign-url': () => ({ path: '/api/files/sign-url', body: { agent: 'coder', relative_path: 'f.txt', ttl: 60 } }),
    'POST /api/files/mkdir': () => ({ path: '/api/files/mkdir', body: { agent: 'coder', relative_path: fresh() } }),
    'DELETE /api/files': async () => {
      const dir = fresh();
      await admin('POST', '/api/files/mkdir', { agent: 'coder', relative_path: dir });
      return { path: '/api/files', body: { agent: 'coder', relative_path: dir } };
    },
    'GET /api/users': () => ({ path: '/api/users' }),
    'POST /api/users': () => ({ path: '/api/users', body: { username: fresh(), password: 'password-123', role: 'viewer' } }),
    'PUT /api/users/:username': () => ({ path: '/api/users/victim', body: { display_name: 'Victim' } }),
    'DELETE /api/users/:username': async () => {
      const username = fresh();
      await admin('POST', '/api/users', { username, password: 'password-123', role: 'viewer' });
      return { path: `/api/users/${username}` };
    },
    'GET /api/audit': () => ({ path: '/api/audit?limit=5' }),
    'GET /api/export': () => ({ path: '/api/export' }),
    'POST /api/import': () => ({ path: '/api/import', body: { cron_jobs: [{ id: fresh(), title: 't', schedule: '0 9 * * *', agent: 'coder', enabled: false }] } }),
  };

  const key = (r: MountedRoute) => `${r.method} ${r.pattern}`;
  const mounted = d.apiRoutes();
  const guarded = mounted.filter((r) => r.auth !== 'public' && r.auth.accepts.includes('admin-jwt'));
  t.same(mounted.filter((r) => r.auth === 'public').map(key).sort(), [...PUBLIC].sort(), 'the public routes are exactly those SPEC.md leaves open');
  t.same(guarded.map(key).sort(), Object.keys(EXPECT).sort(), 'every route the admin credential reaches has an expectation, and every expectation a route');
  t.same(Object.keys(CALLS).sort(), Object.keys(EXPECT).sort(), 'and a request');

  /** Everything a refused call must leave alone: the home's files (logs aside) and every stream but the audit's. */
  const state = (method: string) => {
    const files = method === 'GET' ? [] : Object.entries(snapshot(root)).filter(([p]) => !p.startsWith('logs'));
    return { files: Object.fromEntries(files), seq: d.log.lastSeq() };
  };
  // The config and registry watchers echo, in their own time, writes of config.json and agents.json
  // that allowed cells made earlier; those two files' bytes are compared above instead. So does the
  // skill sync's watcher for skills allowed cells wrote (its summary fact, on its own stream).
  const echoes = new Set<string>([...Object.values(CONFIG_EVENTS), ...Object.values(REGISTRY_EVENTS)]);
  const foreignFacts = (after: number) =>
    d.log
      .read({ after })
      .filter((e) => e.stream !== AUDIT_STREAM && e.stream !== SKILL_SYNC_STREAM && !echoes.has(e.type))
      .map((e) => `${e.stream} ${e.type} ${JSON.stringify(e.data).slice(0, 200)}`);

  // A request is sent again until a cell succeeds with it: a refusal leaves its resource in place,
  // so only a success (a delete, a create under that name) costs a new one.
  const spare = new Map<string, Req>();
  const request = async (k: string) => spare.get(k) ?? (await CALLS[k]!());
  const keep = (k: string, req: Req, status: number) => (status < 300 ? spare.delete(k) : spare.set(k, req));

  const started = Date.now();
  let cells = 0;
  let reached2xx = 0;
  const agentRefusals: Record<string, number> = {};
  const notReached: Record<string, true> = {};
  for (const route of guarded) {
    const k = key(route);
    for (const role of ROLES) {
      for (const bucket of Object.keys(BUCKETS) as Bucket[]) {
        const want = expected(k, role, bucket);
        const who = `${role}_${bucket}`;
        const req = await request(k);
        const cell = `${k} as ${role} (${bucket})`;
        cells++;
        if (want.refused) {
          const before = state(route.method);
          const r = await send(route.method, req, tokens[who]!);
          keep(k, req, r.status);
          if (want.refused === 'role') t.match(r, { status: 403, json: { code: 'forbidden' } }, `${cell}: 403 forbidden (needs ${EXPECT[k]!.slice(0, 2).join(', ')})`);
          else if (want.refused === 'scope') {
            // Two codes for one rule today: user writes say `forbidden`, global skill writes `agent-not-allowed`.
            t.ok(r.status === 403 && ['forbidden', 'agent-not-allowed'].includes(r.json?.code), `${cell}: 403 for a restricted caller (got ${r.status} ${r.json?.code})`);
          } else {
            const code = `${r.status} ${r.json?.code}`;
            agentRefusals[code] = (agentRefusals[code] ?? 0) + 1;
            t.ok(code === '403 agent-not-allowed' || code === '404 not-found', `${cell}: refused for the agent (got ${code})`);
          }
          if (route.method !== 'GET') t.same(state(route.method).files, before.files, `${cell}: no file changed`);
          t.same(foreignFacts(before.seq), [], `${cell}: no fact but the audit's`);
        } else {
          const r = await send(route.method, req, tokens[who]!);
          keep(k, req, r.status);
          t.ok(r.status !== 401 && r.status !== 403 && r.status < 500 || r.status === 503, `${cell}: allowed (got ${r.status} ${r.json?.code ?? ''})`);
          if (r.status < 300) reached2xx++;
          else notReached[`${k} ${r.status} ${r.json?.code}`] = true;
          // Filtered lists: coder's entries are left out for the others bucket, and shown to the rest
          // (or the filter would pass by showing nobody anything).
          if (k === 'GET /api/dashboard/summary' && !want.hides) {
            // Its recent_activity is the 10 latest: an unrestricted admin's are sign-ins (audit), so coder's may not be among them.
          } else if (EXPECT[k]![1] === 'filtered') {
            const shows = req.shows ?? 'coder';
            if (want.hides) t.notOk(r.text.includes(shows), `${cell}: coder's entries are left out`);
            else t.ok(r.text.includes(shows), `${cell}: coder's entries are listed`);
          }
        }
      }
    }
  }

  // No credential at all: 401 before anything else, for every guarded route.
  for (const route of guarded) {
    const r = await send(route.method, await request(key(route)), null);
    t.match(r, { status: 401, json: { code: 'unauthorized' } }, `${key(route)} without a credential: 401`);
  }
  t.comment(`allowed cells short of 2xx: ${Object.keys(notReached).join('; ')}`);
  t.comment(`${guarded.length} routes × ${ROLES.length} roles × ${Object.keys(BUCKETS).length} buckets = ${cells} cells, ${reached2xx} allowed cells reached 2xx; agent refusals: ${JSON.stringify(agentRefusals)}; ${Date.now() - started} ms`);
});
