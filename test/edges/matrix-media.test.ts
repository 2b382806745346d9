// Matrix attachments against the fake homeserver with a real SDK client: what reaches the server for an
// encrypted room is ciphertext only, what comes back is byte-identical, and every refusal (too large by
// declaration or by bytes, tampered ciphertext) leaves nothing in the destination.
import t from 'tap';
import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, readdirSync, truncateSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { MatrixClient } from 'matrix-js-sdk';
import { datedUploadFolder } from '../../edges/index.js';
import { downloadMedia, mediaOf, uploadFile, type EncryptedFile, type MatrixMedia } from '../../edges/matrix/matrix-media.js';
import { startFakeMatrix, unrefSdkRequestTimers } from '../fixtures/fake-matrix.js';
import { clientFor, loginRequest } from '../fixtures/matrix-client.js';

t.teardown(unrefSdkRequestTimers());

const fake = await startFakeMatrix();
t.teardown(() => fake.close());
fake.registerUser('bot', 'pw');
// Media need no sync and no crypto machine: a logged-in client is enough.
const creds = await loginRequest(fake, 'bot', 'pw');
const client: MatrixClient = clientFor(fake, creds);

const scratch = t.testdir();
/** A fresh destination per case, so "nothing left behind" is one directory listing. */
let n = 0;
function destination() {
  const base = join(scratch, `dest-${++n}`);
  mkdirSync(base);
  return { base, dest: datedUploadFolder(base, '2026-11-28'), left: () => readdirSync(base, { recursive: true }) };
}
const PLAIN = Buffer.concat([Buffer.from('the secret plan: '), randomBytes(4000)]);
const source = join(scratch, 'plan.pdf');
writeFileSync(source, PLAIN);

const downloads = () => fake.requests.filter((r) => r.path.includes('/media/download/')).length;
const mediaOrFail = (content: unknown): MatrixMedia => {
  const m = mediaOf(content);
  if (!m) throw new Error(`mediaOf refused ${JSON.stringify(content)}`);
  return m;
};

