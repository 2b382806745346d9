import t from 'tap';
import { diffUsers, noUsersChange } from '../../machines/index.js';
import { validateUsers, type UserRecord, type UserRecordInput } from '../../schemas/index.js';

const rows = (input: UserRecordInput[]): UserRecord[] => {
  const r = validateUsers(input, 'users.json');
  if (!r.ok) throw new Error(r.errors.join('; '));
  return r.users;
};

await t.test('given users, when the file is edited by hand, then the facts name each change', async (t) => {
  const before = rows([
    { username: 'alice', role: 'admin' },
    { username: 'bob', role: 'viewer', password_hash: 'scrypt$old', token_version: 3 },
    { username: 'eve', role: 'operator' },
  ]);
  const after = rows([
    { username: 'alice', role: 'admin' },
    { username: 'bob', role: 'operator', password_hash: 'scrypt$new', token_version: 4, totp_secret: 'S', totp_enabled: true },
    { username: 'carol', role: 'viewer', active: false },
  ]);
  const change = diffUsers(before, after);
  t.same(change.created, [{ username: 'carol', role: 'viewer' }]);
  t.same(change.deleted, ['eve']);
  t.same(change.updated, [{ username: 'bob', fields: ['role', 'token_version', 'password', 'totp'], token_version: 4, active: true }], 'secrets are named, never shown');
  t.notOk(noUsersChange(change));
});

await t.test('given users, when the same rows come back (a save by svc, a reformatted file), then nothing changed', async (t) => {
  const same = [{ username: 'alice', role: 'admin' as const, allowed_agents: ['main'] }];
  t.ok(noUsersChange(diffUsers(rows(same), rows(same))));
  t.same(diffUsers(rows(same), rows([{ ...same[0]!, allowed_agents: ['main', 'ops'] }])).updated, [{ username: 'alice', fields: ['allowed_agents'], token_version: 0, active: true }]);
});
