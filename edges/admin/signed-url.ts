import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { SvcError } from '../../schemas/index.js';

/*
 * Short-lived download links (WIRE.md §2 `POST /api/files/sign-url`): the only place a credential
 * rides in a query string. The signature binds the agent, the path and the expiry (HMAC-SHA256 over
 * all three, each length-delimited, so no field can borrow from another); it is compared in
 * constant time and the expiry is read on the injected clock. The key lives in memory only: a
 * restart voids every link, which short links can afford, and no file holds a key to steal.
 */

export const SIGNED_DOWNLOAD_PATH = '/api/files/signed';

export interface SignedTarget {
  agent: string;
  path: string;
  /** Epoch seconds. */
  exp: number;
}

export interface UrlSigner {
  sign(target: SignedTarget): string;
  /** Throws `signature-invalid` or `link-expired`; `nowS` and `maxTtlS` bound the expiry from both sides. */
  verify(target: SignedTarget, sig: string, nowS: number, maxTtlS: number): void;
}

const message = (t: SignedTarget) => ['svc-file-v1', t.agent, t.path, String(t.exp)].map((f) => `${Buffer.byteLength(f)}:${f}`).join('|');

export function urlSigner(key: Buffer = randomBytes(32)): UrlSigner {
  const mac = (t: SignedTarget) => createHmac('sha256', key).update(message(t)).digest();
  return {
    sign: (t) => mac(t).toString('base64url'),
    verify(t, sig, nowS, maxTtlS) {
      const given = Buffer.from(sig, 'base64url');
      const expected = mac(t);
      if (given.length !== expected.length || !timingSafeEqual(given, expected)) throw new SvcError('signature-invalid', 'the link is not valid: ask for a new one');
      // A valid signature with an expiry beyond any ttl handed out means the key or the clock is wrong: refused as well.
      if (t.exp <= nowS) throw new SvcError('link-expired', 'the link has expired: ask for a new one');
      if (t.exp > nowS + maxTtlS) throw new SvcError('signature-invalid', 'the link is not valid: ask for a new one');
    },
  };
}

export function signedDownloadUrl(t: SignedTarget, sig: string): string {
  const q = new URLSearchParams({ agent: t.agent, path: t.path, exp: String(t.exp), sig });
  return `${SIGNED_DOWNLOAD_PATH}?${q.toString()}`;
}
