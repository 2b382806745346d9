import {
  ACTOR_EVENTS,
  AGENT_EVENTS,
  BUS_EVENTS,
  CONFIG_EVENTS,
  DAEMON_EVENTS,
  MESSENGER_EVENTS,
  REGISTRY_EVENTS,
  TURN_EVENTS,
  USER_EVENTS,
  type AnyEnvelope,
  type Listener,
} from '../schemas/index.js';
import { TURN_TERMINAL_TYPES } from './interrupted-turn.logic.js';

/*
 * What `svc status` reports about the last run, folded from its facts alone: so it reads the same
 * whether the daemon is running (a live picture) or stopped (how the last run looked when it ended).
 */

export interface RunningTurn {
  stream: string;
  agent: string;
  session_key: string;
  since: string;
}

export interface LastError {
  at: string;
  type: string;
  message: string;
}

export interface RunStatus {
  pid: number;
  version: string;
  started_at: string;
  /** Null while the run has not stopped (or crashed without saying so). */
  stopped_at: string | null;
  stop_reason: string | null;
  listeners: Listener[];
  agents: string[];
  running_turns: RunningTurn[];
  last_error: LastError | null;
  /** Each messenger bot of the run (its transport and the agent it speaks for) in the state it last recorded. */
  transports: { name: string; agent: string; state: string; detail: string }[];
}

/** Every type the fold reads; callers read only these, from the run's `daemon.started` on. */
export const STATUS_TYPES: readonly string[] = [
  DAEMON_EVENTS.started,
  DAEMON_EVENTS.ready,
  DAEMON_EVENTS.stopped,
  AGENT_EVENTS.started,
  AGENT_EVENTS.stopped,
  TURN_EVENTS.started,
  ...TURN_TERMINAL_TYPES,
  ACTOR_EVENTS.crashed,
  BUS_EVENTS.subscriber_failed,
  CONFIG_EVENTS.rejected,
  REGISTRY_EVENTS.rejected,
  USER_EVENTS.file_rejected,
  MESSENGER_EVENTS.state_changed,
];

const str = (v: unknown) => (typeof v === 'string' ? v : '');

function errorOf(e: AnyEnvelope): LastError | null {
  const d = e.data as Record<string, unknown>;
  switch (e.type) {
    case TURN_EVENTS.failed:
      return { at: e.at, type: e.type, message: `${e.stream}: ${str(d.error) || str(d.reason)}` };
    case TURN_EVENTS.timed_out:
      return { at: e.at, type: e.type, message: `${e.stream}: timed out (${str(d.reason)})` };
    case ACTOR_EVENTS.crashed:
    case BUS_EVENTS.subscriber_failed:
      return { at: e.at, type: e.type, message: str(d.error) };
    case CONFIG_EVENTS.rejected:
    case REGISTRY_EVENTS.rejected:
    case USER_EVENTS.file_rejected:
      return { at: e.at, type: e.type, message: Array.isArray(d.errors) ? d.errors.map(String).join('; ') : '' };
    default:
      return null;
  }
}

/** `events`: the log from the last `daemon.started` on, oldest first. Null when there is no run. */
export function runStatus(events: readonly AnyEnvelope[]): RunStatus | null {
  const start = events.findIndex((e) => e.type === DAEMON_EVENTS.started);
  if (start < 0) return null;
  const first = events[start]!;
  const d = first.data as Record<string, unknown>;
  const status: RunStatus = {
    pid: Number(d.pid),
    version: str(d.version),
    started_at: first.at,
    stopped_at: null,
    stop_reason: null,
    listeners: [],
    agents: [],
    running_turns: [],
    last_error: null,
    transports: [],
  };
  const transports = new Map<string, RunStatus['transports'][number]>();
  const agents = new Set<string>();
  const turns = new Map<string, RunningTurn>();
  for (const e of events.slice(start + 1)) {
    const data = e.data as Record<string, unknown>;
    if (e.type === DAEMON_EVENTS.ready && Array.isArray(data.listeners)) status.listeners = data.listeners as Listener[];
    else if (e.type === DAEMON_EVENTS.stopped) {
      status.stopped_at = e.at;
      status.stop_reason = str(data.reason);
    } else if (e.type === AGENT_EVENTS.started) agents.add(str(data.name));
    else if (e.type === AGENT_EVENTS.stopped) agents.delete(str(data.name));
    else if (e.type === TURN_EVENTS.started) turns.set(e.stream, { stream: e.stream, agent: str(data.agent), session_key: str(data.session_key), since: e.at });
    else if (e.type === MESSENGER_EVENTS.state_changed) transports.set(e.stream, { name: str(data.transport), agent: str(data.agent), state: str(data.state), detail: str(data.detail) });
    if (TURN_TERMINAL_TYPES.includes(e.type)) turns.delete(e.stream);
    status.last_error = errorOf(e) ?? status.last_error;
  }
  status.agents = [...agents];
  status.transports = [...transports.values()];
  status.running_turns = status.stopped_at === null ? [...turns.values()] : [];
  return status;
}
