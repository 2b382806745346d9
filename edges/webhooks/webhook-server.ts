import { randomUUID } from 'node:crypto';
import { REAL_CLOCK, type Bus, type LogLevel } from '../../bus/index.js';
import { MAX_RECORD_ID_CHARS, SvcError, WEBHOOK_COMMANDS, describeError } from '../../schemas/index.js';
import { HttpServer, clientAddress, json, publicBindWarning, rateLimitKey, type HttpRequest, type Route, type Surface } from '../http/index.js';
import { WEBHOOK_STATUSES, webhookErrorBody } from './errors.js';
import { SlidingWindowLimit } from './rate-limit.js';

/*
 * The webhook server (WIRE.md §4) on `webhooks.host:port`, a listener of its own. A call is
 * checked in exactly this order: rate limit 429, content type 415, body size 413 (refused while it
 * streams, before it is buffered whole), JSON 400 `invalid_json`, an object 400, then the hook's
 * owner decides: unknown 404, disabled 403, auth 401; else 202 and the run goes on in the
 * background. The first four are the transport's and stay here; the rest is one command.
 */

export interface WebhookServerOptions {
  bus: Bus;
  host: string;
  /** 0 picks a free port (tests). */
  port: number;
  /** `webhooks.max_body_bytes`, fixed while the server runs. */
  maxBodyBytes: number;
  /** `webhooks.rate_limit_per_minute`, read per call. */
  rateLimitPerMinute: () => number;
  /** Epoch ms; injected in tests. */
  clock?: () => number;
  log?: (level: LogLevel, msg: string, fields?: Record<string, unknown>) => void;
}

export interface WebhookServer {
  port: number;
  close(): void;
}

/** `application/json` with any parameters, or a `+json` type such as `application/vnd.github+json`. */
export function isJsonContentType(value: string | undefined): boolean {
  const type = (value ?? '').split(';')[0]!.trim().toLowerCase();
  return type === 'application/json' || /^application\/[a-z0-9.!#$&^_-]+\+json$/.test(type);
}

function parsePayload(req: HttpRequest): Record<string, unknown> {
  let raw: unknown;
  try {
    raw = JSON.parse(req.body.toString('utf8'));
  } catch (e) {
    throw new SvcError('invalid-json', `body is not valid JSON: ${describeError(e)}`);
  }
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    throw new SvcError('invalid-body', `body must be a JSON object, not ${raw === null ? 'null' : Array.isArray(raw) ? 'an array' : typeof raw}`);
  }
  return raw as Record<string, unknown>;
}

export function webhookSurface(opts: Omit<WebhookServerOptions, 'host' | 'port' | 'log'>): Surface {
  const { bus } = opts;
  const limit = new SlidingWindowLimit(opts.rateLimitPerMinute, opts.clock ?? REAL_CLOCK.now);
  const routes: Route[] = [
    {
      method: 'GET',
      pattern: '/health',
      auth: 'public',
      summary: 'The webhook server is up',
      handler: () => json(200, { status: 'ok' }),
    },
    {
      method: 'POST',
      pattern: '/hooks/:id',
      auth: 'public',
      summary: "Call a webhook; it authenticates by the hook's bearer token or HMAC signature",
      maxBodyBytes: opts.maxBodyBytes,
      admit: (req) => {
        if (!limit.take(rateLimitKey(req.remoteAddress))) throw new SvcError('rate-limited', 'too many calls from this address; try again in a minute');
        if (!isJsonContentType(req.headers['content-type'])) {
          throw new SvcError('unsupported-media-type', `content type must be application/json, not ${JSON.stringify(req.headers['content-type'] ?? '')}`);
        }
      },
      handler: async (req) => {
        const payload = parsePayload(req);
        const id = req.params.id!;
        // Not an id any record can have: unknown, without troubling the records' owner.
        if (id.length > MAX_RECORD_ID_CHARS || !/^[A-Za-z0-9_-]+$/.test(id)) throw new SvcError('not-found', 'no such webhook');
        const requestId = randomUUID();
        const reply = await bus.send(
          WEBHOOK_COMMANDS.trigger,
          { id, request_id: requestId, client: clientAddress(req.remoteAddress), headers: req.headers, body: req.body.toString('base64'), payload },
          { by: 'webhook', correlation: requestId },
        );
        return json(202, reply);
      },
    },
  ];
  return { name: 'webhooks', routes, statuses: WEBHOOK_STATUSES, standalone: true, errorBody: webhookErrorBody };
}

export async function startWebhookServer(opts: WebhookServerOptions): Promise<WebhookServer> {
  const log = opts.log ?? ((level, msg, fields) => opts.bus.emitLog(level, msg, fields));
  const server = new HttpServer({
    onInternalError: (e, req) => log('error', `webhook server ${req.method} ${req.path} failed: ${describeError(e)}`, { stack: e instanceof Error ? (e.stack ?? '') : '' }),
  });
  try {
    server.mount(webhookSurface(opts));
    const port = await server.listen(opts.host, opts.port);
    // Senders such as GitHub call from the internet, so a public bind may be meant; each hook's token
    // or signature is then all that guards it, which whoever set the address should know.
    const warning = publicBindWarning('the webhook server', opts.host, null);
    if (warning) log('warn', `${warning}; each hook's token or signature is all that guards it`, { host: opts.host });
    log('info', `webhook server listening on ${opts.host}:${port}`);
    return { port, close: () => server.close() };
  } catch (e) {
    server.close();
    throw e;
  }
}
