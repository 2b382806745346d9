import t from 'tap';
import { spawn } from 'node:child_process';
import { appendFileSync, mkdirSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { lastLines } from '../../bin/logs-command.js';
import { SVC, exited, svc, until } from './cli-helpers.js';

await t.test('svc logs prints the last lines; -n picks how many; a missing log is one clear error', async (t) => {
  const home = t.testdir();
  const missing = svc(home, ['logs']);
  t.equal(missing.code, 1);
  t.match(missing.stderr, /svc\.log does not exist yet/);

  mkdirSync(join(home, 'logs'));
  writeFileSync(join(home, 'logs', 'svc.log'), Array.from({ length: 120 }, (_, i) => `line ${i}`).join('\n') + '\n');
  const three = svc(home, ['logs', '-n', '3']);
  t.equal(three.code, 0, three.stderr);
  t.equal(three.stdout, 'line 117\nline 118\nline 119\n');
  t.equal(svc(home, ['logs']).stdout.split('\n').filter(Boolean).length, 50, 'default 50');
  t.equal(svc(home, ['logs', '-n', '0']).stdout, '');
  for (const bad of [['-n', '-1'], ['-n', 'ten'], ['-n', '1e9'], ['extra']]) {
    const r = svc(home, ['logs', ...bad]);
    t.equal(r.code, 2, bad.join(' '));
    t.match(r.stderr, /usage: svc logs/);
  }
});

await t.test('svc logs -f follows appends and a rotation', async (t) => {
  const home = t.testdir({ logs: { 'svc.log': 'old line\n' } });
  const file = join(home, 'logs', 'svc.log');
  const child = spawn(process.execPath, [SVC, 'logs', '-f'], { env: { ...process.env, SVC_HOME: home }, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  t.teardown(() => void child.kill('SIGKILL'));
  await until('the existing line', () => out.includes('old line'));
  appendFileSync(file, 'appended line\n');
  await until('the appended line', () => out.includes('appended line'));
  // The daemon's last line before a rotation lands in the file that is being renamed away.
  appendFileSync(file, 'last before rotation\n');
  renameSync(file, `${file}.1`);
  writeFileSync(file, 'after rotation\n');
  await until('the line of the new file', () => out.includes('after rotation'));
  child.kill('SIGTERM');
  await exited(child);
  t.equal(out, 'old line\nappended line\nlast before rotation\nafter rotation\n', 'nothing skipped, nothing twice');
});

await t.test('lastLines keeps a multibyte character whole where it straddles two read chunks', async (t) => {
  const file = join(t.testdir(), 'svc.log');
  // 64 KiB chunks: put a 4-byte character across the boundary counted from the end.
  const tailText = 'ok\n'.repeat(10);
  const filler = 'x'.repeat(64 * 1024 - Buffer.byteLength(tailText) - 2);
  writeFileSync(file, `first line\nsplit 🙂${filler}\n${tailText}`);
  const lines = lastLines(file, 11);
  t.equal(lines.length, 11);
  t.match(lines[0], /^split 🙂x/);
  t.same(lines.slice(-2), ['ok', 'ok']);
  t.same(lastLines(file, 0), []);
  t.same(lastLines(file, 100), ['first line', lines[0], ...Array(10).fill('ok')]);
});
