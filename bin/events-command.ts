import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { SvcError, type AnyEnvelope } from '../schemas/index.js';
import { PROJECTIONS, SqliteEventLog, acquirePidLock, diffProjections, rebuildProjections, type HomePaths, type ReadQuery } from '../store/index.js';
import { redriveMachines } from '../actors/index.js';
import { parse, parseSince } from './cli-args.js';

const USAGE = `usage:
  svc events tail [--stream S] [--type T] [--since 10m|ISO] [-n N] [--follow] [--json]
  svc events show <stream> [--json]
  svc events replay [--check]`;

const HELP = `${USAGE}

tail     the newest events (default 20), oldest first; --follow keeps printing new ones
show     every event of one stream, e.g. 'svc events show daemon' or 'task:42'
replay   rebuild every read model from the log; with --check, into a scratch database,
         and report each difference from the live one; --check also re-drives each machine
         from the inputs its stream records and reports every fact it emits that the log
         does not hold, or holds differently (exit 1 on divergence)`;

export async function eventsCommand(args: string[], paths: HomePaths): Promise<number> {
  const [sub, ...rest] = args;
  switch (sub) {
    case 'tail':
      return tail(rest, paths);
    case 'show':
      return show(rest, paths);
    case 'replay':
      return unlessUnreadable(() => replay(rest, paths));
    case undefined:
    case 'help':
    case '--help':
    case '-h':
      process.stdout.write(HELP + '\n');
      return 0;
    default:
      throw new SvcError('usage', `unknown events subcommand '${sub}'\n${USAGE}`);
  }
}

/**
 * A log holding an event this svc cannot bring to its current version (event-version.ts) is not
 * replayed at all: the report names that event and exits 1, as a divergence does.
 */
function unlessUnreadable(run: () => number): number {
  try {
    return run();
  } catch (err) {
    if (!(err instanceof SvcError) || err.code !== 'unreadable-event') throw err;
    process.stdout.write(`unreadable: ${err.message}\n`);
    return 1;
  }
}

function openExisting(paths: HomePaths, readonly = true): SqliteEventLog {
  if (!existsSync(paths.eventsDb)) {
    throw new SvcError('no-event-log', `no event log at ${paths.eventsDb}; start the daemon once with 'svc start'`);
  }
  return SqliteEventLog.open(paths.eventsDb, { readonly, projections: readonly ? [] : PROJECTIONS });
}

export function formatEvent(e: AnyEnvelope, json: boolean): string {
  if (json) return JSON.stringify(e);
  const by = e.by ? ` by=${e.by}` : '';
  return `${String(e.seq).padStart(6)}  ${e.at}  ${e.stream}  ${e.type}${by}  ${JSON.stringify(e.data)}`;
}

async function tail(args: string[], paths: HomePaths): Promise<number> {
  const { values } = parse(
    args,
    {
      stream: { type: 'string' },
      type: { type: 'string', multiple: true },
      since: { type: 'string' },
      n: { type: 'string', short: 'n' },
      follow: { type: 'boolean', short: 'f' },
      json: { type: 'boolean' },
    },
    USAGE,
  );
  if (values.help) return void process.stdout.write(HELP + '\n'), 0;
  const count = values.n === undefined ? 20 : Number(values.n);
  if (!Number.isInteger(count) || count < 1) throw new SvcError('usage', `-n ${values.n}: expected a positive integer`);
  const query: ReadQuery = {};
  if (values.stream) {
    if (values.stream.endsWith(':')) query.streamPrefix = values.stream;
    else query.stream = values.stream;
  }
  if (values.type?.length) query.types = values.type;
  if (values.since) query.since = parseSince(values.since, Date.now());
  const log = openExisting(paths);
  try {
    const newest = log.read({ ...query, limit: count, descending: true }).reverse();
    for (const e of newest) process.stdout.write(formatEvent(e, !!values.json) + '\n');
    if (!values.follow) return 0;
    let after = newest.at(-1)?.seq ?? log.lastSeq();
    let stopped = false;
    const stop = () => void (stopped = true);
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
    // The daemon writes from another process; WAL lets us read while it appends.
    while (!stopped) {
      for (const e of log.read({ ...query, after })) {
        process.stdout.write(formatEvent(e, !!values.json) + '\n');
        after = e.seq;
      }
      await delay(250);
    }
    return 0;
  } finally {
    log.close();
  }
}

