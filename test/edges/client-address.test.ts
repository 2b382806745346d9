// A client's address in every spelling it reaches svc in (uWS on a dual-stack listener, a proxy's
// X-Forwarded-For, api.trusted_proxies), and what the edges make of it: one canonical text, the
// per-address limits' keys, trusted-proxy matching. Then the admin login limit on a real `::`
// listener, where uWS reports every IPv4 client as `0000:0000:0000:0000:0000:ffff:…`.
import t from 'tap';
import { connect, createServer } from 'node:net';
import {
  LOOPBACK_KEY,
  addressIn,
  attemptLimitKey,
  clientAddress,
  clientIp,
  forwardedClient,
  fromTrustedProxy,
  isLoopback,
  parseAddress,
  peerAddress,
  rateLimitKey,
  sameAddress,
  type UwsResponse,
} from '../../edges/index.js';
import { AUDIT_EVENTS } from '../../schemas/index.js';
import { adminStand } from '../fixtures/admin-auth-stand.js';

const MAPPED_LOCALHOST = '0000:0000:0000:0000:0000:ffff:7f00:0001';

await t.test('parseAddress: any spelling of an address is one canonical text; anything else is null', async (t) => {
  const cases: [string, string | null][] = [
    // IPv4
    ['10.0.0.1', '10.0.0.1'],
    [' 192.168.1.2 ', '192.168.1.2'],
    // IPv4-mapped: uWS's full form, upper case, the dotted and the hex short forms, bracketed
    [MAPPED_LOCALHOST, '127.0.0.1'],
    ['0000:0000:0000:0000:0000:FFFF:C0A8:0102', '192.168.1.2'],
    ['0:0:0:0:0:ffff:a00:1', '10.0.0.1'],
    ['::ffff:10.0.0.1', '10.0.0.1'],
    ['::FFFF:10.0.0.1', '10.0.0.1'],
    ['::ffff:a00:1', '10.0.0.1'],
    ['[::ffff:127.0.0.1]', '127.0.0.1'],
    // IPv6: full and short forms come out in RFC 5952's short form
    ['0000:0000:0000:0000:0000:0000:0000:0001', '::1'],
    ['::1', '::1'],
    ['2001:0db8:0000:0000:0000:0000:0000:0001', '2001:db8::1'],
    ['2001:DB8::1', '2001:db8::1'],
    ['[2001:db8:85a3:42::7]', '2001:db8:85a3:42::7'],
    ['2001:db8:0:0:1:0:0:1', '2001:db8::1:0:0:1'],
    ['fe80:0000:0000:0000:0000:0000:0000:0000', 'fe80::'],
    ['0000:0000:0000:0000:0000:0000:0000:0000', '::'],
    ['0:0:0:0:ffff:0:1:1', '::ffff:0:1:1'], // not the mapped prefix
    // garbage
    ['', null],
    ['   ', null],
    ['not an address', null],
    ['localhost', null],
    ['256.1.1.1', null],
    ['10.0.0', null],
    ['10.0.0.1:8080', null],
    ['10.0.0.0/8', null],
    ['2001:db8::/64', null],
    ['fe80::1%eth0', null],
    ['1:2:3:4:5:6:7:8:9', null],
    ['::ffff:999.0.0.1', null],
    ['[10.0.0.1', null],
  ];
  for (const [text, canonical] of cases) t.equal(parseAddress(text), canonical, JSON.stringify(text));
  for (const [, canonical] of cases) if (canonical) t.equal(parseAddress(canonical), canonical, `${canonical} is its own canonical text`);
  t.equal(clientAddress(MAPPED_LOCALHOST), '127.0.0.1');
  t.equal(clientAddress('nonsense'), 'unknown', 'facts and logs say unknown for no address');
});

