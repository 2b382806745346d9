import { chmodSync, existsSync, readFileSync, readdirSync, statSync, truncateSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import * as v from 'valibot';
import { isSvcError } from '../../schemas/index.js';
import { ensureDir, readJsonFile, readJsonFileSync, writeJsonAtomic, writeJsonAtomicSync } from '../../store/index.js';

const Users = v.object({
  users: v.array(v.object({ name: v.string(), role: v.picklist(['admin', 'operator', 'viewer']) })),
});

async function rejection(p: Promise<unknown>): Promise<Error> {
  try {
    await p;
  } catch (err) {
    return err as Error;
  }
  throw new Error('expected a rejection');
}
const modeOf = (p: string) => statSync(p).mode & 0o777;

await t.test('round trip, async and sync', async (t) => {
  const dir = t.testdir();
  const p = join(dir, 'a', 'b', 'users.json');
  const data = { users: [{ name: 'ånna 🎉', role: 'admin' as const }] };
  await writeJsonAtomic(p, data);
  t.same(await readJsonFile(p, Users), data);
  t.match(readFileSync(p, 'utf8'), /^\{\n {2}"users"/, 'pretty-printed for hand editing');
  t.ok(readFileSync(p, 'utf8').endsWith('}\n'), 'ends with a newline');
  writeJsonAtomicSync(p, { users: [] });
  t.same(readJsonFileSync(p, Users), { users: [] });
  const out: { users: { name: string }[] } = await readJsonFile(p, Users);
  t.same(out.users, [], 'typed by the schema');
});

await t.test('modes: files 0600 by default, asked-for modes despite umask, parents created with dirMode', async (t) => {
  const dir = t.testdir();
  const secret = join(dir, '_secrets', 'users.json');
  await writeJsonAtomic(secret, { users: [] }, { dirMode: 0o700 });
  t.equal(modeOf(secret), 0o600);
  t.equal(modeOf(join(dir, '_secrets')), 0o700);

  const loose = join(dir, 'loose.json');
  writeFileSync(loose, '{}');
  chmodSync(loose, 0o666);
  await writeJsonAtomic(loose, { users: [] }, { mode: 0o600 });
  t.equal(modeOf(loose), 0o600, 'an existing looser file is tightened');

  const old = process.umask(0o077);
  try {
    const shared = join(dir, 'tasks.json');
    await writeJsonAtomic(shared, {}, { mode: 0o644 });
    t.equal(modeOf(shared), 0o644, 'umask does not strip the asked-for mode');
    writeJsonAtomicSync(shared, {}, { mode: 0o644 });
    t.equal(modeOf(shared), 0o644);
  } finally {
    process.umask(old);
  }
});

await t.test('ensureDir creates and tightens directories, refuses files', async (t) => {
  const dir = t.testdir({ file: 'x' });
  const secrets = join(dir, 'home', '_secrets');
  ensureDir(secrets, 0o700);
  t.equal(modeOf(secrets), 0o700);
  chmodSync(secrets, 0o755);
  ensureDir(secrets, 0o700);
  t.equal(modeOf(secrets), 0o700, 'a loosened secrets dir is fixed');
  t.throws(() => ensureDir(join(dir, 'file'), 0o700), { code: 'not-a-directory' });
});

await t.test('missing file: the default or file-missing', async (t) => {
  const p = join(t.testdir(), 'nope.json');
  t.same(await readJsonFile(p, Users, { missing: () => ({ users: [] }) }), { users: [] });
  const err = await rejection(readJsonFile(p, Users));
  t.ok(isSvcError(err, 'file-missing'));
  t.match(err.message, p);
  t.throws(() => readJsonFileSync(p, Users), { code: 'file-missing' });
  t.notOk(existsSync(p), 'nothing was created');
});

await t.test('a file truncated mid-write is reported and left untouched', async (t) => {
  const dir = t.testdir();
  const p = join(dir, 'users.json');
  await writeJsonAtomic(p, { users: [{ name: 'a', role: 'admin' }] });
  truncateSync(p, 15);
  const before = readFileSync(p);
  const err = await rejection(readJsonFile(p, Users, { missing: () => ({ users: [] }) }));
  t.ok(isSvcError(err, 'corrupt-file'), 'corrupt-file even with a missing() default');
  t.match(err.message, `${p}: not valid JSON (`);
  t.match(err.message, /\); fix or remove it — it was left untouched$/);
  t.same(readFileSync(p), before, 'file untouched');
  t.throws(() => readJsonFileSync(p, Users), { code: 'corrupt-file' });
  writeFileSync(p, '');
  t.match((await rejection(readJsonFile(p, Users))).message, /not valid JSON/, 'an empty file is not JSON either');
});

await t.test('schema failures name the file, the field and the problem', async (t) => {
  const dir = t.testdir();
  const p = join(dir, 'users.json');
  const text = JSON.stringify({ users: [{ name: 'a', role: 'admin' }, { name: 'b', role: 'root' }] });
  writeFileSync(p, text);
  const err = await rejection(readJsonFile(p, Users));
  t.ok(isSvcError(err, 'corrupt-file'));
  t.match(err.message, `${p}: users[1].role: `);
  t.match(err.message, /root/, 'says what value was found');
  t.equal((err as { details?: { field?: string } }).details?.field, 'users[1].role');
  t.equal(readFileSync(p, 'utf8'), text, 'file untouched');

  writeFileSync(p, JSON.stringify({ users: [{ name: 5, role: 'x' }] }));
  t.match((await rejection(readJsonFile(p, Users))).message, /users\[0\]\.name: .*\(and 1 more problem\)/, 'counts further problems');
  writeFileSync(p, '"just a string"');
  t.match((await rejection(readJsonFile(p, Users))).message, /\(top level\)/, 'wrong top-level type');
});

await t.test('bad inputs: unserialisable values, directories, oversized files', async (t) => {
  const dir = t.testdir();
  const p = join(dir, 'x.json');
  await writeJsonAtomic(p, { keep: true });
  for (const bad of [undefined, 1n, () => 1]) {
    const err = await rejection(writeJsonAtomic(p, bad));
    t.ok(isSvcError(err, 'invalid-json'), `${typeof bad} refused`);
  }
  const circular: Record<string, unknown> = {};
  circular.me = circular;
  t.ok(isSvcError(await rejection(writeJsonAtomic(p, circular)), 'invalid-json'), 'circular refused');
  t.throws(() => writeJsonAtomicSync(p, undefined), { code: 'invalid-json' });
  t.same(JSON.parse(readFileSync(p, 'utf8')), { keep: true }, 'old content survives failed writes');
  t.same(readdirSync(dir), ['x.json'], 'no temp files left behind');
  t.ok(isSvcError(await rejection(readJsonFile(dir, Users)), 'corrupt-file'), 'a directory is not a JSON file');
  const huge = join(dir, 'huge.json');
  writeFileSync(huge, '');
  truncateSync(huge, 33 * 1024 * 1024);
  t.ok(isSvcError(await rejection(readJsonFile(huge, Users)), 'file-too-large'));
});

await t.test('concurrent writers never leave a partial file', async (t) => {
  const dir = t.testdir();
  const p = join(dir, 'tasks.json');
  const payload = (n: number) => ({ n, items: Array.from({ length: 2000 }, (_, i) => ({ i, text: `task ${n}-${i} ✓` })) });
  await writeJsonAtomic(p, payload(-1));
  let reads = 0;
  let writing = true;
  const reader = (async () => {
    while (writing) {
      const got = JSON.parse(readFileSync(p, 'utf8')) as { n: number; items: unknown[] };
      if (got.items.length !== 2000) throw new Error(`partial file seen: ${got.items.length} items`);
      reads++;
      // Yields so the writers' I/O interleaves with the reads; the loop ends when the writers are awaited.
      await new Promise((r) => setImmediate(r));
    }
  })();
  await Promise.all(Array.from({ length: 40 }, (_, n) => writeJsonAtomic(p, payload(n), { mode: 0o644 })));
  writing = false;
  await reader;
  t.ok(reads > 0, `reader parsed ${reads} complete versions`);
  const final = JSON.parse(readFileSync(p, 'utf8')) as { n: number; items: unknown[] };
  t.ok(final.n >= 0 && final.n < 40 && final.items.length === 2000, 'one complete version won');
  t.equal(modeOf(p), 0o644);
  t.same(readdirSync(dir), ['tasks.json'], 'no temp files left behind');
});
