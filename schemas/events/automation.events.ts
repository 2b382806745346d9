import * as v from 'valibot';
import { typeNames } from './type-names.js';

/*
 * Streams `cron:<id>` and `webhook:<id>`: the records in cron_jobs.json and webhooks.json changed
 * through the admin API, and each accepted webhook call with how its dispatch ended. Never carries
 * a webhook secret, a header or the body: a call is summed up by its size and its top-level keys.
 */
const Change = { id: v.string(), agent: v.string(), by: v.nullable(v.string()) };
export const AUTOMATION_EVENT_SCHEMAS = {
  'cron.job_created': v.object(Change),
  'cron.job_updated': v.object({ ...Change, fields: v.array(v.string()) }),
  'cron.job_deleted': v.object(Change),
  'webhook.created': v.object(Change),
  'webhook.updated': v.object({ ...Change, fields: v.array(v.string()) }),
  'webhook.deleted': v.object(Change),
  /** A call passed every check and was answered 202; `request_id` correlates its dispatch. */
  'webhook.triggered': v.object({
    id: v.string(),
    agent: v.string(),
    mode: v.string(),
    request_id: v.string(),
    client: v.string(),
    body_bytes: v.number(),
    /** The payload's first top-level keys, each cut short: what arrived, never what it said. */
    keys: v.array(v.string()),
  }),
  /** The dispatch ran: the wake turn ended (`status` is the turn's), or the one-shot run started. */
  'webhook.completed': v.object({ id: v.string(), agent: v.string(), mode: v.string(), request_id: v.string(), status: v.string(), turn_id: v.nullable(v.string()), task_id: v.nullable(v.string()) }),
  /** The dispatch could not run or its turn failed; `reason` is machine-readable (`agent-refused`, `turn-failed`, `no-runner`, ...). */
  'webhook.failed': v.object({ id: v.string(), agent: v.string(), mode: v.string(), request_id: v.string(), reason: v.string(), error: v.string() }),
};
export const AUTOMATION_EVENTS = typeNames(AUTOMATION_EVENT_SCHEMAS);
export const cronJobStream = (id: string): string => `cron:${id}`;
export const webhookStream = (id: string): string => `webhook:${id}`;
