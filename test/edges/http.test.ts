import t from 'tap';
import * as v from 'valibot';
import { createHash } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { request, type IncomingMessage } from 'node:http';
import { join } from 'node:path';
import { Router, json, parseJsonBody, type PublicRoute } from '../../edges/index.js';
import { SvcError, type ErrorCode } from '../../schemas/index.js';
import { serveSurfaces } from '../fixtures/http-server.js';
import { until } from '../fixtures/until.js';

const Body = v.object({ name: v.pipe(v.string(), v.minLength(1)), count: v.optional(v.number(), 1) });

type T = { teardown(fn: () => void): void };

async function serve(t: T, routes: Omit<PublicRoute, 'auth'>[]) {
  const srv = await serveSurfaces(t, [{ name: 'test', routes: routes.map((r) => ({ ...r, auth: 'public' as const })), statuses: { 'teapot-code': 418 } }], {
    extraHeaders: () => ({ 'x-edge': 'test' }),
  });
  const { internal } = srv;
  const base = `http://127.0.0.1:${srv.port}`;
  const call = (path: string, init: RequestInit = {}) =>
    fetch(base + path, { ...init, headers: { connection: 'close', ...(init.headers as Record<string, string>) } });
  return { call, internal, port: srv.port };
}

await t.test('routing, params, JSON bodies and the error table', async (t) => {
  const { call, internal } = await serve(t, [
    { method: 'GET', pattern: '/items/:id', handler: (r) => json(200, { id: r.params.id, q: r.query.get('q'), h: r.headers['x-h'] }) },
    { method: 'POST', pattern: '/items', maxBodyBytes: 64, handler: (r) => json(201, parseJsonBody(r, Body)) },
    { method: 'GET', pattern: '/teapot', handler: () => { throw new SvcError('teapot-code' as ErrorCode, 'short and stout'); } },
    { method: 'GET', pattern: '/boom', handler: () => { throw new Error('secret internals'); } },
  ]);
  let r = await call('/items/a%2Fb?q=1', { headers: { 'x-h': 'yes' } });
  t.equal(r.status, 200);
  t.equal(r.headers.get('x-edge'), 'test');
  t.same(await r.json(), { id: 'a/b', q: '1', h: 'yes' }, 'params are decoded per segment');

  r = await call('/items', { method: 'POST', body: JSON.stringify({ name: 'x' }) });
  t.same([r.status, await r.json()], [201, { name: 'x', count: 1 }]);
  r = await call('/items', { method: 'POST', body: '{"name":' });
  t.same([r.status, ((await r.json()) as { code: string }).code], [400, 'invalid-json']);
  r = await call('/items', { method: 'POST', body: JSON.stringify({ name: '' }) });
  const bad = (await r.json()) as { error: string };
  t.equal(r.status, 400);
  t.match(bad.error, /^body\.name: /, 'the message names the field');
  r = await call('/items', { method: 'POST', body: JSON.stringify({ name: 'x'.repeat(100) }) });
  t.same([r.status, ((await r.json()) as { code: string }).code], [413, 'body-too-large']);

  t.equal((await call('/nope')).status, 404);
  t.equal((await call('/items/1', { method: 'DELETE' })).status, 405);
  t.equal((await call('/teapot')).status, 418);
  r = await call('/boom');
  t.equal(r.status, 500);
  t.notMatch(await r.text(), /secret internals/, 'internal details stay in the log');
  t.match(String(internal[0]), /secret internals/);
});

await t.test('an oversized chunked body is refused without buffering it whole', async (t) => {
  const { port } = await serve(t, [{ method: 'POST', pattern: '/small', maxBodyBytes: 1024, handler: () => json(200, {}) }]);
  const status = await new Promise<number>((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path: '/small', method: 'POST', headers: { 'transfer-encoding': 'chunked', connection: 'close' } }, (res) => {
      res.resume();
      resolve(res.statusCode!);
    });
    req.on('error', reject);
    for (let i = 0; i < 64; i++) req.write(Buffer.alloc(1024, 1));
    req.end();
  });
  t.equal(status, 413);
});

await t.test('streamed request bodies and streamed files arrive intact', async (t) => {
  const dir = t.testdir();
  const big = Buffer.alloc(5 * 1024 * 1024 + 7);
  for (let i = 0; i < big.length; i++) big[i] = (i * 31) & 0xff;
  const file = join(dir, 'big.bin');
  writeFileSync(file, big);
  writeFileSync(join(dir, 'empty'), '');
  const { call } = await serve(t, [
    {
      method: 'POST',
      pattern: '/upload',
      streamBody: true,
      maxBodyBytes: 64 * 1024 * 1024,
      handler: async (r) => {
        const h = createHash('sha256');
        let n = 0;
        for await (const c of r.bodyStream!) {
          h.update(c);
          n += c.length;
        }
        return json(200, { n, sha: h.digest('hex') });
      },
    },
    { method: 'GET', pattern: '/file', handler: async () => ({ status: 200, file: { handle: await open(file), size: big.length }, headers: { 'content-type': 'application/octet-stream' } }) },
    { method: 'GET', pattern: '/empty', handler: async () => ({ status: 200, file: { handle: await open(join(dir, 'empty')), size: 0 } }) },
    // A descriptor that cannot be read (a directory): the reply is a plain 500, nothing half-sent.
    { method: 'GET', pattern: '/unreadable', handler: async () => ({ status: 200, file: { handle: await open(dir), size: 10 } }) },
  ]);
  const r = await call('/upload', { method: 'POST', body: big });
  t.same(await r.json(), { n: big.length, sha: createHash('sha256').update(big).digest('hex') });
  const f = await call('/file');
  t.ok(Buffer.from(await f.arrayBuffer()).equals(big), '5 MiB file streamed byte for byte');
  t.equal((await (await call('/empty')).arrayBuffer()).byteLength, 0);
  t.equal((await call('/unreadable')).status, 500);
});

