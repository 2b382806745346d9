import type { FileHandle } from 'node:fs/promises';
import * as v from 'valibot';
import { SvcError, describeError, parseWith, type Principal } from '../../schemas/index.js';
import type { RouteAuth } from './route-auth.js';
import { unknownField } from './unknown-fields.js';

/** Everything a handler may know about a request, copied out of uWS before any await. */
export interface HttpRequest {
  method: string;
  /** Decoded path without the query string. */
  path: string;
  query: URLSearchParams;
  /** Lower-case header names. */
  headers: Record<string, string>;
  /** `:name` segments of the matched route, percent-decoded. */
  params: Record<string, string>;
  /** The whole body (capped by the route's `maxBodyBytes`); empty for streamed routes. */
  body: Buffer;
  /** Present only on routes declared with `streamBody`: chunks as they arrive, with backpressure. */
  bodyStream?: AsyncIterable<Buffer>;
  /** The peer, canonical (client-address.ts `parseAddress`: 127.0.0.1, `::1`); '' when unknown. */
  remoteAddress: string;
}

/** An already opened and checked file (store's openContainedFile); the reply reads it and closes it. */
export interface FileBody {
  handle: FileHandle;
  /** What fstat said; the body ends at the file's real end, which may differ (procfs, a file that changes). */
  size: number;
}

export interface HttpReply {
  status: number;
  headers?: Record<string, string>;
  /** `Set-Cookie` values, each sent as its own header. */
  cookies?: readonly string[];
  /** Serialised as JSON with `content-type: application/json`. */
  json?: unknown;
  body?: Buffer | string;
  /** Streamed from the descriptor with backpressure, never reopened by name. */
  file?: FileBody;
  /**
   * Written chunk by chunk (chunked transfer encoding) as the iterable yields, pausing while the
   * client is behind; `return()` is called when the client goes away, so a producer can stop.
   */
  stream?: AsyncIterable<string>;
}

export type Reply = Promise<HttpReply> | HttpReply;

interface RouteBase {
  method: 'GET' | 'POST' | 'PUT' | 'DELETE';
  /**
   * `/api/chat/sessions/:id` style; `:name` matches one non-empty segment. A last segment `*`
   * matches the rest of the path (one segment or more), each segment decoded, as param `*`.
   */
  pattern: string;
  /** Bodies above this are refused with 413 before they are buffered. */
  maxBodyBytes?: number;
  /**
   * Checks that come before the body is even looked at (a rate limit, the content type): throws an
   * SvcError to refuse, which then wins over a body too large. `body` is still empty here.
   */
  admit?: (req: HttpRequest) => void;
  streamBody?: boolean;
  /** One line for the API description (`GET /api/openapi.json`). */
  summary?: string;
  /** The JSON body's schema; set by `withBody`, which parses with it, so the description is what is enforced. */
  body?: v.GenericSchema;
  /** The query's schema; set by `withQuery`, likewise. */
  query?: v.GenericSchema;
  /** A body that is not JSON (`multipart/form-data` uploads), for the description. */
  bodyType?: string;
}

/** Anyone may call it (`/health`, avatars an `<img>` loads): the handler learns no caller. */
export interface PublicRoute extends RouteBase {
  auth: 'public';
  handler: (req: HttpRequest) => Reply;
}

/** The server authenticates with the credentials the route accepts and checks its role first. */
export interface GuardedRoute extends RouteBase {
  auth: RouteAuth;
  handler: (req: HttpRequest, principal: Principal) => Reply;
}

export type Route = PublicRoute | GuardedRoute;

export const DEFAULT_MAX_BODY_BYTES = 1024 * 1024;

/** Maps stable error codes to statuses: one table per surface, looked up in one place. */
export type StatusTable = Readonly<Record<string, number>>;

/** Codes every surface answers the same way; a surface's own table may not map them again. */
export const COMMON_STATUSES: StatusTable = {
  'invalid-json': 400,
  'invalid-body': 400,
  'invalid-query': 400,
  'invalid-path': 400,
  unauthorized: 401,
  forbidden: 403,
  /**
   * A cookie-authenticated write without the double-submit header. Raised by the admin cookie's
   * authenticator, which every surface's routes on the server may accept (`/upload`, the shared `/api`).
   */
  'csrf-failed': 403,
  'not-found': 404,
  'method-not-allowed': 405,
  'body-too-large': 413,
  'unsupported-media-type': 415,
  'rate-limited': 429,
  'no-handler': 503,
  'command-timeout': 504,
};

export function json(status: number, body: unknown, headers?: Record<string, string>): HttpReply {
  return headers ? { status, json: body, headers } : { status, json: body };
}

/**
 * One table out of several (COMMON_STATUSES and a surface's own), built at start-up. A code mapped
 * twice is refused even when both say the same status: which table wins is exactly the question
 * that must never have to be asked.
 */
