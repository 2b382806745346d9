import { randomBytes, randomInt, scrypt, timingSafeEqual, type ScryptOptions } from 'node:crypto';

/*
 * Password hashes for users.json: scrypt (memory-hard, in node:crypto) stored as a self-describing
 * string `scrypt$N=<n>,r=<r>,p=<p>$<salt b64>$<hash b64>`, so the cost can be raised later while
 * the hashes already written keep verifying with the parameters they were made with.
 */

/** 2^15 × 8 × 128 B = 32 MiB per hash: OWASP's scrypt floor is N=2^17 at r=8 for servers with memory to spare; 2^15 keeps a 0.5 vCPU / 256 MB host responsive. */
export const SCRYPT_PARAMS = { N: 2 ** 15, r: 8, p: 1 } as const;
const KEY_BYTES = 32;
const SALT_BYTES = 16;
/** Refuse to burn more than this on a hash string someone planted with absurd parameters. */
const MAX_MEM = 256 * 1024 * 1024;

function derive(password: string, salt: Buffer, params: { N: number; r: number; p: number }, keyLen: number): Promise<Buffer> {
  const opts: ScryptOptions = { ...params, maxmem: MAX_MEM };
  return new Promise((resolve, reject) => scrypt(password.normalize('NFC'), salt, keyLen, opts, (e, key) => (e ? reject(e) : resolve(key))));
}

export async function hashPassword(password: string, params: { N: number; r: number; p: number } = SCRYPT_PARAMS): Promise<string> {
  const salt = randomBytes(SALT_BYTES);
  const key = await derive(password, salt, params, KEY_BYTES);
  return `scrypt$N=${params.N},r=${params.r},p=${params.p}$${salt.toString('base64')}$${key.toString('base64')}`;
}

const FORMAT = /^scrypt\$N=(\d{1,8}),r=(\d{1,3}),p=(\d{1,3})\$([A-Za-z0-9+/=]{4,128})\$([A-Za-z0-9+/=]{4,256})$/;

/**
 * True when `password` matches `stored`. An empty or unreadable hash never matches, and the key
 * comparison takes the same time wherever the first differing byte is.
 */
export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const m = FORMAT.exec(stored);
  if (!m) return false;
  const [N, r, p] = [Number(m[1]), Number(m[2]), Number(m[3])];
  if (N < 2 || (N & (N - 1)) !== 0 || r < 1 || p < 1) return false;
  const expected = Buffer.from(m[5]!, 'base64');
  if (expected.length < 16) return false;
  let key: Buffer;
  try {
    key = await derive(password, Buffer.from(m[4]!, 'base64'), { N, r, p }, expected.length);
  } catch {
    return false;
  }
  return timingSafeEqual(key, expected);
}

/**
 * Spends what a real verification spends, for a login name with no usable hash, so the reply time
 * does not tell whether the user exists.
 */
export async function burnPasswordCheck(password: string): Promise<void> {
  await derive(password, Buffer.alloc(SALT_BYTES), SCRYPT_PARAMS, KEY_BYTES);
}

const ALPHABET = 'ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz23456789';

/** A password of `length` characters from an unambiguous alphabet (no 0/O, 1/l/I). */
export function randomPassword(length = 16): string {
  let out = '';
  for (let i = 0; i < length; i++) out += ALPHABET[randomInt(ALPHABET.length)];
  return out;
}
