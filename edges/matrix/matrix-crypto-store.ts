import { mkdir, open, readFile, rename } from 'node:fs/promises';
import { dirname } from 'node:path';
import { deserialize, serialize } from 'node:v8';
import { IDBFactory, IDBKeyRange } from 'fake-indexeddb';
import type { MatrixClient } from 'matrix-js-sdk';
import { SvcError } from '../../schemas/index.js';

// matrix-js-sdk's Rust crypto persists only to IndexedDB, which Node lacks. Each Matrix device gets an in-memory
// IndexedDB (fake-indexeddb) of its own, filled from a file at start and written back to it after changes; see
// docs/matrix-notes.md "Persisting crypto across restarts (Node)" for the options weighed and why this one.

/** Bumped when the layout below changes, so an old svc refuses a newer file instead of misreading it. */
const SNAPSHOT_FORMAT = 'svc-matrix-crypto/1';

/** Structural views of the IndexedDB API: svc compiles without the DOM lib, so fake-indexeddb's types are `any`. */
type Key = unknown;
interface Request<T> {
  result: T;
  error: unknown;
  onsuccess: (() => void) | null;
  onerror: (() => void) | null;
}
interface OpenRequest extends Request<Database> {
  onupgradeneeded: (() => void) | null;
}
interface Index {
  keyPath: string | string[];
  unique: boolean;
  multiEntry: boolean;
}
interface ObjectStore {
  keyPath: string | string[] | null;
  autoIncrement: boolean;
  indexNames: Iterable<string>;
  index(name: string): Index;
  getAll(): Request<unknown[]>;
  getAllKeys(): Request<Key[]>;
  put(value: unknown, key?: Key): void;
  createIndex(name: string, keyPath: string | string[], options: { unique: boolean; multiEntry: boolean }): void;
}
interface Transaction {
  objectStore(name: string): ObjectStore;
  oncomplete: (() => void) | null;
  onerror: (() => void) | null;
  onabort: (() => void) | null;
  error: unknown;
}
interface Database {
  objectStoreNames: Iterable<string>;
  transaction(names: string[], mode: 'readonly' | 'readwrite'): Transaction;
  createObjectStore(name: string, options: { keyPath: string | string[] | null; autoIncrement: boolean }): ObjectStore;
  close(): void;
}
interface Factory {
  databases(): Promise<{ name?: string; version?: number }[]>;
  open(name: string, version?: number): OpenRequest;
}

interface StoreDump {
  name: string;
  keyPath: string | string[] | null;
  autoIncrement: boolean;
  indexes: { name: string; keyPath: string | string[]; unique: boolean; multiEntry: boolean }[];
  /** Primary keys and values in key order, as getAllKeys and getAll return them in one transaction. */
  keys: Key[];
  values: unknown[];
}
interface DatabaseDump {
  name: string;
  version: number;
  stores: StoreDump[];
}
interface Snapshot {
  format: typeof SNAPSHOT_FORMAT;
  databases: DatabaseDump[];
}

const request = <T>(r: Request<T>) =>
  new Promise<T>((ok, fail) => {
    r.onsuccess = () => ok(r.result);
    r.onerror = () => fail(r.error);
  });

const finished = (tx: Transaction) =>
  new Promise<void>((ok, fail) => {
    tx.oncomplete = () => ok();
    tx.onerror = () => fail(tx.error);
    tx.onabort = () => fail(tx.error ?? new Error('IndexedDB transaction aborted'));
  });

/**
 * Every database of the factory. Each is read in one readonly transaction over all its stores, so a write the
 * Rust store makes meanwhile lands wholly before or after the copy, never half in it.
 */
async function dump(factory: Factory): Promise<Snapshot> {
  const databases: DatabaseDump[] = [];
  for (const { name, version } of await factory.databases()) {
    if (name === undefined || version === undefined) continue;
    const db = await request(factory.open(name));
    try {
      const names = [...db.objectStoreNames];
      const stores: StoreDump[] = [];
      if (names.length) {
        const tx = db.transaction(names, 'readonly');
        const reads = names.map((n) => {
          const st = tx.objectStore(n);
          const indexes = [...st.indexNames].map((i) => {
            const index = st.index(i);
            return { name: i, keyPath: index.keyPath, unique: index.unique, multiEntry: index.multiEntry };
          });
          // Both requests go out before any await: an IndexedDB transaction commits once it has nothing left to do.
          return Promise.all([request(st.getAllKeys()), request(st.getAll())]).then(([keys, values]) => {
            stores.push({ name: n, keyPath: st.keyPath, autoIncrement: st.autoIncrement, indexes, keys, values });
          });
        });
        await Promise.all([finished(tx), ...reads]);
      }
      databases.push({ name, version, stores });
    } finally {
      db.close();
    }
  }
  return { format: SNAPSHOT_FORMAT, databases };
}

