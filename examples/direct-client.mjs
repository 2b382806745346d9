#!/usr/bin/env node
// A minimal client of svc's end-to-end-encrypted direct API (WIRE.md §1), using only `ws` and `tweetnacl`.
//
//   SVC_API_TOKEN=<api.token> node examples/direct-client.mjs [--url ws://127.0.0.1:8741/ws] [--chat N] [--channel N] "your message"
//
// Prints the streamed answer; Ctrl-C once sends an abort, twice quits at once.
import WebSocket from 'ws';
import nacl from 'tweetnacl';

const args = process.argv.slice(2);
const opts = { url: process.env.SVC_API_URL ?? 'ws://127.0.0.1:8741/ws', token: process.env.SVC_API_TOKEN ?? '' };
const words = [];
for (let i = 0; i < args.length; i++) {
  const a = args[i];
  if (a === '--url' || a === '--token' || a === '--chat' || a === '--channel') opts[a.slice(2)] = args[++i];
  else words.push(a);
}
const text = words.join(' ');
if (!opts.token || !text) {
  console.error('usage: SVC_API_TOKEN=<token> node examples/direct-client.mjs [--url URL] [--chat N] [--channel N] <message>');
  process.exit(2);
}

const keys = nacl.box.keyPair();
let shared = null; // box.before(server key, our secret): computed once, used for every frame
let streamed = false;

const seal = (obj) => {
  const nonce = nacl.randomBytes(nacl.box.nonceLength);
  const box = nacl.box.after(Buffer.from(JSON.stringify(obj), 'utf8'), nonce, shared);
  return Buffer.concat([nonce, box]).toString('base64');
};
const open = (text) => {
  const raw = Buffer.from(text, 'base64');
  const plain = nacl.box.open.after(raw.subarray(24), raw.subarray(0, 24), shared);
  if (!plain) throw new Error('a server frame did not decrypt');
  return JSON.parse(Buffer.from(plain).toString('utf8'));
};

const ws = new WebSocket(opts.url);
ws.on('open', () => {
  const auth = { type: 'auth', token: opts.token, e2e_pk: Buffer.from(keys.publicKey).toString('base64') };
  if (opts.chat) auth.chat_id = Number(opts.chat);
  if (opts.channel) auth.channel_id = Number(opts.channel);
  ws.send(JSON.stringify(auth)); // the only plaintext frame we send
});

ws.on('message', (data) => {
  if (!shared) {
    const frame = JSON.parse(data.toString());
    if (frame.type !== 'auth_ok') {
      console.error(`refused: ${frame.code}: ${frame.message}`);
      return;
    }
    shared = nacl.box.before(Buffer.from(frame.e2e_pk, 'base64'), keys.secretKey);
    console.error(`[connected: chat ${frame.chat_id}${frame.channel_id ? ` channel ${frame.channel_id}` : ''}, ${frame.active_provider}/${frame.active_model}]`);
    ws.send(seal({ type: 'message', text }));
    return;
  }
  const f = open(data.toString());
  switch (f.type) {
    case 'text_delta':
      streamed = true;
      process.stdout.write(f.data);
      break;
    case 'tool_activity':
      console.error(`\n[tool: ${f.data}]`);
      break;
    case 'system_status':
      if (f.data) console.error(`[${f.data}]`);
      break;
    case 'result':
      process.stdout.write(streamed ? '\n' : `${f.text}\n`);
      for (const file of f.files ?? []) console.error(`[file: ${file.path}${file.is_image ? ' (image)' : ''}]`);
      ws.close();
      break;
    case 'abort_ok':
      console.error(`\n[aborted: ${f.killed} process(es) stopped]`);
      break;
    case 'notification':
      console.error(`\n[notification] ${f.notification.title}: ${f.notification.body}`);
      break;
    case 'error':
      console.error(`\n[error ${f.code}] ${f.message}`);
      if (f.code !== 'decrypt_failed') ws.close();
      break;
  }
});

let interrupted = false;
process.on('SIGINT', () => {
  if (interrupted || !shared) process.exit(130);
  interrupted = true;
  console.error('\n[sending abort; Ctrl-C again to quit]');
  ws.send(seal({ type: 'abort' }));
});

ws.on('close', (code, reason) => {
  if (code !== 1000 && code !== 1005) console.error(`[closed ${code} ${reason}]`);
  process.exit(code === 1000 || code === 1005 ? 0 : 1);
});
ws.on('error', (e) => {
  console.error(`[connection error: ${e.message}]`);
  process.exit(1);
});
