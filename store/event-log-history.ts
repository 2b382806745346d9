import * as fs from 'node:fs';
import { SvcError } from '../schemas/index.js';
import type { HomePaths } from './home.js';

/*
 * SQLite opens a missing or zero-length file as a new, empty database, so a daemon started after
 * its events.db was deleted, truncated or not restored from a backup would quietly begin a new
 * history and hide the loss. A marker beside the log records that this home has had one.
 */

const sizeOf = (path: string): number | null => {
  try {
    return fs.statSync(path).size;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
};

/** Refuses to start on a missing or empty log in a home whose log has held history. */
export function assertEventLogKept(paths: HomePaths): void {
  const size = sizeOf(paths.eventsDb);
  if (size !== null && size > 0) return;
  const evidence: string[] = [];
  if (sizeOf(paths.eventsHistoryMarker) !== null) evidence.push(paths.eventsHistoryMarker);
  // A write-ahead log without its database holds commits that belong to a lost file.
  if (sizeOf(`${paths.eventsDb}-wal`) !== null) evidence.push(`${paths.eventsDb}-wal`);
  if (evidence.length === 0) return;
  const what = size === null ? 'is missing' : 'is empty (0 bytes)';
  throw new SvcError(
    'event-log-lost',
    `${paths.eventsDb} ${what}, but this home has an event history (${evidence.join(', ')}); svc will not start on an empty log. Restore events.db from a backup, or to start a new history on purpose remove ${evidence.join(' and ')}`,
    { eventsDb: paths.eventsDb, evidence },
  );
}

/** Records that this home's log holds history; written once, kept across starts. */
export function markEventLogHistory(paths: HomePaths, at: string): void {
  try {
    fs.writeFileSync(paths.eventsHistoryMarker, `${JSON.stringify({ first_started_at: at, note: 'svc refuses to start if events.db is missing or empty while this file exists' })}\n`, { flag: 'wx', mode: 0o600 });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  }
}
