import type { Bus, Cause } from '../../bus/index.js';
import { cronDeliveryText, deliveryRetryDelayMs, isSuccessStatus, nextAverage, recordResultPreview } from '../../machines/index.js';
import { AUTOMATION_EVENTS, CHAT_DELIVERY_COMMANDS, MAX_CRON_RESULT_CHARS, SvcError, cronJobStream, describeError, type CronJobRecord, type CronJobSettings } from '../../schemas/index.js';
import type { ActorClock } from '../host/actor-host.js';
import { ADMIN_TRANSPORT } from '../chat-delivery/chat-delivery.js';
import { recordChatEnvelope } from '../chat-delivery/chat-envelope.js';
import type { OneShotResult } from './one-shot-runner.js';

/* How a cron run's result reaches its chat, attempt by attempt, for the cron scheduler. */

const iso = (ms: number) => new Date(ms).toISOString();

/** What a delivery needs of the scheduler that started it. */
export interface CronDeliveryContext {
  bus: Bus;
  clock: ActorClock;
  /** Retries waiting on the clock; stop() clears them. */
  retryTimers: Set<unknown>;
  stopped(): boolean;
  /** The job's settings as they are now (a retry follows an edit of its chat). */
  settingsOf(id: string): CronJobSettings | undefined;
  patch(changes: Record<string, Partial<CronJobRecord>>): void;
  /** A job's record as it will be once the pending patches are written. */
  current(id: string): CronJobRecord | undefined;
  track(p: Promise<unknown>): void;
}

/**
 * One attempt; a failed one is retried later on the clock, and the result stays in the log either way.
 *
 * Where it goes: a job without a transport (or with the admin chat's) is told in its agent's admin
 * chat, as a `cron_result` envelope. A job naming another transport is told in that chat through
 * `chat.deliver`, and an answer of not delivered is a failed attempt. The direct API (`api`) gets
 * it live on that chat's open connections. A transport that is not running (every messenger until
 * one is built) has chat.deliver put the result in the agent's admin chat instead, recorded as
 * `chat.delivery_rerouted`; `cron.delivered` names where it went (`to`).
 */
export function deliverCronResult(x: CronDeliveryContext, s: CronJobSettings, fireId: string, status: string, result: string, attempt: number, cause: Cause): void {
  const id = s.id;
  const correlation = cause.correlation ?? `cron:${fireId}`;
  const text = cronDeliveryText(s.title, status, result);
  const tellChat = async (): Promise<string> => {
    const transport = s.transport ?? ADMIN_TRANSPORT;
    // A job naming a transport but no chat has no chat there to tell: its admin chat is told, as
    // for a job with no transport, and the log line says why (the result is never dropped).
    if (transport === ADMIN_TRANSPORT || s.chat_id === null) {
      if (transport !== ADMIN_TRANSPORT) x.bus.emitLog('info', `cron job ${id}: names transport ${transport} but no chat_id: ${fireId}'s result went to ${s.agent}'s admin chat`);
      await recordChatEnvelope(x.bus, { agent: s.agent, id: `cron-${fireId.replace(/[^A-Za-z0-9_-]/g, '-')}`, kind: 'cron_result', content: text, meta: { job_id: id, fire_id: fireId, status, title: s.title }, correlation });
      return ADMIN_TRANSPORT;
    }
    // chat.deliver puts it in the admin chat itself when that transport is not running.
    const r = await x.bus.send(CHAT_DELIVERY_COMMANDS.deliver, { transport, chat_id: s.chat_id, topic_id: s.topic_id, text, agent: s.agent, source: `cron:${id}` }, { correlation });
    if (!r.delivered) throw new SvcError('no-handler', `${transport} chat ${s.chat_id} was not told, and neither was the admin chat`);
    return r.to ?? transport;
  };
  const attemptOnce = async () => {
    try {
      const to = await tellChat();
      await x.bus.publish({ stream: cronJobStream(id), type: AUTOMATION_EVENTS.delivered, data: { id, fire_id: fireId, attempt, to }, ...cause });
      x.patch({ [id]: { last_delivery_status: 'delivered' } });
    } catch (e) {
      if (x.stopped()) return;
      const delay = deliveryRetryDelayMs(attempt);
      const retryAt = delay === null ? null : x.bus.now() + delay;
      await x.bus.publish({ stream: cronJobStream(id), type: AUTOMATION_EVENTS.delivery_failed, data: { id, fire_id: fireId, attempt, error: describeError(e).slice(0, 500), retry_at: retryAt === null ? null : iso(retryAt) }, ...cause });
      x.patch({ [id]: { last_delivery_status: delay === null ? 'failed' : 'retrying' } });
      if (delay === null) return;
      const timer = x.clock.setTimeout(() => {
        x.retryTimers.delete(timer);
        if (!x.stopped()) deliverCronResult(x, x.settingsOf(id) ?? s, fireId, status, result, attempt + 1, cause);
      }, delay);
      x.retryTimers.add(timer);
    }
  };
  x.track(attemptOnce().catch((e: unknown) => x.bus.emitLog('error', `cron job ${id}: delivery of ${fireId} not recorded: ${describeError(e)}`)));
}

/** A fire's run ended: its fact, the job's run fields, and (unless it is silent) its delivery. */
export async function finishCronRun(x: CronDeliveryContext, id: string, agent: string, fireId: string, startedAt: number | null, r: OneShotResult, s: CronJobSettings | null, cause: Cause, runId: string | null): Promise<void> {
  const skipped = r.status.startsWith('skipped:');
  const deliver = !skipped && !(s?.silent_on_success && isSuccessStatus(r.status));
  const result = r.text.slice(0, MAX_CRON_RESULT_CHARS);
  const durationMs = r.duration_ms ?? (startedAt === null ? null : x.bus.now() - startedAt);
  await x.bus.publish({ stream: cronJobStream(id), type: AUTOMATION_EVENTS.run_finished, data: { id, agent, fire_id: fireId, run_id: runId, status: r.status, duration_ms: durationMs, result, deliver, ...(s ? { name: s.title } : {}) }, ...cause });
  const rec = x.current(id);
  if (rec) {
    const count = typeof rec.execution_count === 'number' ? rec.execution_count : 0;
    x.patch({
      [id]: {
        last_status: r.status,
        // A preview (machines/cron.logic.ts): the log and the delivery have the whole result.
        last_result: recordResultPreview(result),
        last_delivery_status: deliver ? 'pending' : 'none',
        ...(skipped || durationMs === null ? {} : { execution_count: count + 1, avg_duration: nextAverage(rec.avg_duration as number | null, count, durationMs / 1000) }),
      },
    });
  }
  if (deliver && s) deliverCronResult(x, s, fireId, r.status, result, 1, cause);
}
