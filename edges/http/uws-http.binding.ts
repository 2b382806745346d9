// Longer than 450 lines: the one adapter between uWS's callbacks and the pure router. Bodies in and files
// out share a request's abort and backpressure state, which no other file may hold.
import { STATUS_CODES } from 'node:http';
import uWS from 'uWebSockets.js';
import { SvcError, pickLanguage, type Principal } from '../../schemas/index.js';
import type { RouteAuth } from './route-auth.js';
import { parseAddress } from './client-address.js';
import { localiseError } from './error-language.js';
import {
  DEFAULT_MAX_BODY_BYTES,
  errorReply,
  json,
  type FileBody,
  type HttpReply,
  type HttpRequest,
  type Route,
  type Router,
  type StatusTable,
} from './http.js';

export type App = uWS.TemplatedApp;
export type UwsResponse = uWS.HttpResponse;

/**
 * The peer of a request or upgrade, in the canonical spelling (`parseAddress`: an IPv4 client on a
 * dual-stack listener is 127.0.0.1, not uWS's `0000:…:ffff:7f00:0001`); '' when uWS cannot say.
 * Every binding reads the peer through this, so nothing downstream sees uWS's spelling.
 */
export function peerAddress(res: Pick<UwsResponse, 'getRemoteAddressAsText'>): string {
  return parseAddress(Buffer.from(res.getRemoteAddressAsText()).toString()) ?? '';
}

/**
 * The package falls back to a JS stub when its native binary does not load, and the stub's
 * WebSocket upgrade throws at the first client. Fail at start-up instead, with the reason.
 */
export function assertNativeUws(): void {
  if (typeof (uWS as unknown as { us_socket_local_port?: unknown }).us_socket_local_port !== 'function') {
    throw new SvcError(
      'uws-unavailable',
      `uWebSockets.js native binary did not load for node ${process.versions.node} (ABI ${process.versions.modules}, ${process.platform}-${process.arch})`,
    );
  }
}

export function createApp(): App {
  assertNativeUws();
  return uWS.App();
}

export interface Listening {
  port: number;
  close(): void;
}

/** uWS's `ListenOptions.LIBUS_LISTEN_EXCLUSIVE_PORT` (a const enum in its typings, absent at run time). */
const LIBUS_LISTEN_EXCLUSIVE_PORT = 1;

type ExclusiveListen = (host: string, port: number, options: number, cb: (token: uWS.us_listen_socket | false) => void) => unknown;

/**
 * Binds the port exclusively: uWS shares ports by default (SO_REUSEPORT), which let two daemons
 * with different homes both listen on one port and split its requests between them. This build
 * takes the options argument after the host as well, though its typings only declare it without one.
 */
export function listen(app: App, host: string, port: number): Promise<Listening> {
  return new Promise((resolve, reject) => {
    (app.listen as unknown as ExclusiveListen)(host, port, LIBUS_LISTEN_EXCLUSIVE_PORT, (token) => {
      if (!token) {
        reject(new SvcError('listen-failed', `could not listen on ${host}:${port} (in use, or not an address of this machine)`, { host, port }));
        return;
      }
      resolve({
        port: uWS.us_socket_local_port(token),
        close: () => uWS.us_listen_socket_close(token),
      });
    });
  });
}

/** A route as a server holds it: with the surface it belongs to and that surface's one status table. */
export type MountedRoute = Route & {
  surface: string;
  statuses: StatusTable;
  localisedErrors?: boolean;
  /** Reshapes this surface's error bodies (see Surface.errorBody). */
  errorBody?: (error: { error: string; code: string }) => unknown;
  /** Told how a guarded request ended once its caller is known (before the reply is sent); see Surface.observe. */
  observe?: (req: HttpRequest, principal: Principal, status: number, reply?: HttpReply) => Promise<void>;
};

