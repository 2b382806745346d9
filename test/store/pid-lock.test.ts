import { spawn } from 'node:child_process';
import { existsSync, readFileSync, readdirSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import t, { type Test } from 'tap';
import { isSvcError } from '../../schemas/index.js';
import { acquirePidLock, readBootId, readProcStat } from '../../store/index.js';
import { until } from '../fixtures/until.js';

/** tap's own TypeScript loader, so the child runs the real module the way tests do. */
const tsLoader = import.meta.resolve('@tapjs/typescript/import');
const holderScript = fileURLToPath(new URL('../fixtures/pid-lock-holder.ts', import.meta.url));

function startHolder(pidFile: string) {
  const child = spawn(process.execPath, [`--import=${tsLoader}`, holderScript, pidFile], {
    env: { ...process.env, TS_NODE_TRANSPILE_ONLY: '1' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout.on('data', (d: Buffer) => (out += d));
  child.stderr.on('data', (d: Buffer) => (err += d));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((r) => child.on('exit', (code, signal) => r({ code, signal })));
  const ready = until('the holder to take the lock', () => out.includes('locked') || child.exitCode !== null).then(() => {
    if (!out.includes('locked')) throw new Error(`holder failed: ${err}`);
  });
  return { child, ready, exited };
}

const read = (p: string) => (existsSync(p) ? readFileSync(p, 'utf8') : undefined);
/** The pid line of a pid file (the lines after it identify the process). */
const pidIn = (p: string) => read(p)?.split('\n')[0];

await t.test('acquire writes our pid; release removes it once', async (t) => {
  const dir = t.testdir();
  const pidFile = join(dir, 'svc.pid');
  const lock = acquirePidLock(pidFile);
  t.match(read(pidFile), new RegExp(`^${process.pid}\\nstart=\\d+\\nboot=[0-9a-f-]+\\n$`), 'pid, start time and boot id');
  t.equal(lock.tookOver, null, 'nothing was taken over');
  t.same(readdirSync(dir), ['svc.pid'], 'no temp files left');
  lock.release();
  t.notOk(existsSync(pidFile));
  lock.release();
  t.notOk(existsSync(pidFile), 'second release is harmless');
});

await t.test('a live daemon in another process blocks us; its stale file after SIGKILL is taken over', async (t) => {
  const dir = t.testdir();
  const pidFile = join(dir, 'svc.pid');
  const holder = startHolder(pidFile);
  t.teardown(() => {
    holder.child.kill('SIGKILL');
  });
  await holder.ready;
  const childPid = holder.child.pid!;
  t.equal(pidIn(pidFile), `${childPid}`);
  try {
    acquirePidLock(pidFile);
    t.fail('should refuse');
  } catch (err) {
    t.ok(isSvcError(err, 'daemon-running'));
    t.equal((err as Error).message, `another svc daemon (pid ${childPid}) is already running on ${dir}; stop it first`);
  }
  t.equal(pidIn(pidFile), `${childPid}`, 'the holder keeps its lock');

  holder.child.kill('SIGKILL');
  t.equal((await holder.exited).signal, 'SIGKILL');
  t.equal(pidIn(pidFile), `${childPid}`, 'a killed daemon leaves its file behind');
  const lock = acquirePidLock(pidFile);
  t.equal(pidIn(pidFile), `${process.pid}`, 'the stale file was taken over');
  lock.release();
  t.same(readdirSync(dir), [], 'nothing left behind');
});

await t.test('a daemon stopped with SIGTERM releases its lock', async (t) => {
  const pidFile = join(t.testdir(), 'svc.pid');
  const holder = startHolder(pidFile);
  t.teardown(() => {
    holder.child.kill('SIGKILL');
  });
  await holder.ready;
  holder.child.kill('SIGTERM');
  t.equal((await holder.exited).code, 0);
  t.notOk(existsSync(pidFile));
  acquirePidLock(pidFile).release();
});

await t.test('garbage content is treated as stale', async (t) => {
  const dir = t.testdir();
  const pidFile = join(dir, 'svc.pid');
  for (const junk of ['', 'abc\n', '0\n', '-1\n', '12 34\n', '99999999999\n', '\0\0\0']) {
    writeFileSync(pidFile, junk);
    const lock = acquirePidLock(pidFile);
    t.equal(pidIn(pidFile), `${process.pid}`, `took over ${JSON.stringify(junk)}`);
    lock.release();
  }
  t.same(readdirSync(dir), []);
});

await t.test('release leaves a file that no longer names us', async (t) => {
  const pidFile = join(t.testdir(), 'svc.pid');
  const lock = acquirePidLock(pidFile);
  writeFileSync(pidFile, '1\n');
  lock.release();
  t.equal(read(pidFile), '1\n', "someone else's lock is not ours to remove");
});

/** A live process that is not svc; its pid stands in for one the kernel reused. */
function unrelatedProcess(t: Test) {
  const child = spawn('sleep', ['60'], { stdio: 'ignore' });
  t.teardown(() => {
    child.kill('SIGKILL');
  });
  return child.pid!;
}

await t.test('a pid reused by another process does not block start', async (t) => {
  const dir = t.testdir();
  const pidFile = join(dir, 'svc.pid');
  const pid = unrelatedProcess(t);
  const start = readProcStat(pid)!.startTime;
  const boot = readBootId()!;

  writeFileSync(pidFile, `${pid}\nstart=${start + 1}\nboot=${boot}\n`);
  let lock = acquirePidLock(pidFile);
  t.match(lock.tookOver, `pid ${pid} now belongs to a process started later`);
  t.equal(pidIn(pidFile), `${process.pid}`);
  lock.release();

  // A pid-only file (older svc, other tools) written after its process started, naming a process
  // whose command line is not svc's: taken over, as `svc stop` would not signal it either.
  writeFileSync(pidFile, `${pid}\n`);
  lock = acquirePidLock(pidFile);
  t.match(lock.tookOver, `pid ${pid} is not svc (sleep 60)`);
  t.equal(pidIn(pidFile), `${process.pid}`);
  lock.release();
  t.equal(readProcStat(pid)?.state, 'S', 'the other process is left alone');
  // Written before its process started: the pid was reused since.
  writeFileSync(pidFile, `${pid}\n`);
  const past = new Date(Date.now() - 3_600_000);
  utimesSync(pidFile, past, past);
  lock = acquirePidLock(pidFile);
  t.match(lock.tookOver, `pid ${pid} belongs to a process started after the file was written`);
  lock.release();

  writeFileSync(pidFile, `${pid}\nstart=${start}\nboot=00000000-0000-0000-0000-000000000000\n`);
  lock = acquirePidLock(pidFile);
  t.match(lock.tookOver, 'before the machine restarted', 'start times of another boot mean nothing');
  lock.release();

  writeFileSync(pidFile, `${pid}\nstart=${start}\nboot=${boot}\n`);
  t.throws(() => acquirePidLock(pidFile), { code: 'daemon-running' }, 'the same pid, start time and boot is the holder itself');
  t.equal(read(pidFile), `${pid}\nstart=${start}\nboot=${boot}\n`, 'and its file is left alone');
});

await t.test('a zombie holder does not block start', async (t) => {
  const dir = t.testdir();
  const pidFile = join(dir, 'svc.pid');
  // `sleep 0` exits at once; the `sleep 60` exec'd over its parent shell never reaps it.
  const parent = spawn('sh', ['-c', 'sleep 0 & echo $!; exec sleep 60'], { stdio: ['ignore', 'pipe', 'ignore'] });
  t.teardown(() => {
    parent.kill('SIGKILL');
  });
  let out = '';
  parent.stdout.on('data', (d: Buffer) => (out += d));
  await until('the zombie pid', () => out.includes('\n'));
  const zombie = Number(out.trim());
  await until('the child to become a zombie', () => readProcStat(zombie)?.state === 'Z');
  writeFileSync(pidFile, `${zombie}\nstart=${readProcStat(zombie)!.startTime}\nboot=${readBootId()}\n`);
  const lock = acquirePidLock(pidFile);
  t.match(lock.tookOver, `pid ${zombie} has exited (a zombie)`);
  lock.release();
});