await t.test('comparing addresses and the keys the limits count them under', async (t) => {
  t.ok(sameAddress(MAPPED_LOCALHOST, '127.0.0.1'));
  t.ok(sameAddress('::ffff:7f00:1', '[::FFFF:127.0.0.1]'));
  t.ok(sameAddress('2001:0db8::0001', '2001:db8:0:0:0:0:0:1'));
  t.notOk(sameAddress('127.0.0.1', '127.0.0.2'));
  t.notOk(sameAddress('', ''), 'no address is the same as nothing');
  t.notOk(sameAddress('x', 'x'));
  t.ok(addressIn(MAPPED_LOCALHOST, ['10.0.0.1', '127.0.0.1']));
  t.notOk(addressIn(MAPPED_LOCALHOST, ['127.0.0.0/8', 'localhost']), 'exact addresses only: a range or a name matches nothing');

  for (const lo of [MAPPED_LOCALHOST, '0000:0000:0000:0000:0000:ffff:7f05:0607', '127.255.0.1', '::1', '0:0:0:0:0:0:0:1']) t.ok(isLoopback(lo), `${lo} is loopback`);
  for (const other of ['10.0.0.1', '::', '::2', '0000:0000:0000:0000:0000:ffff:0a00:0001', '2001:db8::1', 'nonsense']) t.notOk(isLoopback(other), `${other} is not`);

  const cases: [string, string, string][] = [
    // [as given, its key, its key when loopback is one client]
    ['10.0.0.1', '10.0.0.1', '10.0.0.1'],
    ['0000:0000:0000:0000:0000:ffff:c0a8:0001', '192.168.0.1', '192.168.0.1'],
    [MAPPED_LOCALHOST, '127.0.0.1', LOOPBACK_KEY],
    ['127.9.9.9', '127.9.9.9', LOOPBACK_KEY],
    ['0000:0000:0000:0000:0000:0000:0000:0001', '::/64', LOOPBACK_KEY],
    ['2001:0db8:85a3:0042:0000:0000:0000:0001', '2001:db8:85a3:42::/64', '2001:db8:85a3:42::/64'],
    ['2001:db8:85a3:42:dead:beef:0:7', '2001:db8:85a3:42::/64', '2001:db8:85a3:42::/64'],
    ['2001:db8::1', '2001:db8::/64', '2001:db8::/64'],
    ['garbage', 'unknown', 'unknown'],
  ];
  for (const [given, key, grouped] of cases) {
    t.equal(rateLimitKey(given), key, `${given}: key`);
    t.equal(attemptLimitKey(given), grouped, `${given}: key with loopback as one`);
  }
  t.not(rateLimitKey('0000:0000:0000:0000:0000:ffff:c0a8:0001'), rateLimitKey('0000:0000:0000:0000:0000:ffff:c0a8:0002'), 'IPv4 clients on a dual-stack listener are not one IPv6 /64');
});

