import type { Role } from './config.schema.js';

/**
 * The one authorisation table of the admin API (SPEC.md "Roles"): each action an admin route
 * performs and the least role it needs. Every admin route declares its action from here; the
 * `allowed_agents` restriction (SPEC.md "Agent-scoped access") is applied on top, by the runtime,
 * to the agent the action touches.
 *
 * Where SPEC.md's table is silent the stricter reading is taken: "read all resources" is the
 * operator's, so what the viewer's list does not name (config, logs, memory, skills, files) needs an
 * operator, and every write SPEC.md does not give to the operator needs an admin.
 */
export const ADMIN_ACCESS = {
  'system.read': 'viewer',
  'system.rename': 'admin',
  'dashboard.read': 'viewer',
  /** Per user, and changes nothing shared (SPEC.md: viewer role or above). */
  'dashboard.ack-errors': 'viewer',
  'activity.read': 'viewer',
  'config.read': 'operator',
  'logs.read': 'operator',
  'agents.read': 'viewer',
  'agents.write': 'admin',
  'providers.read': 'viewer',
  'commands.read': 'viewer',
  /**
   * Chat sessions and their history (list, messages, the agent's chat, one's own read marker):
   * SPEC.md gives the viewer "read-only on ... sessions", and the panel's sessions are its chat
   * sessions. Writing to them (create, rename, send, archive) stays the operator's.
   */
  'chat.read': 'viewer',
  'chat.write': 'operator',
  'cron.read': 'viewer',
  'cron.run': 'operator',
  'cron.write': 'admin',
  'webhooks.read': 'viewer',
  'webhooks.verify': 'operator',
  'webhooks.write': 'admin',
  'tasks.read': 'viewer',
  'tasks.cancel': 'operator',
  'tasks.create': 'admin',
  /** SPEC.md gives the operator "cancel tasks" only: removing a finished task's record and folder is a delete, the admin's. */
  'tasks.delete': 'admin',
  /**
   * Answering a waiting task's question steers a run already under way, as cancelling does, and
   * writes nothing shared: the operator's (the parent agent answers the same question itself).
   */
  'tasks.answer': 'operator',
  /** Workflows (definitions and runs): read like tasks; starting and cancelling a run is running work, the operator's like a cron run. */
  'workflows.read': 'viewer',
  'workflows.run': 'operator',
  'workflows.cancel': 'operator',
  'sessions.read': 'viewer',
  'sessions.terminate': 'admin',
  'memory.read': 'operator',
  'memory.write': 'admin',
  'rag.read': 'operator',
  'rag.write': 'admin',
  'skills.read': 'operator',
  'skills.write': 'admin',
  /** WIRE.md §2: the global scope (`/api/skills`), read or written, is the admin's. */
  'skills.global': 'admin',
  'files.read': 'operator',
  /** Attaching a file to a chat message (`/upload`) is part of chatting, an operator's right. */
  'files.upload': 'operator',
  'files.write': 'admin',
  /** One's own account: `me`, profile, 2FA setup (every signed-in user, on their own row only). */
  'account.self': 'viewer',
  'users.read': 'admin',
  'users.write': 'admin',
  'audit.read': 'admin',
  'export.read': 'admin',
  'import.write': 'admin',
} as const satisfies Record<string, Role>;

export type AdminAction = keyof typeof ADMIN_ACCESS;
