import { randomBytes } from 'node:crypto';
import * as fsp from 'node:fs/promises';
import { join } from 'node:path';
import * as v from 'valibot';
import { SvcError } from '../../schemas/index.js';

/*
 * `<store_path>/credentials.json` (SPEC.md MatrixConfig): the session the first password login
 * made, kept so that svc logs in once and every later start is the same device — a new device per
 * start would leave the crypto store's keys behind and every room key sent to the old one unread.
 * It also holds the key the crypto store is encrypted with. Mode 0600 in a 0700 directory: it is a
 * login to the account.
 */

export const CREDENTIALS_FILE = 'credentials.json';
export const CRYPTO_FILE = 'crypto.bin';

export const MatrixCredentialsSchema = v.object({
  homeserver: v.string(),
  user_id: v.string(),
  access_token: v.pipe(v.string(), v.minLength(1)),
  device_id: v.pipe(v.string(), v.minLength(1)),
  /** 32 random bytes, base64: the crypto store's key (`initRustCrypto({storageKey})`). */
  store_key: v.pipe(v.string(), v.check((s) => Buffer.from(s, 'base64').length === 32, '32 bytes of base64')),
});
export type MatrixCredentials = v.InferOutput<typeof MatrixCredentialsSchema>;

export function newStoreKey(): string {
  return randomBytes(32).toString('base64');
}

/** The stored session, or null when there is none; one that cannot be read is an error naming the file. */
export async function readCredentials(dir: string): Promise<MatrixCredentials | null> {
  const file = join(dir, CREDENTIALS_FILE);
  let text: string;
  try {
    text = await fsp.readFile(file, 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw e;
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new SvcError('corrupt-file', `${file} is not JSON: remove it to log in again with matrix.password`);
  }
  const parsed = v.safeParse(MatrixCredentialsSchema, json);
  if (!parsed.success) throw new SvcError('corrupt-file', `${file} is not a Matrix session svc wrote (${parsed.issues[0].message}): remove it to log in again with matrix.password`);
  return parsed.output;
}

/** Written whole under a temporary name and renamed, so a crash never leaves half a login behind. */
export async function writeCredentials(dir: string, creds: MatrixCredentials): Promise<void> {
  await fsp.mkdir(dir, { recursive: true, mode: 0o700 });
  // A folder made by hand (or by an older copy) may be wider; it holds a login.
  await fsp.chmod(dir, 0o700);
  const file = join(dir, CREDENTIALS_FILE);
  const tmp = `${file}.tmp`;
  await fsp.writeFile(tmp, `${JSON.stringify(creds, null, 2)}\n`, { mode: 0o600 });
  await fsp.chmod(tmp, 0o600);
  await fsp.rename(tmp, file);
}

/** A session that can no longer be used (the token was revoked, the keys are lost): the next start logs in afresh. */
export async function forgetSession(dir: string): Promise<void> {
  await fsp.rm(join(dir, CREDENTIALS_FILE), { force: true });
  await fsp.rm(join(dir, CRYPTO_FILE), { force: true });
}