export interface MountOptions {
  router: Router<MountedRoute>;
  /** Who calls, by the route's accepted credentials; throws `unauthorized` / `forbidden`. */
  authenticate(req: HttpRequest, auth: RouteAuth): Promise<Principal>;
  /** Unexpected failures: logged by the server's owner, never shown to the client. */
  onInternalError(e: unknown, req: Pick<HttpRequest, 'method' | 'path'>, surface: string): void;
  /** Headers added to every reply (e.g. CORS for an allowed origin). */
  extraHeaders?(req: Pick<HttpRequest, 'method' | 'path' | 'headers'>): Record<string, string>;
  /** Answers a request before routing (CORS preflight); undefined lets routing go on. */
  before?(req: Pick<HttpRequest, 'method' | 'path' | 'headers'>): HttpReply | undefined;
  /**
   * Answers a GET or HEAD no route matches (the admin panel's files); undefined keeps the 404.
   * Not a `/*` route: that would make every unknown endpoint a 405 for its other methods.
   */
  fallback?(req: Pick<HttpRequest, 'method' | 'path' | 'headers'>): Promise<HttpReply | undefined> | HttpReply | undefined;
}

interface RequestState {
  /** The client went away. */
  aborted: boolean;
  /** A reply was written: uWS allows no further pause or resume of this request. */
  responded: boolean;
  onAbort: (() => void)[];
  /** A HEAD request: the GET route's status and headers, with the length its body would have, and no body. */
  head?: boolean;
}

/**
 * Serves every HTTP request through the router's pure handlers: each is authenticated as its route
 * declares, and its errors map through its own surface's table.
 */
export function mountHttp(app: App, opts: MountOptions): void {
  const { router } = opts;
  app.any('/*', (res, req) => {
    const state: RequestState = { aborted: false, responded: false, onAbort: [] };
    res.onAborted(() => {
      state.aborted = true;
      for (const f of state.onAbort) f();
    });
    // uWS invalidates `req` at the first await: copy everything now.
    const method = req.getMethod().toUpperCase();
    state.head = method === 'HEAD';
    const path = req.getUrl();
    const query = new URLSearchParams(req.getQuery() ?? '');
    const headers: Record<string, string> = {};
    const lengths = new Set<string>();
    req.forEach((k, value) => {
      if (k === 'content-length') lengths.add(value.trim());
      headers[k] = value;
    });
    // uWS frames the body by the first Content-Length and parses what follows as the next request;
    // a proxy in front may frame it by another (request smuggling, RFC 9112 §6.3). Closed at once,
    // without the 400 RFC 9112 asks for: uWS parses the bytes already read as the next request even
    // after end(body, true), so a 400 would be followed by that request's answer (docs/operations.md,
    // "Request framing"). uWS 20.30 already closes on Transfer-Encoding beside Content-Length; the
    // check stays so that a uWS that does not cannot reopen the hole.
    if (lengths.size > 1 || (lengths.size === 1 && headers['transfer-encoding'] !== undefined)) {
      state.responded = true;
      res.close();
      return;
    }
    const remoteAddress = peerAddress(res);
    const base = { method, path, headers };
    const extra = opts.extraHeaders?.(base) ?? {};
    const send = (reply: HttpReply) => {
      if (state.aborted || state.responded) {
        void reply.file?.handle.close().catch(() => undefined);
        return;
      }
      // From here uWS forbids pausing or resuming the request: body still arriving is dropped.
      state.responded = true;
      writeReply(res, { ...reply, headers: { ...extra, ...reply.headers } }, state);
    };

    const early = opts.before?.(base);
    if (early) return send(early);
    // HEAD is GET without the body (RFC 9110 §9.3.2): every GET route answers it.
    const match = router.match(state.head ? 'GET' : method, path);
    // Before a route is known, a path under /api/ is the admin API's and speaks its language.
    const early404 = (reply: HttpReply) => send(path.startsWith('/api/') ? localiseError(reply, pickLanguage(headers['accept-language'])) : reply);
    const notFound = () => early404(json(404, { error: `no such endpoint: ${method} ${path}`, code: 'not-found' }));
    if (match === null && opts.fallback && (method === 'GET' || method === 'HEAD')) {
      const fallback = opts.fallback;
      Promise.resolve()
        .then(() => fallback(base))
        .then(
          (reply) => (reply ? send(reply) : notFound()),
          (e: unknown) => {
            opts.onInternalError(e, { method, path }, 'fallback');
            send(json(500, { error: 'internal error', code: 'internal-error' }));
          },
        );
      return;
    }
    if (match === null) return notFound();
    if (match === 'method') return early404(json(405, { error: `${method} is not allowed on ${path}`, code: 'method-not-allowed' }));

    const { route, params } = match;
    const cap = route.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
    const declared = Number(headers['content-length'] ?? '0');
    const sendError = (reply: HttpReply) => {
      const localised = route.localisedErrors ? localiseError(reply, pickLanguage(headers['accept-language'])) : reply;
      const body = localised.json as { error?: unknown; code?: unknown } | undefined;
      send(route.errorBody && typeof body?.error === 'string' && typeof body.code === 'string' ? { ...localised, json: route.errorBody({ error: body.error, code: body.code }) } : localised);
    };
    if (route.admit) {
      try {
        route.admit({ method, path, query, headers, params, body: Buffer.alloc(0), remoteAddress });
      } catch (e) {
        const { reply, internal } = errorReply(e, route.statuses);
        if (internal) opts.onInternalError(e, { method, path }, route.surface);
        return sendError(reply);
      }
    }
    if (declared > cap) {
      return sendError(json(413, { error: `body of ${declared} bytes exceeds the limit of ${cap} bytes`, code: 'body-too-large' }));
    }
    const run = (body: Buffer, bodyStream?: AsyncIterable<Buffer>) => {
      const request: HttpRequest = { method, path, query, headers, params, body, remoteAddress, ...(bodyStream ? { bodyStream } : {}) };
      // Who called, once known: also for a refusal for want of a role, which names the caller.
      let caller: Principal | null = null;
      const observed = async (reply: HttpReply) => {
        if (route.observe && caller) await route.observe(request, caller, reply.status, reply).catch((e: unknown) => opts.onInternalError(e, { method, path }, route.surface));
      };
      Promise.resolve()
        .then(async () => {
          if (route.auth === 'public') return route.handler(request);
          caller = await opts.authenticate(request, route.auth).catch((e: unknown) => {
            caller = e instanceof SvcError && e.code === 'forbidden' ? ((e.details as { principal?: Principal } | undefined)?.principal ?? null) : null;
            throw e;
          });
          return route.handler(request, caller);
        })
        .then(
          async (reply) => {
            await observed(reply);
            send(reply);
          },
          async (e) => {
            const { reply, internal } = errorReply(e, route.statuses);
            if (internal) opts.onInternalError(e, { method, path }, route.surface);
            await observed(reply);
            sendError(reply);
          },
        );
    };
    if (method === 'GET' || method === 'HEAD') return run(Buffer.alloc(0));
    if (route.streamBody) return run(Buffer.alloc(0), streamBody(res, state, cap));
    readBody(res, cap, (body) => (body === null ? sendError(json(413, { error: `body exceeds the limit of ${cap} bytes`, code: 'body-too-large' })) : run(body)));
  });
}

