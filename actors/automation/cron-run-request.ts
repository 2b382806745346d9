import type { Cause } from '../../bus/index.js';
import { systemPrincipal, type CronJobSettings, type OneShotRequest, type Principal } from '../../schemas/index.js';

/* What a cron fire asks of the one-shot runner, and on whose behalf. */

export type CronRoute = { transport: string; chat_id: number; topic_id: number | null };

export function cronPrincipal(jobId: string, route: CronRoute | null): Principal {
  return systemPrincipal(`cron:${jobId}`, { transport: route?.transport ?? 'cron', chat_id: route?.chat_id ?? null, topic_id: route?.topic_id ?? null });
}

export function cronRunRequest(s: CronJobSettings, ownZone: string | null, fireId: string, cause: Cause, route: CronRoute | null): OneShotRequest {
  return {
    source: `cron:${s.id}`,
    agent: s.agent,
    name: s.title,
    prompt: s.description.trim() || s.title,
    provider: s.provider,
    model: s.model,
    reasoning_effort: s.reasoning_effort,
    dependency: s.dependency,
    principal: cronPrincipal(s.id, route),
    correlation: cause.correlation ?? `cron:${fireId}`,
    folder: s.id,
    cli_parameters: s.cli_parameters,
    quiet_start: s.quiet_start,
    quiet_end: s.quiet_end,
    // Null for a job that follows user_timezone: the runner takes the zone of the moment the run
    // starts (after a wait in a dependency queue, or after a restart), not the one it was queued in.
    timezone: ownZone,
    route,
  };
}
