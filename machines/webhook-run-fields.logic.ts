import { AUTOMATION_EVENTS, type AnyEnvelope } from '../schemas/index.js';

/*
 * webhooks.json's run fields (trigger_count, last_*) follow each call's facts and are written a
 * moment later (actors/automation/webhook-run-fields.ts), so a crash can leave the file behind the
 * log, never ahead of it. This says what the file lacks, from the hook's facts since its last
 * `webhook.created`: the calls after the one the file names last are counted, and the last call's
 * end, when the log has it, is put on the record. A file naming a call the log does not know
 * (edited by hand, or a log that began later) is left as it is: nothing can be said of it.
 */

/** The run fields of one record, as the file has them. */
export interface WebhookRunFieldsOnFile {
  id: string;
  trigger_count?: unknown;
  last_request_id?: unknown;
  last_status?: unknown;
}

/** The fields to set on the record so it says what its facts say; null when it already does. */
export function webhookRunFieldsRepair(record: WebhookRunFieldsOnFile, facts: Iterable<AnyEnvelope>): Record<string, unknown> | null {
  let calls: AnyEnvelope[] = [];
  const ends = new Map<string, AnyEnvelope>();
  for (const e of facts) {
    const d = e.data as { id?: unknown; request_id?: unknown };
    if (d.id !== record.id) continue;
    // A hook deleted and made again under the same id starts counting anew.
    if (e.type === AUTOMATION_EVENTS.created) calls = [];
    else if (typeof d.request_id !== 'string') continue;
    else if (e.type === AUTOMATION_EVENTS.triggered) calls.push(e);
    else if (e.type === AUTOMATION_EVENTS.completed || e.type === AUTOMATION_EVENTS.failed) ends.set(d.request_id, e);
  }
  if (calls.length === 0) return null;
  const lastOnFile = typeof record.last_request_id === 'string' ? record.last_request_id : null;
  const known = lastOnFile === null ? -1 : calls.findIndex((c) => (c.data as { request_id: string }).request_id === lastOnFile);
  if (lastOnFile !== null && known < 0) return null;
  const missing = calls.slice(known + 1);
  const last = calls.at(-1)!;
  const lastId = (last.data as { request_id: string }).request_id;
  const end = ends.get(lastId);
  const ended = end ? endFields(end) : null;
  if (missing.length === 0) return record.last_status === 'running' && ended ? ended : null;
  const count = typeof record.trigger_count === 'number' ? record.trigger_count : 0;
  return {
    trigger_count: count + missing.length,
    last_triggered_at: last.at,
    last_triggered: last.at,
    last_request_id: lastId,
    last_status: 'running',
    last_error: null,
    ...ended,
  };
}

function endFields(e: AnyEnvelope): Record<string, unknown> {
  const d = e.data as { status?: unknown; error?: unknown };
  return e.type === AUTOMATION_EVENTS.completed
    ? { last_status: d.status, last_error: null, last_finished_at: e.at }
    : { last_status: 'failed', last_error: d.error, last_finished_at: e.at };
}
