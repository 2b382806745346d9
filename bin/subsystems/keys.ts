import type { ActorHost, AgentSupervisor, BootstrapResult, CronScheduler, LogSink, ModelCacheRefresher, OneShotRunner, TaskHub, WorkflowEngine } from '../../actors/index.js';
import type { Bus, TransportRegistry } from '../../bus/index.js';
import type { ApiServer, FileshareServer, InternalApi, Listening, WebhookServer } from '../../edges/index.js';
import type { PanelAddress } from '../../machines/index.js';
import type { AgentConfig, SubAgentConfig, UserRecord } from '../../schemas/index.js';
import type { HomePaths, LoadedConfig, NotificationReadModel, SqliteEventLog } from '../../store/index.js';
import { key } from '../subsystems.js';
import type { DaemonLifecycle, DaemonOptions, HostEnvironment } from './daemon-options.js';

/*
 * What the daemon's parts hand each other, one key each, grouped by the area that provides it.
 * Kept in one file so a module can name what another provides without importing that module.
 */

// Handed in by the composition root.
export const OPTIONS = key<DaemonOptions>('options');
export const PATHS = key<HomePaths>('paths');
export const HOST_ENV = key<HostEnvironment>('host environment');
/** What svc does on its own during this run (start, reloads, recovery, stop) serves this start. */
export const START_CORRELATION = key<string>('start correlation');
export const LIFECYCLE = key<DaemonLifecycle>('lifecycle');

// store
/**
 * The lock that makes this run the home's only writer: a part that writes the home needs it.
 * `tookOver`: what it says about a previous owner it took over from, said once the bus exists.
 */
export const PID_LOCK = key<{ tookOver: string | null }>('pid lock');
export const LOADED_CONFIG = key<LoadedConfig>('loaded config');
export const EVENT_LOG = key<SqliteEventLog>('event log');
/** Where WAL checkpoint failures go: stderr until the bus exists to carry them. */
export const WAL_REPORTS = key<{ report: (message: string) => void }>('WAL checkpoint reports');

// bus & host
export const BUS = key<Bus>('bus');
export const LOG_SINK = key<LogSink>('log sink');
export const ACTOR_HOST = key<ActorHost>('actor host');
export const DAEMON_ACTOR = key<ReturnType<ActorHost['spawn']>>('daemon actor');

// config
/** The config in force: hot-reloadable fields follow edits of config.json. */
export const CONFIG = key<() => AgentConfig>('config');
export const REGISTRY = key<() => SubAgentConfig[]>('registry');

// users & auth
export const USERS = key<() => UserRecord[]>('users');
export const MAIN_AGENT_TOKEN = key<string>('main agent token');
/**
 * The first-start admin (said once in the banner). Runs beside the later subsystems (scrypt takes
 * a noticeable part of a second on a small host); awaited before `ready`. null: nothing was
 * created, or creating it failed (logged).
 */
export const BOOTSTRAP = key<Promise<BootstrapResult | null>>('first-start admin');
/** Whether this run serves the admin API: `api.enabled`, or the panel's own listener needs it at start. */
export const ADMIN_API = key<boolean>('admin API switch');
/** api.jwt_secret, or the one generated at start. */
export const JWT_SECRET = key<() => string>('JWT secret');

// agents & runtime
export const MODELS = key<ModelCacheRefresher>('model cache');
/** Before anything new starts: what a crashed run left of its own helper processes is ended. */
export const ORPHANS_RECOVERED = key<true>('orphan processes recovered');
export const AGENTS = key<AgentSupervisor>('agents');

// notifications & chat
export const NOTIFICATIONS = key<NotificationReadModel>('notifications read model');
/** The chat transports running now (the admin chat, the direct API, messengers): chat delivery asks them whether a chat can be told. */
export const TRANSPORTS = key<TransportRegistry>('chat transports');

// tasks, workflows, automation
export const TASK_HUB = key<TaskHub>('task hub');
export const WORKFLOWS = key<WorkflowEngine>('workflow engine');
/** What `cron_task` webhooks run through. */
export const ONE_SHOT_RUNNER = key<OneShotRunner>('one-shot runner');
export const CRON_SCHEDULER = key<CronScheduler>('cron scheduler');
/** Accepted calls the previous run never settled are run or settled before new ones are taken. */
export const WEBHOOK_CALLS_RECOVERED = key<true>('webhook calls recovered');

// edges
/** null unless `fileshare.enabled` (or it was refused its address). Its address reaches agent tools through their env. */
export const FILESHARE = key<FileshareServer | null>('fileshare server');
export const INTERNAL_API = key<InternalApi>('internal API');
/** null when no surface needs it. */
export const API_SERVER = key<ApiServer | null>('API server');
/** api.token as the direct API generated it ('' when it did not), until the config watcher reads it back. */
export const GENERATED_API_TOKEN = key<string>('generated API token');
export const PANEL_LISTENER = key<PanelListenerCell>('panel listener');
/** null unless `webhooks.enabled`. */
export const WEBHOOK_SERVER = key<WebhookServer | null>('webhook server');
/** webhooks.token as generated at start ('' when it was not), until the config watcher reads it back. */
export const GENERATED_WEBHOOK_TOKEN = key<string>('generated webhook token');

/** The panel's own listener as this run has it: open, or asked for and refused (its port busy). */
export interface PanelListenerState {
  address: PanelAddress;
  /** null: the port could not be bound (logged); the daemon runs on without it. */
  listening: Listening | null;
}

/** Opened, moved and closed as `panel` in config.json says; null while there is none. */
export interface PanelListenerCell {
  current: PanelListenerState | null;
}
