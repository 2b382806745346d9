import * as v from 'valibot';
import {
  CHAT_COMMAND_HELP,
  CHAT_SESSION_COMMANDS,
  ChatAgentNameSchema,
  ChatMessageIdSchema,
  ChatMessagesSchema,
  ChatModelSchema,
  ChatProviderSchema,
  ChatSessionIdSchema,
  MAX_CHAT_MESSAGE_CHARS,
  MAX_CHAT_PAGE,
  MULTIAGENT_COMMAND_HELP,
  SvcError,
  parseWith,
  type ChatSession,
  type ChatSessionView,
  type Principal,
} from '../../schemas/index.js';
import { json, withBody, withBodyAndQuery, withQuery, type HttpRequest, type Route } from '../http/index.js';
import { wireSession } from '../api/index.js';
import { adminAuth } from './admin-auth.js';
import type { AdminDeps } from './admin-deps.js';
import { adminTurnsOf } from './admin-turns.js';

/*
 * SPEC.md "Admin REST: chat", WIRE.md §2. Pure handlers: validate, send the chat-sessions command
 * (which decides `allowed_agents`), map the reply. `POST /api/chat/sessions` and the rename live in
 * edges/api (the direct token may use them too).
 */

const SMALL_BODY = 16 * 1024;
/** A whole history in one PUT: below the event log's 4 MiB per fact, with room for the envelope. */
const HISTORY_BODY = 3 * 1024 * 1024;
const SEND_BODY = MAX_CHAT_MESSAGE_CHARS * 4 + 4096;

/** WIRE.md §2 session, with the caller's read state when the command answered with it. */
function wireSessionView(s: ChatSession | ChatSessionView): Record<string, unknown> {
  const base = wireSession(s);
  return 'unread_count' in s ? { ...base, last_read_message_id: s.last_read_message_id, unread_count: s.unread_count } : base;
}

const sessionId = (req: HttpRequest): string => parseWith(ChatSessionIdSchema, req.params.id ?? '', 'invalid-path', 'path.id');

/** The panel's flags: `1`/`true` on, `0`/`false` off. */
const Flag = v.pipe(v.picklist(['1', 'true', '0', 'false'], 'must be 1, true, 0 or false'), v.transform((f) => f === '1' || f === 'true'));
/** `include_archived`: every list already includes archived sessions (each says `archived`); accepted for the panel. */
const AgentQuery = v.object({ agent: v.optional(ChatAgentNameSchema), archived_only: v.optional(Flag), include_archived: v.optional(Flag) });
const RequiredAgentQuery = v.object({ agent: ChatAgentNameSchema });
const PAGE_MESSAGE = `must be an integer from 1 to ${MAX_CHAT_PAGE}`;
const MessagesQuery = v.object({
  limit: v.optional(v.pipe(v.string(), v.regex(/^\d{1,4}$/, PAGE_MESSAGE), v.transform(Number), v.minValue(1, PAGE_MESSAGE), v.maxValue(MAX_CHAT_PAGE, PAGE_MESSAGE))),
  before: v.optional(ChatMessageIdSchema),
});
const MergeQuery = v.object({
  merge: v.optional(v.pipe(v.picklist(['true', 'false', '1', '0'], 'must be one of true, false, 1, 0'), v.transform((s) => s === 'true' || s === '1')), 'false'),
});

const ProviderBody = v.strictObject({ provider: v.nullable(ChatProviderSchema), model: v.nullable(ChatModelSchema) });
const ReadBody = v.strictObject({ last_read_message_id: ChatMessageIdSchema });
/** A bare list of messages, or `{messages}`. */
const HistoryBody = v.union([ChatMessagesSchema, v.strictObject({ messages: ChatMessagesSchema })], 'must be a list of messages or {"messages": [...]}');
/** The panel's field is `message`; `text` (as on the socket) is taken too. */
const SendBody = v.pipe(
  v.strictObject({
    message: v.optional(v.string('must be a string')),
    text: v.optional(v.string('must be a string')),
    session_id: v.optional(ChatSessionIdSchema),
    user_msg_id: v.optional(ChatMessageIdSchema),
    assistant_msg_id: v.optional(ChatMessageIdSchema),
  }),
  v.check((b) => (b.message === undefined) !== (b.text === undefined), 'give the text as exactly one of "message" or "text"'),
);