function show(args: string[], paths: HomePaths): number {
  const { values, positionals } = parse(args, { json: { type: 'boolean' } }, USAGE);
  if (values.help) return void process.stdout.write(HELP + '\n'), 0;
  const stream = positionals[0];
  if (!stream || positionals.length > 1) throw new SvcError('usage', `events show takes exactly one stream name\n${USAGE}`);
  const log = openExisting(paths);
  try {
    const events = log.read(stream.endsWith(':') ? { streamPrefix: stream } : { stream });
    if (events.length === 0) throw new SvcError('unknown-stream', `no events on stream '${stream}'`);
    for (const e of events) process.stdout.write(formatEvent(e, !!values.json) + '\n');
    return 0;
  } finally {
    log.close();
  }
}

function replay(args: string[], paths: HomePaths): number {
  const { values } = parse(args, { check: { type: 'boolean' } }, USAGE);
  if (values.help) return void process.stdout.write(HELP + '\n'), 0;
  if (values.check) return replayCheck(paths);
  // Rewriting read models under a running daemon would race its appends.
  const lock = acquirePidLock(paths.pidFile);
  try {
    const log = openExisting(paths, false);
    try {
      const events = log.read();
      rebuildProjections(log.projectionDb(), PROJECTIONS, events);
      process.stdout.write(`rebuilt ${PROJECTIONS.length} read models from ${events.length} events\n`);
      return 0;
    } finally {
      log.close();
    }
  } finally {
    lock.release();
  }
}

function replayCheck(paths: HomePaths): number {
  const live = openExisting(paths);
  const dir = mkdtempSync(join(tmpdir(), 'svc-replay-'));
  try {
    const scratch = SqliteEventLog.open(join(dir, 'scratch.db'), { projections: PROJECTIONS });
    try {
      const events = live.read();
      rebuildProjections(scratch.projectionDb(), PROJECTIONS, events);
      // A read model this build added is not in a log an older build wrote until svc next opens it
      // (it is folded from the log then): not a divergence, but said.
      const liveDb = live.projectionDb();
      const hasTable = liveDb.prepare(`SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?`);
      const unbuilt = PROJECTIONS.filter((p) => p.tables.every((t) => !hasTable.get(t)));
      const built = PROJECTIONS.filter((p) => !unbuilt.includes(p));
      for (const p of unbuilt) process.stdout.write(`note: read model ${p.name} is not in this log yet; svc folds it from the log when it next starts\n`);
      const differences = diffProjections(liveDb, scratch.projectionDb(), built);
      const machines = redriveMachines(events);
      if (differences.length === 0) {
        process.stdout.write(`ok: ${built.length} read models match a replay of ${events.length} events\n`);
      } else {
        process.stdout.write(`divergence: the live read models differ from a replay of ${events.length} events\n`);
        for (const d of differences) {
          process.stdout.write(`  ${d.table} (read model ${d.projection}): ${d.count} row(s) differ\n`);
          for (const line of d.lines) process.stdout.write(`    ${line}\n`);
        }
      }
      if (machines.diffs.length === 0) {
        process.stdout.write(`ok: ${machines.machines} machines re-driven over ${machines.streams} streams emit exactly the facts the log holds\n`);
      } else {
        process.stdout.write(`divergence: re-driven from their recorded inputs, machines emit other facts than the log holds\n`);
        let shown = 0;
        for (const d of machines.diffs) {
          if (shown++ === MAX_MACHINE_DIFF_LINES) {
            process.stdout.write(`  … and ${machines.diffs.length - MAX_MACHINE_DIFF_LINES} more\n`);
            break;
          }
          process.stdout.write(`  ${d.machine} on ${d.stream}: ${d.line}\n`);
        }
      }
      return differences.length === 0 && machines.diffs.length === 0 ? 0 : 1;
    } finally {
      scratch.close();
    }
  } finally {
    live.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** A log that diverges everywhere should still print a report someone reads. */
const MAX_MACHINE_DIFF_LINES = 50;
