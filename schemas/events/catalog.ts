import type * as v from 'valibot';
import type { EventData } from '../event.schema.js';
import { ACTOR_EVENT_SCHEMAS } from './actor.events.js';
import { AUDIT_EVENT_SCHEMAS } from './audit.events.js';
import { AGENT_CHUNK_SCHEMAS, AGENT_EVENT_SCHEMAS } from './agent.events.js';
import { BUS_EVENT_SCHEMAS } from './bus.events.js';
import { CHAT_SESSION_EVENT_SCHEMAS } from './chat-session.events.js';
import { CONFIG_EVENT_SCHEMAS } from './config.events.js';
import { MEMORY_EVENT_SCHEMAS, RAG_EVENT_SCHEMAS, SKILL_EVENT_SCHEMAS, USER_FILES_EVENT_SCHEMAS } from './content.events.js';
import { CONNECTION_EVENT_SCHEMAS } from './connection.events.js';
import { MESSENGER_EVENT_SCHEMAS } from './messenger.events.js';
import { DAEMON_EVENT_SCHEMAS } from './daemon.events.js';
import { INTERAGENT_EVENT_SCHEMAS } from './interagent.events.js';
import { LOG_CHUNK_SCHEMAS } from './log.events.js';
import { NOTIFICATION_EVENT_SCHEMAS } from './notification.events.js';
import { PROCESS_EVENT_SCHEMAS } from './process.events.js';
import { REGISTRY_EVENT_SCHEMAS } from './registry.events.js';
import { SESSION_EVENT_SCHEMAS } from './session.events.js';
import { TURN_CHUNK_SCHEMAS, TURN_EVENT_SCHEMAS } from './turn.events.js';
import { USER_EVENT_SCHEMAS } from './user.events.js';
import { SYSTEM_EVENT_SCHEMAS } from './system.events.js';
import { AUTOMATION_EVENT_SCHEMAS, ONESHOT_EVENT_SCHEMAS } from './automation.events.js';
import { TASK_EVENT_SCHEMAS } from './task.events.js';
import { TASK_RUN_EVENT_SCHEMAS } from './task-run.events.js';
import { WORKFLOW_DEFINITION_EVENT_SCHEMAS, WORKFLOW_RUN_EVENT_SCHEMAS } from './workflow-run.events.js';
import { CHAT_DELIVERY_CHUNK_SCHEMAS, CHAT_DELIVERY_EVENT_SCHEMAS } from '../commands/chat-delivery.commands.js';
import { CLEANUP_EVENT_SCHEMAS, HEARTBEAT_EVENT_SCHEMAS, MEMORY_MAINTENANCE_EVENT_SCHEMAS } from './housekeeping.events.js';

/*
 * Every fact svc publishes, type → payload schema, gathered from the per-stream files. `Fact`,
 * `NewEvent` and `Envelope` are derived from it, so publishing an unknown type or a wrong payload
 * does not compile. What the log holds is read back as `AnyEnvelope` (event.schema.ts): an old log
 * may hold types no longer published.
 */
export const EVENT_SCHEMAS = {
  ...DAEMON_EVENT_SCHEMAS,
  ...CONFIG_EVENT_SCHEMAS,
  ...REGISTRY_EVENT_SCHEMAS,
  ...AGENT_EVENT_SCHEMAS,
  ...SESSION_EVENT_SCHEMAS,
  ...TURN_EVENT_SCHEMAS,
  ...CONNECTION_EVENT_SCHEMAS,
  ...NOTIFICATION_EVENT_SCHEMAS,
  ...CHAT_SESSION_EVENT_SCHEMAS,
  ...INTERAGENT_EVENT_SCHEMAS,
  ...PROCESS_EVENT_SCHEMAS,
  ...BUS_EVENT_SCHEMAS,
  ...ACTOR_EVENT_SCHEMAS,
  ...USER_EVENT_SCHEMAS,
  ...AUDIT_EVENT_SCHEMAS,
  ...MEMORY_EVENT_SCHEMAS,
  ...SKILL_EVENT_SCHEMAS,
  ...USER_FILES_EVENT_SCHEMAS,
  ...RAG_EVENT_SCHEMAS,
  ...SYSTEM_EVENT_SCHEMAS,
  ...AUTOMATION_EVENT_SCHEMAS,
  ...ONESHOT_EVENT_SCHEMAS,
  ...TASK_EVENT_SCHEMAS,
  ...TASK_RUN_EVENT_SCHEMAS,
  ...WORKFLOW_RUN_EVENT_SCHEMAS,
  ...WORKFLOW_DEFINITION_EVENT_SCHEMAS,
  ...CLEANUP_EVENT_SCHEMAS,
  ...MEMORY_MAINTENANCE_EVENT_SCHEMAS,
  ...HEARTBEAT_EVENT_SCHEMAS,
  ...CHAT_DELIVERY_EVENT_SCHEMAS,
  ...MESSENGER_EVENT_SCHEMAS,
};

/** Chunks that travel on the bus for live listeners and are never persisted. */
export const CHUNK_SCHEMAS = {
  ...TURN_CHUNK_SCHEMAS,
  ...AGENT_CHUNK_SCHEMAS,
  ...LOG_CHUNK_SCHEMAS,
  ...CHAT_DELIVERY_CHUNK_SCHEMAS,
};

export type EventType = keyof typeof EVENT_SCHEMAS;
export type EventPayload<T extends EventType> = v.InferOutput<(typeof EVENT_SCHEMAS)[T]>;

/** What a machine emits (the host adds the stream), one member per event type. */
export type Fact<T extends EventType = EventType> = { [K in T]: { type: K; data: EventPayload<K> } }[T];

/** What a producer hands to `publish`: the bus stamps seq and time. */
export type NewEvent<T extends EventType = EventType> = {
  [K in T]: {
    stream: string;
    type: K;
    data: EventPayload<K>;
    causation?: number;
    correlation?: string;
    by?: string;
  };
}[T];

/** A fact published in this process, as subscribers receive it. */
export type Envelope<T extends EventType = EventType> = NewEvent<T> & { seq: number; at: string };

export type ChunkType = keyof typeof CHUNK_SCHEMAS;
export type ChunkPayload<T extends ChunkType> = v.InferOutput<(typeof CHUNK_SCHEMAS)[T]>;

/** A stream chunk that travels on the bus but is never persisted (text deltas, tool activity, logs). */
export type Transient<T extends ChunkType = ChunkType> = { [K in T]: { stream: string; type: K; data: ChunkPayload<K> } }[T];

/** Types whose payload is not JSON-safe (a Date, a function, ...): must stay empty, the log replays and diffs payloads. */
type NotJsonSafe = { [K in EventType]: EventPayload<K> extends EventData ? never : K }[EventType];
// Fails to compile, naming the type, when a payload schema admits something JSON cannot hold.
export const PAYLOADS_ARE_JSON: [NotJsonSafe] extends [never] ? true : NotJsonSafe = true;
