import { existsSync, readFileSync } from 'node:fs';
import { watch, type FSWatcher } from 'chokidar';
import type { Bus } from '../../bus/index.js';
import { diffUsers } from '../../machines/index.js';
import { USERS_FILE_STREAM, USER_EVENTS, describeError, userStream, type UserRecord } from '../../schemas/index.js';
import { loadUsers, onUsersSaved, parseUsersText, usersLocation, type HomePaths } from '../../store/index.js';

/*
 * users.json held in memory, so a request pays for a lookup, not for reading and validating the
 * whole file (it was a third of the admin API's CPU). Two ways in, both with no window in which the
 * copy is stale for the process that wrote the file:
 *  - a save by this process (the users directory, the first-start admin, an import) replaces the copy
 *    before `saveUsers` returns;
 *  - an edit by anyone else (a person, `svc users set-password`) is seen by a file watcher and read
 *    once it settles. A good edit replaces the copy and is recorded as the `user.*` facts the
 *    directory would have published (by: null), so the admin socket drops whoever it demoted or
 *    removed; a bad one is recorded as `user.file_rejected` and the last good rows stay, as a bad
 *    config.json edit does. A file that vanished changes nothing (an editor's save may delete before
 *    it renames). Between an outside edit and the reload the old rows answer: the watcher's latency
 *    (fs events plus USERS_RELOAD_DEBOUNCE_MS), not a poll interval.
 */

/** An edit arrives as a burst (temp file, rename, chmod): one read after it settles. */
export const USERS_RELOAD_DEBOUNCE_MS = 50;

export interface LiveUsersDeps {
  bus: Bus;
  paths: HomePaths;
  debounceMs?: number;
}

export interface LiveUsers {
  /** The rows in force; the same array until they change, so a caller may key an index on it. Read only. */
  all(): UserRecord[];
  /** Resolves once the watcher is set up: an edit made before then may go unseen. */
  readonly ready: Promise<void>;
  /** Reads the file now, as the watcher does after an edit. */
  reload(): Promise<void>;
  close(): Promise<void>;
}

export function startLiveUsers(deps: LiveUsersDeps): LiveUsers {
  const { bus, paths } = deps;
  const debounceMs = deps.debounceMs ?? USERS_RELOAD_DEBOUNCE_MS;
  let rows: UserRecord[] = [];
  /** The text `rows` came from; null after a save by this process (its text is not kept). */
  let lastText: string | null = null;
  let lastRejected: string | null = null;
  let closed = false;
  let reloading: Promise<void> = Promise.resolve();

  const rejected = (file: string, errors: string[]) =>
    bus.publish({ stream: USERS_FILE_STREAM, type: USER_EVENTS.file_rejected, data: { file, errors } }).then(
      () => undefined,
      (e: unknown) => bus.emitLog('error', `users.json: could not record a rejected edit: ${describeError(e)}`),
    );

  try {
    rows = loadUsers(paths);
  } catch (e) {
    // A broken users.json is the user's to fix; until then nobody gets a role from it.
    void rejected(usersLocation(paths) ?? paths.usersFile, [describeError(e)]);
  }
  const stopSaves = onUsersSaved(paths, (saved) => {
    rows = [...saved];
    lastText = null;
    lastRejected = null;
  });

  const readNow = async (): Promise<void> => {
    const file = usersLocation(paths);
    if (!file || closed) return;
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
    } catch {
      return; // gone between the check and the read: the next event reads it again
    }
    if (text === lastText || text === lastRejected) return;
    const checked = parseUsersText(text, file);
    if (!checked.ok) {
      lastRejected = text;
      await rejected(file, checked.errors);
      return;
    }
    const before = rows;
    rows = checked.users;
    lastText = text;
    lastRejected = null;
    const change = diffUsers(before, rows);
    try {
      for (const u of change.deleted) await bus.publish({ stream: userStream(u), type: USER_EVENTS.deleted, data: { username: u, by: null } });
      for (const u of change.created) await bus.publish({ stream: userStream(u.username), type: USER_EVENTS.created, data: { ...u, by: null } });
      for (const u of change.updated) await bus.publish({ stream: userStream(u.username), type: USER_EVENTS.updated, data: { ...u, by: null } });
    } catch (e) {
      bus.emitLog('error', `users.json: an edit was applied but could not be recorded: ${describeError(e)}`);
    }
  };
  // One read at a time, in order: two edits in a row are diffed against each other, not both against the first.
  const reload = (): Promise<void> => (reloading = reloading.then(readNow));

  let timer: NodeJS.Timeout | null = null;
  const changed = () => {
    if (closed) return;
    if (timer) clearTimeout(timer);
    timer = setTimeout(() => {
      timer = null;
      void reload();
    }, debounceMs);
  };
  // The legacy root copy is watched only when it is the one in use: watching the home's root for a
  // file that is not there would wake this on every write of the event log beside it.
  const legacy = `${paths.root}/users.json`;
  const watched = [paths.usersFile, ...(existsSync(legacy) && !existsSync(paths.usersFile) ? [legacy] : [])];
  const watcher: FSWatcher = watch(watched, { ignoreInitial: true, persistent: true });
  watcher.on('add', changed).on('change', changed).on('unlink', changed);
  watcher.on('error', (e) => bus.emitLog('warn', `users.json watcher: ${describeError(e)}`));
  const ready = new Promise<void>((resolve) => watcher.once('ready', () => resolve()));

  return {
    all: () => rows,
    ready,
    reload,
    async close() {
      closed = true;
      if (timer) clearTimeout(timer);
      stopSaves();
      await watcher.close();
      await reloading;
    },
  };
}
