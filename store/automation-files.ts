import { CronJobsFileSchema, WebhooksFileSchema, type CronJobRecord, type WebhookRecord } from '../schemas/index.js';
import type { HomePaths } from './home.js';
import { readJsonFileSync, writeJsonAtomicSync } from './json-file.js';

/*
 * `cron_jobs.json` and `webhooks.json` (SPEC.md "Cron job and webhook records"): read and written
 * whole, synchronously, so a caller's load → change → save has no await in between and two admin
 * requests cannot interleave their edits. Written as top-level arrays, 0600 (webhook secrets).
 * A missing file is an empty list; a broken one is refused (corrupt-file) and left untouched.
 */

export function loadCronJobs(paths: HomePaths): CronJobRecord[] {
  return readJsonFileSync(paths.cronJobsFile, CronJobsFileSchema, { missing: () => [] });
}

/** Per file, the text svc itself wrote last: the cron watcher must not take it for a hand edit. */
const savedBySvc = new Map<string, string>();

export function saveCronJobs(paths: HomePaths, jobs: readonly CronJobRecord[]): void {
  savedBySvc.set(paths.cronJobsFile, writeJsonAtomicSync(paths.cronJobsFile, jobs, { mode: 0o600 }));
}

/**
 * Whether `text` is what this process wrote to cron_jobs.json last (an admin API change, say, whose
 * event the scheduler has not handled yet), as opposed to an edit by hand.
 */
export function isCronJobsSavedBySvc(paths: HomePaths, text: string): boolean {
  return savedBySvc.get(paths.cronJobsFile) === text;
}

export function loadWebhooks(paths: HomePaths): WebhookRecord[] {
  return readJsonFileSync(paths.webhooksFile, WebhooksFileSchema, { missing: () => [] });
}

export function saveWebhooks(paths: HomePaths, hooks: readonly WebhookRecord[]): void {
  writeJsonAtomicSync(paths.webhooksFile, hooks, { mode: 0o600 });
}
