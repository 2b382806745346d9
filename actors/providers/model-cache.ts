import * as fs from 'node:fs';
import { join } from 'node:path';
import { writeJsonAtomic, type HomePaths } from '../../store/index.js';

/*
 * SPEC.md "Model and timezone resolution", model caches under `~/.svc/config/`. The cache is ours:
 * a corrupt file is treated as missing and rewritten (unlike user files, which are never touched).
 *
 * | provider | file               | at startup                   | hourly check                 |
 * |----------|--------------------|------------------------------|------------------------------|
 * | codex    | codex_models.json  | always refresh (forced)      | refresh only when >= 24 h old |
 * | gemini   | gemini_models.json | reuse when < 24 h old        | always refresh                |
 *
 * "hourly refresh" for provider_c is read literally: its source is local files, cheap to rescan, and
 * rescanning picks up a CLI upgrade within the hour.
 */

export type CachedProvider = 'codex' | 'gemini';
export const CACHED_PROVIDERS: readonly CachedProvider[] = ['codex', 'gemini'];

export const MODEL_CACHE_MAX_AGE_MS = 24 * 60 * 60 * 1000;
export const MODEL_CACHE_CHECK_INTERVAL_MS = 60 * 60 * 1000;
export const MODEL_CACHE_FILES: Record<CachedProvider, string> = { codex: 'codex_models.json', gemini: 'gemini_models.json' };

export type RefreshWhen = 'always' | 'when-stale';
export const MODEL_CACHE_POLICY: Record<CachedProvider, { startup: RefreshWhen; hourly: RefreshWhen }> = {
  codex: { startup: 'always', hourly: 'when-stale' },
  gemini: { startup: 'when-stale', hourly: 'always' },
};

/** A cache file bigger than this is not one we wrote. */
const MAX_CACHE_BYTES = 1024 * 1024;
const MAX_MODELS = 1000;
const MAX_MODEL_ID = 200;

export interface ModelCacheFile {
  provider: CachedProvider;
  /** Epoch ms of the fetch that produced `models`. */
  fetched_at: number;
  models: string[];
}

export type CacheRead =
  | { state: 'missing' }
  | { state: 'corrupt'; reason: string }
  | { state: 'ok'; cache: ModelCacheFile };

export function modelCachePath(paths: Pick<HomePaths, 'configDir'>, provider: CachedProvider): string {
  return join(paths.configDir, MODEL_CACHE_FILES[provider]);
}

/** Trimmed, de-duplicated model ids in first-seen order; null when the value is not a list of ids. */
export function cleanModelList(value: unknown): string[] | null {
  if (!Array.isArray(value) || value.length > MAX_MODELS) return null;
  const out: string[] = [];
  for (const m of value) {
    if (typeof m !== 'string') return null;
    const id = m.trim();
    if (id === '' || id.length > MAX_MODEL_ID || /\s/.test(id)) return null;
    if (!out.includes(id)) out.push(id);
  }
  return out;
}