async function restore(factory: Factory, snapshot: Snapshot): Promise<void> {
  for (const d of snapshot.databases) {
    const opening = factory.open(d.name, d.version);
    opening.onupgradeneeded = () => {
      for (const s of d.stores) {
        const st = opening.result.createObjectStore(s.name, { keyPath: s.keyPath, autoIncrement: s.autoIncrement });
        for (const i of s.indexes) st.createIndex(i.name, i.keyPath, { unique: i.unique, multiEntry: i.multiEntry });
      }
    };
    const db = await request(opening);
    try {
      const filled = d.stores.filter((s) => s.keys.length);
      if (!filled.length) continue;
      const tx = db.transaction(
        filled.map((s) => s.name),
        'readwrite',
      );
      for (const s of filled) {
        const st = tx.objectStore(s.name);
        // In-line keys live in the value itself; passing them again is an error.
        s.values.forEach((v, i) => (s.keyPath === null ? st.put(v, s.keys[i]) : st.put(v)));
      }
      await finished(tx);
    } finally {
      db.close();
    }
  }
}

/** Enough of a check that a file of something else fails here, with its name, rather than deep inside Rust. */
function isSnapshot(x: unknown): x is Snapshot {
  if (typeof x !== 'object' || x === null) return false;
  const s = x as Partial<Snapshot>;
  return (
    s.format === SNAPSHOT_FORMAT &&
    Array.isArray(s.databases) &&
    s.databases.every(
      (d) =>
        typeof d?.name === 'string' &&
        typeof d.version === 'number' &&
        Array.isArray(d.stores) &&
        d.stores.every((st) => typeof st?.name === 'string' && Array.isArray(st.indexes) && Array.isArray(st.keys) && Array.isArray(st.values) && st.keys.length === st.values.length),
    )
  );
}

/** The only IndexedDB globals the wasm glue names: `indexedDB` picks the factory, IDBKeyRange is shared by all. */
const IDB_GLOBALS = ['indexedDB', 'IDBKeyRange'] as const;
type Globals = Partial<Record<(typeof IDB_GLOBALS)[number], unknown>>;
const g = globalThis as unknown as Globals;

const swap = (next: Globals): Globals => {
  const before: Globals = {};
  for (const k of IDB_GLOBALS) {
    before[k] = g[k];
    if (next[k] === undefined) delete g[k];
    else g[k] = next[k];
  }
  return before;
};

/**
 * The Rust store asks the global object for `indexedDB` once, when it opens its databases, and keeps the connection;
 * two inits running at once would each find whichever factory was installed last. One init at a time, process-wide.
 */
let initLock: Promise<unknown> = Promise.resolve();

/**
 * But wasm-bindgen's glue calls `IDBKeyRange.bound(...)` and `.lowerBound(...)` by their global name on every ranged
 * read, long after init. The class holds no state (every factory accepts any instance of it), so it stays installed
 * while any store is in use and is taken away again when the last one closes.
 */
let keyRangeUsers = 0;
let keyRangeBefore: unknown;
const useKeyRange = () => {
  if (keyRangeUsers++ === 0) {
    keyRangeBefore = g.IDBKeyRange;
    g.IDBKeyRange ??= IDBKeyRange;
  }
};
const releaseKeyRange = () => {
  if (--keyRangeUsers === 0 && g.IDBKeyRange === IDBKeyRange) {
    if (keyRangeBefore === undefined) delete g.IDBKeyRange;
    else g.IDBKeyRange = keyRangeBefore;
  }
};

export interface MatrixCryptoStoreOptions {
  /** How long saveSoon waits for more changes before writing; tests shorten it. */
  saveDelayMs?: number;
}

/**
 * One Matrix device's crypto store (Olm account, sessions, room keys, device lists): an IndexedDB of its own kept in
 * `file`. Whoever holds the file holds the device's keys, so it is written 0600 in a 0700 directory, and the Rust
 * store encrypts its values with the storage key given to initCrypto (which lives elsewhere, with svc's secrets).
 */
export class MatrixCryptoStore {
  private saveTimer: NodeJS.Timeout | undefined;
  private writing: Promise<void> | undefined;
  private queued: Promise<void> | undefined;
  private inUse = false;
  private closed = false;
  /** Why the last write failed, until one succeeds: a timed save has nobody to tell but close(). */
  private failed: unknown;

