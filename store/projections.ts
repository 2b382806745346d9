import { agentTurnsProjection } from './agent-turns.projection.js';
import { chatSessionsProjection } from './chat-sessions.projection.js';
import { daemonRunsProjection } from './daemon-runs.projection.js';
import { notificationsProjection } from './notifications.projection.js';
import type { Projection } from './projection.js';
import { streamHeadsProjection } from './stream-heads.projection.js';
import { auditProjection } from './audit.projection.js';
import { systemSettingsProjection } from './system-settings.projection.js';
import { tasksProjection } from './tasks.projection.js';

/** Every read model the daemon keeps; `svc events replay` rebuilds exactly these. */
export const PROJECTIONS: readonly Projection[] = [
  streamHeadsProjection,
  daemonRunsProjection,
  notificationsProjection,
  chatSessionsProjection,
  agentTurnsProjection,
  auditProjection,
  systemSettingsProjection,
  tasksProjection,
];
