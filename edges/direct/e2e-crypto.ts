import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { generateKeyPair, openSecretBox, precomputeSharedKey, secretBox } from '@stablelib/nacl';

/*
 * The direct API's end-to-end encryption (WIRE.md §1): NaCl box (Curve25519 + XSalsa20-Poly1305),
 * byte-identical to tweetnacl/PyNaCl. The shared key is computed once per connection (`box.before`),
 * so each frame costs one secretbox. A frame on the wire is std base64 of nonce[24] || box.
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
  return generateKeyPair();
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

/**
 * A peer key of a low-order point yields the all-zero X25519 result whatever our secret is, which
 * makes every box forgeable; after HSalsa20 that is this one constant, so compare against it.
 */
const WEAK_SHARED_KEY = precomputeSharedKey(new Uint8Array(KEY_BYTES), generateKeyPair().secretKey);

/** The precomputed box key for a peer's base64 public key, or null when the key is unusable. */
export function sharedKeyFor(peerPublicKeyB64: unknown, mySecretKey: Uint8Array): Uint8Array | null {
  if (typeof peerPublicKeyB64 !== 'string' || peerPublicKeyB64.length > 64) return null;
  const pk = decodeStdBase64(peerPublicKeyB64);
  if (!pk || pk.length !== KEY_BYTES) return null;
  const shared = precomputeSharedKey(new Uint8Array(pk), mySecretKey);
  if (timingSafeEqual(shared, WEAK_SHARED_KEY)) return null;
  return shared;
}

/** `base64(nonce || secretbox(payload))`. */
export function encodeFrame(sharedKey: Uint8Array, nonce: Uint8Array, payload: Uint8Array): string {
  const sealed = secretBox(sharedKey, nonce, payload);
  const out = Buffer.allocUnsafe(NONCE_BYTES + sealed.length);
  out.set(nonce, 0);
  out.set(sealed, NONCE_BYTES);
  return out.toString('base64');
}

export interface OpenedFrame {
  /** The 24 nonce bytes as a latin1 string: a compact key for the replay set. */
  nonceKey: string;
  payload: Uint8Array;
}

/** Null when the text is not strict base64, too short, or does not authenticate. */
export function decodeFrame(sharedKey: Uint8Array, text: string): OpenedFrame | null {
  const raw = decodeStdBase64(text);
  if (!raw || raw.length < NONCE_BYTES + BOX_OVERHEAD) return null;
  const nonce = raw.subarray(0, NONCE_BYTES);
  const payload = openSecretBox(sharedKey, nonce, raw.subarray(NONCE_BYTES));
  if (!payload) return null;
  return { nonceKey: nonce.toString('latin1'), payload };
}

/**
 * Server nonces: a random 16-byte prefix per connection plus a 64-bit counter, so they never repeat.
 * The box key is symmetric, so a server frame echoed back would decrypt; `isOwn` lets the edge
 * refuse such reflections (a random client nonce shares the prefix with chance 2^-128).
 */
export class NonceSource {
  private readonly prefix = randomBytes(16);
  private counter = 0n;

  next(): Uint8Array {
    const nonce = Buffer.allocUnsafe(NONCE_BYTES);
    this.prefix.copy(nonce, 0);
    nonce.writeBigUInt64BE(this.counter++, 16);
    return nonce;
  }

  isOwn(nonceKey: string): boolean {
    return Buffer.from(nonceKey, 'latin1').subarray(0, 16).equals(this.prefix);
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
