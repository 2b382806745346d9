import { currentLanguage } from '../i18n';

/*
 * The admin API as the panel calls it: same origin, authenticated by the httpOnly cookies the login
 * sets, with the readable CSRF cookie echoed in X-CSRF-Token on every mutating request (WIRE.md §2,
 * double submit). A 401 refreshes once and retries; a second 401 means the session is over.
 */

export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly code: string | undefined,
  ) {
    super(message);
  }
}

const CSRF_COOKIE = 'sygen_csrf';

function csrfToken(): string {
  for (const part of document.cookie.split(';')) {
    const [k, ...v] = part.trim().split('=');
    if (k === CSRF_COOKIE) return decodeURIComponent(v.join('='));
  }
  return '';
}

let onSessionEnded: () => void = () => undefined;
/** Called when a refresh fails: the app goes back to the login page. */
export function whenSessionEnds(cb: () => void): void {
  onSessionEnded = cb;
}

type Method = 'GET' | 'POST' | 'PUT' | 'DELETE';

async function send(method: Method, path: string, body: unknown): Promise<Response> {
  const headers: Record<string, string> = { Accept: 'application/json', 'Accept-Language': currentLanguage() };
  if (method !== 'GET') headers['X-CSRF-Token'] = csrfToken();
  let payload: BodyInit | undefined;
  if (body instanceof FormData) payload = body;
  else if (body !== undefined) {
    headers['Content-Type'] = 'application/json';
    payload = JSON.stringify(body);
  }
  return fetch(path, { method, headers, credentials: 'same-origin', ...(payload !== undefined ? { body: payload } : {}) });
}

/** Whether this browser holds a session at all: the readable CSRF cookie lives as long as the refresh token. */
export const hasSessionCookie = (): boolean => csrfToken() !== '';

/*
 * When the access token runs out (from `expires_in` of the login or refresh), kept in
 * localStorage so every tab knows: the panel refreshes just before, instead of letting a request
 * fail with a 401 first.
 */
const EXPIRY_KEY = 'svc.access_until';
export function noteAccessExpiry(expiresInS: number): void {
  localStorage.setItem(EXPIRY_KEY, String(Date.now() + expiresInS * 1000));
}
const accessExpired = () => Date.now() > Number(localStorage.getItem(EXPIRY_KEY) ?? 0) - 15_000;

let refreshing: Promise<boolean> | null = null;
/** One refresh at a time: parallel callers wait for the same one. */
function refreshSession(): Promise<boolean> {
  refreshing ??= send('POST', '/api/auth/refresh', {})
    .then(async (r) => {
      if (!r.ok) return false;
      const body = (await r.json().catch(() => ({}))) as { expires_in?: unknown };
      if (typeof body.expires_in === 'number') noteAccessExpiry(body.expires_in);
      return true;
    })
    .catch(() => false)
    .finally(() => {
      refreshing = null;
    });
  return refreshing;
}

async function errorOf(res: Response): Promise<ApiError> {
  let message = res.statusText || `HTTP ${res.status}`;
  let code: string | undefined;
  try {
    const body = (await res.json()) as { error?: unknown; code?: unknown; detail?: unknown };
    if (typeof body.error === 'string') message = body.error;
    else if (typeof body.detail === 'string') message = body.detail;
    if (typeof body.code === 'string') code = body.code;
  } catch {
    // Not JSON: the status text says enough.
  }
  return new ApiError(res.status, message, code);
}

/** Paths under /api/auth/ that answer 401 for a wrong password, not for an expired session. */
const NO_REFRESH = ['/api/auth/login', '/api/auth/2fa/login', '/api/auth/refresh'];

export async function api<T = unknown>(method: Method, path: string, body?: unknown): Promise<T> {
  if (!NO_REFRESH.includes(path) && hasSessionCookie() && accessExpired()) await refreshSession();
  let res = await send(method, path, body);
  if (res.status === 401 && !NO_REFRESH.includes(path)) {
    if (await refreshSession()) res = await send(method, path, body);
    if (res.status === 401) {
      onSessionEnded();
      throw await errorOf(res);
    }
  }
  if (!res.ok) throw await errorOf(res);
  if (res.status === 204) return undefined as T;
  const type = res.headers.get('content-type') ?? '';
  return (type.includes('json') ? await res.json() : await res.text()) as T;
}

export const get = <T>(path: string) => api<T>('GET', path);
export const post = <T>(path: string, body?: unknown) => api<T>('POST', path, body ?? {});
export const put = <T>(path: string, body?: unknown) => api<T>('PUT', path, body ?? {});
export const del = <T>(path: string, body?: unknown) => api<T>('DELETE', path, body);

/** `?a=1&b=x` from the defined entries, or '' when none. */
export function query(params: Record<string, string | number | boolean | undefined | null>): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null && v !== '') q.set(k, String(v));
  const s = q.toString();
  return s ? `?${s}` : '';
}

/** A path segment, percent-encoded (memory module names may hold `/`). */
export const seg = (s: string) => encodeURIComponent(s);
