// SPEC.md "Admin REST: chat" over real HTTP: WIRE.md shapes, roles, allowed_agents, bad input.
import t from 'tap';
import { existsSync, readFileSync } from 'node:fs';
import { CHAT_COMMANDS, MULTIAGENT_COMMANDS } from '../../machines/index.js';
import { CHAT_COMMAND_HELP, MULTIAGENT_COMMAND_HELP } from '../../schemas/index.js';
import { serveAdminChat } from '../fixtures/admin-chat.js';

const msg = (id: string, sender = 'agent', content = id) => ({ id, sender, content, timestamp: '2026-11-22T10:00:00.000Z' });

await t.test('sessions list with read state, archive, provider, delete; messages paging, overwrite, merge; read markers', async (t) => {
  const s = await serveAdminChat(t);
  t.equal((await s.call('/api/chat/sessions', { method: 'POST', body: { agent: 'main' } })).status, 201, 'created through the shared route with an admin credential');
  await s.call('/api/chat/sessions', { method: 'POST', body: { agent: 'coder' } });

  let r = await s.call('/api/chat/sessions/s1/messages', { method: 'PUT', body: [msg('u1', 'user'), msg('a1'), msg('a2')] });
  t.same(r, { status: 200, body: { session_id: 's1', total: 3 } });
  r = await s.call('/api/chat/sessions/s1/messages?merge=true', { method: 'PUT', body: { messages: [{ ...msg('a1'), content: 'edited' }, msg('a3')] } });
  t.same(r.body, { session_id: 's1', total: 4 });
  r = await s.call('/api/chat/sessions/s1/messages');
  t.same(r.body.map((m: any) => [m.id, m.content]), [['u1', 'u1'], ['a1', 'edited'], ['a2', 'a2'], ['a3', 'a3']], 'plain array by default, merged in place');
  r = await s.call('/api/chat/sessions/s1/messages?limit=2');
  t.same(r.body, { messages: [msg('a2'), msg('a3')], has_more: true, total: 4, last_read_message_id: null });
  r = await s.call('/api/chat/sessions/s1/messages?limit=2&before=a2');
  t.same([r.body.messages.map((m: any) => m.id), r.body.has_more], [['u1', 'a1'], false]);

  r = await s.call('/api/chat/sessions?agent=main');
  t.same(r.body, [{ id: 's1', agent: 'main', title: 'New chat', created_at: r.body[0].created_at, updated_at: r.body[0].updated_at, provider_override: null, model_override: null, archived: false, last_read_message_id: null, unread_count: 3 }]);

  r = await s.call('/api/chat/sessions/s1/read', { method: 'POST', body: { last_read_message_id: 'a2' } });
  t.same(r, { status: 200, body: { session_id: 's1', last_read_message_id: 'a2', unread_count: 1 } });
  r = await s.call('/api/chat/sessions/s1/read', { method: 'POST', body: { last_read_message_id: 'a1' } });
  t.same(r.body, { session_id: 's1', last_read_message_id: 'a2', unread_count: 1 }, 'backwards: the current marker');
  r = await s.call('/api/chat/sessions/s1/read', { method: 'POST', body: { last_read_message_id: 'zz' } });
  t.same([r.status, r.body.code], [400, 'unknown-message']);
  t.equal(JSON.parse(readFileSync(s.paths.chatReadsFile, 'utf8')).root.s1.last_read_message_id, 'a2');
  t.equal((await s.call('/api/chat/sessions/s1/messages?limit=1')).body.last_read_message_id, 'a2');
  t.equal((await s.call('/api/chat/sessions?agent=main', { as: 'operator' })).body[0].last_read_message_id, null, "another user's marker is theirs");

  r = await s.call('/api/chat/sessions/s1/archive', { method: 'POST' });
  t.same([r.status, r.body.archived], [200, true]);
  r = await s.call('/api/chat/sessions/s1/unarchive', { method: 'POST' });
  t.equal(r.body.archived, false);
  r = await s.call('/api/chat/sessions/s1/provider', { method: 'POST', body: { provider: 'codex', model: 'gpt-5' } });
  t.same([r.body.provider_override, r.body.model_override], ['codex', 'gpt-5']);
  r = await s.call('/api/chat/sessions/s1/provider', { method: 'POST', body: { provider: null, model: null } });
  t.same([r.body.provider_override, r.body.model_override], [null, null]);

  t.same((await s.call('/api/chat?agent=main')).body.map((m: any) => m.id), ['u1', 'a1', 'a2', 'a3'], 'history of the latest session');
  r = await s.call('/api/chat/sessions/s1', { method: 'DELETE' });
  t.same(r, { status: 200, body: { id: 's1', deleted: true } });
  t.equal((await s.call('/api/chat/sessions/s1/messages')).status, 404);
  t.same((await s.call('/api/chat?agent=main')).body, []);
  t.ok(existsSync(s.paths.chatReadsFile));
  t.same(JSON.parse(readFileSync(s.paths.chatReadsFile, 'utf8')), {}, 'markers of the deleted session are gone');
});

