import type { AgentConfig } from '../../schemas/index.js';
import type { HttpServerOptions } from '../http/index.js';

/*
 * CORS for the admin panel when it is served from another origin (WIRE.md §2): only the exact
 * origins in api.cors_origins, with credentials (the session cookie), and only the methods and
 * headers the panel uses. Any other origin gets no CORS headers, so the browser keeps its answers
 * from the page. Read per request, so the list follows config.json.
 */
const METHODS = 'GET, POST, PUT, DELETE';
const HEADERS = 'Content-Type, Accept-Language, X-CSRF-Token, Authorization';

export function adminCors(config: () => AgentConfig): Pick<HttpServerOptions, 'extraHeaders' | 'before'> {
  const allowed = (origin: string | undefined): origin is string => origin !== undefined && config().api.cors_origins.includes(origin);
  return {
    extraHeaders: (req): Record<string, string> => {
      const origin = req.headers.origin;
      return allowed(origin) ? { 'access-control-allow-origin': origin, 'access-control-allow-credentials': 'true', vary: 'Origin' } : { vary: 'Origin' };
    },
    before: (req) => {
      if (req.method !== 'OPTIONS' || !req.headers['access-control-request-method']) return undefined;
      if (!allowed(req.headers.origin)) return { status: 403, json: { error: 'this origin is not in api.cors_origins', code: 'forbidden' } };
      return {
        status: 204,
        headers: { 'access-control-allow-methods': METHODS, 'access-control-allow-headers': HEADERS, 'access-control-max-age': '600' },
      };
    },
  };
}
