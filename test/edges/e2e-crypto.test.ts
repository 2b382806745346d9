// The per-connection box session and its keys against independent implementations: tweetnacl,
// and PyNaCl (libsodium) in a python3 child.
import { spawnSync } from 'node:child_process';
import t from 'tap';
import nacl from 'tweetnacl';
import { BoxSession, boxBefore, e2eKeyPair, encodeStdBase64, sharedKeyFor } from '../../edges/index.js';

function pair() {
  const client = nacl.box.keyPair();
  const server = e2eKeyPair();
  const key = sharedKeyFor(encodeStdBase64(client.publicKey), server.secretKey)!;
  return { session: new BoxSession(key), clientShared: nacl.box.before(server.publicKey, client.secretKey) };
}

const unpack = (frame: string) => {
  const raw = Buffer.from(frame, 'base64');
  return { nonce: raw.subarray(0, 24), box: raw.subarray(24) };
};

await t.test('server frames open with the client key; nonces share a random prefix and count up, carrying across bytes', async (t) => {
  const { session, clientShared } = pair();
  const nonces: Buffer[] = [];
  for (let i = 0; i < 300; i++) {
    const { nonce, box } = unpack(session.seal(Buffer.from(`frame ${i}`)));
    t.equal(Buffer.from(nacl.box.open.after(box, nonce, clientShared)!).toString(), `frame ${i}`);
    nonces.push(Buffer.from(nonce));
  }
  t.ok(nonces.every((n) => n.subarray(0, 16).equals(nonces[0]!.subarray(0, 16))), 'one prefix per connection');
  t.same(nonces.map((n) => Number(n.readBigUInt64BE(16))), Array.from({ length: 300 }, (_, i) => i), 'a big-endian counter from 0, past 255');
  t.not(pair().session.seal(Buffer.from('x')).slice(0, 20), session.seal(Buffer.from('x')).slice(0, 20), 'prefixes differ between connections');
});

await t.test('client frames open; reflected, tampered, short and non-base64 frames do not', async (t) => {
  const { session, clientShared } = pair();
  const nonce = nacl.randomBytes(24);
  const good = Buffer.concat([nonce, nacl.box.after(Buffer.from('{"type":"abort"}'), nonce, clientShared)]).toString('base64');
  const opened = session.open(good)!;
  t.equal(Buffer.from(opened.payload).toString(), '{"type":"abort"}');
  t.equal(opened.nonceKey, Buffer.from(nonce).toString('latin1'));
  t.equal(session.open(session.seal(Buffer.from('{"type":"abort"}'))), null, 'our own frame echoed back');
  const tampered = Buffer.from(good, 'base64');
  tampered[30]! ^= 1;
  t.equal(session.open(tampered.toString('base64')), null);
  t.equal(session.open(Buffer.alloc(39).toString('base64')), null, 'shorter than nonce + tag');
  t.equal(session.open(good.replace(/=*$/, '')), null, 'unpadded');
  t.equal(session.open(`${good.slice(0, 8)}\n${good.slice(8)}`), null, 'whitespace');
});

await t.test('keys are interchangeable with tweetnacl: the same public key from a secret, the same box.before both ways', async (t) => {
  for (let i = 0; i < 20; i++) {
    const server = e2eKeyPair();
    const client = nacl.box.keyPair();
    t.same(Buffer.from(server.publicKey), Buffer.from(nacl.box.keyPair.fromSecretKey(server.secretKey).publicKey), 'our public key is tweetnacl’s for our secret');
    const ours = sharedKeyFor(encodeStdBase64(client.publicKey), server.secretKey)!;
    t.same(Buffer.from(ours), Buffer.from(nacl.box.before(client.publicKey, server.secretKey)), 'our box.before equals tweetnacl’s on our side');
    t.same(Buffer.from(ours), Buffer.from(nacl.box.before(server.publicKey, client.secretKey)), 'and the client’s on its side');
    t.same(Buffer.from(boxBefore(server.publicKey, client.secretKey)), Buffer.from(ours), 'tweetnacl keys work in ours');
  }
});

