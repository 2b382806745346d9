// Request smuggling over raw sockets: a request whose length two parties could read differently
// (two Content-Length values, or Content-Length beside Transfer-Encoding) has its connection closed
// at once, and neither it nor the bytes after its head reach a route. No 400: uWS would parse those
// bytes as the next request before the close (docs/operations.md, "Request framing"). The API server, webhook server,
// internal API and fileshare all serve HTTP through HttpServer, so one server stands for the four.
import t, { type Test } from 'tap';
import { HttpServer, json } from '../../edges/index.js';
import { rawRequest } from '../fixtures/raw-http.js';

async function serve(t: Test) {
  const hits: string[] = [];
  const server = new HttpServer({ onInternalError: (e) => t.fail(String(e)) });
  server.mount({
    name: 'test',
    standalone: true,
    statuses: {},
    routes: [
      { method: 'POST', pattern: '/echo', auth: 'public', handler: (req) => (hits.push(`POST /echo ${req.body.length}`), json(200, { got: req.body.length })) },
      { method: 'GET', pattern: '/smuggled', auth: 'public', handler: () => (hits.push('GET /smuggled'), json(200, { smuggled: true })) },
    ],
  });
  const port = await server.listen('127.0.0.1', 0);
  t.teardown(() => server.close());
  return { port, hits };
}

const SMUGGLED = 'GET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n';

await t.test('two different Content-Length headers: the connection is closed, nothing after the head is parsed as a request', async (t) => {
  const { port, hits } = await serve(t);
  for (const [name, head] of [
    ['short first', `Content-Length: 0\r\nContent-Length: ${SMUGGLED.length}\r\n`],
    ['long first', `Content-Length: ${SMUGGLED.length}\r\nContent-Length: 0\r\n`],
    ['Content-Length beside Transfer-Encoding', `Content-Length: 0\r\nTransfer-Encoding: chunked\r\n`],
    ['a list in one Content-Length', `Content-Length: 0, ${SMUGGLED.length}\r\n`],
  ] as const) {
    const res = await rawRequest(port, `POST /echo HTTP/1.1\r\nHost: x\r\n${head}\r\n${SMUGGLED}`);
    t.ok(res.closed, `${name}: the connection is closed`);
    t.equal(res.text, '', `${name}: no answer, least of all the smuggled request's`);
  }
  t.same(hits, [], 'neither the request nor the smuggled one reached a route');

  // The same value twice frames the body one way only (RFC 9112 §6.3): served, as is a plain request.
  const body = 'hello';
  const same = await rawRequest(port, `POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Length: 5\r\nConnection: close\r\n\r\n${body}`);
  t.equal(same.status, 'HTTP/1.1 200 OK');
  t.same(hits, ['POST /echo 5']);
});
