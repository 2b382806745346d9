// The per-connection box session against an independent implementation (tweetnacl).
import t from 'tap';
import nacl from 'tweetnacl';
import { BoxSession, e2eKeyPair, encodeStdBase64, sharedKeyFor } from '../../edges/index.js';

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