await t.test('the client behind a request: X-Forwarded-For counts only from a trusted proxy, matched in any spelling', async (t) => {
  const req = (remoteAddress: string, xff?: string) => ({ remoteAddress, headers: (xff === undefined ? {} : { 'x-forwarded-for': xff }) as Record<string, string> });
  t.equal(clientIp(req(MAPPED_LOCALHOST), []), '127.0.0.1', 'the peer, canonical');
  t.equal(clientIp(req(MAPPED_LOCALHOST, '203.0.113.9'), []), '127.0.0.1', 'a forwarded-for header from an untrusted peer is ignored');
  t.equal(clientIp(req(MAPPED_LOCALHOST, '203.0.113.9'), ['127.0.0.1']), '203.0.113.9', 'an IPv4 proxy matches its mapped peer');
  t.equal(clientIp(req('127.0.0.1', '203.0.113.9'), ['::ffff:127.0.0.1']), '203.0.113.9', 'and a mapped entry matches the IPv4 peer');
  t.equal(clientIp(req('::1', '2001:DB8::0001'), ['0:0:0:0:0:0:0:1']), '2001:db8::1', 'IPv6 proxy and client, canonical');
  t.equal(clientIp(req(MAPPED_LOCALHOST, '::ffff:198.51.100.7'), ['127.0.0.1']), '198.51.100.7', 'a mapped forwarded client is its IPv4 address');
  t.equal(clientIp(req(MAPPED_LOCALHOST, '198.51.100.7, 10.0.0.2 , 10.0.0.3'), ['127.0.0.1', '10.0.0.3', '10.0.0.2']), '198.51.100.7', 'trusted hops are skipped');
  t.equal(clientIp(req(MAPPED_LOCALHOST, '198.51.100.7, evil'), ['127.0.0.1']), '127.0.0.1', 'a hop that is no address stops at the peer');
  t.equal(clientIp(req(MAPPED_LOCALHOST, '10.0.0.3'), ['127.0.0.1', '10.0.0.3']), '127.0.0.1', 'only proxies in the chain: the peer');
  t.equal(clientIp(req(MAPPED_LOCALHOST, ''), ['127.0.0.1']), '127.0.0.1');
  t.equal(forwardedClient('', '203.0.113.9', ['127.0.0.1']), '', 'no peer address: empty, recorded as none');
  t.ok(fromTrustedProxy(req(MAPPED_LOCALHOST), ['127.0.0.1']));
  t.notOk(fromTrustedProxy(req('0000:0000:0000:0000:0000:ffff:7f00:0002'), ['127.0.0.1']), 'another loopback address is not the proxy');
  t.notOk(fromTrustedProxy(req(MAPPED_LOCALHOST), []));

  const uws = (text: string) => ({ getRemoteAddressAsText: () => new TextEncoder().encode(text).buffer }) as unknown as Pick<UwsResponse, 'getRemoteAddressAsText'>;
  t.equal(peerAddress(uws(MAPPED_LOCALHOST)), '127.0.0.1', 'the bindings read the peer canonical');
  t.equal(peerAddress(uws('2001:0db8:0000:0000:0000:0000:0000:0001')), '2001:db8::1');
  t.equal(peerAddress(uws('')), '', 'uWS could not say');
});

/** Why this machine cannot run a dual-stack test, or null when it can (`::` reached on 127.0.0.1 and ::1). */
async function dualStackUnavailable(): Promise<string | null> {
  const server = createServer((s) => s.destroy());
  const listening = await new Promise<boolean>((resolve) => {
    server.once('error', () => resolve(false));
    server.listen(0, '::', () => resolve(true));
  });
  if (!listening) return 'cannot listen on :: (no IPv6 on this machine)';
  const { port } = server.address() as { port: number };
  const reach = (host: string) =>
    new Promise<boolean>((resolve) => {
      const sock = connect({ host, port });
      sock.once('connect', () => {
        sock.destroy();
        resolve(true);
      });
      sock.once('error', () => resolve(false));
    });
  const reason = !(await reach('::1')) ? 'no IPv6 loopback (::1) on this machine' : !(await reach('127.0.0.1')) ? 'a :: listener is IPv6-only here (net.ipv6.bindv6only=1)' : null;
  await new Promise((resolve) => server.close(resolve));
  return reason;
}

const unavailable = await dualStackUnavailable();
const dualStackSkip = unavailable ? { skip: `needs a dual-stack :: listener: ${unavailable}` } : {};

