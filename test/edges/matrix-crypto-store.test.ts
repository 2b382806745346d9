// A Matrix bot that forgets its device keys on restart cannot read anything sent to it afterwards: these tests run
// the real matrix-js-sdk and its Rust crypto against the fake homeserver and restart a bot from its store's file.
import t, { type Test } from 'tap';
import { mkdir, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { serialize } from 'node:v8';
import { MsgType, type LoginResponse, type MatrixClient } from 'matrix-js-sdk';
import { MatrixCryptoStore } from '../../edges/matrix/index.js';
import { startFakeMatrix, unrefSdkRequestTimers, type FakeMatrix } from '../fixtures/fake-matrix.js';
import { clientFor, knowEachOther, loginRequest, quietSdkConsole, roomMessage, startMatrixClient, syncClient } from '../fixtures/matrix-client.js';

// As in fake-matrix.test.ts: thousands of debug lines from the SDK and the Rust core would bury a failure.
t.teardown(quietSdkConsole());
t.teardown(unrefSdkRequestTimers());

/** A bot client (a new device when `creds` is new, the same device again otherwise) whose crypto lives in `store`. */
async function bot(fake: FakeMatrix, creds: LoginResponse, store: MatrixCryptoStore, key: Uint8Array): Promise<MatrixClient> {
  const client = clientFor(fake, creds);
  await store.initCrypto(client, key);
  return syncClient(client);
}

/** A message in the room's live timeline once decrypted (already there or still to come). */
const decrypted = (client: MatrixClient, roomId: string, eventId: string, what: string) => roomMessage(client, roomId, (e) => e.getId() === eventId, what);

const send = async (client: MatrixClient, roomId: string, body: string) => (await client.sendMessage(roomId, { msgtype: MsgType.Text, body })).event_id;

const deviceKeyUploads = (fake: FakeMatrix, userId: string) =>
  fake.requests.filter((r) => r.path.endsWith('/keys/upload') && r.userId === userId && !!(r.body as { device_keys?: unknown } | undefined)?.device_keys).length;

async function tempDir(t: Test): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'svc-mx-crypto-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

await t.test('a bot restarted from its store file is the same device and reads what was sent while it was down', async (t) => {
  const t0 = Date.now();
  const fake = await startFakeMatrix();
  const clients: MatrixClient[] = [];
  t.teardown(async () => {
    for (const c of clients) c.stopClient();
    await fake.close();
  });
  const alice = fake.registerUser('alice', 'alice-pw');
  const botId = fake.registerUser('bot', 'bot-pw');
  const roomId = fake.createRoom(alice, { encrypted: true, members: [alice, botId] });
  const dir = await tempDir(t);
  // The directory does not exist yet: the store makes it, private.
  const file = join(dir, 'matrix', 'crypto.bin');
  const key = new Uint8Array(randomBytes(32));
  const creds = await loginRequest(fake, 'bot', 'bot-pw');

  const store1 = await MatrixCryptoStore.open(file, { saveDelayMs: 20 });
  // A failed assertion must not leave a store open: the globals check in the next test would fail along with it.
  t.teardown(() => store1.close().catch(() => undefined));
  const bot1 = await bot(fake, creds, store1, key);
  const a = await startMatrixClient(fake, 'alice', 'alice-pw');
  clients.push(bot1, a);
  await knowEachOther(a, bot1);
  const keysBefore = await bot1.getCrypto()!.getOwnDeviceKeys();
  const first = await send(a, roomId, 'hello bot, before your restart');
  t.equal((await decrypted(bot1, roomId, first, 'the bot to read alice\'s first message')).getContent().body, 'hello bot, before your restart');

  bot1.stopClient();
  store1.saveSoon();
  await store1.close();

  // A fresh room key too, so reading it takes the Olm account and session that only the file can bring back.
  await a.getCrypto()!.forceDiscardSession(roomId);
  const whileDown = await send(a, roomId, 'sent while the bot was down: marmalade');

  const store2 = await MatrixCryptoStore.open(file, { saveDelayMs: 20 });
  t.teardown(() => store2.close().catch(() => undefined));
  const bot2 = await bot(fake, creds, store2, key);
  clients.push(bot2);
  const down = await decrypted(bot2, roomId, whileDown, 'the restarted bot to read what came while it was down');
  t.equal(down.getContent().body, 'sent while the bot was down: marmalade');
  t.ok(down.isEncrypted(), 'it came encrypted');
  const later = await send(a, roomId, 'and one after the restart');
  t.equal((await decrypted(bot2, roomId, later, 'the restarted bot to read a later message')).getContent().body, 'and one after the restart');
  t.same(await bot2.getCrypto()!.getOwnDeviceKeys(), keysBefore, 'the same identity keys after the restart');
  t.equal(bot2.getDeviceId(), creds.device_id);
  t.equal(deviceKeyUploads(fake, botId), 1, 'device keys were uploaded once in all: peers saw no change');

  const reply = await send(bot2, roomId, 'the bot answers after its restart');
  t.equal((await decrypted(a, roomId, reply, 'alice to read the bot\'s reply')).getContent().body, 'the bot answers after its restart');

  bot2.stopClient();
  store2.saveSoon();
  await store2.close();
  t.equal((await stat(file)).mode & 0o777, 0o600, 'the file is the owner\'s alone');
  t.equal((await stat(join(dir, 'matrix'))).mode & 0o777, 0o700, 'and so is its directory');
  const bytes = await readFile(file);
  t.ok(bytes.length > 1000, `the snapshot holds the store (${bytes.length} bytes)`);
  for (const secret of ['marmalade', 'before your restart', 'the bot answers', roomId, keysBefore.ed25519, keysBefore.curve25519]) {
    t.notOk(bytes.includes(secret), `the file does not contain ${JSON.stringify(secret)}`);
  }
  t.comment(`restart scenario in ${Date.now() - t0} ms`);
});

await t.test('a snapshot that cannot be read is refused, naming the file', async (t) => {
  const dir = await tempDir(t);
  const garbage = join(dir, 'garbage.bin');
  await writeFile(garbage, 'this is not a v8 serialization');
  await t.rejects(MatrixCryptoStore.open(garbage), { code: 'corrupt-file', message: new RegExp(`${garbage.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}.*not readable`) });
  const other = join(dir, 'other.bin');
  await writeFile(other, serialize({ something: 'else' }));
  await t.rejects(MatrixCryptoStore.open(other), { code: 'corrupt-file', message: new RegExp(`${other.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}.*not a crypto snapshot`) });
});

await t.test('two bots in one process keep separate stores; the IndexedDB globals are only borrowed', async (t) => {
  const t0 = Date.now();
  const fake = await startFakeMatrix();
  const clients: MatrixClient[] = [];
  t.teardown(async () => {
    for (const c of clients) c.stopClient();
    await fake.close();
  });
  const alice = fake.registerUser('alice', 'alice-pw');
  const ids = [fake.registerUser('main-bot', 'pw-1'), fake.registerUser('sub-bot', 'pw-2')] as const;
  const rooms = ids.map((id) => fake.createRoom(alice, { encrypted: true, members: [alice, id] }));
  const dir = await tempDir(t);
  const files = [join(dir, 'main.bin'), join(dir, 'sub.bin')];
  const keys = [new Uint8Array(randomBytes(32)), new Uint8Array(randomBytes(32))];
  const creds = await Promise.all([loginRequest(fake, 'main-bot', 'pw-1'), loginRequest(fake, 'sub-bot', 'pw-2')]);

  t.equal((globalThis as { indexedDB?: unknown }).indexedDB, undefined, 'Node has no indexedDB of its own');
  const stores = await Promise.all(files.map((f) => MatrixCryptoStore.open(f)));
  t.teardown(() => Promise.all(stores.map((s) => s.close().catch(() => undefined))));
  // Both at once: the inits queue for the globals rather than each finding the other's factory.
  const bots = await Promise.all([0, 1].map((i) => bot(fake, creds[i]!, stores[i]!, keys[i]!)));
  clients.push(...bots);
  t.notOk('indexedDB' in globalThis, 'indexedDB is gone again after the inits');
  t.equal(typeof (globalThis as { IDBKeyRange?: unknown }).IDBKeyRange, 'function', 'IDBKeyRange stays while a store is in use: the wasm glue names it on ranged reads');

  const a = await startMatrixClient(fake, 'alice', 'alice-pw');
  clients.push(a);
  await Promise.all(bots.map((b) => knowEachOther(a, b)));
  const identities = await Promise.all(bots.map((b) => b.getCrypto()!.getOwnDeviceKeys()));
  t.not(identities[0]!.ed25519, identities[1]!.ed25519, 'two devices, two identities');
  const sent = await Promise.all([0, 1].map((i) => send(a, rooms[i]!, `for bot ${i}`)));
  for (const i of [0, 1]) {
    t.equal((await decrypted(bots[i]!, rooms[i]!, sent[i]!, `bot ${i} to read its message`)).getContent().body, `for bot ${i}`);
  }

  for (const b of bots) b.stopClient();
  await Promise.all(stores.map(async (s) => (await s.save(), s.close())));
  t.equal((globalThis as { IDBKeyRange?: unknown }).IDBKeyRange, undefined, 'IDBKeyRange is gone once the last store closed');

  // Each file holds its own device: written after init through each store's own connection, not a borrowed global.
  for (const i of [0, 1]) {
    const store = await MatrixCryptoStore.open(files[i]!);
    t.teardown(() => store.close().catch(() => undefined));
    const again = await bot(fake, creds[i]!, store, keys[i]!);
    clients.push(again);
    t.same(await again.getCrypto()!.getOwnDeviceKeys(), identities[i], `bot ${i} is itself again`);
    t.equal((await decrypted(again, rooms[i]!, sent[i]!, `bot ${i} to read its message again from the stored room key`)).getContent().body, `for bot ${i}`);
    again.stopClient();
    await store.close();
  }
  t.equal(deviceKeyUploads(fake, ids[0]) + deviceKeyUploads(fake, ids[1]), 2, 'each bot uploaded its device keys once');
  t.comment(`two-bot scenario in ${Date.now() - t0} ms`);
});

await t.test('concurrent saves coalesce and each leaves a whole file', async (t) => {
  const dir = await tempDir(t);
  const file = join(dir, 'empty.bin');
  const store = await MatrixCryptoStore.open(file, { saveDelayMs: 10 });
  const saves = [store.save(), store.save(), store.save()];
  t.equal(saves[1], saves[2], 'calls during a write share the one write after it');
  t.not(saves[0], saves[1]);
  await Promise.all(saves);
  store.saveSoon();
  await store.close();
  const reopened = await MatrixCryptoStore.open(file);
  await reopened.close();
  t.equal((await stat(file)).mode & 0o777, 0o600);
  await t.rejects(stat(`${file}.tmp`), { code: 'ENOENT' }, 'no temporary file left behind');
});

await t.test('close says when the file is not up to date: a failed write is kept until one succeeds', async (t) => {
  const dir = await tempDir(t);
  const lost = await MatrixCryptoStore.open(join(dir, 'a', 'crypto.bin'));
  const healed = await MatrixCryptoStore.open(join(dir, 'b', 'crypto.bin'));
  await rm(join(dir, 'a'), { recursive: true });
  await rm(join(dir, 'b'), { recursive: true });
  await t.rejects(lost.save(), { code: 'ENOENT' });
  await t.rejects(healed.save(), { code: 'ENOENT' });
  await t.rejects(lost.close(), { code: 'ENOENT' }, 'nothing was written since the failure');
  await mkdir(join(dir, 'b'));
  await healed.save();
  await t.resolves(healed.close(), 'a later write made up for it');
});