await t.test('a low-order or malformed peer key gives no session', async (t) => {
  const { secretKey } = e2eKeyPair();
  const p = 2n ** 255n - 19n;
  const le = (n: bigint) => Buffer.from(n.toString(16).padStart(64, '0'), 'hex').reverse();
  const lowOrder = [0n, 1n, p - 1n, 325606250916557431795983626356110631294008115727848805560023387167927233504n, 39382357235489614581723060781553021112529911719440698176882885853963445705823n];
  for (const u of lowOrder) t.equal(sharedKeyFor(encodeStdBase64(le(u)), secretKey), null, `u = ${u}`);
  t.equal(sharedKeyFor(encodeStdBase64(Buffer.alloc(31, 9)), secretKey), null, '31 bytes');
  t.equal(sharedKeyFor(Buffer.alloc(32, 9).toString('base64url'), secretKey), null, 'url-safe base64');
  t.equal(sharedKeyFor(42, secretKey), null, 'not a string');
  t.ok(sharedKeyFor(encodeStdBase64(Buffer.alloc(32, 9)), secretKey), 'the base point itself is fine');
});

/*
 * PyNaCl is libsodium underneath: a second implementation in another language, as a Python client
 * of the direct API would use it. Its keys are made by PyNaCl, ours by svc; each side opens what
 * the other sealed and both arrive at the same box key.
 */
const PY = String.raw`
import sys, json, base64
from nacl.public import PrivateKey, PublicKey, Box
b64, unb64 = (lambda b: base64.b64encode(bytes(b)).decode()), base64.b64decode
req = json.load(sys.stdin)
if req['op'] == 'keys':
    k = PrivateKey.generate()
    out = {'sk': b64(k), 'pk': b64(k.public_key)}
else:
    box = Box(PrivateKey(unb64(req['sk'])), PublicKey(unb64(req['server_pk'])))
    out = {
        'shared': b64(box.shared_key()),
        'opened': [box.decrypt(unb64(f)).decode() for f in req['frames']],
        'sealed': [b64(box.encrypt(m.encode())) for m in req['messages']],
    }
print(json.dumps(out))
`;

/** The first python3 that has PyNaCl: the one on PATH, else Debian's, where `apt install python3-nacl` puts it. */
const pythonWithNacl = ['python3', '/usr/bin/python3'].find((py) => spawnSync(py, ['-c', 'import nacl.public']).status === 0);
const pynaclMissing = pythonWithNacl ? null : 'no python3 with PyNaCl (on Debian: apt install python3-nacl)';

function python(req: object): unknown {
  const r = spawnSync(pythonWithNacl!, ['-c', PY], { input: JSON.stringify(req), encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`python3 failed: ${r.stderr || r.error}`);
  return JSON.parse(r.stdout);
}

await t.test('keys and boxes are interchangeable with PyNaCl in both directions', pynaclMissing ? { skip: pynaclMissing } : {}, async (t) => {
  const client = python({ op: 'keys' }) as { sk: string; pk: string };
  const server = e2eKeyPair();
  const key = sharedKeyFor(client.pk, server.secretKey)!;
  t.ok(key, 'PyNaCl’s public key is accepted');
  const session = new BoxSession(key);
  const fromSvc = ['{"type":"hello"}', 'grüße ✓', ''].map((m) => session.seal(Buffer.from(m)));
  const messages = ['{"type":"abort"}', 'zweite Nachricht'];
  const got = python({ op: 'talk', sk: client.sk, server_pk: encodeStdBase64(server.publicKey), frames: fromSvc, messages }) as { shared: string; opened: string[]; sealed: string[] };
  t.equal(got.shared, encodeStdBase64(key), 'PyNaCl’s Box.shared_key() is our box key');
  t.same(got.opened, ['{"type":"hello"}', 'grüße ✓', ''], 'PyNaCl opens what svc sealed');
  t.same(got.sealed.map((f) => Buffer.from(session.open(f)!.payload).toString()), messages, 'svc opens what PyNaCl sealed');
  const tampered = Buffer.from(got.sealed[0]!, 'base64');
  tampered[tampered.length - 1]! ^= 1;
  t.equal(session.open(tampered.toString('base64')), null, 'a PyNaCl frame altered by one bit does not open');
});