/** Buffers the body up to `cap`; past it, stops buffering and reports null. */
function readBody(res: UwsResponse, cap: number, done: (body: Buffer | null) => void): void {
  const chunks: Buffer[] = [];
  let size = 0;
  let over = false;
  res.onData((ab, isLast) => {
    if (!over) {
      size += ab.byteLength;
      if (size > cap) {
        over = true;
        chunks.length = 0;
        done(null);
        return;
      }
      // The ArrayBuffer is only valid during this callback: copy it.
      chunks.push(Buffer.from(new Uint8Array(ab)));
      if (isLast) done(Buffer.concat(chunks));
    }
  });
}

/**
 * The body as an async iterable; pauses the socket while the consumer is behind. Past `cap` bytes
 * (a body sent without Content-Length, or longer than it said) the iterable fails with
 * `body-too-large`. Once a reply has gone out (a 401 while the client still uploads) the rest of
 * the body is dropped unread and the response is never touched again.
 */
function streamBody(res: UwsResponse, state: RequestState, cap: number): AsyncIterable<Buffer> {
  const queue: Buffer[] = [];
  let ended = false;
  let paused = false;
  let size = 0;
  let wake: (() => void) | null = null;
  const notify = () => {
    const w = wake;
    wake = null;
    w?.();
  };
  const settled = () => state.aborted || state.responded;
  state.onAbort.push(notify);
  res.onData((ab, isLast) => {
    if (isLast) ended = true;
    size += ab.byteLength;
    if (settled() || size > cap) {
      queue.length = 0;
      notify();
      return;
    }
    queue.push(Buffer.from(new Uint8Array(ab)));
    if (queue.length >= 8 && !paused) {
      paused = true;
      res.pause();
    }
    notify();
  });
  return {
    async *[Symbol.asyncIterator]() {
      for (;;) {
        if (size > cap) throw new SvcError('body-too-large', `body exceeds the limit of ${cap} bytes`);
        const chunk = queue.shift();
        if (chunk) {
          if (paused && queue.length < 2 && !settled()) {
            paused = false;
            res.resume();
          }
          yield chunk;
          continue;
        }
        if (ended) return;
        if (state.aborted) throw new SvcError('client-gone', 'the client went away mid-upload');
        if (state.responded) return;
        await new Promise<void>((r) => (wake = r));
      }
    },
  };
}

