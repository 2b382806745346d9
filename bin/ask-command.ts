import * as fs from 'node:fs';
import { request, type IncomingMessage } from 'node:http';
import { SvcError, describeError, type TurnOutcome } from '../schemas/index.js';
import { readMainAgentToken, type HomePaths } from '../store/index.js';
import { parse } from './cli-args.js';

const USAGE = `usage: svc ask [--agent NAME] [--chat N] [--new] "message"
       svc ask [--agent NAME] [--chat N] [--new] -      (message read from stdin)

Sends one message to a running svc (the main agent unless --agent) and streams the answer:
text to stdout, tool activity and status to stderr. --new starts a fresh session first.
Exit 0 when the turn completed, 1 when it failed, timed out or was aborted.`;

const DEFAULT_INTERAGENT_PORT = 8799;

export interface AskIo {
  stdin: NodeJS.ReadableStream;
  stdout: NodeJS.WritableStream & { isTTY?: boolean };
  stderr: NodeJS.WritableStream & { isTTY?: boolean };
}

/** Reads `interagent_port` without loadConfig: asking must never create or rewrite the config. */
function interagentPort(paths: HomePaths): number {
  let raw: unknown;
  try {
    raw = JSON.parse(fs.readFileSync(paths.configFile, 'utf8'));
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return DEFAULT_INTERAGENT_PORT;
    throw new SvcError('config-invalid', `${paths.configFile}: cannot read it (${describeError(e)})`);
  }
  const port = raw && typeof raw === 'object' ? (raw as { interagent_port?: unknown }).interagent_port : undefined;
  if (port === undefined || port === null) return DEFAULT_INTERAGENT_PORT;
  if (typeof port !== 'number' || !Number.isInteger(port) || port < 1 || port > 65535) {
    throw new SvcError('config-invalid', `${paths.configFile}: interagent_port = ${JSON.stringify(port)} is not a port number (1-65535)`);
  }
  return port;
}

async function readAll(stream: NodeJS.ReadableStream): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of stream) chunks.push(typeof c === 'string' ? Buffer.from(c) : (c as Buffer));
  return Buffer.concat(chunks).toString('utf8');
}

type Line =
  | { type: 'text_delta'; text: string }
  | { type: 'tool_activity'; tool: string }
  | { type: 'system_status'; status: string | null }
  | ({ type: 'result' } & TurnOutcome)
  | { type: 'error'; error: string; code?: string };

/** `svc ask`: one turn through the internal API, authenticated with the main agent token. */
export async function askCommand(args: string[], paths: HomePaths, io: AskIo = process): Promise<number> {
  const { values, positionals } = parse(
    args,
    { agent: { type: 'string', short: 'a' }, chat: { type: 'string', short: 'c' }, new: { type: 'boolean', short: 'n' } },
    USAGE,
  );
  if (values.help) {
    io.stdout.write(USAGE + '\n');
    return 0;
  }
  if (positionals.length === 0) throw new SvcError('usage', `no message given\n${USAGE}`);
  let chatId: number | undefined;
  if (values.chat !== undefined) {
    if (!/^-?\d{1,16}$/.test(values.chat)) throw new SvcError('usage', `--chat ${values.chat}: expected a whole number (chat id)`);
    chatId = Number(values.chat);
  }
  const text = positionals.length === 1 && positionals[0] === '-' ? await readAll(io.stdin) : positionals.join(' ');
  if (text.trim() === '') throw new SvcError('usage', 'the message is empty');

  const port = interagentPort(paths);
  const token = readMainAgentToken(paths);
  if (token === null) {
    io.stderr.write(`svc ask: svc is not running (no main agent token at ${paths.mainAgentTokenFile}; start svc first)\n`);
    return 1;
  }
  const body = JSON.stringify({ text, new: !!values.new, ...(values.agent ? { agent: values.agent } : {}), ...(chatId !== undefined ? { chat_id: chatId } : {}) });

  let res: IncomingMessage;
  try {
    res = await new Promise<IncomingMessage>((resolve, reject) => {
      const req = request(
        {
          host: '127.0.0.1',
          port,
          method: 'POST',
          path: '/ask',
          agent: false,
          headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), connection: 'close' },
        },
        resolve,
      );
      req.on('error', reject);
      req.end(body);
    });
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'ECONNREFUSED') io.stderr.write(`svc ask: svc is not running (nothing listens on 127.0.0.1:${port})\n`);
    else io.stderr.write(`svc ask: cannot reach svc on 127.0.0.1:${port}: ${describeError(e)}\n`);
    return 1;
  }

  res.setEncoding('utf8');
  if (res.statusCode !== 200) {
    let raw = '';
    for await (const c of res) raw += c as string;
    let msg = raw.trim();
    try {
      msg = (JSON.parse(raw) as { error?: string }).error ?? msg;
    } catch {
      // not JSON: show it as it came
    }
    io.stderr.write(`svc ask: ${msg || `HTTP ${res.statusCode}`} (HTTP ${res.statusCode})\n`);
    return 1;
  }

  const dim = (s: string) => (io.stderr.isTTY ? `\x1b[2m${s}\x1b[0m` : s);
  let streamed = '';
  let outcome: TurnOutcome | null = null;
  let failure: string | null = null;
  const handle = (line: string) => {
    if (line.trim() === '') return;
    let msg: Line;
    try {
      msg = JSON.parse(line) as Line;
    } catch {
      failure = `svc sent a line that is not JSON: ${line.slice(0, 200)}`;
      return;
    }
    switch (msg.type) {
      case 'text_delta':
        streamed += msg.text;
        io.stdout.write(msg.text);
        break;
      case 'tool_activity':
        io.stderr.write(dim(`[tool] ${msg.tool}`) + '\n');
        break;
      case 'system_status':
        if (msg.status) io.stderr.write(dim(`[status] ${msg.status}`) + '\n');
        break;
      case 'result': {
        const { type: _type, ...rest } = msg;
        outcome = rest;
        break;
      }
      case 'error':
        failure = msg.error;
        break;
    }
  };
  let buffered = '';
  try {
    for await (const chunk of res) {
      buffered += chunk as string;
      let nl: number;
      while ((nl = buffered.indexOf('\n')) >= 0) {
        handle(buffered.slice(0, nl));
        buffered = buffered.slice(nl + 1);
      }
    }
    handle(buffered);
  } catch (e) {
    failure ??= `the connection to svc broke: ${describeError(e)}`;
  }

  const done = outcome as TurnOutcome | null;
  // Nothing streamed (a chat command, or a provider without streaming): the final text is the answer.
  if (done && streamed === '' && done.text && done.status === 'completed') {
    streamed = done.text;
    io.stdout.write(done.text);
  }
  if (streamed !== '' && !streamed.endsWith('\n')) io.stdout.write('\n');
  if (failure !== null) {
    io.stderr.write(`svc ask: ${failure}\n`);
    return 1;
  }
  if (!done) {
    io.stderr.write('svc ask: svc closed the connection before the turn finished\n');
    return 1;
  }
  if (done.status !== 'completed') {
    // A failure's text is the CLI's own error (e.g. "Invalid API key"): what the user needs to fix it.
    const why = streamed === '' && done.text ? `: ${done.text.trim()}` : '';
    io.stderr.write(`svc ask: turn ${done.status}${done.reason ? ` (${done.reason})` : ''}${why}\n`);
    return 1;
  }
  return 0;
}
