import type { Bus } from '../../bus/index.js';
import {
  CHAT_SESSION_COMMANDS,
  CreateChatSessionBodySchema,
  RenameChatSessionBodySchema,
  type ChatSession,
  type CreateChatSession,
  type Principal,
  type RenameChatSession,
} from '../../schemas/index.js';
import { json, withBody, type Route } from '../http/index.js';
import { API_AUTH } from './api-auth.js';

/*
 * SPEC.md "Direct API server": `PUT /api/chat/sessions/{id}` renames; WIRE.md §2's
 * `POST /api/chat/sessions {agent, title?}` creates, so a session can exist before the admin API
 * does. Pure handlers: validate, send the chat-sessions command, answer with its row.
 */

export interface ChatSessionRoutesDeps {
  bus: Pick<Bus, 'send'>;
}

const BODY_LIMIT = 16 * 1024;

/** WIRE.md §2 session fields this server stores; per-caller read state is added by the list endpoints. */
export function wireSession(s: ChatSession): ChatSession {
  return {
    id: s.id,
    agent: s.agent,
    title: s.title,
    created_at: s.created_at,
    updated_at: s.updated_at,
    provider_override: s.provider_override,
    model_override: s.model_override,
    archived: s.archived,
  };
}

export function chatSessionRoutes(deps: ChatSessionRoutesDeps): Route[] {
  const { bus } = deps;
  return [
    {
      method: 'POST',
      pattern: '/api/chat/sessions',
      maxBodyBytes: BODY_LIMIT,
      // SPEC.md "Roles": creating and managing chat sessions takes an operator.
      auth: API_AUTH.operator,
      summary: 'Create a chat session',
      ...withBody(CreateChatSessionBodySchema, async (body, _req, principal: Principal) => {
        const data: CreateChatSession = { principal, agent: body.agent, ...(body.title != null ? { title: body.title } : {}) };
        const session = await bus.send(CHAT_SESSION_COMMANDS.create, data);
        return json(201, wireSession(session));
      }),
    },
    {
      method: 'PUT',
      pattern: '/api/chat/sessions/:id',
      maxBodyBytes: BODY_LIMIT,
      auth: API_AUTH.operator,
      summary: 'Rename a chat session',
      ...withBody(RenameChatSessionBodySchema, async ({ title }, req, principal: Principal) => {
        const data: RenameChatSession = { principal, id: req.params.id ?? '', title };
        const session = await bus.send(CHAT_SESSION_COMMANDS.rename, data);
        return json(200, wireSession(session));
      }),
    },
  ];
}