/** The status line and headers; inside a cork, before any body. */
function writeHead(res: UwsResponse, status: number, headers: Record<string, string> = {}, cookies: readonly string[] = []): void {
  res.writeStatus(`${status} ${STATUS_CODES[status] ?? ''}`.trim());
  for (const [k, v] of Object.entries(headers)) res.writeHeader(k, v);
  // One header per cookie: Set-Cookie values cannot be joined with commas (their dates hold commas).
  for (const c of cookies) res.writeHeader('set-cookie', c);
}

function writeReply(res: UwsResponse, reply: HttpReply, state: RequestState): void {
  if (state.head) return writeHeadReply(res, reply);
  if (reply.file) return void streamFile(res, reply, state);
  if (reply.stream) return void streamChunks(res, reply, state);
  let body: string | Buffer = '';
  const headers = { ...reply.headers };
  if (reply.json !== undefined) {
    body = JSON.stringify(reply.json);
    headers['content-type'] ??= 'application/json; charset=utf-8';
  } else if (reply.body !== undefined) body = reply.body;
  res.cork(() => {
    writeHead(res, reply.status, headers, reply.cookies);
    res.end(body);
  });
}

/** What a GET would have answered, without the body: Content-Length from the body or the file's size. */
function writeHeadReply(res: UwsResponse, reply: HttpReply): void {
  const headers = { ...reply.headers };
  let length: number | undefined;
  if (reply.file) {
    length = reply.file.size > 0 ? reply.file.size : undefined;
    void reply.file.handle.close().catch(() => undefined);
  } else if (reply.stream) {
    void Promise.resolve(reply.stream[Symbol.asyncIterator]().return?.()).catch(() => undefined);
  } else if (reply.json !== undefined) {
    length = Buffer.byteLength(JSON.stringify(reply.json));
    headers['content-type'] ??= 'application/json; charset=utf-8';
  } else {
    length = Buffer.byteLength(reply.body ?? '');
  }
  res.cork(() => {
    writeHead(res, reply.status, headers, reply.cookies);
    res.endWithoutBody(length);
  });
}

/**
 * Bytes read before the head goes out. A file that ends within them is sent whole with its true
 * length, whatever stat said: procfs reports 0 and sysfs 4096 for a few bytes.
 */
const FILE_WINDOW = 64 * 1024;
const FILE_CHUNK = 64 * 1024;

/** Reads until `want` bytes or the end of the file; eof says which came first. */
async function readUpTo(handle: FileBody['handle'], want: number): Promise<{ bytes: Buffer; eof: boolean }> {
  const buf = Buffer.allocUnsafe(want);
  let got = 0;
  while (got < want) {
    const { bytesRead } = await handle.read(buf, got, want - got, null);
    if (bytesRead === 0) return { bytes: buf.subarray(0, got), eof: true };
    got += bytesRead;
  }
  return { bytes: buf, eof: false };
}

/**
 * Streams an opened file from its descriptor with uWS backpressure, so a slow reader never makes
 * it buffered whole. A file larger than the first window gets the Content-Length stat announced
 * and never more (a growing file is cut there); if it ends short (it shrank) the connection is
 * closed after the last byte, the one honest signal left once headers are out, so the client
 * sees a truncated body at once instead of waiting for bytes that never come. A size stat does
 * not know (0) streams chunked until the end of the file.
 */
