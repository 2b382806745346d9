import { randomUUID } from 'node:crypto';
import { filter, type Subscription } from 'rxjs';
import type { Bus, LogLevel } from '../../bus/index.js';
import {
  AGENT_COMMANDS,
  INTERAGENT_EVENTS,
  SvcError,
  TURN_CHUNKS,
  describeError,
  isSvcError,
  type AgentMessage,
  type SubAgentConfig,
  type TurnOutcome,
  type UserRecord,
} from '../../schemas/index.js';
import { json, parseJsonBody, parseWith, type HttpReply, type HttpRequest, type Route } from '../http/index.js';
import { AskBody, InteragentAgentsQuery, InteragentSendBody, MAX_INTERNAL_BODY_BYTES, type InteragentSend } from './bodies.js';
import {
  MAIN_AGENT,
  authenticateAgent,
  authenticateMain,
  authoriseCall,
  callerUser,
  requireKnownAgent,
  visibleAgents,
  type Warn,
} from './caller.js';
import { LineQueue } from './line-queue.js';

export interface InternalDeps {
  bus: Bus;
  registry(): SubAgentConfig[];
  users(): UserRecord[];
  mainAgentToken(): string | null;
  config(): { interagent: { sync_timeout: number; async_timeout: number } };
  /** Defaults to `bus.emitLog`. */
  log?(level: LogLevel, msg: string, fields?: Record<string, unknown>): void;
  /** Request and task ids; random UUIDs unless a test pins them. */
  newId?(): string;
}

/** Reply of `/interagent/send` (and the text of `interagent.completed`). */
export interface InteragentReply {
  sender: string;
  text: string;
  success: boolean;
  error: string | null;
}

/** Chat of inter-agent turns and `svc ask` when the caller names none: no messenger chat, its own session. */
export const INTERNAL_DEFAULT_CHAT_ID = 0;
export const INTERAGENT_TRANSPORT = 'internal';
export const ASK_TRANSPORT = 'cli';
/** An async result is persisted as an event; a runaway answer is cut to stay far below the log's per-event cap. */
export const MAX_EVENT_TEXT_BYTES = 1024 * 1024;

const NDJSON_HEADERS = { 'content-type': 'application/x-ndjson; charset=utf-8', 'cache-control': 'no-store' };

/** The recipient is told who is asking: AgentMessage has no sender field, and an answer depends on it. */
export function interagentText(from: string, message: string): string {
  return `[Message from agent "${from}" via svc inter-agent API; your reply is returned to it]\n\n${message}`;
}

function truncateBytes(text: string, max: number): string {
  if (Buffer.byteLength(text, 'utf8') <= max) return text;
  const cut = Buffer.from(text, 'utf8').subarray(0, max).toString('utf8').replace(/\uFFFD$/, '');
  return `${cut}\n[truncated: the answer was longer than ${max} bytes]`;
}

function outcomeReply(to: string, outcome: TurnOutcome): InteragentReply {
  const success = outcome.status === 'completed' && !outcome.is_error;
  let error: string | null = null;
  if (!success) {
    error = outcome.status === 'completed' ? `agent "${to}" reported an error` : `turn ${outcome.status}${outcome.reason ? ` (${outcome.reason})` : ''}`;
  }
  return { sender: to, text: outcome.text, success, error };
}

/**
 * Started but already refused (no runtime on the bus): `bus.send` rejects before any await, so the
 * rejection wins a race against an already-resolved promise listed after it.
 */
async function refusedAtOnce(p: Promise<unknown>): Promise<unknown> {
  const pending = Symbol('pending');
  try {
    await Promise.race([p, Promise.resolve(pending)]);
    return undefined;
  } catch (e) {
    return e;
  }
}

