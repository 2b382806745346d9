import { spawn } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import uWS from 'uWebSockets.js';
import { startDaemon } from '../bin/daemon.js';
import { BoxSession, e2eKeyPair, encodeStdBase64, sharedKeyFor } from '../edges/index.js';
import { homePaths } from '../store/index.js';

/*
 * A server in its own process, so its CPU and memory are measured without the clients' or the
 * coordinator's. `daemon HOME PATH_PREFIX [ENV_JSON]` boots svc with the direct API on an ephemeral
 * port; `echo` is a bare uWebSockets.js echo, the floor to compare against; `relay '' PATH_PREFIX
 * [ENV_JSON]` is a bare relay: the same key exchange and the same pure-JS secretbox as svc, and
 * nothing else (no token, no machines, no bus, no log): a message starts the fake CLI, each of its
 * text lines goes out as one sealed text_delta, its result as a result frame. Prints one JSON line
 * `{port, token}`, then answers a JSON line per command read from stdin:
 *   cpu   -> {user, system}        process.cpuUsage(), µs
 *   mem   -> {rss, heapUsed, ...}  after full collections (needs --expose-gc)
 *   stop  -> stops and exits
 */
const [mode, home, pathPrefix, envJson] = process.argv.slice(2);
const reply = (o: unknown) => process.stdout.write(JSON.stringify(o) + '\n');
let stop: () => Promise<void>;

if (mode === 'daemon') {
  mkdirSync(join(home!, 'config'), { recursive: true });
  const config = {
    api: { enabled: true, host: '127.0.0.1', port: 0 },
    memory: { enabled: false },
    // The latency runs hold 10 fake CLIs open at once; the default bound (8) would queue two.
    max_concurrent_cli: 16,
  };
  writeFileSync(join(home!, 'config', 'config.json'), JSON.stringify(config));
  const d = await startDaemon({
    paths: homePaths(home!),
    logToStderr: false,
    internalPort: 0,
    apiPort: 0,
    env: { PATH: `${pathPrefix}:${process.env.PATH}`, HOME: home!, ...(JSON.parse(envJson ?? '{}') as Record<string, string>) },
  });
  const token = JSON.parse(readFileSync(join(home!, 'config', 'config.json'), 'utf8')).api.token as string;
  stop = () => d.stop('bench');
  reply({ port: d.apiPort, token });
} else if (mode === 'relay') {
  const cliEnv = { ...process.env, ...(JSON.parse(envJson ?? '{}') as Record<string, string>) };
  type Conn = { session: BoxSession | null };
  const app = uWS.App().ws<Conn>('/*', {
    compression: uWS.DISABLED,
    upgrade: (res, req, ctx) =>
      res.upgrade({ session: null }, req.getHeader('sec-websocket-key'), req.getHeader('sec-websocket-protocol'), req.getHeader('sec-websocket-extensions'), ctx),
    message: (ws, msg) => {
      const conn = ws.getUserData();
      const text = Buffer.from(msg).toString('utf8');
      if (!conn.session) {
        const keys = e2eKeyPair();
        conn.session = new BoxSession(sharedKeyFor((JSON.parse(text) as { e2e_pk: string }).e2e_pk, keys.secretKey)!);
        ws.send(JSON.stringify({ type: 'auth_ok', e2e_pk: encodeStdBase64(keys.publicKey) }));
        return;
      }
      const session = conn.session;
      const frame = JSON.parse(Buffer.from(session.open(text)!.payload).toString('utf8')) as { type: string; text?: string };
      if (frame.type !== 'message') return;
      const cli = spawn(join(pathPrefix!, 'claude'), ['--', frame.text ?? ''], { env: cliEnv, stdio: ['ignore', 'pipe', 'inherit'] });
      const send = (o: object) => void ws.send(session.seal(Buffer.from(JSON.stringify(o))));
      createInterface({ input: cli.stdout }).on('line', (line) => {
        const event = JSON.parse(line) as { type: string; message?: { content: { type: string; text: string }[] } };
        if (event.type === 'assistant') for (const c of event.message!.content) send({ type: 'text_delta', data: c.text });
        else if (event.type === 'result') send({ type: 'result' });
      });
    },
  });
  const listen = await new Promise<uWS.us_listen_socket>((r) => app.listen('127.0.0.1', 0, (t) => r(t)));
  stop = async () => uWS.us_listen_socket_close(listen);
  reply({ port: uWS.us_socket_local_port(listen), token: '' });
} else {
  const app = uWS.App().ws('/*', { compression: uWS.DISABLED, message: (ws, msg, isBinary) => void ws.send(msg, isBinary) });
  const listen = await new Promise<uWS.us_listen_socket>((r) => app.listen('127.0.0.1', 0, (t) => r(t)));
  stop = async () => uWS.us_listen_socket_close(listen);
  reply({ port: uWS.us_socket_local_port(listen), token: '' });
}

const gc = (globalThis as { gc?: () => void }).gc;
for await (const line of createInterface({ input: process.stdin })) {
  if (line === 'cpu') reply(process.cpuUsage());
  else if (line === 'mem') {
    // Several passes: weak references and finalizers free more on later ones.
    for (let i = 0; i < 4; i++) gc?.();
    reply(process.memoryUsage());
  }
  else if (line === 'stop') break;
}
await stop();
process.exit(0);