/** Reads a cache file; never throws — anything unreadable is `corrupt` with the reason. */
export function readModelCache(path: string, provider: CachedProvider): CacheRead {
  let text: string;
  try {
    const st = fs.statSync(path);
    if (!st.isFile()) return { state: 'corrupt', reason: 'not a regular file' };
    if (st.size > MAX_CACHE_BYTES) return { state: 'corrupt', reason: `${st.size} bytes is over the ${MAX_CACHE_BYTES}-byte limit` };
    text = fs.readFileSync(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { state: 'missing' };
    return { state: 'corrupt', reason: (err as Error).message };
  }
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (err) {
    return { state: 'corrupt', reason: `not valid JSON (${(err as Error).message})` };
  }
  if (typeof data !== 'object' || data === null || Array.isArray(data)) return { state: 'corrupt', reason: 'not a JSON object' };
  const obj = data as Record<string, unknown>;
  if (obj.provider !== provider) return { state: 'corrupt', reason: `provider = ${JSON.stringify(obj.provider)}, expected "${provider}"` };
  const at = obj.fetched_at;
  if (typeof at !== 'number' || !Number.isSafeInteger(at) || at < 0) return { state: 'corrupt', reason: `fetched_at = ${JSON.stringify(at)} is not epoch milliseconds` };
  const models = cleanModelList(obj.models);
  if (!models) return { state: 'corrupt', reason: 'models is not a list of model ids' };
  return { state: 'ok', cache: { provider, fetched_at: at, models } };
}

/**
 * Younger than 24 h. Exactly 24 h is stale; a timestamp in the future (clock moved back, hand-edited
 * file) cannot be trusted, so it is stale too.
 */
export function isCacheFresh(cache: Pick<ModelCacheFile, 'fetched_at'>, now: number): boolean {
  const age = now - cache.fetched_at;
  return age >= 0 && age < MODEL_CACHE_MAX_AGE_MS;
}

/** Where the models come from (codex: its local cache or presets; gemini: installed CLI files + aliases). */
export type FetchModels = (provider: CachedProvider) => Promise<readonly string[]>;

export interface ModelCacheOptions {
  paths: Pick<HomePaths, 'configDir'>;
  /** Epoch ms. */
  now: () => number;
  fetchModels: FetchModels;
}

export type CachePhase = 'startup' | 'hourly';

export interface ModelCacheResult {
  provider: CachedProvider;
  models: string[];
  /** Of the models returned; null when there are none. */
  fetched_at: number | null;
  /** reused: cache was good enough; refreshed: fetched (and written); kept: fetch failed, old cache served; failed: nothing to serve. */
  action: 'reused' | 'refreshed' | 'kept' | 'failed';
  /** Why it refreshed (or would have): the cache state, or the policy when it refreshes regardless. */
  reason: 'fresh' | 'stale' | 'missing' | 'corrupt' | 'forced';
  error?: string;
}

/** Applies the table above for one provider and one phase. Never throws; failures are in the result. */
export async function syncModelCache(provider: CachedProvider, phase: CachePhase, opts: ModelCacheOptions): Promise<ModelCacheResult> {
  const path = modelCachePath(opts.paths, provider);
  const read = readModelCache(path, provider);
  const now = opts.now();
  const state = read.state === 'ok' ? (isCacheFresh(read.cache, now) ? 'fresh' : 'stale') : read.state;
  const policy = MODEL_CACHE_POLICY[provider][phase];
  const old = read.state === 'ok' ? read.cache : null;
  if (policy === 'when-stale' && state === 'fresh' && old) {
    return { provider, models: old.models, fetched_at: old.fetched_at, action: 'reused', reason: 'fresh' };
  }
  const reason = policy === 'always' ? 'forced' : state;

  let models: string[] | null;
  let error: string | undefined;
  try {
    models = cleanModelList([...(await opts.fetchModels(provider))]);
    if (!models) error = 'the model source returned something that is not a list of model ids';
    else if (models.length === 0) error = 'the model source found no models';
  } catch (err) {
    models = null;
    error = `the model source failed: ${(err as Error)?.message ?? String(err)}`;
  }
  if (error || !models) {
    // A transient failure must not wipe a list that worked; the next check tries again.
    if (old) return { provider, models: old.models, fetched_at: old.fetched_at, action: 'kept', reason, error };
    return { provider, models: [], fetched_at: null, action: 'failed', reason, error };
  }

  const fetchedAt = opts.now();
  const file: ModelCacheFile = { provider, fetched_at: fetchedAt, models };
  const result: ModelCacheResult = { provider, models, fetched_at: fetchedAt, action: 'refreshed', reason };
  try {
    await writeJsonAtomic(path, file, { mode: 0o644 });
  } catch (err) {
    result.error = `${path}: could not write the cache: ${(err as Error).message}`;
  }
  return result;
}

export interface IntervalTimers {
  setInterval(fn: () => void, ms: number): unknown;
  clearInterval(handle: unknown): void;
}

const REAL_TIMERS: IntervalTimers = {
  setInterval: (fn, ms) => {
    const h = setInterval(fn, ms);
    // The daemon's lifetime is decided by its servers and signals, never by this check.
    h.unref();
    return h;
  },
  clearInterval: (h) => clearInterval(h as NodeJS.Timeout),
};

export interface RefresherOptions extends ModelCacheOptions {
  intervalMs?: number;
  timers?: IntervalTimers;
  /** Every result of every run, startup and hourly. */
  onResult?: (result: ModelCacheResult) => void;
}

/**
 * Keeps both caches current: `start()` runs the startup rules and arms the hourly check, `stop()`
 * disarms it. A check that is still running when the next one is due is not doubled up.
 */
export class ModelCacheRefresher {
  private readonly opts: RefresherOptions;
  private readonly latest = new Map<CachedProvider, ModelCacheResult>();
  private handle: unknown = null;
  private started: Promise<ModelCacheResult[]> | null = null;
  private inFlight: Promise<ModelCacheResult[]> | null = null;
  private stopped = false;
  /** Bumped by start/stop so a startup run that finishes after a stop (or a restart) arms nothing. */
  private generation = 0;

  constructor(opts: RefresherOptions) {
    this.opts = opts;
  }

  start(): Promise<ModelCacheResult[]> {
    if (this.started) return this.started;
    this.stopped = false;
    const generation = ++this.generation;
    this.started = this.run('startup').then((results) => {
      if (!this.stopped && generation === this.generation) {
        const timers = this.opts.timers ?? REAL_TIMERS;
        this.handle = timers.setInterval(() => void this.tick(), this.opts.intervalMs ?? MODEL_CACHE_CHECK_INTERVAL_MS);
      }
      return results;
    });
    return this.started;
  }

  /** The hourly check; also callable directly (e.g. after `svc auth`). */
  tick(): Promise<ModelCacheResult[]> {
    if (this.stopped) return Promise.resolve([]);
    this.inFlight ??= this.run('hourly').finally(() => {
      this.inFlight = null;
    });
    return this.inFlight;
  }

  /**
   * Disarms the hourly check and resolves once a check already running has finished, so a
   * stopped daemon never writes a cache file after its home was handed back.
   */
  stop(): Promise<void> {
    this.stopped = true;
    this.generation++;
    if (this.handle !== null) (this.opts.timers ?? REAL_TIMERS).clearInterval(this.handle);
    this.handle = null;
    const running = [this.started, this.inFlight].filter((p) => p !== null);
    this.started = null;
    return Promise.allSettled(running).then(() => undefined);
  }

  get running(): boolean {
    return this.handle !== null;
  }

  /** Last known models for a provider (empty before the first run). */
  models(provider: CachedProvider): string[] {
    return [...(this.latest.get(provider)?.models ?? [])];
  }

  lastResult(provider: CachedProvider): ModelCacheResult | undefined {
    return this.latest.get(provider);
  }

  private async run(phase: CachePhase): Promise<ModelCacheResult[]> {
    const results = await Promise.all(CACHED_PROVIDERS.map((p) => syncModelCache(p, phase, this.opts)));
    for (const r of results) {
      this.latest.set(r.provider, r);
      try {
        this.opts.onResult?.(r);
      } catch {
        // A faulty listener must not stop the other provider's result or the next check.
      }
    }
    return results;
  }
}
