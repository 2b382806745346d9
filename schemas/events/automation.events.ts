import * as v from 'valibot';
import { typeNames } from './type-names.js';

/*
 * Streams `cron:<id>` and `webhook:<id>`: the records in cron_jobs.json and webhooks.json changed
 * through the admin API. Never carries a webhook secret; `fields` names what an update touched.
 */
const Change = { id: v.string(), agent: v.string(), by: v.nullable(v.string()) };
export const AUTOMATION_EVENT_SCHEMAS = {
  'cron.job_created': v.object(Change),
  'cron.job_updated': v.object({ ...Change, fields: v.array(v.string()) }),
  'cron.job_deleted': v.object(Change),
  'webhook.created': v.object(Change),
  'webhook.updated': v.object({ ...Change, fields: v.array(v.string()) }),
  'webhook.deleted': v.object(Change),
};
export const AUTOMATION_EVENTS = typeNames(AUTOMATION_EVENT_SCHEMAS);
export const cronJobStream = (id: string): string => `cron:${id}`;
export const webhookStream = (id: string): string => `webhook:${id}`;