async function streamFile(res: UwsResponse, reply: HttpReply, state: RequestState): Promise<void> {
  const { handle, size } = reply.file!;
  let wake: (() => void) | null = null;
  state.onAbort.push(() => wake?.());
  let started = false;
  const head = () => {
    started = true;
    writeHead(res, reply.status, reply.headers, reply.cookies);
  };
  /** Writes a chunk; resolves once uWS has taken all of it (or the client left). */
  const write = (chunk: Buffer, total: number | null) =>
    new Promise<void>((resolve) => {
      const offset = res.getWriteOffset();
      let ok = false;
      res.cork(() => {
        if (!started) head();
        ok = total === null ? res.write(chunk) : res.tryEnd(chunk, total)[0];
      });
      if (ok) return resolve();
      wake = resolve;
      res.onWritable((at) => {
        if (state.aborted) return true;
        if (total === null) {
          // write() buffered everything; an empty cork flushes it.
          res.cork(() => undefined);
          resolve();
          return true;
        }
        const [ok2, done] = res.tryEnd(chunk.subarray(at - offset), total);
        if (ok2 || done) resolve();
        return ok2;
      });
    });

  try {
    const first = await readUpTo(handle, FILE_WINDOW);
    if (state.aborted) return;
    if (first.eof) return writeReply(res, { status: reply.status, headers: reply.headers ?? {}, body: first.bytes }, state);
    const total = size > 0 ? size : null;
    let sent = 0;
    let chunk = total === null ? first.bytes : first.bytes.subarray(0, total);
    for (;;) {
      await write(chunk, total);
      if (state.aborted) return;
      sent += chunk.length;
      if (total !== null && sent >= total) return;
      const next = await readUpTo(handle, total === null ? FILE_CHUNK : Math.min(FILE_CHUNK, total - sent));
      if (state.aborted) return;
      if (next.bytes.length > 0) {
        chunk = next.bytes;
        continue;
      }
      // The file ended here: a chunked reply is complete, a sized one is short.
      if (total === null) res.cork(() => res.end());
      else res.close();
      return;
    }
  } catch (e) {
    if (state.aborted) return;
    // The detail (a path, an errno) would tell a client about the server's files: it hears only that the read failed.
    if (!started) writeReply(res, json(500, { error: 'could not read the file', code: 'internal-error' }), state);
    // Headers are out: the only honest signal left is to cut the connection.
    else res.close();
  } finally {
    await handle.close().catch(() => undefined);
  }
}

/**
 * Pulls the next chunk only once uWS reports the socket writable again after a write that left
 * backpressure, so a slow reader holds the producer back instead of filling memory. Headers go
 * out with the first chunk, so a producer that fails before yielding still gets a plain 500.
 */
async function streamChunks(res: UwsResponse, reply: HttpReply, state: RequestState): Promise<void> {
  const it = reply.stream![Symbol.asyncIterator]();
  let wake: (() => void) | null = null;
  const wakeUp = () => {
    const w = wake;
    wake = null;
    w?.();
  };
  state.onAbort.push(() => {
    wakeUp();
    void Promise.resolve(it.return?.()).catch(() => undefined);
  });
  let started = false;
  const head = () => {
    started = true;
    writeHead(res, reply.status, reply.headers, reply.cookies);
  };
  let watching = false;
  try {
    for (;;) {
      const next = await it.next();
      if (state.aborted) return;
      if (next.done) break;
      if (next.value === '') continue;
      let ok = true;
      res.cork(() => {
        if (!started) head();
        ok = res.write(next.value);
      });
      if (ok) continue;
      if (!watching) {
        watching = true;
        // Once a handler is registered uWS stops draining by itself; an empty cork flushes what it buffered.
        res.onWritable(() => {
          res.cork(() => undefined);
          wakeUp();
          return true;
        });
      }
      await new Promise<void>((resolve) => (wake = resolve));
      if (state.aborted) return;
    }
  } catch {
    if (state.aborted) return;
    if (!started) {
      // The producer owns its error reporting; the client gets no internals.
      writeReply(res, json(500, { error: 'internal error', code: 'internal-error' }), state);
    } else {
      // Headers are out: cutting the connection is the only way to tell the client the body is incomplete.
      res.close();
    }
    return;
  }
  res.cork(() => {
    if (!started) head();
    res.end();
  });
}