await t.test('on a :: listener, IPv4 logins are limited and recorded by their IPv4 address, and an IPv4 trusted proxy matches', dualStackSkip, async (t) => {
  const s = await adminStand(t, { host: '::' });
  const port = s.srv.port;
  // Raw sockets from a chosen source address, one request each (fetch cannot pick the source).
  const request = (from: string, method: string, path: string, payload: unknown, headers: Record<string, string> = {}) =>
    new Promise<{ status: number; head: string; json: any }>((resolve, reject) => {
      const body = payload === undefined ? '' : JSON.stringify(payload);
      const extra = Object.entries(headers).map(([k, v]) => `${k}: ${v}\r\n`).join('');
      const sock = connect({ host: from.includes(':') ? '::1' : '127.0.0.1', port, localAddress: from });
      let text = '';
      // write, not end: uWS drops a response whose client half-closed while the handler awaits.
      sock.on('connect', () =>
        sock.write(`${method} ${path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Type: application/json\r\nAccept-Language: en\r\n${extra}Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`),
      );
      sock.on('data', (d) => (text += d.toString('latin1')));
      sock.on('error', reject);
      sock.on('close', () => {
        const [head = '', rest = ''] = text.split(/\r\n\r\n(.*)/s);
        let json: any = null;
        try {
          json = JSON.parse(rest);
        } catch {
          json = rest;
        }
        resolve({ status: Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1] ?? 0), head, json });
      });
    });
  const login = (from: string, password: string, headers: Record<string, string> = {}) => request(from, 'POST', '/api/auth/login', { username: 'alice', password }, headers);
  const audited = () =>
    s.log
      .read()
      .filter((e) => e.type === AUDIT_EVENTS.recorded)
      .map((e) => e.data as { action: string; ip: string | null });

  const statuses = [];
  for (let i = 0; i < 6; i++) statuses.push((await login('127.0.0.1', i === 4 ? 'alice-password' : 'wrong-pass')).status);
  t.same(statuses, [401, 401, 401, 401, 200, 429], '127.0.0.1: 5 attempts a minute, then 429');
  t.equal((await login('127.0.0.2', 'alice-password')).status, 429, 'all of 127.0.0.0/8 is one client, as before');
  t.equal((await login('::1', 'alice-password')).status, 429, 'and so is ::1');
  const ips = audited().map((a) => a.ip);
  t.same([...new Set(ips)], ['127.0.0.1'], 'login facts show 127.0.0.1, not the mapped spelling uWS reports');

  s.setConfig({ trusted_proxies: ['127.0.0.1'] });
  s.clock.now += 60_000;
  for (let i = 0; i < 5; i++) t.equal((await login('127.0.0.1', 'wrong-pass', { 'x-forwarded-for': '203.0.113.1' })).status, 401);
  t.equal((await login('127.0.0.1', 'alice-password', { 'x-forwarded-for': '203.0.113.1' })).status, 429, 'the client the mapped proxy forwards is limited');
  const other = await login('127.0.0.1', 'alice-password', { 'x-forwarded-for': '203.0.113.2', 'x-forwarded-proto': 'https' });
  t.equal(other.status, 200, 'another client behind the same proxy is not: the proxy matched');
  t.match(other.head, /\r\nset-cookie: svc_access=[^\r]*; Secure/i, "the proxy's https is believed: secure cookies");
  t.equal((await login('127.0.0.2', 'alice-password', { 'x-forwarded-for': '203.0.113.1' })).status, 200, '127.0.0.2 is not the proxy: its X-Forwarded-For is ignored');
  const last = audited().slice(ips.length).map((a) => a.ip);
  t.same([...new Set(last)], ['203.0.113.1', '203.0.113.2', '127.0.0.2'], 'login facts name the forwarded clients, and the untrusted peer');

  const bearer = { authorization: `Bearer ${other.json.access_token}` };
  t.equal((await request('127.0.0.1', 'DELETE', '/api/users/bob', undefined, { ...bearer, 'x-forwarded-for': '203.0.113.4' })).status, 200);
  t.equal((await request('127.0.0.2', 'DELETE', '/api/users/nobody', undefined, { ...bearer, 'x-forwarded-for': '203.0.113.4' })).status, 404);
  t.same(
    audited()
      .filter((a) => a.action === 'DELETE /api/users/:username')
      .map((a) => a.ip),
    ['203.0.113.4', '127.0.0.2'],
    'admin actions are recorded under the client too: the forwarded one behind the proxy, else the canonical peer',
  );
});