await t.test('send: POST /api/chat/{agent} runs a turn and stores both sides; the override becomes @model', async (t) => {
  const s = await serveAdminChat(t);
  let r = await s.call('/api/chat/main', { method: 'POST', body: { message: 'hello' } });
  t.same(r, { status: 200, body: { response: 'echo: hello', session_id: 's1', files: [], status: 'completed' } });
  await s.call('/api/chat/sessions/s1/provider', { method: 'POST', body: { provider: 'codex', model: 'gpt-5' } });
  r = await s.call('/api/chat/main', { method: 'POST', body: { text: 'again', session_id: 's1', user_msg_id: 'u-2', assistant_msg_id: 'a-2' } });
  t.equal(r.body.response, 'echo: @gpt-5 again', 'the agent got the directive');
  t.equal(s.rt.calls.at(-1)!.transport, 'admin');
  const history = (await s.call('/api/chat/sessions/s1/messages')).body;
  t.same(history.map((m: any) => [m.sender, m.content]), [['user', 'hello'], ['agent', 'echo: hello'], ['user', 'again'], ['agent', 'echo: @gpt-5 again']]);
  t.same(history.slice(2).map((m: any) => m.id), ['u-2', 'a-2'], "the client's ids");
  t.equal(s.rt.calls[0]!.chat_id, s.rt.calls[1]!.chat_id, 'one runtime chat per session');
});

await t.test('commands list matches what the chat understands', async (t) => {
  const s = await serveAdminChat(t);
  const r = await s.call('/api/commands', { as: 'viewer' });
  t.equal(r.status, 200);
  t.same(r.body.commands.map((c: any) => c.command), CHAT_COMMANDS.map((c) => `/${c}`));
  t.same(r.body, { commands: CHAT_COMMAND_HELP, multiagent: MULTIAGENT_COMMAND_HELP });
  t.same(r.body.multiagent.map((c: any) => c.command), MULTIAGENT_COMMANDS.map((c) => `/${c}`));
});

await t.test('roles: viewers read chat sessions (SPEC.md: read-only on sessions) and write none; no credential is 401', async (t) => {
  const s = await serveAdminChat(t);
  await s.call('/api/chat/sessions', { method: 'POST', body: { agent: 'main' } });
  const seq = s.log.lastSeq();
  for (const path of ['/api/chat/sessions', '/api/chat/sessions/s1/messages', '/api/chat?agent=main']) {
    t.equal((await s.call(path, { as: 'viewer' })).status, 200, `viewer GET ${path}`);
  }
  t.match((await s.call('/api/chat/sessions', { as: 'viewer' })).body, [{ id: 's1', agent: 'main' }], 'the viewer is shown the session');
  for (const [method, path, body] of [
    ['POST', '/api/chat/sessions', { agent: 'main' }], ['PUT', '/api/chat/sessions/s1', { title: 'x' }],
    ['DELETE', '/api/chat/sessions/s1'], ['POST', '/api/chat/sessions/s1/archive'], ['POST', '/api/chat/sessions/s1/provider', { provider: null, model: null }],
    ['PUT', '/api/chat/sessions/s1/messages', []], ['POST', '/api/chat/main', { message: 'hi' }],
  ] as [string, string, unknown?][]) {
    t.equal((await s.call(path, { method, as: 'viewer', body })).status, 403, `viewer ${method} ${path}`);
    t.equal((await s.call(path, { method, as: null, body })).status, 401, `anonymous ${method} ${path}`);
  }
  t.equal((await s.call('/api/commands', { as: null })).status, 401);
  t.equal(s.log.lastSeq(), seq, 'nothing recorded');
  t.equal(s.rt.calls.length, 0);
});

await t.test('allowed_agents: a restricted operator sees only its agents and cannot act on others', async (t) => {
  const s = await serveAdminChat(t);
  await s.call('/api/chat/sessions', { method: 'POST', body: { agent: 'main' } });
  await s.call('/api/chat/sessions', { method: 'POST', body: { agent: 'coder' }, as: 'anna' });
  await s.call('/api/chat/sessions/s1/messages', { method: 'PUT', body: [msg('a1')] });
  t.same((await s.call('/api/chat/sessions', { as: 'anna' })).body.map((x: any) => x.id), ['s2']);
  const seq = s.log.lastSeq();
  for (const [method, path, body] of [
    ['GET', '/api/chat/sessions?agent=main'], ['GET', '/api/chat/sessions/s1/messages'], ['GET', '/api/chat?agent=main'],
    ['DELETE', '/api/chat/sessions/s1'], ['POST', '/api/chat/sessions/s1/archive'], ['POST', '/api/chat/sessions/s1/provider', { provider: 'codex', model: 'gpt-5' }],
    ['PUT', '/api/chat/sessions/s1/messages', []], ['POST', '/api/chat/sessions/s1/read', { last_read_message_id: 'a1' }], ['POST', '/api/chat/main', { message: 'hi' }],
    ['POST', '/api/chat/sessions', { agent: 'main' }], ['PUT', '/api/chat/sessions/s1', { title: 'mine' }],
  ] as [string, string, unknown?][]) {
    const r = await s.call(path, { method, as: 'anna', body });
    t.same([r.status, r.body.code], [403, 'agent-not-allowed'], `${method} ${path}`);
  }
  t.equal(s.log.lastSeq(), seq, 'nothing recorded');
  t.equal(s.rt.calls.length, 0, 'no turn ran');
  t.notOk(existsSync(s.paths.chatReadsFile));
  t.equal((await s.call('/api/chat/coder', { method: 'POST', as: 'anna', body: { message: 'ok' } })).status, 200, 'its own agent works');
});

