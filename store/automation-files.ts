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

export function saveCronJobs(paths: HomePaths, jobs: readonly CronJobRecord[]): void {
  writeJsonAtomicSync(paths.cronJobsFile, jobs, { mode: 0o600 });
}

export function loadWebhooks(paths: HomePaths): WebhookRecord[] {
  return readJsonFileSync(paths.webhooksFile, WebhooksFileSchema, { missing: () => [] });
}

export function saveWebhooks(paths: HomePaths, hooks: readonly WebhookRecord[]): void {
  writeJsonAtomicSync(paths.webhooksFile, hooks, { mode: 0o600 });
}
