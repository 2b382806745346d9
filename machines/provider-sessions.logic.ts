import { PROVIDERS, SvcError, type Provider } from '../schemas/index.js';

/**
 * CLI session ids of one chat/topic session, one per provider (PROVIDERS.md): switching provider
 * keeps the other's id, so switching back resumes where it left off. Plain JSON; never mutated.
 */
export type ProviderSessions = Readonly<Partial<Record<Provider, string>>>;

export const SESSION_ID_MAX_LENGTH = 512;
const PROVIDER_SET = new Set<string>(PROVIDERS);

function checkProvider(provider: unknown): Provider {
  if (typeof provider !== 'string' || !PROVIDER_SET.has(provider)) {
    throw new SvcError('invalid-provider', `provider = ${JSON.stringify(provider) ?? String(provider)} is not allowed (one of ${PROVIDERS.join(', ')})`);
  }
  return provider as Provider;
}

export function sessionIdFor(sessions: ProviderSessions, provider: Provider): string | null {
  const p = checkProvider(provider);
  return Object.hasOwn(sessions, p) ? (sessions[p] ?? null) : null;
}

export function withSessionId(sessions: ProviderSessions, provider: Provider, id: string): ProviderSessions {
  const p = checkProvider(provider);
  if (typeof id !== 'string' || id.trim() === '' || id.length > SESSION_ID_MAX_LENGTH || /[\u0000-\u001f\u007f]/.test(id)) {
    throw new SvcError('invalid-session-id', `${p} session id = ${JSON.stringify(id) ?? String(id)} is not allowed (a non-empty string of at most ${SESSION_ID_MAX_LENGTH} characters without control characters)`);
  }
  return { ...sessions, [p]: id };
}

/** Forget one provider's id (e.g. after its CLI was killed); the others stay. */
export function resetProvider(sessions: ProviderSessions, provider: Provider): ProviderSessions {
  const p = checkProvider(provider);
  const { [p]: _dropped, ...rest } = sessions;
  return rest;
}
