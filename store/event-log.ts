import type { AnyEnvelope, AnyNewEvent } from '../schemas/index.js';
import type { ExpectedVersions } from './expected-version.js';

export interface ReadQuery {
  /** Exact stream name, e.g. `task:42`. */
  stream?: string;
  /** Stream prefix, e.g. `task:` for every task. */
  streamPrefix?: string;
  /** Event types to include. */
  types?: readonly string[];
  /** Only events with seq greater than this. */
  after?: number;
  /** Only events at or after this ISO time. */
  since?: string;
  limit?: number;
  /** Newest first (for `tail`); default oldest first. */
  descending?: boolean;
}

/**
 * The append-only log every fact goes through. Appends are synchronous and atomic per call:
 * either every event of the batch is committed with consecutive seqs, or none is.
 */
export interface EventLog {
  /**
   * Commit a batch in one transaction; `at` comes from the injected clock, seq from the log.
   * `expected` maps streams to the version the writer decided on (see expected-version.ts); it is
   * checked inside the transaction against each stream's version before the batch, and a mismatch
   * throws `version-conflict` with nothing committed.
   */
  append(events: readonly AnyNewEvent[], at: string, expected?: ExpectedVersions): AnyEnvelope[];
  /** The stream's version: the seq of its last event, 0 when it has none. */
  version(stream: string): number;
  read(query?: ReadQuery): AnyEnvelope[];
  /** Highest committed seq, 0 when empty. */
  lastSeq(): number;
  close(): void;
}