export function combineStatusTables(owner: string, ...tables: StatusTable[]): StatusTable {
  // A Map, so no code (`__proto__` included) can land anywhere but in the table.
  const out = new Map<string, number>();
  const twice: string[] = [];
  for (const table of tables) {
    for (const [code, status] of Object.entries(table)) {
      if (out.has(code)) twice.push(`${code} (${out.get(code)} and ${status})`);
      else out.set(code, status);
    }
  }
  if (twice.length) throw new SvcError('duplicate-status-code', `${owner}: error codes mapped twice: ${twice.join(', ')}`);
  return Object.fromEntries(out);
}

/**
 * An error as the client sees it: `{"error": "..."}` (WIRE.md) with the status from the surface's
 * table; anything that is not an SvcError is an internal error whose details stay in the log.
 */
export function errorReply(e: unknown, table: StatusTable): { reply: HttpReply; internal: boolean } {
  if (e instanceof SvcError) {
    const status = Object.hasOwn(table, e.code) ? table[e.code] : undefined;
    if (status !== undefined) return { reply: json(status, { error: e.message, code: e.code }), internal: false };
  }
  return { reply: json(500, { error: 'internal error', code: 'internal-error' }), internal: true };
}

function jsonOf(req: HttpRequest): unknown {
  try {
    return JSON.parse(req.body.toString('utf8') || 'null');
  } catch (e) {
    throw new SvcError('invalid-json', `body is not valid JSON: ${describeError(e)}`);
  }
}

/**
 * Parse a JSON body with a valibot schema; the message names the offending field. Fields the schema
 * does not name are dropped, not refused: for a read of one field before the route's own parse (the
 * internal API's caller claim, read by its authenticator). A route parses with `withBody`.
 */
export function parseJsonBody<S extends v.GenericSchema>(req: HttpRequest, schema: S): v.InferOutput<S> {
  return parseWith(schema, jsonOf(req), 'invalid-body', 'body');
}

/**
 * The request pipeline's parse: `parseWith`, and a field the schema does not name is refused
 * (unknown-fields.ts) rather than dropped, named like any other bad field.
 */
function parseStrict<S extends v.GenericSchema>(schema: S, raw: unknown, code: 'invalid-body' | 'invalid-query', what: string): v.InferOutput<S> {
  const extra = unknownField(schema, raw);
  if (extra !== null) throw new SvcError(code, `${what}.${extra}: unknown field`);
  return parseWith(schema, raw, code, what);
}

/**
 * The JSON body parsed strictly (`parseStrict`): what `withBody` does. By hand only where `withBody`
 * cannot: a handler that picks its schema by the body, or must refuse something before the body.
 */
export function parseStrictBody<S extends v.GenericSchema>(req: HttpRequest, schema: S): v.InferOutput<S> {
  return parseStrict(schema, jsonOf(req), 'invalid-body', 'body');
}

/** The query parsed strictly: what `withQuery` does. A parameter given twice where one is expected is named as such. */
function parseStrictQuery<S extends v.GenericSchema>(req: HttpRequest, schema: S): v.InferOutput<S> {
  const raw = queryObject(req.query);
  const extra = unknownField(schema, raw);
  if (extra !== null) throw new SvcError('invalid-query', `query.${extra}: unknown field`);
  const r = v.safeParse(schema, raw);
  if (r.success) return r.output;
  const key = r.issues[0]!.path?.[0]?.key;
  const given = typeof key === 'string' ? raw[key] : undefined;
  if (Array.isArray(given)) throw new SvcError('invalid-query', `query.${key}: given ${given.length} times; give it once`);
  return parseWith(schema, raw, 'invalid-query', 'query');
}

export { parseWith };

/**
 * A handler whose JSON body is parsed with `schema` first; the route also declares the schema, so
 * the API description is generated from the very schema that parses. Spread into a route:
 * `{ method, pattern, auth, ...withBody(Schema, (body, req, principal: Principal) => ...) }`.
 */
export function withBody<S extends v.GenericSchema, P extends unknown[]>(
  schema: S,
  handler: (body: v.InferOutput<S>, req: HttpRequest, ...rest: P) => Reply,
): { body: S; handler: (req: HttpRequest, ...rest: P) => Reply } {
  return { body: schema, handler: (req, ...rest) => handler(parseStrictBody(req, schema), req, ...rest) };
}

/** Like `withBody`, for the query string (each parameter once; a repeated one is a string array). */
export function withQuery<S extends v.GenericSchema, P extends unknown[]>(
  schema: S,
  handler: (query: v.InferOutput<S>, req: HttpRequest, ...rest: P) => Reply,
): { query: S; handler: (req: HttpRequest, ...rest: P) => Reply } {
  return { query: schema, handler: (req, ...rest) => handler(parseStrictQuery(req, schema), req, ...rest) };
}

