import { CronJobsFileSchema, WebhooksFileSchema, type CronJobRecord, type WebhookRecord } from '../schemas/index.js';
import type { HomePaths } from './home.js';
import { parseJsonText, readJsonTextSync, writeJsonAtomicSync } from './json-file.js';

/*
 * `cron_jobs.json` and `webhooks.json` (SPEC.md "Cron job and webhook records"): read and written
 * whole, synchronously, so a caller's load → change → save has no await in between and two admin
 * requests cannot interleave their edits. Written as top-level arrays, 0600 (webhook secrets).
 * A missing file is an empty list; a broken one is refused (corrupt-file) and left untouched.
 */

export function loadCronJobs(paths: HomePaths): CronJobRecord[] {
  return readCronJobsFile(paths).jobs();
}

/**
 * cron_jobs.json from one read: its text ('' when missing), which the scheduler hashes to tell a
 * hand edit, and its records, parsed when asked (corrupt-file when broken) — both of the same content.
 */
export function readCronJobsFile(paths: HomePaths): { text: string; jobs: () => CronJobRecord[] } {
  const file = paths.cronJobsFile;
  const text = readJsonTextSync(file);
  return { text: text ?? '', jobs: () => (text === null ? [] : parseJsonText(file, text, CronJobsFileSchema)) };
}

/** Per file, the text svc itself wrote last: the cron watcher must not take it for a hand edit. */
const savedBySvc = new Map<string, string>();

/** Returns the text written. */
export function saveCronJobs(paths: HomePaths, jobs: readonly CronJobRecord[]): string {
  const text = writeJsonAtomicSync(paths.cronJobsFile, jobs, { mode: 0o600 });
  savedBySvc.set(paths.cronJobsFile, text);
  return text;
}

/**
 * Whether `text` is what this process wrote to cron_jobs.json last (an admin API change, say, whose
 * event the scheduler has not handled yet), as opposed to an edit by hand.
 */
export function isCronJobsSavedBySvc(paths: HomePaths, text: string): boolean {
  return savedBySvc.get(paths.cronJobsFile) === text;
}

/**
 * webhooks.json as svc knows it: the file, with the run fields of calls made since its last write
 * (patchWebhookRecord, countWebhookCall) over it, so every reader sees each call's counters at once.
 */
export function loadWebhooks(paths: HomePaths): WebhookRecord[] {
  const hooks = readWebhooksFile(paths);
  const pending = webhookBatches.get(paths.webhooksFile);
  return pending ? withPatches(hooks, pending) : hooks;
}

export function saveWebhooks(paths: HomePaths, hooks: readonly WebhookRecord[]): void {
  writeJsonAtomicSync(paths.webhooksFile, hooks, { mode: 0o600 });
}

/**
 * The last parse of webhooks.json by its text: every webhook call reads the file, and it changes
 * far less often than it is called, so a call pays a read, not a parse and a validation of every
 * hook. Handed out as copies: callers change what they load before they save it.
 */
const parsedWebhooks = new Map<string, { text: string; hooks: WebhookRecord[] }>();

function readWebhooksFile(paths: HomePaths): WebhookRecord[] {
  const file = paths.webhooksFile;
  const text = readJsonTextSync(file);
  if (text === null) return [];
  const known = parsedWebhooks.get(file);
  if (known?.text === text) return structuredClone(known.hooks);
  const hooks = parseJsonText(file, text, WebhooksFileSchema);
  parsedWebhooks.set(file, { text, hooks: structuredClone(hooks) });
  return hooks;
}

function withPatches(hooks: WebhookRecord[], pending: ReadonlyMap<string, Partial<WebhookRecord>>): WebhookRecord[] {
  return hooks.map((h) => (pending.has(h.id) ? ({ ...h, ...pending.get(h.id) } as WebhookRecord) : h));
}

/** Per file, each hook's run fields set since the file was last written. */
const webhookBatches = new Map<string, Map<string, Partial<WebhookRecord>>>();

function pendingPatch(paths: HomePaths, id: string): Partial<WebhookRecord> {
  let pending = webhookBatches.get(paths.webhooksFile);
  if (!pending) webhookBatches.set(paths.webhooksFile, (pending = new Map()));
  let patch = pending.get(id);
  if (!patch) pending.set(id, (patch = {}));
  return patch;
}

/**
 * Sets run fields (last_*) of one hook in memory, where every loadWebhooks sees them at once; the
 * file gets them at the next flushWebhookRecords. The caller commits the call's fact first, so the
 * file never says more than the log (a crash before the flush is repaired from the log at start).
 * Admin edits keep their synchronous load → change → save: pending fields are merged over the file
 * as it is when it is written, and a hook deleted meanwhile stays deleted.
 */
export function patchWebhookRecord(paths: HomePaths, id: string, fields: Partial<WebhookRecord>): void {
  Object.assign(pendingPatch(paths, id), fields);
}

/**
 * Counts one call of a hook and sets its run fields, like patchWebhookRecord. The count goes on from
 * the pending one, else from the file as it is now (read only on a hook's first call since a flush),
 * else from `seen`, what the caller loaded before it awaited its fact: calls whose awaits overlap
 * are each counted once, and the count is a plain number an admin save may carry unchanged.
 */
export function countWebhookCall(paths: HomePaths, id: string, seen: number, fields: Partial<WebhookRecord>): void {
  const patch = pendingPatch(paths, id);
  let count: unknown = patch.trigger_count;
  if (typeof count !== 'number') {
    try {
      count = readWebhooksFile(paths).find((h) => h.id === id)?.trigger_count;
    } catch {
      // The file broke since the caller read it; the count it saw then is the best there is.
    }
  }
  Object.assign(patch, fields, { trigger_count: (typeof count === 'number' ? count : seen) + 1 });
}

/**
 * Whether the hook's last call (its record's last_request_id, pending or written) is `requestId`:
 * an earlier call that ends late must not overwrite a later one's last_* fields.
 */
export function isLastWebhookCall(paths: HomePaths, id: string, requestId: string): boolean {
  const pending = webhookBatches.get(paths.webhooksFile)?.get(id)?.last_request_id;
  if (pending !== undefined) return pending === requestId;
  return readWebhooksFile(paths).find((h) => h.id === id)?.last_request_id === requestId;
}

/** Whether run fields wait for a flush. */
export function webhookRecordsPending(paths: HomePaths): boolean {
  return webhookBatches.has(paths.webhooksFile);
}

/**
 * Writes every pending run field and count in one atomic write (with its fsyncs) over the file as
 * it is now, synchronously. Nothing pending, nothing written. When the write fails (a broken file)
 * the patches stay pending for the next flush, and the error is the caller's.
 */
export function flushWebhookRecords(paths: HomePaths): void {
  const pending = webhookBatches.get(paths.webhooksFile);
  if (!pending) return;
  saveWebhooks(paths, withPatches(readWebhooksFile(paths), pending));
  webhookBatches.delete(paths.webhooksFile);
}
