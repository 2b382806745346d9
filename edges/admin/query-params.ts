import * as v from 'valibot';
import { pickLanguage, type Language } from '../../schemas/index.js';
import { parseWith, type HttpRequest } from '../http/index.js';

/*
 * Query and path parameters of the admin routes, parsed like bodies: a bad one is a 400 naming it.
 * Routes with a query schema parse it with `withQuery` (edges/http), which refuses unknown ones.
 */

/** `?limit=` as a whole number from 1 to `max`, `fallback` when absent. */
export function queryLimit(req: Pick<HttpRequest, 'query'>, fallback: number, max: number): number {
  const raw = req.query.get('limit');
  if (raw === null || raw === '') return fallback;
  return parseWith(
    v.pipe(v.string(), v.regex(/^\d{1,7}$/, `must be a whole number from 1 to ${max}`), v.transform(Number), v.minValue(1, `must be at least 1`), v.maxValue(max, `must be at most ${max}`)),
    raw,
    'invalid-query',
    'query.limit',
  );
}

/** A path segment checked against the schema its command expects. */
export function pathParam<S extends v.GenericSchema>(req: Pick<HttpRequest, 'params'>, name: string, schema: S): v.InferOutput<S> {
  return parseWith(schema, req.params[name] ?? '', 'invalid-path', `path.${name}`);
}

/** WIRE.md §2: `Accept-Language` `ru` (default) or `en`; `uk` is served as `ru`. */
export function language(req: Pick<HttpRequest, 'headers'>): Language {
  return pickLanguage(req.headers['accept-language']);
}

/** `?flag=1` / `true`; anything else is off. */
export function queryFlag(req: Pick<HttpRequest, 'query'>, name: string): boolean {
  const raw = req.query.get(name);
  return raw === '1' || raw === 'true';
}
