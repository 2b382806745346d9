import type { LoginResult, UserInfo } from '../../schemas/index.js';
import { ApiError, get, hasSessionCookie, noteAccessExpiry, post, whenSessionEnds } from './api/client';
import { adminSocket } from './api/socket';
import { createStore, useStore } from './store';

/*
 * Who is signed in. `undefined` while the first `/api/auth/me` is in flight, `null` when nobody
 * is. The tokens themselves stay in httpOnly cookies: the page never holds a credential.
 */

export const session = createStore<UserInfo | null | undefined>(undefined);

export async function loadSession(): Promise<void> {
  // No session cookie: nobody signed in here, and asking would only earn a 401.
  if (!hasSessionCookie()) {
    session.set(null);
    return;
  }
  try {
    session.set(await get<UserInfo>('/api/auth/me'));
    adminSocket.start();
  } catch (e) {
    if (e instanceof ApiError && e.status === 401) session.set(null);
    else throw e;
  }
}

whenSessionEnds(() => {
  adminSocket.stop();
  session.set(null);
});

/** The first step: either signed in, or the temp token of the 2FA step. */
export async function login(username: string, password: string): Promise<{ temp_token: string } | null> {
  const r = await post<LoginResult>('/api/auth/login', { username, password });
  if ('requires_2fa' in r) return { temp_token: r.temp_token };
  noteAccessExpiry(r.expires_in);
  await loadSession();
  return null;
}

export async function loginWithCode(temp_token: string, code: string): Promise<void> {
  const r = await post<{ expires_in: number }>('/api/auth/2fa/login', { temp_token, code });
  noteAccessExpiry(r.expires_in);
  await loadSession();
}

export async function logout(): Promise<void> {
  try {
    await post('/api/auth/logout');
  } finally {
    adminSocket.stop();
    session.set(null);
  }
}

export function useSession(): UserInfo | null | undefined {
  return useStore(session);
}

/*
 * What a role may do (SPEC.md "Roles"): the panel hides what the server would refuse, and the
 * server refuses it anyway. Operators run cron jobs, cancel tasks and manage chat sessions;
 * everything else that writes is the admin's.
 */
export const isAdmin = (u: UserInfo | null | undefined): boolean => u?.role === 'admin';
export const isOperator = (u: UserInfo | null | undefined): boolean => u?.role === 'admin' || u?.role === 'operator';
