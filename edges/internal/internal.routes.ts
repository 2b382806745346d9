import { randomUUID } from 'node:crypto';
import { agentsOf, type Asked, type Bus, type LogLevel } from '../../bus/index.js';
import {
  AskParentSchema,
  INTERAGENT_EVENTS,
  ResumeTaskSchema,
  SubmitTaskSchema,
  TASK_COMMANDS,
  TaskOwnerQuerySchema,
  TaskRefSchema,
  SvcError,
  WORKFLOW_COMMANDS,
  TURN_CHUNKS,
  describeError,
  isSvcError,
  type Principal,
  type SubAgentConfig,
  type TurnOutcome,
  type UserRecord,
} from '../../schemas/index.js';
import { COMMON_STATUSES, json, withBody, withQuery, type HttpReply, type HttpRequest, type Reply, type Route, type RouteAuth } from '../http/index.js';
import {
  AskBody,
  InteragentSendAsyncBody,
  InteragentSendBody,
  MAX_INTERNAL_BODY_BYTES,
  WorkflowCancelBody,
  WorkflowListQuery,
  WorkflowRunBody,
  WorkflowStatusQuery,
  type InteragentSend,
} from './bodies.js';
import { MAIN_AGENT, requireKnownAgent } from './caller.js';
import { INTERNAL_STATUSES } from './errors.js';
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
 * A refusal this API has a status for (unknown agent, allowed_agents, can_call, no runtime) is the
 * HTTP reply. Any other (an empty prompt, a full session, a stopping agent) is answered in the body
 * like a turn that failed, as callers have always heard it: `outcome` rejects with it.
 */
async function requireAccepted(asked: Asked): Promise<void> {
  const admission = await asked.accepted;
  if (!admission.accepted && (Object.hasOwn(INTERNAL_STATUSES, admission.code) || Object.hasOwn(COMMON_STATUSES, admission.code))) {
    throw new SvcError(admission.code, admission.message);
  }
}

/** Tools of an agent: its token names it (internal-auth.ts). */
const AGENT_AUTH: RouteAuth = { accepts: ['agent-token'] };
/** `svc ask`: the owner of the home. */
const OWNER_AUTH: RouteAuth = { accepts: ['owner-token'] };