/**
 * Both parsed strictly, for a route that takes a body and query parameters (`PUT ...?merge=`).
 */
export function withBodyAndQuery<B extends v.GenericSchema, Q extends v.GenericSchema, P extends unknown[]>(
  bodySchema: B,
  querySchema: Q,
  handler: (body: v.InferOutput<B>, query: v.InferOutput<Q>, req: HttpRequest, ...rest: P) => Reply,
): { body: B; query: Q; handler: (req: HttpRequest, ...rest: P) => Reply } {
  return {
    body: bodySchema,
    query: querySchema,
    handler: (req, ...rest) => {
      const query = parseStrictQuery(req, querySchema);
      return handler(parseStrictBody(req, bodySchema), query, req, ...rest);
    },
  };
}

/**
 * A parameter starting with `_` is a cache-buster (`?_=1712345`, as jQuery and panels add), never a
 * field: it is left out before the strict parse, so a panel's cache-buster never fails a read, and every other
 * parameter must be one the route names.
 */
function queryObject(q: URLSearchParams): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = Object.create(null) as Record<string, string | string[]>;
  for (const key of new Set(q.keys())) {
    if (key.startsWith('_')) continue;
    const all = q.getAll(key);
    out[key] = all.length === 1 ? all[0]! : all;
  }
  return { ...out };
}

export interface RouteMatch<R> {
  route: R;
  params: Record<string, string>;
}

type Routable = Pick<RouteBase, 'method' | 'pattern'>;

/** `/a/:id` and `/a/:name` match the same requests. */
const shapeOf = (r: Routable) => `${r.method} ${r.pattern.split('/').filter(Boolean).map((p) => (p.startsWith(':') ? ':' : p)).join('/')}`;

function decodeSegment(s: string): string | null {
  try {
    return decodeURIComponent(s);
  } catch {
    return null;
  }
}

/** Splits a pattern once, so matching a request does no regex work. */
export class Router<R extends Routable = Route> {
  private readonly compiled: { route: R; parts: string[] }[] = [];
  private readonly shapes = new Set<string>();

  /**
   * A second route for requests an earlier one already takes would never run: the batch is refused
   * whole, naming it, and nothing of it is added.
   */
  /** Every route, in the order added. */
  all(): R[] {
    return this.compiled.map((c) => c.route);
  }

  add(...routes: R[]): void {
    const shapes = new Set(this.shapes);
    for (const route of routes) {
      const shape = shapeOf(route);
      if (shapes.has(shape)) throw new SvcError('duplicate-route', `${route.method} ${route.pattern} is declared twice`);
      shapes.add(shape);
    }
    for (const route of routes) {
      this.shapes.add(shapeOf(route));
      this.compiled.push({ route, parts: route.pattern.split('/').filter(Boolean) });
    }
  }

  /**
   * null: no such path; 'method': the path exists under another method (405). Where a literal
   * segment and a `:param` both match (`POST /api/chat/sessions` and `POST /api/chat/:agentId`), the
   * literal wins, leftmost segment first, whatever the order the routes were added in.
   */
  match(method: string, path: string): RouteMatch<R> | null | 'method' {
    const segments = path.split('/').filter(Boolean);
    let pathExists = false;
    let best: { match: RouteMatch<R>; literals: boolean[] } | null = null;
    for (const { route, parts } of this.compiled) {
      const rest = parts[parts.length - 1] === '*';
      if (rest ? segments.length < parts.length : parts.length !== segments.length) continue;
      const params: Record<string, string> = {};
      const literals: boolean[] = [];
      let ok = true;
      for (let i = 0; i < parts.length; i++) {
        const p = parts[i]!;
        const s = segments[i]!;
        if (rest && i === parts.length - 1) {
          const decoded = segments.slice(i).map(decodeSegment);
          if (decoded.some((d) => d === null)) ok = false;
          else params['*'] = decoded.join('/');
          literals.push(false);
          break;
        }
        if (p.startsWith(':')) {
          let decoded: string;
          try {
            decoded = decodeURIComponent(s);
          } catch {
            ok = false;
            break;
          }
          params[p.slice(1)] = decoded;
          literals.push(false);
        } else if (p !== s) {
          ok = false;
          break;
        } else {
          literals.push(true);
        }
      }
      if (!ok) continue;
      pathExists = true;
      if (route.method === method && (best === null || moreLiteral(literals, best.literals))) best = { match: { route, params }, literals };
    }
    if (best) return best.match;
    return pathExists ? 'method' : null;
  }
}

/** The first segment where the two differ decides: a literal there is the more specific route. */
function moreLiteral(a: readonly boolean[], b: readonly boolean[]): boolean {
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return a[i]!;
  return false;
}