  private constructor(
    readonly file: string,
    private readonly factory: Factory,
    private readonly saveDelayMs: number,
  ) {}

  /**
   * The store kept in `file`, restored when the file exists, empty otherwise (a new device). A file that cannot be
   * read as a snapshot is an error naming it: its device's keys are gone, which the caller must handle as such.
   */
  static async open(file: string, options: MatrixCryptoStoreOptions = {}): Promise<MatrixCryptoStore> {
    await mkdir(dirname(file), { recursive: true, mode: 0o700 });
    const factory = new IDBFactory() as Factory;
    let bytes: Buffer | undefined;
    try {
      bytes = await readFile(file);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
    }
    if (bytes) {
      let snapshot: unknown;
      try {
        snapshot = deserialize(bytes);
      } catch (e) {
        throw new SvcError('corrupt-file', `the Matrix crypto store ${file} is not readable (${(e as Error).message})`, { file });
      }
      if (!isSnapshot(snapshot)) throw new SvcError('corrupt-file', `the Matrix crypto store ${file} is not a crypto snapshot svc can read`, { file });
      try {
        await restore(factory, snapshot);
      } catch (e) {
        throw new SvcError('corrupt-file', `the Matrix crypto store ${file} could not be restored (${(e as Error).message})`, { file });
      }
    }
    return new MatrixCryptoStore(file, factory, options.saveDelayMs ?? 1000);
  }

  /** Starts the client's Rust crypto on this store; `storageKey` (32 bytes) must be the same at every start. */
  async initCrypto(client: MatrixClient, storageKey: Uint8Array): Promise<void> {
    if (this.closed) throw new Error(`the Matrix crypto store ${this.file} is closed`);
    const run = initLock.then(async () => {
      if (!this.inUse) useKeyRange();
      this.inUse = true;
      const before = swap({ indexedDB: this.factory, IDBKeyRange });
      try {
        await client.initRustCrypto({ useIndexedDB: true, storageKey });
      } finally {
        swap(before);
      }
    });
    initLock = run.catch(() => undefined);
    await run;
  }

  /**
   * Writes the store to its file: to a temporary name, synced, then renamed over it, so a crash leaves the old file
   * or the new one. Calls while a write runs share one more write after it, which copies what changed meanwhile.
   */
  save(): Promise<void> {
    if (this.queued) return this.queued;
    if (this.writing) {
      this.queued = this.writing
        .catch(() => undefined)
        .then(() => {
          this.queued = undefined;
          return this.startWrite();
        });
      return this.queued;
    }
    return this.startWrite();
  }

  /** A save a moment from now, for after each sync or send: a burst of changes is written once. */
  saveSoon(): void {
    if (this.closed || this.saveTimer) return;
    this.saveTimer = setTimeout(() => {
      this.saveTimer = undefined;
      // Nobody awaits a timed save: its failure is kept for close() to throw, unless a later write succeeds.
      this.save().catch(() => undefined);
    }, this.saveDelayMs);
    // A pending save must not keep the process alive; close() writes it out instead.
    this.saveTimer.unref();
  }

  /**
   * Writes out a pending saveSoon and waits for writes in progress; throws if the file is not up to date after all.
   * Call after the client has stopped.
   */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    const pending = this.saveTimer !== undefined;
    clearTimeout(this.saveTimer);
    this.saveTimer = undefined;
    try {
      if (pending) await this.save();
      else await (this.queued ?? this.writing)?.catch(() => undefined);
      if (this.failed !== undefined) throw this.failed;
    } finally {
      if (this.inUse) releaseKeyRange();
      this.inUse = false;
    }
  }

  private startWrite(): Promise<void> {
    const p = this.write()
      .then(
        () => {
          this.failed = undefined;
        },
        (e: unknown) => {
          this.failed = e;
          throw e;
        },
      )
      .finally(() => {
        if (this.writing === p) this.writing = undefined;
      });
    this.writing = p;
    return p;
  }

  private async write(): Promise<void> {
    const bytes = serialize(await dump(this.factory));
    const tmp = `${this.file}.tmp`;
    const handle = await open(tmp, 'w', 0o600);
    try {
      // A leftover temporary file from a crash keeps its old mode; the keys must not inherit it.
      await handle.chmod(0o600);
      await handle.writeFile(bytes);
      await handle.sync();
    } finally {
      await handle.close();
    }
    await rename(tmp, this.file);
    // The rename itself is durable only once the directory is synced.
    const dir = await open(dirname(this.file), 'r');
    try {
      await dir.sync();
    } finally {
      await dir.close();
    }
  }
}
