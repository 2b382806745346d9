import { spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { readFileSync, statSync, truncateSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import t from 'tap';
import { isSvcError } from '../../schemas/index.js';
import type { AnyEnvelope } from '../../schemas/index.js';
import {
  DIFF_LINES_PER_TABLE,
  MemoryEventLog,
  SqliteEventLog,
  diffProjections,
  readStreamHeads,
  rebuildProjections,
  streamHeadsProjection,
} from '../../store/index.js';
import type { Projection } from '../../store/index.js';
import { conformance } from './event-log.conformance.js';
import { until } from '../fixtures/until.js';

const dbIn = (dir: string) => join(dir, 'events.db');
const openIn = (dir: string) => SqliteEventLog.open(dbIn(dir), { projections: [streamHeadsProjection] });

await conformance(t, 'memory', () => new MemoryEventLog());
await conformance(t, 'sqlite', openIn, openIn);

const AT = '2024-05-01T12:00:00.000Z';
const sha = (p: string) => createHash('sha256').update(readFileSync(p)).digest('hex');

function svcCode(fn: () => unknown): string | undefined {
  try {
    fn();
  } catch (err) {
    return isSvcError(err) ? err.code : `not an SvcError: ${String(err)}`;
  }
  return undefined;
}

function errorOf(fn: () => unknown): Error {
  try {
    fn();
  } catch (err) {
    return err as Error;
  }
  throw new Error('expected a throw');
}

/** tap's own TypeScript loader, so a child process can run a .ts fixture the same way tests run. */
const tsLoader = import.meta.resolve('@tapjs/typescript/import');
const fixture = (name: string) => fileURLToPath(new URL(`../fixtures/${name}`, import.meta.url));

await t.test('sqlite: a file created by the log is private and in WAL mode', async (t) => {
  const dir = t.testdir();
  const log = openIn(dir);
  t.teardown(() => log.close());
  t.equal(statSync(dbIn(dir)).mode & 0o777, 0o600);
  t.equal(log.projectionDb().pragma('journal_mode', { simple: true }), 'wal');
  t.equal(log.projectionDb().pragma('synchronous', { simple: true }), 1, 'synchronous=NORMAL (WAL: atomic, crash-durable, no fsync stall per commit)');
});

await t.test('sqlite: stream_heads follows the log and a rebuild from the log matches it', async (t) => {
  const log = openIn(t.testdir());
  t.teardown(() => log.close());
  log.append([{ stream: 'task:1', type: 'task.created', data: {} }, { stream: 'task:2', type: 'task.created', data: {} }], AT);
  log.append([{ stream: 'task:1', type: 'task.finished', data: {} }], '2024-05-01T12:00:05.000Z');
  t.same(readStreamHeads(log.projectionDb()), [
    { stream: 'task:1', last_seq: 3, last_type: 'task.finished', last_at: '2024-05-01T12:00:05.000Z', count: 2 },
    { stream: 'task:2', last_seq: 2, last_type: 'task.created', last_at: AT, count: 1 },
  ]);
  t.same(readStreamHeads(log.projectionDb(), { prefix: 'task:2' }).map((h) => h.stream), ['task:2']);
  const scratch = new Database(':memory:');
  t.teardown(() => scratch.close());
  t.equal(rebuildProjections(scratch, [streamHeadsProjection], log.iterate()), 3);
  t.same(diffProjections(log.projectionDb(), scratch, [streamHeadsProjection]), [], 'no differences');
  t.equal(rebuildProjections(scratch, [streamHeadsProjection], log.iterate()), 3, 'rebuilding twice starts from empty tables');
  t.same(diffProjections(log.projectionDb(), scratch, [streamHeadsProjection]), []);
});

await t.test('sqlite: readStreamHeads by prefix is exactly the streams that start with it, in order', async (t) => {
  const log = openIn(t.testdir());
  t.teardown(() => log.close());
  // Neighbours of the range's bounds: `agent;` is the successor of `agent:`, `agent` and `agen` sort before it.
  const streams = ['agent:b', 'agent;', 'agent', 'agent:a', 'agen', 'turn:1', 'agent:', 'agent:a:x', 'café:1', 'cafê', 'caf', 'Agent:c', 'agent:\u00e9'];
  log.append(
    streams.map((stream) => ({ stream, type: 'task.created', data: {} })),
    AT,
  );
  const all = readStreamHeads(log.projectionDb());
  t.same(
    all.map((h) => h.stream),
    [...streams].sort((a, b) => (Buffer.compare(Buffer.from(a), Buffer.from(b)))),
    'no prefix: every stream, in SQLite\'s order',
  );
  for (const prefix of ['agent:', 'agent', 'agent:a', 'turn:', 'café', 'caf', 'x', '', 'agent:\u00e9']) {
    t.same(readStreamHeads(log.projectionDb(), { prefix }), all.filter((h) => h.stream.startsWith(prefix)), `prefix ${JSON.stringify(prefix)}`);
  }
});

await t.test('diffProjections names missing, extra and changed rows and caps each table', async (t) => {
  const live = new Database(':memory:');
  const scratch = new Database(':memory:');
  t.teardown(() => (live.close(), scratch.close()));
  const events: AnyEnvelope[] = Array.from({ length: 30 }, (_, i) => ({ seq: i + 1, at: AT, stream: `s:${String(i).padStart(2, '0')}`, type: 'x.done', data: {} }));
  rebuildProjections(live, [streamHeadsProjection], events);
  rebuildProjections(scratch, [streamHeadsProjection], events);
  live.prepare(`DELETE FROM stream_heads WHERE stream = 's:00'`).run();
  live.prepare(`UPDATE stream_heads SET count = 9, last_type = 'y.done' WHERE stream = 's:01'`).run();
  live.prepare(`INSERT INTO stream_heads VALUES ('zzz', 99, 'z.done', ?, 1)`).run(AT);
  const [d] = diffProjections(live, scratch, [streamHeadsProjection]);
  t.equal(d?.table, 'stream_heads');
  t.equal(d?.projection, 'streams');
  t.equal(d?.count, 3);
  t.match(d?.lines, [/^missing row stream="s:00"/, /^changed row stream="s:01": last_type live "y\.done" rebuilt "x\.done"; count live 9 rebuilt 1/, /^extra row stream="zzz"/]);

  live.prepare(`UPDATE stream_heads SET count = count + 1`).run();
  const [capped] = diffProjections(live, scratch, [streamHeadsProjection]);
  t.equal(capped?.lines.length, DIFF_LINES_PER_TABLE + 1);
  t.match(capped?.lines.at(-1), /^\.\.\. and \d+ more$/);

  const empty = new Database(':memory:');
  t.teardown(() => empty.close());
  t.match(diffProjections(empty, scratch, [streamHeadsProjection])[0]?.lines, [/missing from the live database/]);
});

await t.test('sqlite: a projection that throws rolls the whole batch back', async (t) => {
  const picky: Projection = {
    name: 'picky',
    tables: ['picky_seen'],
    ddl: ['CREATE TABLE IF NOT EXISTS picky_seen (seq INTEGER PRIMARY KEY)'],
    apply(db, e) {
      db.prepare('INSERT INTO picky_seen (seq) VALUES (?)').run(e.seq);
      if (e.type === 'bad.happened') throw new Error('cannot fold this');
    },
  };
  const log = SqliteEventLog.open(dbIn(t.testdir()), { projections: [streamHeadsProjection, picky] });
  t.teardown(() => log.close());
  log.append([{ stream: 'a:1', type: 'ok.happened', data: {} }], AT);
  const db = log.projectionDb();
  const snapshot = () => ({ events: log.read(), heads: readStreamHeads(db), seen: db.prepare('SELECT seq FROM picky_seen').all() });
  const before = snapshot();
  const err = errorOf(() =>
    log.append([{ stream: 'a:1', type: 'ok.happened', data: {} }, { stream: 'b:1', type: 'ok.happened', data: {} }, { stream: 'a:1', type: 'bad.happened', data: {} }], AT),
  );
  t.ok(isSvcError(err, 'projection-failed'));
  t.match(err.message, /projection picky failed on event seq 4 \(bad\.happened on a:1\): cannot fold this/);
  t.same(snapshot(), before, 'events, stream_heads and the projection table are unchanged');
  t.same(log.append([{ stream: 'a:1', type: 'ok.happened', data: {} }], AT).map((e) => e.seq), [2], 'the failed batch used no seqs');
  t.equal(svcCode(() => SqliteEventLog.open(dbIn(t.testdir()), { projections: [streamHeadsProjection, streamHeadsProjection] })), 'invalid-projection', 'duplicate projections refused');
});

await t.test('sqlite: damaged or foreign files are reported, never reset', async (t) => {
  const dir = t.testdir();
  const cases: [string, () => string][] = [
    ['random bytes', () => {
      const p = join(dir, 'random.db');
      writeFileSync(p, randomBytes(64 * 1024));
      return p;
    }],
    ['shorter than a header', () => {
      const p = join(dir, 'short.db');
      writeFileSync(p, 'SQLite format 3\0abc');
      return p;
    }],
    ['a truncated real log', () => {
      const p = join(dir, 'truncated.db');
      const log = SqliteEventLog.open(p, { projections: [streamHeadsProjection] });
      for (let i = 0; i < 50; i++) log.append(Array.from({ length: 20 }, (_, j) => ({ stream: `s:${j}`, type: 'x.done', data: { pad: 'p'.repeat(300) } })), AT);
      log.close();
      truncateSync(p, Math.floor(statSync(p).size / 2));
      return p;
    }],
    ['some other SQLite database', () => {
      const p = join(dir, 'other.db');
      const db = new Database(p);
      db.exec('CREATE TABLE people (name TEXT)');
      db.close();
      return p;
    }],
  ];
  for (const [what, makeFile] of cases) {
    const p = makeFile();
    const hash = sha(p);
    for (const readonly of [false, true]) {
      const err = errorOf(() => SqliteEventLog.open(p, { readonly }));
      t.ok(isSvcError(err, 'corrupt-database'), `${what} (readonly=${readonly}): corrupt-database, got ${err.message}`);
      t.match(err.message, p, 'names the file');
      t.match(err.message, /left untouched.*move it aside/, 'says what to do');
    }
    t.equal(sha(p), hash, `${what}: file unchanged`);
  }
});

await t.test('sqlite: two connections to one file: the expectation is checked inside the write transaction', async (t) => {
  const dir = t.testdir();
  const a = openIn(dir);
  const b = openIn(dir);
  t.teardown(() => {
    b.close();
    a.close();
  });
  a.append([{ stream: 'turn:1', type: 'turn.started', data: {} }], AT);
  const seenByA = a.version('turn:1');
  const seenByB = b.version('turn:1');
  t.equal(seenByB, seenByA, 'both writers decided on the same version');
  b.append([{ stream: 'turn:1', type: 'turn.finished', data: { by: 'b' } }], AT, new Map([['turn:1', seenByB]]));
  const err = errorOf(() => a.append([{ stream: 'turn:1', type: 'turn.finished', data: { by: 'a' } }], AT, new Map([['turn:1', seenByA]])));
  t.ok(isSvcError(err, 'version-conflict'), 'the second writer, on another connection, gets the conflict');
  t.same((err as { details?: unknown }).details, { stream: 'turn:1', expected: 1, actual: 2 });
  t.same(a.read({ stream: 'turn:1' }).map((e) => e.data.by ?? null), [null, 'b'], 'only the winner is in the log');
  t.same(readStreamHeads(a.projectionDb()).find((h) => h.stream === 'turn:1')?.count, 2, 'the projection saw only the winner');
});

await t.test('sqlite: a newer schema version is refused', async (t) => {
  const p = dbIn(t.testdir());
  SqliteEventLog.open(p).close();
  const db = new Database(p);
  db.prepare(`UPDATE meta SET value = '99' WHERE key = 'schema_version'`).run();
  db.close();
  const err = errorOf(() => SqliteEventLog.open(p));
  t.ok(isSvcError(err, 'database-too-new'));
  t.match(err.message, /version 99.*upgrade svc/);
});

await t.test('sqlite: a read-only reader sees the writer and cannot append', async (t) => {
  const dir = t.testdir();
  t.equal(svcCode(() => SqliteEventLog.open(dbIn(dir), { readonly: true })), 'file-missing', 'no file, no reader');
  const writer = openIn(dir);
  writer.append([{ stream: 'a:1', type: 'a.done', data: { n: 1 } }], AT);
  const reader = SqliteEventLog.open(dbIn(dir), { readonly: true });
  t.teardown(() => reader.close());
  t.same(reader.read(), writer.read());
  writer.append([{ stream: 'a:1', type: 'a.done', data: { n: 2 } }], AT);
  t.equal(reader.lastSeq(), 2, 'sees later commits');
  t.equal(svcCode(() => reader.append([{ stream: 'a:1', type: 'a.done', data: {} }], AT)), 'log-readonly');
  writer.close();
  const later = SqliteEventLog.open(dbIn(dir), { readonly: true });
  t.equal(later.lastSeq(), 2, 'a reader also works when no writer is running');
  later.close();
});

await t.test('sqlite: a writer killed mid-append leaves only whole batches', async (t) => {
  const dir = t.testdir();
  const path = dbIn(dir);
  for (const round of [1, 2]) {
    const child = spawn(process.execPath, [`--import=${tsLoader}`, fixture('event-log-crash-child.ts'), path], {
      env: { ...process.env, TS_NODE_TRANSPILE_ONLY: '1' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => (out += d));
    child.stderr.on('data', (d: Buffer) => (err += d));
    const exited = new Promise<NodeJS.Signals | null>((r) => child.on('exit', (_code, sig) => r(sig)));
    const printed = () => out.split('\n').filter(Boolean).map(Number);
    const start = round === 1 ? 0 : Math.max(...printed(), 0);
    await until('the child to commit batches', () => printed().length >= 150 || child.exitCode !== null).catch((e) => {
      child.kill('SIGKILL');
      throw e;
    });
    child.kill('SIGKILL');
    t.equal(await exited, 'SIGKILL', `round ${round}: child was killed (stderr: ${err.slice(0, 500)})`);
    const lastPrinted = Math.max(...printed());

    const log = openIn(dir);
    const events = log.read();
    const batches = new Map<number, number[]>();
    for (const e of events) {
      const b = e.data.batch as number;
      if (!batches.has(b)) batches.set(b, []);
      batches.get(b)!.push(e.data.i as number);
    }
    const ids = [...batches.keys()];
    t.ok(events.every((e, i) => e.seq === i + 1), `round ${round}: seqs 1..${events.length} without gaps`);
    t.ok(ids.every((b, i) => b === i), `round ${round}: batches 0..${ids.length - 1} in order`);
    t.ok(ids.length - 1 >= lastPrinted, `round ${round}: every batch reported committed (${lastPrinted}) is there (${ids.length - 1})`);
    t.ok(start <= lastPrinted, 'the second round continued the log');
    const partial = [...batches].filter(([b, is]) => is.length !== 1 + ((b * 7) % 40) || is.some((v, k) => v !== k));
    t.same(partial, [], `round ${round}: no partial batch`);
    t.equal(log.projectionDb().pragma('integrity_check', { simple: true }), 'ok');
    const scratch = new Database(':memory:');
    rebuildProjections(scratch, [streamHeadsProjection], events);
    t.same(diffProjections(log.projectionDb(), scratch, [streamHeadsProjection]), [], `round ${round}: stream_heads agrees with the events`);
    scratch.close();
    log.close();
  }
});
