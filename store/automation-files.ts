import { CronJobsFileSchema, WebhooksFileSchema, type CronJobRecord, type WebhookRecord } from '../schemas/index.js';
import type { HomePaths } from './home.js';
import { commitStagedJson, discardStagedJson, parseJsonText, readJsonFileSync, readJsonTextSync, stageJsonAtomic, writeJsonAtomicSync } from './json-file.js';

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
 * (patchWebhookRecord: being written, then still to be written) over it, so every reader sees each
 * call's counters at once.
 */
export function loadWebhooks(paths: HomePaths): WebhookRecord[] {
  let hooks = readWebhooksFile(paths);
  const writing = webhookWrites.get(paths.webhooksFile);
  if (writing) hooks = withPatches(hooks, writing);
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
  return parseWebhooks(paths, readJsonTextSync(paths.webhooksFile));
}

function parseWebhooks(paths: HomePaths, text: string | null): WebhookRecord[] {
  const file = paths.webhooksFile;
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
/** Patches still to be written, per file. */
const webhookBatches = new Map<string, WebhookBatch>();
/** Patches being written now, per file: one write at a time, so at most one. */
const webhookWrites = new Map<string, ReadonlyMap<string, Partial<WebhookRecord>>>();
/** Settles when the write under way ends; the next batch starts after it. */
const webhookWriteDone = new Map<string, Promise<void>>();

/**
 * Sets run fields (counters, last_*) of one hook. Patches made while the write before them is under
 * way, or in the same turn of the event loop, are written together, in one atomic write with its
 * fsyncs (a group commit), instead of one whole-file rewrite per call; the fsyncs run on libuv's
 * threads, so calls keep being accepted meanwhile. The promise settles once the patch is on disk,
 * so whoever answers a caller after it answers from a durable record. Admin edits keep their
 * synchronous load → change → save: the batch is merged over the file as it is when it is put in
 * place, and a hook deleted meanwhile stays deleted.
 */
export function patchWebhookRecord(paths: HomePaths, id: string, fields: Partial<WebhookRecord>): Promise<void> {
  const file = paths.webhooksFile;
  let batch = webhookBatches.get(file);
  if (!batch) {
    const created: WebhookBatch = { pending: new Map(), waiters: [] };
    webhookBatches.set(file, (batch = created));
    const before = webhookWriteDone.get(file) ?? Promise.resolve();
    void before.then(() => setImmediate(() => void writeWebhookBatch(paths, created)));
  }
  batch.pending.set(id, { ...batch.pending.get(id), ...fields });
  return new Promise<void>((resolve, reject) => batch.waiters.push({ resolve, reject }));
}

/** Tries at merging over a file that keeps changing under the staged write before doing it all synchronously. */
const STAGED_TRIES = 3;

async function writeWebhookBatch(paths: HomePaths, batch: WebhookBatch): Promise<void> {
  const file = paths.webhooksFile;
  webhookBatches.delete(file);
  webhookWrites.set(file, batch.pending);
  let finished!: () => void;
  webhookWriteDone.set(file, new Promise<void>((r) => (finished = r)));
  try {
    await writeMerged(paths, batch.pending);
    for (const w of batch.waiters) w.resolve();
  } catch (e) {
    for (const w of batch.waiters) w.reject(e);
  } finally {
    webhookWrites.delete(file);
    webhookWriteDone.delete(file);
    finished();
  }
}

/**
 * The batch over the file as it is: staged (written and fsynced) off the loop, then put in place
 * only if nobody wrote the file meanwhile — the check and the rename have no await between them,
 * so an admin save is either merged under the patches or comes after and carries them (it loaded
 * them through loadWebhooks). Otherwise merged again over what was written.
 */
async function writeMerged(paths: HomePaths, patches: ReadonlyMap<string, Partial<WebhookRecord>>): Promise<void> {
  const file = paths.webhooksFile;
  for (let i = 0; i < STAGED_TRIES; i++) {
    const text = readJsonTextSync(file);
    const tmp = await stageJsonAtomic(file, withPatches(parseWebhooks(paths, text), patches), { mode: 0o600 });
    if (readJsonTextSync(file) === text) return commitStagedJson(tmp, file);
    discardStagedJson(tmp);
  }
  saveWebhooks(paths, withPatches(readWebhooksFile(paths), patches));
}