export function chatRoutes(deps: AdminDeps): Route[] {
  const { bus } = deps;
  const C = CHAT_SESSION_COMMANDS;
  return [
    {
      method: 'GET',
      pattern: '/api/chat/sessions',
      auth: adminAuth('chat.read'),
      summary: "Chat sessions, each with the caller's read marker and unread count",
      ...withQuery(AgentQuery, async ({ agent, archived_only }, _req, principal: Principal) => {
        const sessions = await bus.send(C.list, { principal, ...(agent !== undefined ? { agent } : {}), ...(archived_only ? { archived_only } : {}) });
        return json(200, sessions.map(wireSessionView));
      }),
    },
    {
      method: 'DELETE',
      pattern: '/api/chat/sessions/:id',
      auth: adminAuth('chat.write'),
      summary: 'Delete a chat session and its history',
      handler: async (req, principal) => json(200, await bus.send(C.delete, { principal, id: sessionId(req) })),
    },
    ...(['archive', 'unarchive'] as const).map(
      (action): Route => ({
        method: 'POST',
        pattern: `/api/chat/sessions/:id/${action}`,
        maxBodyBytes: SMALL_BODY,
        auth: adminAuth('chat.write'),
        summary: `${action === 'archive' ? 'Archive' : 'Unarchive'} a chat session`,
        handler: async (req, principal) => json(200, wireSessionView(await bus.send(C.archive, { principal, id: sessionId(req), archived: action === 'archive' }))),
      }),
    ),
    {
      method: 'POST',
      pattern: '/api/chat/sessions/:id/provider',
      maxBodyBytes: SMALL_BODY,
      auth: adminAuth('chat.write'),
      summary: "Set the session's provider and model, or reset them with nulls",
      ...withBody(ProviderBody, async ({ provider, model }, req, principal: Principal) => {
        const id = sessionId(req);
        if ((provider === null) !== (model === null)) throw new SvcError('invalid-body', 'body: provider and model are both strings (set) or both null (reset)');
        return json(200, wireSessionView(await bus.send(C.setProvider, { principal, id, provider, model })));
      }),
    },
    {
      method: 'GET',
      pattern: '/api/chat/sessions/:id/messages',
      auth: adminAuth('chat.read'),
      summary: "A session's messages (all, or the newest `limit` before `before`)",
      ...withQuery(MessagesQuery, async ({ limit, before }, req, principal: Principal) => {
        const id = sessionId(req);
        const page = await bus.send(C.messages, { principal, id, ...(limit !== undefined ? { limit } : {}), ...(before !== undefined ? { before } : {}) });
        // SPEC.md: a plain array unless a page was asked for.
        return json(200, limit === undefined ? page.messages : page);
      }),
    },
    {
      method: 'PUT',
      pattern: '/api/chat/sessions/:id/messages',
      maxBodyBytes: HISTORY_BODY,
      auth: adminAuth('chat.write'),
      summary: "Overwrite a session's history, or merge by message id",
      ...withBodyAndQuery(HistoryBody, MergeQuery, async (body, { merge }, req, principal: Principal) => {
        const id = sessionId(req);
        const messages = Array.isArray(body) ? body : body.messages;
        return json(200, await bus.send(C.writeMessages, { principal, id, messages, merge }));
      }),
    },
    {
      method: 'POST',
      pattern: '/api/chat/sessions/:id/read',
      maxBodyBytes: SMALL_BODY,
      // Marking read is the reader's own state: whoever may read the chat may mark it.
      auth: adminAuth('chat.read'),
      summary: "Move the caller's read marker forward",
      ...withBody(ReadBody, async ({ last_read_message_id }, req, principal: Principal) =>
        json(200, await bus.send(C.markRead, { principal, id: sessionId(req), last_read_message_id })),
      ),
    },
    {
      method: 'GET',
      pattern: '/api/chat',
      auth: adminAuth('chat.read'),
      summary: "An agent's chat history",
      ...withQuery(RequiredAgentQuery, async ({ agent }, _req, principal: Principal) => json(200, await bus.send(C.history, { principal, agent }))),
    },
    {
      method: 'POST',
      pattern: '/api/chat/:agentId',
      maxBodyBytes: SEND_BODY,
      auth: adminAuth('chat.write'),
      summary: 'Send a message to an agent and wait for its answer',
      ...withBody(SendBody, async (body, req, principal: Principal) => {
        const agent = parseWith(ChatAgentNameSchema, req.params.agentId ?? '', 'invalid-path', 'path.agentId');
        const turn = await adminTurnsOf(bus).start(
          principal,
          {
            agent,
            text: body.message ?? body.text ?? '',
            ...(body.session_id !== undefined ? { session_id: body.session_id } : {}),
            ...(body.user_msg_id !== undefined ? { user_msg_id: body.user_msg_id } : {}),
            ...(body.assistant_msg_id !== undefined ? { assistant_msg_id: body.assistant_msg_id } : {}),
          },
          null,
        );
        const outcome = await turn.asked.outcome;
        await turn.recorded;
        return json(200, { response: outcome.text, session_id: turn.session_id, files: outcome.files, status: outcome.status });
      }),
    },
    {
      method: 'GET',
      pattern: '/api/commands',
      auth: adminAuth('commands.read'),
      summary: 'The chat commands agents answer',
      handler: () => json(200, { commands: CHAT_COMMAND_HELP, multiagent: MULTIAGENT_COMMAND_HELP }),
    },
  ];
}
