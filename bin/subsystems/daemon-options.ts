import type { ActorClock } from '../../actors/index.js';
import type { DaemonPhase } from '../../edges/index.js';
import type { HomePaths } from '../../store/index.js';

export interface DaemonOptions {
  paths: HomePaths;
  verbose?: boolean;
  /** Injected in tests; epoch ms. */
  clock?: () => number;
  /** Poll interval of the config and registry watchers (SPEC.md: 5 s). */
  watchIntervalMs?: number;
  /** Tests keep stderr quiet; the log file is written either way. */
  logToStderr?: boolean;
  /** The environment CLIs inherit (tests put the fake CLIs on PATH); default process.env. */
  env?: NodeJS.ProcessEnv;
  /** Between SIGTERM and SIGKILL of a turn's process group. */
  killGraceMs?: number;
  /** Drives turn deadlines; tests pass a SimulatedClock. */
  turnClock?: ActorClock;
  /** Overrides `interagent_port` (tests use 0: any free port). */
  internalPort?: number;
  /** Overrides `api.port` when the API server runs. */
  apiPort?: number;
  /** Backoff between a messenger's start attempts (tests shorten it). */
  messengerRetry?: { firstMs: number; maxMs: number };
  /** Overrides `webhooks.port` when the webhook server runs. */
  webhookPort?: number;
  /** Overrides `fileshare.port` when the fileshare server runs. */
  filesharePort?: number;
  /** Drives the cron scheduler's fires, retries and file polling; tests pass a SimulatedClock (with `clock` reading it). */
  cronClock?: ActorClock;
  /** How often the cron scheduler checks cron_jobs.json for hand edits (default 2 s). */
  cronWatchIntervalMs?: number;
  /** The built admin panel; default `dist/panel` (or `$SVC_PANEL_DIR`). */
  panelDir?: string;
}

/** The host this run was started on: the environment CLIs inherit and the user's home. */
export interface HostEnvironment {
  readonly env: NodeJS.ProcessEnv;
  readonly userHome: string;
}

/** Where the run is in its life: what `/health` says, and the reason the daemon's actor records when it stops. */
export interface DaemonLifecycle {
  /** `up` once every subsystem started and `ready` is committed, `stopping` from a stop's first step. */
  phase: DaemonPhase;
  /** A stop that never got a reason was a failed start. */
  endReason: string;
}
