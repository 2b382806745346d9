import { Secret, TOTP } from 'otpauth';

/*
 * RFC 6238 codes (otpauth): SHA-1, 6 digits, 30 s, what every authenticator app reads from an
 * otpauth:// URI. A code is accepted once: the caller keeps the last accepted time step and a code
 * of that step or an older one is refused, so a code seen over a shoulder cannot be replayed.
 */
const PERIOD_S = 30;
/** One step either side tolerates a phone clock a little off. */
const WINDOW = 1;

export const ISSUER = 'svc';

export function newTotpSecret(): string {
  return new Secret({ size: 20 }).base32;
}

function totp(secret: string, label: string): TOTP {
  return new TOTP({ issuer: ISSUER, label, algorithm: 'SHA1', digits: 6, period: PERIOD_S, secret: Secret.fromBase32(secret) });
}

export function totpUri(secret: string, label: string): string {
  return totp(secret, label).toString();
}

/** The time step of a valid code newer than `lastStep`; null for a wrong, stale or replayed code. */
export function acceptTotp(secret: string, code: string, nowMs: number, lastStep: number | null): number | null {
  let delta: number | null;
  try {
    delta = totp(secret, 'check').validate({ token: code, timestamp: nowMs, window: WINDOW });
  } catch {
    return null;
  }
  if (delta === null) return null;
  const step = Math.floor(nowMs / 1000 / PERIOD_S) + delta;
  return lastStep !== null && step <= lastStep ? null : step;
}

/** For tests and tools: the code of `nowMs`. */
export function totpCode(secret: string, nowMs: number): string {
  return totp(secret, 'check').generate({ timestamp: nowMs });
}