await t.test('bad input: clear 4xx, nothing changed', async (t) => {
  const s = await serveAdminChat(t);
  await s.call('/api/chat/sessions', { method: 'POST', body: { agent: 'main' } });
  await s.call('/api/chat/sessions/s1/messages', { method: 'PUT', body: [msg('a1')] });
  const seq = s.log.lastSeq();
  const cases: [string, string, { body?: unknown; raw?: string }, number, string][] = [
    ['PUT', '/api/chat/sessions/s1/messages', { raw: '{' }, 400, 'invalid-json'],
    ['PUT', '/api/chat/sessions/s1/messages', { body: [{ ...msg('x'), extra: 1 }] }, 400, 'invalid-body'],
    ['PUT', '/api/chat/sessions/s1/messages', { body: [{ ...msg('x'), sender: 7 }] }, 400, 'invalid-body'],
    ['PUT', '/api/chat/sessions/s1/messages', { body: { messages: [], more: 1 } }, 400, 'invalid-body'],
    ['PUT', '/api/chat/sessions/s1/messages', { body: [msg('../../etc/passwd')] }, 400, 'invalid-body'],
    ['PUT', '/api/chat/sessions/s1/messages', { raw: `[${'x'.repeat(3.1 * 1024 * 1024)}]` }, 413, 'body-too-large'],
    ['PUT', '/api/chat/sessions/s1/messages?merge=maybe', { body: [] }, 400, 'invalid-query'],
    ['PUT', '/api/chat/sessions/..%2F..%2Fx/messages', { body: [] }, 404, 'not-found'],
    ['GET', '/api/chat/sessions/s1/messages?limit=0', {}, 400, 'invalid-query'],
    ['GET', '/api/chat/sessions/s1/messages?limit=501', {}, 400, 'invalid-query'],
    ['GET', '/api/chat/sessions/s1/messages?limit=5&before=nope', {}, 400, 'unknown-message'],
    ['GET', '/api/chat/sessions/s1/messages?limit=1&limit=2', {}, 400, 'invalid-query'],
    ['GET', '/api/chat/sessions?agent=../x', {}, 400, 'invalid-query'],
    ['GET', '/api/chat', {}, 400, 'invalid-query'],
    ['POST', '/api/chat/sessions/s1/read', { body: { last_read_message_id: 'a1', x: 1 } }, 400, 'invalid-body'],
    ['POST', '/api/chat/sessions/s1/read', { body: { last_read_message_id: 5 } }, 400, 'invalid-body'],
    ['POST', '/api/chat/sessions/s1/provider', { body: { provider: 'codex', model: null } }, 400, 'invalid-body'],
    ['POST', '/api/chat/sessions/s1/provider', { body: { provider: 'codex', model: '@x y' } }, 400, 'invalid-body'],
    ['POST', '/api/chat/sessions/s1/provider', { body: { provider: 'codex' } }, 400, 'invalid-body'],
    ['POST', '/api/chat/sessions/ghost/archive', {}, 404, 'not-found'],
    ['POST', '/api/chat/main', { body: { message: 'a', text: 'b' } }, 400, 'invalid-body'],
    ['POST', '/api/chat/main', { body: { message: 'a', extra: true } }, 400, 'invalid-body'],
    ['POST', '/api/chat/main', { body: { message: '' } }, 400, 'invalid-command'],
    ['POST', '/api/chat/main', { body: { message: 'a', session_id: 'ghost' } }, 404, 'not-found'],
    ['POST', '/api/chat/ghost', { body: { message: 'a', session_id: 's1' } }, 400, 'invalid-body'],
    ['POST', '/api/chat/..%2Fx', { body: { message: 'a' } }, 400, 'invalid-path'],
  ];
  for (const [method, path, init, status, code] of cases) {
    const r = await s.call(path, { method, ...init });
    t.same([r.status, r.body?.code], [status, code], `${method} ${path} ${(init.raw ?? JSON.stringify(init.body) ?? '').slice(0, 50)}`);
    if (r.status < 500) t.type(r.body?.error, 'string');
  }
  t.equal(s.log.lastSeq(), seq, 'nothing recorded');
  t.notOk(existsSync(s.paths.chatReadsFile), 'no marker written');
  t.equal(s.rt.calls.length, 0);
});