await t.test('a plain upload comes back byte-identical, fetched from the authenticated endpoint', async (t) => {
  const content = await uploadFile(client, source, { encrypted: false, isImage: false, name: 'plan.pdf' });
  t.match(content, { msgtype: 'm.file', body: 'plan.pdf', info: { mimetype: 'application/pdf', size: PLAIN.length }, url: /^mxc:\/\/localhost\// });
  const media = mediaOrFail(content);
  t.match(media, { kind: 'document', name: 'plan.pdf', size: PLAIN.length, mime: 'application/pdf' });
  const { dest } = destination();
  const path = await downloadMedia(client, media, dest);
  t.ok(readFileSync(path).equals(PLAIN));
  const last = fake.requests.filter((r) => r.path.includes('/media/download/')).at(-1)!;
  t.match(last, { path: /^\/_matrix\/client\/v1\/media\/download\//, userId: creds.user_id, status: 200 });
});

await t.test('an encrypted upload leaves only ciphertext on the server and decrypts to the original', async (t) => {
  const content = await uploadFile(client, source, { encrypted: true, isImage: true, name: 'plan.png' });
  t.match(content, { msgtype: 'm.image', body: 'plan.png', info: { mimetype: 'image/png', size: PLAIN.length }, file: { v: 'v2', url: /^mxc:/ } });
  t.notOk('url' in content, 'no plain url beside the encrypted file');
  const media = mediaOrFail(content);
  t.equal(media.kind, 'photo');
  const file = (media.source as { file: EncryptedFile }).file;

  const upload = fake.requests.filter((r) => r.path.includes('/media/') && r.method === 'POST').at(-1)!;
  t.notOk(upload.query.filename, 'the file name is not sent to the server');
  const stored = Buffer.from(await (await fetch(client.mxcUrlToHttp(file.url)!)).arrayBuffer());
  t.equal(stored.length, PLAIN.length, 'AES-CTR keeps the length');
  t.notOk(stored.equals(PLAIN), 'the server holds other bytes');
  t.equal(stored.indexOf('the secret plan'), -1, 'no plaintext in what the server holds');
  t.equal(stored.indexOf(PLAIN.subarray(100, 132)), -1, 'not even a slice of it');

  const { dest } = destination();
  t.ok(readFileSync(await downloadMedia(client, media, dest)).equals(PLAIN));
});

await t.test('a ciphertext that does not match its hash is refused and leaves nothing', async (t) => {
  const content = await uploadFile(client, source, { encrypted: true, isImage: false, name: 'plan.pdf' });
  const file = (content as { file: EncryptedFile }).file;
  const tampered = { ...content, file: { ...file, hashes: { sha256: Buffer.alloc(32, 7).toString('base64').replace(/=+$/, '') } } };
  const { dest, left } = destination();
  await t.rejects(downloadMedia(client, mediaOrFail(tampered), dest), { name: 'SvcError', code: 'corrupt-file', message: /sha256/ });
  t.same(left(), []);
});

await t.test('a declared size over the cap is refused before anything is fetched', async (t) => {
  const content = await uploadFile(client, source, { encrypted: false, isImage: false, name: 'plan.pdf' });
  const before = downloads();
  const { dest, left } = destination();
  await t.rejects(downloadMedia(client, mediaOrFail(content), dest, 1000), { code: 'file-too-large', message: /4017 bytes/ });
  t.equal(downloads(), before, 'no download request');
  t.same(left(), []);
});

await t.test('bytes beyond the cap are refused whatever the message declared, and leave nothing', async (t) => {
  for (const encrypted of [false, true]) {
    const content = await uploadFile(client, source, { encrypted, isImage: false, name: 'plan.pdf' });
    for (const info of [{ size: 10 }, undefined]) {
      const { dest, left } = destination();
      const what = `${encrypted ? 'encrypted' : 'plain'}, info ${JSON.stringify(info)}`;
      await t.rejects(downloadMedia(client, mediaOrFail({ ...content, info }), dest, 1000), { code: 'file-too-large' }, what);
      t.same(left(), [], what);
    }
  }
});

await t.test('uploads are refused beyond the limit and for a missing file', async (t) => {
  const big = join(scratch, 'big.bin');
  writeFileSync(big, '');
  // Sparse: the size is what counts, and it is refused before a byte is read.
  truncateSync(big, 50 * 1024 * 1024 + 1);
  await t.rejects(uploadFile(client, big, { encrypted: true, isImage: false, name: 'big.bin' }), { code: 'file-too-large' });
  await t.rejects(uploadFile(client, join(scratch, 'absent'), { encrypted: false, isImage: false, name: 'absent' }), { code: 'file-missing' });
});

await t.test('mediaOf: kinds, voice and names', async (t) => {
  const url = 'mxc://example.org/abc_DEF-1';
  t.match(mediaOf({ msgtype: 'm.image', body: 'cat.jpg', url, info: { mimetype: 'image/jpeg', size: 5 } }), { kind: 'photo', name: 'cat.jpg', size: 5, mime: 'image/jpeg', source: { url } });
  t.match(mediaOf({ msgtype: 'm.video', body: 'clip.mp4', url }), { kind: 'video', size: null, mime: null });
  t.match(mediaOf({ msgtype: 'm.file', body: 'a caption', filename: 'report.pdf', url }), { kind: 'document', name: 'report.pdf' }, 'filename over a caption body');
  t.match(mediaOf({ msgtype: 'm.audio', body: 'song.mp3', url }), { kind: 'audio', name: 'song.mp3' });
  const voice = { msgtype: 'm.audio', body: 'Voice message', url, info: { mimetype: 'audio/ogg' } };
  t.match(mediaOf({ ...voice, 'org.matrix.msc3245.voice': {} }), { kind: 'voice', name: /^voice\.og/ });
  t.match(mediaOf({ ...voice, 'org.matrix.msc1767.audio': { duration: 3000 } }), { kind: 'voice' });
  t.match(mediaOf(voice), { kind: 'audio', name: 'Voice message' });
  t.match(mediaOf({ msgtype: 'm.image', body: ' ', url }), { name: 'photo.bin' }, 'a blank name gets one');
});

await t.test('mediaOf: malformed contents are null, never a throw', async (t) => {
  const url = 'mxc://example.org/abc';
  const file: EncryptedFile = {
    url,
    key: { kty: 'oct', alg: 'A256CTR', k: Buffer.alloc(32).toString('base64url'), key_ops: ['encrypt', 'decrypt'], ext: true },
    iv: Buffer.alloc(16).toString('base64').replace(/=+$/, ''),
    hashes: { sha256: Buffer.alloc(32).toString('base64').replace(/=+$/, '') },
    v: 'v2',
  };
  t.ok(mediaOf({ msgtype: 'm.file', body: 'f', file }), 'the well-formed baseline');
  const bad: [string, unknown][] = [
    ['not an object', 'mxc://example.org/abc'],
    ['null', null],
    ['text message', { msgtype: 'm.text', body: 'hi' }],
    ['missing url', { msgtype: 'm.file', body: 'f' }],
    ['http url', { msgtype: 'm.file', body: 'f', url: 'http://example.org/abc' }],
    ['mxc with a path', { msgtype: 'm.file', body: 'f', url: 'mxc://example.org/a/../b' }],
    ['body a number', { msgtype: 'm.file', body: 7, url }],
    ['size a string', { msgtype: 'm.file', body: 'f', url, info: { size: '5' } }],
    ['negative size', { msgtype: 'm.file', body: 'f', url, info: { size: -1 } }],
    ['mimetype not a type', { msgtype: 'm.file', body: 'f', url, info: { mimetype: 'x' } }],
    ['wrong kty', { msgtype: 'm.file', body: 'f', file: { ...file, key: { ...file.key, kty: 'RSA' } } }],
    ['short key', { msgtype: 'm.file', body: 'f', file: { ...file, key: { ...file.key, k: 'AAAA' } } }],
    ['no key_ops', { msgtype: 'm.file', body: 'f', file: { ...file, key: { ...file.key, key_ops: undefined } } }],
    ['no decrypt op', { msgtype: 'm.file', body: 'f', file: { ...file, key: { ...file.key, key_ops: ['encrypt'] } } }],
    ['iv of 8 bytes', { msgtype: 'm.file', body: 'f', file: { ...file, iv: 'AAAAAAAAAAA' } }],
    ['no hash', { msgtype: 'm.file', body: 'f', file: { ...file, hashes: {} } }],
    ['v1', { msgtype: 'm.file', body: 'f', file: { ...file, v: 'v1' } }],
    ['file url http', { msgtype: 'm.file', body: 'f', file: { ...file, url: 'https://example.org/abc' } }],
    ['a broken file beside a url', { msgtype: 'm.file', body: 'f', url, file: { ...file, iv: 1 } }],
  ];
  for (const [why, content] of bad) t.equal(mediaOf(content), null, why);
});
