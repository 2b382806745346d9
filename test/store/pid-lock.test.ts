import { spawn } from 'node:child_process';
import { existsSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { isSvcError } from '../../schemas/index.js';
import { acquirePidLock } from '../../store/index.js';

/** tap's own TypeScript loader, so the child runs the real module the way tests do. */
const tsLoader = import.meta.resolve('@tapjs/typescript/import');
const holderScript = fileURLToPath(new URL('../fixtures/pid-lock-holder.ts', import.meta.url));

async function until(cond: () => boolean, what: string, ms = 20_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

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
  const ready = until(() => out.includes('locked') || child.exitCode !== null, 'the holder to take the lock').then(() => {
    if (!out.includes('locked')) throw new Error(`holder failed: ${err}`);
  });
  return { child, ready, exited };
}

const read = (p: string) => (existsSync(p) ? readFileSync(p, 'utf8') : undefined);

t.test('acquire writes our pid; release removes it once', async (t) => {
  const dir = t.testdir();
  const pidFile = join(dir, 'svc.pid');
  const lock = acquirePidLock(pidFile);
  t.equal(read(pidFile), `${process.pid}\n`);
  t.same(readdirSync(dir), ['svc.pid'], 'no temp files left');
  lock.release();
  t.notOk(existsSync(pidFile));
  lock.release();
  t.notOk(existsSync(pidFile), 'second release is harmless');
});

t.test('a live daemon in another process blocks us; its stale file after SIGKILL is taken over', async (t) => {
  const dir = t.testdir();
  const pidFile = join(dir, 'svc.pid');
  const holder = startHolder(pidFile);
  t.teardown(() => {
    holder.child.kill('SIGKILL');
  });
  await holder.ready;
  const childPid = holder.child.pid!;
  t.equal(read(pidFile), `${childPid}\n`);
  try {
    acquirePidLock(pidFile);
    t.fail('should refuse');
  } catch (err) {
    t.ok(isSvcError(err, 'daemon-running'));
    t.equal((err as Error).message, `another svc daemon (pid ${childPid}) is already running on ${dir}; stop it first`);
  }
  t.equal(read(pidFile), `${childPid}\n`, 'the holder keeps its lock');

  holder.child.kill('SIGKILL');
  t.equal((await holder.exited).signal, 'SIGKILL');
  t.equal(read(pidFile), `${childPid}\n`, 'a killed daemon leaves its file behind');
  const lock = acquirePidLock(pidFile);
  t.equal(read(pidFile), `${process.pid}\n`, 'the stale file was taken over');
  lock.release();
  t.same(readdirSync(dir), [], 'nothing left behind');
});

t.test('a daemon stopped with SIGTERM releases its lock', async (t) => {
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

t.test('garbage content is treated as stale', async (t) => {
  const dir = t.testdir();
  const pidFile = join(dir, 'svc.pid');
  for (const junk of ['', 'abc\n', '0\n', '-1\n', '12 34\n', '99999999999\n', '\0\0\0']) {
    writeFileSync(pidFile, junk);
    const lock = acquirePidLock(pidFile);
    t.equal(read(pidFile), `${process.pid}\n`, `took over ${JSON.stringify(junk)}`);
    lock.release();
  }
  t.same(readdirSync(dir), []);
});

t.test('release leaves a file that no longer names us', async (t) => {
  const pidFile = join(t.testdir(), 'svc.pid');
  const lock = acquirePidLock(pidFile);
  writeFileSync(pidFile, '1\n');
  lock.release();
  t.equal(read(pidFile), '1\n', "someone else's lock is not ours to remove");
});