export function internalRoutes(deps: InternalDeps): Route[] {
  const { bus } = deps;
  const log = (level: LogLevel, msg: string, fields: Record<string, unknown> = {}) =>
    deps.log ? deps.log(level, msg, fields) : bus.emitLog(level, msg, fields);
  const warn: Warn = (msg, fields) => log('warn', msg, fields ?? {});
  const newId = deps.newId ?? (() => randomUUID());

  /** Everything that decides whether a call may happen; throws before anything is sent. */
  function admitCall(req: HttpRequest): { body: InteragentSend; user: UserRecord | null } {
    const body = parseJsonBody(req, InteragentSendBody);
    if (body.from === body.to) throw new SvcError('self-call', `agent "${body.from}" cannot call itself`);
    const entry = authenticateAgent(deps, body.from, req.headers, warn);
    requireKnownAgent(deps, body.to);
    const user = callerUser(deps, req.headers);
    authoriseCall({ from: body.from, entry, to: body.to, user }, warn);
    return { body, user };
  }

  function messageFor(body: InteragentSend, user: UserRecord | null): AgentMessage {
    return {
      request_id: newId(),
      agent: body.to,
      transport: INTERAGENT_TRANSPORT,
      chat_id: body.chat_id ?? INTERNAL_DEFAULT_CHAT_ID,
      topic_id: body.topic_id ?? null,
      text: interagentText(body.from, body.message),
      // No caller header: the framework itself is asking (cron, webhooks, workflows): admin, per SPEC.
      source: user ? { kind: 'interagent', callerUserId: user.username } : { kind: 'interagent', userRole: 'admin' },
      kind: 'interagent',
      new_session: body.new_session,
      ...(user ? { caller_user_id: user.username } : {}),
    };
  }

  /** Runs one inter-agent turn; every failure after dispatch is an answer with success false. */
  async function dispatch(body: InteragentSend, user: UserRecord | null, timeoutS: number, sent?: (p: Promise<TurnOutcome>) => void): Promise<InteragentReply> {
    const p = bus.send(AGENT_COMMANDS.message, messageFor(body, user), { by: body.from, timeoutMs: timeoutS * 1000 });
    sent?.(p);
    try {
      return outcomeReply(body.to, await p);
    } catch (e) {
      if (isSvcError(e, 'command-timeout')) {
        return { sender: body.to, text: '', success: false, error: `no answer from "${body.to}" within ${timeoutS} s` };
      }
      if (isSvcError(e, 'no-handler')) return { sender: body.to, text: '', success: false, error: 'no agent runtime is attached to svc' };
      if (e instanceof SvcError) return { sender: body.to, text: '', success: false, error: e.message };
      log('error', `inter-agent call ${body.from} -> ${body.to} failed: ${describeError(e)}`);
      return { sender: body.to, text: '', success: false, error: 'internal error' };
    }
  }

  const send: Route = {
    method: 'POST',
    pattern: '/interagent/send',
    maxBodyBytes: MAX_INTERNAL_BODY_BYTES,
    handler: async (req) => {
      const { body, user } = admitCall(req);
      let sent!: Promise<TurnOutcome>;
      const reply = dispatch(body, user, deps.config().interagent.sync_timeout, (p) => (sent = p));
      const refused = await refusedAtOnce(sent);
      if (isSvcError(refused, 'no-handler')) throw refused;
      return json(200, await reply);
    },
  };

  const sendAsync: Route = {
    method: 'POST',
    pattern: '/interagent/send_async',
    maxBodyBytes: MAX_INTERNAL_BODY_BYTES,
    handler: async (req) => {
      const { body, user } = admitCall(req);
      const taskId = `ia-${newId()}`;
      const stream = `interagent:${taskId}`;
      const base = { task_id: taskId, from: body.from, to: body.to };
      await bus.publish({
        stream,
        type: INTERAGENT_EVENTS.requested,
        data: { ...base, chat_id: body.chat_id, topic_id: body.topic_id, caller_user_id: user?.username ?? null },
        by: body.from,
      });
      void dispatch(body, user, deps.config().interagent.async_timeout)
        .then((r) =>
          bus.publish({
            stream,
            type: INTERAGENT_EVENTS.completed,
            data: { ...base, success: r.success, text: truncateBytes(r.text, MAX_EVENT_TEXT_BYTES), error: r.error },
            by: body.from,
          }),
        )
        .catch((e) => log('error', `could not record the result of inter-agent task ${taskId}: ${describeError(e)}`, { task_id: taskId }));
      return json(200, { success: true, task_id: taskId });
    },
  };

  const agents: Route = {
    method: 'GET',
    pattern: '/interagent/agents',
    handler: async (req) => {
      const q = parseWith(InteragentAgentsQuery, Object.fromEntries(req.query), 'invalid-query', 'query');
      const from = q.from ?? MAIN_AGENT;
      const entry = authenticateAgent(deps, from, req.headers, warn);
      const user = callerUser(deps, req.headers);
      const list = await bus.send(AGENT_COMMANDS.list, {}, { by: from });
      const visible = visibleAgents(list.map((a) => a.name), { from, entry, user });
      return json(200, list.filter((a) => visible.has(a.name)));
    },
  };

  const ask: Route = {
    method: 'POST',
    pattern: '/ask',
    maxBodyBytes: MAX_INTERNAL_BODY_BYTES,
    handler: async (req): Promise<HttpReply> => {
      authenticateMain(deps, req.headers);
      const body = parseJsonBody(req, AskBody);
      const agent = body.agent ?? MAIN_AGENT;
      requireKnownAgent(deps, agent);
      const requestId = newId();
      let sub: Subscription | undefined;
      const lines = new LineQueue(() => sub?.unsubscribe());
      // Subscribe before sending: the runtime may stream the first chunk before send() returns.
      sub = bus.transient$.pipe(filter((m) => m.type.startsWith('turn.') && (m.data as { request_id?: unknown })?.request_id === requestId)).subscribe({
        next: (chunk) => {
          if (chunk.type === TURN_CHUNKS.text_delta) lines.push({ type: 'text_delta', text: chunk.data.text });
          else if (chunk.type === TURN_CHUNKS.tool_activity) lines.push({ type: 'tool_activity', tool: chunk.data.tool });
          else if (chunk.type === TURN_CHUNKS.system_status) lines.push({ type: 'system_status', status: chunk.data.status });
        },
        complete: () => lines.end(),
      });
      const message: AgentMessage = {
        request_id: requestId,
        agent,
        transport: ASK_TRANSPORT,
        chat_id: body.chat_id ?? INTERNAL_DEFAULT_CHAT_ID,
        topic_id: null,
        text: body.text,
        // Only the owner of the home can read the main agent token: they are the service's admin.
        source: { kind: 'system' },
        kind: 'foreground',
        new_session: body.new,
      };
      // No bus timeout: the turn has its own deadline (TimeoutConfig) and always replies.
      const p = bus.send(AGENT_COMMANDS.message, message, { by: 'owner', timeoutMs: 0 });
      const refused = await refusedAtOnce(p);
      if (refused !== undefined) {
        lines.end();
        sub.unsubscribe();
        throw refused;
      }
      p.then(
        (outcome) => lines.push({ type: 'result', ...outcome }),
        (e) => {
          if (!(e instanceof SvcError)) log('error', `svc ask turn failed: ${describeError(e)}`, { request_id: requestId });
          lines.push({ type: 'error', error: e instanceof SvcError ? e.message : 'internal error', code: e instanceof SvcError ? e.code : 'internal-error' });
        },
      ).finally(() => lines.end());
      return { status: 200, headers: NDJSON_HEADERS, stream: lines };
    },
  };

  // Tasks belong to the task hub (a later change); until it is attached the tools get SPEC's answers.
  const noHub = (): HttpReply => json(503, { error: 'task hub not attached' });
  const tasks: Route[] = [
    { method: 'GET', pattern: '/tasks/list', handler: () => json(200, []) },
    ...['create', 'resume', 'ask_parent', 'cancel', 'delete'].map((op): Route => ({ method: 'POST', pattern: `/tasks/${op}`, maxBodyBytes: MAX_INTERNAL_BODY_BYTES, handler: noHub })),
  ];

  return [send, sendAsync, agents, ask, ...tasks];
}