await t.test('streamed replies: chunks in order, held back by a slow reader, stopped when the client leaves', async (t) => {
  const CHUNK = 'y'.repeat(1024 * 1024 - 1) + '\n';
  const TOTAL = 64;
  const seen = { pulled: 0, stopped: false, infinitePulled: 0 };
  const { call, port } = await serve(t, [
    {
      method: 'GET',
      pattern: '/big',
      handler: () => ({
        status: 200,
        headers: { 'content-type': 'application/x-ndjson' },
        stream: (async function* () {
          for (let i = 0; i < TOTAL; i++) {
            seen.pulled++;
            yield CHUNK;
          }
        })(),
      }),
    },
    {
      method: 'GET',
      pattern: '/lines',
      handler: () => ({ status: 201, stream: (async function* () { for (let i = 0; i < 5; i++) yield `${i}\n`; })() }),
    },
    {
      method: 'GET',
      pattern: '/forever',
      handler: () => ({
        status: 200,
        stream: (async function* () {
          try {
            for (;;) {
              seen.infinitePulled++;
              yield 'tick\n';
              // A producer that never ends but never hogs the loop either; the test waits for its finally with until().
              await new Promise((r) => setImmediate(r));
            }
          } finally {
            seen.stopped = true;
          }
        })(),
      }),
    },
    { method: 'GET', pattern: '/fails', handler: () => ({ status: 200, stream: (async function* () { throw new Error('producer broke'); })() }) },
  ]);

  const small = await call('/lines');
  t.equal(small.status, 201);
  t.equal(await small.text(), '0\n1\n2\n3\n4\n');
  const failed = await call('/fails');
  t.equal(failed.status, 500, 'a producer failing before its first chunk is a plain 500');
  t.notMatch(await failed.text(), /producer broke/);

  // A reader that does not read: the producer must stall well before it has produced everything.
  const res = await new Promise<IncomingMessage>((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path: '/big', agent: false, headers: { connection: 'close' } }, (r) => {
      r.pause();
      resolve(r);
    });
    req.on('error', reject);
    req.end();
  });
  // The producer runs in the server, behind the socket: its progress is polled, not awaited.
  await until(() => `the stream to start (pulled ${seen.pulled})`, () => seen.pulled >= 2, 20_000);
  const got = await new Promise<{ bytes: number; stalledAt: number; ok: boolean }>((resolve, reject) => {
    const stalledAt = seen.pulled;
    let bytes = 0;
    let ok = true;
    res.on('data', (d: Buffer) => {
      for (const b of d) if (b !== 0x79 && b !== 0x0a) ok = false;
      bytes += d.length;
    });
    res.on('end', () => resolve({ bytes, stalledAt, ok }));
    res.on('error', reject);
    res.resume();
  });
  t.ok(got.stalledAt < TOTAL, `producer held back by the paused reader (pulled ${got.stalledAt} of ${TOTAL})`);
  t.equal(got.bytes, TOTAL * CHUNK.length, 'every byte arrived once the reader resumed');
  t.ok(got.ok, 'content intact');

  // A client that goes away ends the producer.
  await new Promise<void>((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path: '/forever', agent: false, headers: { connection: 'close' } }, (res) => {
      res.once('data', () => {
        req.destroy();
        resolve();
      });
    });
    req.on('error', () => undefined);
    req.end();
    setTimeout(() => reject(new Error('no data')), 20_000).unref();
  });
  await until('the producer to be stopped (its finally to run) after the client left', () => seen.stopped, 20_000);
  t.ok(seen.stopped, 'the producer was stopped (its finally ran) after the client left');
});

await t.test('a literal segment wins over a :param at the same depth, whatever the order routes were added in', async (t) => {
  const literal = { method: 'POST', pattern: '/api/chat/sessions' } as const;
  const param = { method: 'POST', pattern: '/api/chat/:agentId' } as const;
  const deeper = { method: 'GET', pattern: '/api/:x/sessions' } as const;
  const earlier = { method: 'GET', pattern: '/api/chat/:y' } as const;
  for (const order of [[literal, param], [param, literal]]) {
    const router = new Router<{ method: 'GET' | 'POST'; pattern: string }>();
    router.add(...order, deeper, earlier);
    const hit = router.match('POST', '/api/chat/sessions');
    t.equal(hit !== null && hit !== 'method' ? hit.route.pattern : hit, '/api/chat/sessions');
    const agent = router.match('POST', '/api/chat/main');
    t.same(agent !== null && agent !== 'method' ? [agent.route.pattern, agent.params] : agent, ['/api/chat/:agentId', { agentId: 'main' }]);
    // The leftmost differing segment decides: `chat` (literal) beats `:x`.
    const left = router.match('GET', '/api/chat/sessions');
    t.equal(left !== null && left !== 'method' ? left.route.pattern : left, '/api/chat/:y');
    t.equal(router.match('DELETE', '/api/chat/sessions'), 'method');
  }
});
