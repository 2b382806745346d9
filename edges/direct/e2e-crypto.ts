import { createHash, randomFillSync, timingSafeEqual } from 'node:crypto';
import { x25519 } from '@noble/curves/ed25519.js';
import { openSecretBox, secretBox } from '@stablelib/nacl';
import { hsalsa } from '@stablelib/xsalsa20';

/*
 * The direct API's end-to-end encryption (WIRE.md §1): NaCl box (Curve25519 + XSalsa20-Poly1305),
 * byte-identical to tweetnacl/PyNaCl. The shared key is computed once per connection (`box.before`),
 * so each frame costs one secretbox. A frame on the wire is std base64 of nonce[24] || box.
 * X25519 is @noble/curves' (audited, and it refuses low-order peer keys before the ladder runs);
 * `box.before` is HSalsa20 over that raw secret, so the raw secret is never used as a key itself.
 */

export const NONCE_BYTES = 24;
export const KEY_BYTES = 32;
/** Poly1305 tag: the shortest box (empty payload). */
const BOX_OVERHEAD = 16;

export interface E2eKeyPair {
  publicKey: Uint8Array;
  secretKey: Uint8Array;
}

export function e2eKeyPair(): E2eKeyPair {
  return x25519.keygen();
}

const HSALSA_ZEROS = new Uint8Array(16);

/**
 * NaCl's `box.before`: HSalsa20 of the X25519 secret under a zero input block. Throws on a
 * low-order peer key (noble refuses it), whose secret would be known to anyone.
 */
export function boxBefore(peerPublicKey: Uint8Array, mySecretKey: Uint8Array): Uint8Array {
  const secret = x25519.getSharedSecret(mySecretKey, peerPublicKey);
  return hsalsa(secret, HSALSA_ZEROS, secret);
}

const STD_BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/** Strict std base64 (padding required, no whitespace or url-safe letters); null when it is not. */
export function decodeStdBase64(text: string): Buffer | null {
  if (!STD_BASE64.test(text)) return null;
  return Buffer.from(text, 'base64');
}

export function encodeStdBase64(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('base64');
}

/** The precomputed box key for a peer's base64 public key, or null when the key is unusable. */
export function sharedKeyFor(peerPublicKeyB64: unknown, mySecretKey: Uint8Array): Uint8Array | null {
  if (typeof peerPublicKeyB64 !== 'string' || peerPublicKeyB64.length > 64) return null;
  const pk = decodeStdBase64(peerPublicKeyB64);
  if (!pk || pk.length !== KEY_BYTES) return null;
  try {
    return boxBefore(new Uint8Array(pk), mySecretKey);
  } catch {
    // A low-order point: every box under it would be forgeable.
    return null;
  }
}

export interface OpenedFrame {
  /** The 24 nonce bytes as a latin1 string: a compact key for the replay set. */
  nonceKey: string;
  payload: Uint8Array;
}

/**
 * One connection's encrypted session once the shared key is known: the box key and the server's
 * nonces. The key pair that produced the key is not kept. Nonces are a random 16-byte prefix per
 * connection plus a 64-bit big-endian counter, held in one 24-byte buffer and counted in place,
 * so they never repeat and cost nothing per frame but the copy.
 */
export class BoxSession {
  /** Its own zeroed memory, not a slice of Buffer's shared pool: a long-lived slice pins a pool. */
  private readonly nonce = Buffer.alloc(NONCE_BYTES);

  constructor(private readonly key: Uint8Array) {
    randomFillSync(this.nonce, 0, 16);
  }

  /** `base64(nonce || secretbox(payload))` under the next server nonce. */
  seal(payload: Uint8Array): string {
    const sealed = secretBox(this.key, this.nonce, payload);
    const out = Buffer.allocUnsafe(NONCE_BYTES + sealed.length);
    this.nonce.copy(out, 0);
    out.set(sealed, NONCE_BYTES);
    this.countNonce();
    return out.toString('base64');
  }

  /** Big-endian +1 of the counter bytes (16..23). */
  private countNonce(): void {
    for (let i = NONCE_BYTES - 1; i >= 16; i--) {
      const v = (this.nonce[i]! + 1) & 0xff;
      this.nonce[i] = v;
      if (v !== 0) return;
    }
  }

  /**
   * Null when the text is not strict base64, too short, does not authenticate, or carries one of
   * our own nonces: the box key is symmetric, so a server frame echoed back would decrypt (a random
   * client nonce shares the prefix with chance 2^-128).
   */
  open(text: string): OpenedFrame | null {
    const raw = decodeStdBase64(text);
    if (!raw || raw.length < NONCE_BYTES + BOX_OVERHEAD) return null;
    const nonce = raw.subarray(0, NONCE_BYTES);
    if (nonce.compare(this.nonce, 0, 16, 0, 16) === 0) return null;
    const payload = openSecretBox(this.key, nonce, raw.subarray(NONCE_BYTES));
    if (!payload) return null;
    return { nonceKey: nonce.toString('latin1'), payload };
  }
}

/** Constant-time token check; hashing first hides the expected token's length too. */
export function apiTokenMatches(given: unknown, expected: string): boolean {
  if (typeof given !== 'string' || expected === '') return false;
  const a = createHash('sha256').update(given, 'utf8').digest();
  const b = createHash('sha256').update(expected, 'utf8').digest();
  return timingSafeEqual(a, b);
}

/** The token of an `Authorization: Bearer <token>` header, checked in constant time. */
export function bearerMatches(header: string | undefined, expected: string): boolean {
  const m = /^Bearer[ ]+(\S+)\s*$/i.exec(header ?? '');
  return apiTokenMatches(m ? m[1] : '', expected) && m !== null;
}
