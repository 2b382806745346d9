import t from 'tap';
import { auditTarget } from '../../edges/http/audit-target.js';
import type { HttpRequest } from '../../edges/http/index.js';

const req = (over: Partial<HttpRequest> & { json?: unknown }): HttpRequest => ({
  method: 'POST',
  path: '/x',
  query: new URLSearchParams(),
  headers: over.json === undefined ? {} : { 'content-type': 'application/json' },
  params: {},
  body: over.json === undefined ? Buffer.alloc(0) : Buffer.from(JSON.stringify(over.json)),
  remoteAddress: '127.0.0.1',
  ...over,
});

await t.test('the target: path, then the identifying fields of the answer or the body, then the query, then the settings set', async (t) => {
  t.same(auditTarget(req({ params: { username: 'bob' } }), undefined), { target: 'bob', detail: null });
  t.same(auditTarget(req({ json: { username: 'vera', password: 'p4ssw0rd!', role: 'viewer' } }), { status: 201, json: { username: 'vera' } }), { target: 'vera', detail: { fields: 'password,role,username' } });
  t.same(auditTarget(req({ json: { title: 'T', agent: 'main' } }), { status: 201, json: { id: 'c1', secret: 'whsec' } }), { target: 'c1', detail: { agent: 'main', fields: 'agent,title' } });
  t.same(auditTarget(req({ json: { top_k_final: 5 } }), { status: 200, json: {} }), { target: 'top_k_final', detail: { fields: 'top_k_final' } });
  t.same(auditTarget(req({ query: new URLSearchParams('agent=coder&relative_path=docs') }), { status: 200, json: {} }), { target: 'docs', detail: { agent: 'coder', relative_path: 'docs' } });
  t.same(auditTarget(req({ json: { id: 'x' } }), { status: 409, json: { id: 'someone-else', error: 'exists' } }), { target: 'x', detail: { fields: 'id' } }, "an error's body names nothing");
});

await t.test('never a secret: only identifying values are copied, of the rest only key names', async (t) => {
  const secrets = { password: 'pw-SECRET-1', token: 'tok-SECRET-2', secret: 'sec-SECRET-3', hmac_secret: 'h-SECRET-4', totp_secret: 'JBSWY3SECRET5', password_hash: 'scrypt$SECRET6' };
  const r = auditTarget(req({ json: secrets, query: new URLSearchParams('token=q-SECRET-7') }), { status: 200, json: { ...secrets, access_token: 'a-SECRET-8' } });
  t.notMatch(JSON.stringify(r), /SECRET/, JSON.stringify(r));
  t.equal(r.target, 'hmac_secret,password,password_hash,secret,token,totp_secret', 'a write of nothing but settings is named by their names');
  t.same(auditTarget(req({ headers: { 'content-type': 'application/json' }, body: Buffer.from('{"password": "x"') }), undefined), { target: null, detail: null }, 'a body that is not JSON: nothing read from it');
});
