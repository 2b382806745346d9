import { AUTOMATION_EVENTS, cronJobStream, webhookStream, type AnyEnvelope, type CronRun, type EventPayload, type WebhookRun } from '../../schemas/index.js';
import type { EventLog } from '../../store/index.js';

/*
 * A cron job's or a webhook's past runs for the panel (`GET /api/cron/{id}/runs`,
 * `GET /api/webhooks/{id}/runs`), folded from the facts the scheduler and the webhook server already
 * write to `cron:<id>` and `webhook:<id>`: no second record of a run to drift from the log.
 */

/** A run's answer as a listing shows it; the whole one stays in the log. */
const MAX_RESULT_CHARS = 4000;
const cut = (s: string) => (s.length > MAX_RESULT_CHARS ? `${s.slice(0, MAX_RESULT_CHARS)}…` : s);

const CRON_RUN_TYPES = [AUTOMATION_EVENTS.fired, AUTOMATION_EVENTS.fire_skipped, AUTOMATION_EVENTS.run_finished, AUTOMATION_EVENTS.delivered];
const WEBHOOK_RUN_TYPES = [AUTOMATION_EVENTS.triggered, AUTOMATION_EVENTS.completed, AUTOMATION_EVENTS.failed, AUTOMATION_EVENTS.run_ended];

/** Newest first, at most `limit`. */
function newest<T>(runs: Map<string, T>, limit: number): T[] {
  return [...runs.values()].reverse().slice(0, limit);
}

export function foldCronRuns(events: readonly AnyEnvelope[], limit: number): CronRun[] {
  const runs = new Map<string, CronRun>();
  for (const e of events) {
    if (e.type === AUTOMATION_EVENTS.fired) {
      const d = e.data as EventPayload<typeof AUTOMATION_EVENTS.fired>;
      runs.set(d.fire_id, { fire_id: d.fire_id, trigger: d.trigger, scheduled_at: d.scheduled_at, fired_at: e.at, finished_at: null, status: 'running', duration_ms: null, result: null, delivered: false });
    } else if (e.type === AUTOMATION_EVENTS.fire_skipped) {
      const d = e.data as EventPayload<typeof AUTOMATION_EVENTS.fire_skipped>;
      const run = runs.get(d.fire_id);
      // A missed fire is skipped without a `cron.fired` before it.
      runs.set(d.fire_id, { ...(run ?? { fire_id: d.fire_id, trigger: 'schedule', scheduled_at: d.scheduled_at, fired_at: e.at, duration_ms: null, result: null, delivered: false }), finished_at: e.at, status: d.status });
    } else if (e.type === AUTOMATION_EVENTS.run_finished) {
      const d = e.data as EventPayload<typeof AUTOMATION_EVENTS.run_finished>;
      const run = runs.get(d.fire_id);
      if (run) Object.assign(run, { finished_at: e.at, status: d.status, duration_ms: d.duration_ms, result: cut(d.result) });
    } else if (e.type === AUTOMATION_EVENTS.delivered) {
      const run = runs.get((e.data as EventPayload<typeof AUTOMATION_EVENTS.delivered>).fire_id);
      if (run) run.delivered = true;
    }
  }
  return newest(runs, limit);
}

export function foldWebhookRuns(events: readonly AnyEnvelope[], limit: number): WebhookRun[] {
  const runs = new Map<string, WebhookRun>();
  for (const e of events) {
    if (e.type === AUTOMATION_EVENTS.triggered) {
      const d = e.data as EventPayload<typeof AUTOMATION_EVENTS.triggered>;
      runs.set(d.request_id, { request_id: d.request_id, triggered_at: e.at, finished_at: null, client: d.client, body_bytes: d.body_bytes, keys: d.keys, status: 'running', error: null, result: null });
      continue;
    }
    const run = runs.get((e.data as { request_id: string }).request_id);
    if (!run) continue;
    if (e.type === AUTOMATION_EVENTS.completed) {
      const d = e.data as EventPayload<typeof AUTOMATION_EVENTS.completed>;
      // A cron_task call's `completed` only says its run started: `run_ended` tells how it ended.
      Object.assign(run, d.mode === 'cron_task' ? { status: 'running' } : { status: d.status, finished_at: e.at });
    } else if (e.type === AUTOMATION_EVENTS.failed) {
      const d = e.data as EventPayload<typeof AUTOMATION_EVENTS.failed>;
      Object.assign(run, { status: 'failed', error: d.error, finished_at: e.at });
    } else if (e.type === AUTOMATION_EVENTS.run_ended) {
      const d = e.data as EventPayload<typeof AUTOMATION_EVENTS.run_ended>;
      Object.assign(run, { status: d.status, result: cut(d.result), finished_at: e.at });
    }
  }
  return newest(runs, limit);
}

export const cronRuns = (log: Pick<EventLog, 'read'>, id: string, limit: number): CronRun[] => foldCronRuns(log.read({ stream: cronJobStream(id), types: CRON_RUN_TYPES }), limit);
export const webhookRuns = (log: Pick<EventLog, 'read'>, id: string, limit: number): WebhookRun[] =>
  foldWebhookRuns(log.read({ stream: webhookStream(id), types: WEBHOOK_RUN_TYPES }), limit);