export function internalRoutes(deps: InternalDeps): Route[] {
  const { bus } = deps;
  const log = (level: LogLevel, msg: string, fields: Record<string, unknown> = {}) =>
    deps.log ? deps.log(level, msg, fields) : bus.emitLog(level, msg, fields);
  const newId = deps.newId ?? (() => randomUUID());

  /** A caller user removed since authentication must not fall back to "no caller user", which runs as admin. */
  function stillActive(caller: Principal): void {
    const name = caller.acting_for;
    if (name !== null && !deps.users().some((u) => u.username === name && u.active)) {
      throw new SvcError('unknown-user', `caller user "${name}" no longer has an active user record`);
    }
  }

  /**
   * The caller user checked before the body is parsed (`withBody` parses before its handler runs):
   * a removed user is refused as such whatever the body says.
   */
  function active<R extends { handler: (req: HttpRequest, caller: Principal) => Reply }>(route: R): R {
    return {
      ...route,
      handler: async (req: HttpRequest, caller: Principal) => {
        stillActive(caller);
        return route.handler(req, caller);
      },
    };
  }

  /** The call as the authenticated agent makes it, its body parsed; throws before anything is sent. Whether it may is the runtime's to decide. */
  function admitCall(body: InteragentSend, caller: Principal): Principal {
    if (body.from === body.to) throw new SvcError('self-call', `agent "${body.from}" cannot call itself`);
    requireKnownAgent(deps, body.to);
    return { ...caller, origin: { transport: INTERAGENT_TRANSPORT, chat_id: body.chat_id, topic_id: body.topic_id } };
  }

  function askFor(body: InteragentSend, principal: Principal, timeoutS: number): Asked {
    return agentsOf(bus).ask(
      {
        agent: body.to,
        transport: INTERAGENT_TRANSPORT,
        chat_id: body.chat_id ?? INTERNAL_DEFAULT_CHAT_ID,
        topic_id: body.topic_id ?? null,
        text: interagentText(body.from, body.message),
        kind: 'interagent',
        new_session: body.new_session,
      },
      principal,
      { timeoutMs: timeoutS * 1000, requestId: newId() },
    );
  }

  /** The answer of an accepted inter-agent turn; every failure is an answer with success false. */
  async function answerOf(body: InteragentSend, asked: Asked, timeoutS: number): Promise<InteragentReply> {
    try {
      return outcomeReply(body.to, await asked.outcome);
    } catch (e) {
      if (isSvcError(e, 'command-timeout')) {
        return { sender: body.to, text: '', success: false, error: `no answer from "${body.to}" within ${timeoutS} s` };
      }
      if (e instanceof SvcError && e.code !== 'internal-error') return { sender: body.to, text: '', success: false, error: e.message };
      log('error', `inter-agent call ${body.from} -> ${body.to} failed: ${describeError(e)}`);
      return { sender: body.to, text: '', success: false, error: 'internal error' };
    }
  }

  const send: Route = {
    method: 'POST',
    pattern: '/interagent/send',
    maxBodyBytes: MAX_INTERNAL_BODY_BYTES,
    auth: AGENT_AUTH,
    ...active(
      withBody(InteragentSendBody, async (body, _req, caller: Principal) => {
        const principal = admitCall(body, caller);
        const timeoutS = deps.config().interagent.sync_timeout;
        const asked = askFor(body, principal, timeoutS);
        await requireAccepted(asked);
        return json(200, await answerOf(body, asked, timeoutS));
      }),
    ),
  };

  const sendAsync: Route = {
    method: 'POST',
    pattern: '/interagent/send_async',
    maxBodyBytes: MAX_INTERNAL_BODY_BYTES,
    auth: AGENT_AUTH,
    ...active(
      withBody(InteragentSendAsyncBody, async (body, _req, caller: Principal) => {
        const principal = admitCall(body, caller);
        const taskId = `ia-${newId()}`;
        const stream = `interagent:${taskId}`;
        const base = { task_id: taskId, from: body.from, to: body.to };
        const timeoutS = deps.config().interagent.async_timeout;
        const asked = askFor(body, principal, timeoutS);
        await requireAccepted(asked);
        const correlation = asked.request_id;
        await bus.publish({
          stream,
          type: INTERAGENT_EVENTS.requested,
          data: { ...base, chat_id: body.chat_id, topic_id: body.topic_id, caller_user_id: principal.acting_for, caller_role: principal.role, reply_to: body.reply_to, silent: body.silent },
          by: body.from,
          correlation,
        });
        void answerOf(body, asked, timeoutS)
          .then((r) =>
            bus.publish({
              stream,
              type: INTERAGENT_EVENTS.completed,
              data: { ...base, success: r.success, text: truncateBytes(r.text, MAX_EVENT_TEXT_BYTES), error: r.error },
              by: body.from,
              correlation,
            }),
          )
          .catch((e) => log('error', `could not record the result of inter-agent task ${taskId}: ${describeError(e)}`, { task_id: taskId }));
        return json(200, { success: true, task_id: taskId });
      }),
    ),
  };

  const agents: Route = {
    method: 'GET',
    pattern: '/interagent/agents',
    auth: AGENT_AUTH,
    handler: async (_req, caller) => {
      stillActive(caller);
      return json(200, await agentsOf(bus).list({ ...caller, origin: { transport: INTERAGENT_TRANSPORT, chat_id: null, topic_id: null } }));
    },
  };

  const ask: Route = {
    method: 'POST',
    pattern: '/ask',
    maxBodyBytes: MAX_INTERNAL_BODY_BYTES,
    auth: OWNER_AUTH,
    ...withBody(AskBody, async (body, _req, owner: Principal): Promise<HttpReply> => {
      const agent = body.agent ?? MAIN_AGENT;
      requireKnownAgent(deps, agent);
      const asked = agentsOf(bus).ask(
        { agent, transport: ASK_TRANSPORT, chat_id: body.chat_id ?? INTERNAL_DEFAULT_CHAT_ID, topic_id: null, text: body.text, kind: 'foreground', new_session: body.new },
        owner,
        { requestId: newId() },
      );
      // Read only once the client goes away, by then assigned.
      const lines = new LineQueue(() => sub.unsubscribe());
      const sub = asked.chunks$.subscribe((chunk) => {
        if (chunk.type === TURN_CHUNKS.text_delta) lines.push({ type: 'text_delta', text: chunk.data.text });
        else if (chunk.type === TURN_CHUNKS.tool_activity) lines.push({ type: 'tool_activity', tool: chunk.data.tool });
        else lines.push({ type: 'system_status', status: chunk.data.status });
      });
      await requireAccepted(asked);
      asked.outcome.then(
        (outcome) => lines.push({ type: 'result', ...outcome }),
        (e) => {
          const internal = !(e instanceof SvcError) || e.code === 'internal-error';
          if (internal) log('error', `svc ask turn failed: ${describeError(e)}`, { request_id: asked.request_id });
          lines.push({ type: 'error', error: internal ? 'internal error' : e.message, code: internal ? 'internal-error' : e.code });
        },
      ).finally(() => lines.end());
      return { status: 200, headers: NDJSON_HEADERS, stream: lines };
    }),
  };

  // /tasks/* take the agent's token like every agent tool: a task runs a CLI with its parent's
  // rights, so no other local process may start, steer or read one. A body's optional `from` is
  // checked against the token by the authenticator; without it the token names the agent, and the
  // hub checks that agent owns the task (SPEC: "ownership checked when from is given" — here it
  // is always given, by the credential).
  const origin = { transport: INTERAGENT_TRANSPORT, chat_id: null, topic_id: null };
  const tasks: Route[] = [
    {
      method: 'GET',
      pattern: '/tasks/list',
      auth: AGENT_AUTH,
      ...withQuery(TaskOwnerQuerySchema, async ({ from }, _req, caller: Principal) => {
        // The main agent orchestrates every agent: without `from` it sees all tasks, any other agent its own.
        const owner = from ?? (caller.id === MAIN_AGENT ? null : caller.id);
        try {
          return json(200, await bus.send(TASK_COMMANDS.listOwned, { from: owner }));
        } catch (e) {
          // SPEC: an empty list when no hub is attached.
          if (isSvcError(e, 'no-handler')) return json(200, []);
          throw e;
        }
      }),
    },
    {
      method: 'POST',
      pattern: '/tasks/create',
      maxBodyBytes: MAX_INTERNAL_BODY_BYTES,
      auth: AGENT_AUTH,
      ...active(
        withBody(SubmitTaskSchema, async (body, _req, caller: Principal) => {
          const { task_id } = await bus.send(TASK_COMMANDS.submit, { principal: { ...caller, origin }, ...body }, { by: body.from });
          return json(200, { success: true, task_id });
        }),
      ),
    },
    {
      method: 'POST',
      pattern: '/tasks/resume',
      maxBodyBytes: MAX_INTERNAL_BODY_BYTES,
      auth: AGENT_AUTH,
      ...withBody(ResumeTaskSchema, async (parsed, _req, caller: Principal) => {
        const body = { ...parsed, from: caller.id };
        return json(200, { success: true, ...(await bus.send(TASK_COMMANDS.resume, body, { by: caller.id! })) });
      }),
    },
    {
      method: 'POST',
      pattern: '/tasks/ask_parent',
      maxBodyBytes: MAX_INTERNAL_BODY_BYTES,
      auth: AGENT_AUTH,
      ...withBody(AskParentSchema, async (parsed, _req, caller: Principal) => {
        const body = { ...parsed, from: caller.id };
        // Blocks until the parent answers or the task ends: the run's own deadline bounds it.
        const r = await bus.send(TASK_COMMANDS.askParent, body, { timeoutMs: 0, by: caller.id! });
        if (r.answer === null) return json(200, { success: false, answer: '', status: r.status, error: `task ${r.task_id} is ${r.status}: no answer will come` });
        return json(200, { success: true, answer: r.answer, status: r.status });
      }),
    },
    {
      method: 'POST',
      pattern: '/tasks/cancel',
      maxBodyBytes: MAX_INTERNAL_BODY_BYTES,
      auth: AGENT_AUTH,
      ...withBody(TaskRefSchema, async (parsed, _req, caller: Principal) => {
        const body = { ...parsed, from: caller.id };
        return json(200, { success: true, ...(await bus.send(TASK_COMMANDS.cancelOwned, body, { by: caller.id! })) });
      }),
    },
    {
      method: 'POST',
      pattern: '/tasks/delete',
      maxBodyBytes: MAX_INTERNAL_BODY_BYTES,
      auth: AGENT_AUTH,
      ...withBody(TaskRefSchema, async (parsed, _req, caller: Principal) => {
        const body = { ...parsed, from: caller.id };
        return json(200, { success: true, ...(await bus.send(TASK_COMMANDS.delete, body, { by: caller.id! })) });
      }),
    },
  ];

  /** The engine's commands with the calling agent's principal; a refusal maps to its status (errors.ts). */
  const workflows: Route[] = [
    {
      method: 'GET',
      pattern: '/workflows/list',
      auth: AGENT_AUTH,
      ...active(
        withQuery(WorkflowListQuery, async (_query, _req, caller: Principal) => {
          const { definitions, runs } = await bus.send(WORKFLOW_COMMANDS.list, { principal: caller });
          return json(200, { definitions, runs });
        }),
      ),
    },
    {
      method: 'POST',
      pattern: '/workflows/run',
      maxBodyBytes: MAX_INTERNAL_BODY_BYTES,
      auth: AGENT_AUTH,
      ...active(
        withBody(WorkflowRunBody, async ({ from: _from, ...body }, _req, caller: Principal) => {
          const { run_id } = await bus.send(WORKFLOW_COMMANDS.run, { principal: { ...caller, origin: { transport: body.transport, chat_id: body.chat_id, topic_id: body.topic_id } }, ...body });
          return json(200, { success: true, run_id });
        }),
      ),
    },
    {
      method: 'GET',
      pattern: '/workflows/status',
      auth: AGENT_AUTH,
      ...active(
        withQuery(WorkflowStatusQuery, async ({ run_id }, _req, caller: Principal) => json(200, await bus.send(WORKFLOW_COMMANDS.status, { principal: caller, run_id }))),
      ),
    },
    {
      method: 'POST',
      pattern: '/workflows/cancel',
      maxBodyBytes: MAX_INTERNAL_BODY_BYTES,
      auth: AGENT_AUTH,
      ...active(
        withBody(WorkflowCancelBody, async ({ run_id }, _req, caller: Principal) => {
          const r = await bus.send(WORKFLOW_COMMANDS.cancel, { principal: caller, run_id });
          return json(200, { success: true, ...r });
        }),
      ),
    },
  ];

  return [send, sendAsync, agents, ask, ...tasks, ...workflows];
}
