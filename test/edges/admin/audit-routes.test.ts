// GET /api/audit for an admin restricted by allowed_agents: the entries about its agents (and its
// own actions), never those about other agents or about no agent at all (users, global settings).
import t from 'tap';
import { AUDIT_COMMANDS, type Principal } from '../../../schemas/index.js';
import { adminStand, userRow } from '../../fixtures/admin-auth-stand.js';

const ROOT: Principal = { kind: 'user', id: 'root', acting_for: null, role: 'admin', allowed_agents: [], origin: { transport: 'api', chat_id: null, topic_id: null } };

await t.test('a restricted admin reads the audit entries about its agents only', async (t) => {
  const s = await adminStand(t, { users: [await userRow('root', 'admin', 'root-password'), await userRow('ria', 'admin', 'ria-password', { allowed_agents: ['a'] })] });
  const record = (action: string, target: string | null, principal: Principal = ROOT) => s.bus.send(AUDIT_COMMANDS.record, { principal, action, target, status: 200, ip: null });
  await record('PUT /api/agents/:name', 'a');
  await record('PUT /api/agents/:name', 'b');
  await record('DELETE /api/agents/:agent/skills/:skill', 'b/notes');
  await record('POST /api/agents/:agent/skills', 'a');
  await record('PUT /api/users/:username', 'x');
  await record('PUT /api/rag/config', null);
  await record('PUT /api/users/:username', 'ria', { ...ROOT, id: 'ria', allowed_agents: ['a'] });

  const ria = (await s.login('ria', 'ria-password')).json.access_token as string;
  const seen = await s.call('GET', '/api/audit', { bearer: ria });
  t.equal(seen.status, 200);
  const rows = (seen.json as { action: string; target: string | null; actor: string | null }[]).map((e) => `${e.actor} ${e.action} ${e.target}`).sort();
  t.same(rows, ['ria PUT /api/users/:username ria', 'ria auth.login ria', 'root POST /api/agents/:agent/skills a', 'root PUT /api/agents/:name a'], "agent a's entries and its own; not b's, not those about no agent");

  const root = (await s.login('root', 'root-password')).json.access_token as string;
  const all = (await s.call('GET', '/api/audit', { bearer: root })).json as unknown[];
  t.ok(all.length >= 7, 'an unrestricted admin reads every entry');
  const limited = (await s.call('GET', '/api/audit?limit=1', { bearer: ria })).json as { target: string }[];
  t.same(limited.length, 1, 'the limit counts what the caller may see');
});
