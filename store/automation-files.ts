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
 * (patchWebhookRecord) over it, so every reader sees each call's counters at once.
 */
export function loadWebhooks(paths: HomePaths): WebhookRecord[] {
  const hooks = readWebhooksFile(paths);
  const batch = webhookBatches.get(paths.webhooksFile);
  return batch ? withPatches(hooks, batch.pending) : hooks;
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

interface WebhookBatch {
  pending: Map<string, Partial<WebhookRecord>>;
  waiters: { resolve: () => void; reject: (e: unknown) => void }[];
}
const webhookBatches = new Map<string, WebhookBatch>();

/**
 * Sets run fields (counters, last_*) of one hook. Patches made in one turn of the event loop are
 * written together, in one atomic write with its fsyncs, instead of one whole-file rewrite per call
 * (under a burst of calls the fsyncs were most of a call's cost); the promise settles once the
 * patch is on disk, so whoever answers a caller after it answers from a durable record. Admin edits
 * keep their synchronous load → change → save: the batch is merged over the file as it is when it
 * is written, and a hook deleted meanwhile stays deleted.
 */
export function patchWebhookRecord(paths: HomePaths, id: string, fields: Partial<WebhookRecord>): Promise<void> {
  const file = paths.webhooksFile;
  let batch = webhookBatches.get(file);
  if (!batch) {
    const created: WebhookBatch = { pending: new Map(), waiters: [] };
    webhookBatches.set(file, (batch = created));
    setImmediate(() => writeWebhookBatch(paths, created));
  }
  batch.pending.set(id, { ...batch.pending.get(id), ...fields });
  return new Promise<void>((resolve, reject) => batch.waiters.push({ resolve, reject }));
}

function writeWebhookBatch(paths: HomePaths, batch: WebhookBatch): void {
  webhookBatches.delete(paths.webhooksFile);
  try {
    saveWebhooks(paths, withPatches(readWebhooksFile(paths), batch.pending));
  } catch (e) {
    for (const w of batch.waiters) w.reject(e);
    return;
  }
  for (const w of batch.waiters) w.resolve();
}
