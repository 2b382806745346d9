import { SvcError } from '../schemas/index.js';

/**
 * Optimistic concurrency for `EventLog.append`. A stream's version is the seq of its last event
 * (0 while it has none). Seq rather than a per-stream count because it is what a writer already
 * holds (the envelope it folded last, the `causation` it cites), it can never be matched by a
 * different history of the same length, and SQLite finds it with one seek on the (stream, seq)
 * index without depending on any projection being installed.
 */
export type ExpectedVersions = ReadonlyMap<string, number>;

/** Rejects a malformed expectation before the transaction starts, so nothing is half-checked. */
export function checkExpected(expected: ExpectedVersions | undefined): ExpectedVersions | undefined {
  if (expected === undefined) return undefined;
  if (!(expected instanceof Map)) throw new SvcError('invalid-event', `expected versions must be a Map of stream to version, got ${typeof expected}`);
  for (const [stream, version] of expected) {
    if (typeof stream !== 'string' || stream.length === 0) throw new SvcError('invalid-event', `expected version for stream ${JSON.stringify(stream)}: the stream must be a non-empty string`);
    if (!Number.isSafeInteger(version) || version < 0) {
      throw new SvcError('invalid-event', `expected version for ${stream} must be the seq of its last event (0 for none), got ${JSON.stringify(version)}`);
    }
  }
  return expected.size === 0 ? undefined : expected;
}

/** The error a writer gets when another writer appended to the stream since it last looked. */
export function versionConflict(stream: string, expected: number, actual: number): SvcError {
  return new SvcError(
    'version-conflict',
    `${stream} is at version ${actual}, not ${expected}: another writer appended first; reread the stream and decide again`,
    { stream, expected, actual },
  );
}

/** Throws the conflict for the first stream whose current version differs from the expectation. */
export function assertVersions(expected: ExpectedVersions | undefined, versionOf: (stream: string) => number): void {
  if (!expected) return;
  for (const [stream, want] of expected) {
    const actual = versionOf(stream);
    if (actual !== want) throw versionConflict(stream, want, actual);
  }
}
