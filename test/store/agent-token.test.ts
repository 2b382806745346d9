import t from 'tap';
import * as fs from 'node:fs';
import { join } from 'node:path';
import { isSvcError } from '../../schemas/index.js';
import { ensureMainAgentToken, homePaths, readMainAgentToken } from '../../store/index.js';

const mode = (p: string) => fs.statSync(p).mode & 0o777;

function codeOf(fn: () => unknown): string {
  try {
    fn();
  } catch (e) {
    return isSvcError(e) ? `${e.code}: ${/main_agent_token\.json/.test(e.message) ? 'names the file' : e.message}` : String(e);
  }
  return 'no error';
}

await t.test('ensureMainAgentToken creates the file once, private, and keeps it', async (t) => {
  const paths = homePaths(join(t.testdir(), 'home'));
  t.equal(readMainAgentToken(paths), null, 'missing file: no token yet');
  let calls = 0;
  const gen = () => `${++calls}`.padEnd(43, 'k');
  const token = ensureMainAgentToken(paths, gen);
  t.equal(token, '1'.padEnd(43, 'k'));
  t.same(JSON.parse(fs.readFileSync(paths.mainAgentTokenFile, 'utf8')), { token });
  t.equal(mode(paths.mainAgentTokenFile), 0o600);
  t.equal(mode(paths.secretsDir), 0o700);
  t.equal(readMainAgentToken(paths), token);

  fs.chmodSync(paths.mainAgentTokenFile, 0o644);
  fs.chmodSync(paths.secretsDir, 0o755);
  t.equal(ensureMainAgentToken(paths, gen), token, 'an existing token is kept');
  t.equal(calls, 1, 'the generator is not called again');
  t.equal(mode(paths.mainAgentTokenFile), 0o600, 'a loosened file is tightened');
  t.equal(mode(paths.secretsDir), 0o700, 'a loosened directory is tightened');
});

await t.test('a malformed token file is an error and is never rewritten', async (t) => {
  const paths = homePaths(join(t.testdir(), 'home'));
  fs.mkdirSync(paths.secretsDir, { recursive: true, mode: 0o700 });
  for (const bad of ['{"token":', '[]', '{"token": 5}', '{"token": "short"}', `{"token": "${'a'.repeat(20)} ${'b'.repeat(20)}"}`]) {
    fs.writeFileSync(paths.mainAgentTokenFile, bad, { mode: 0o600 });
    t.equal(codeOf(() => readMainAgentToken(paths)), 'corrupt-file: names the file', bad);
    t.equal(codeOf(() => ensureMainAgentToken(paths, () => 'x'.repeat(40))), 'corrupt-file: names the file');
    t.equal(fs.readFileSync(paths.mainAgentTokenFile, 'utf8'), bad, 'left untouched');
  }
  fs.rmSync(paths.mainAgentTokenFile);
  t.match(codeOf(() => ensureMainAgentToken(paths, () => 'short')), /^invalid-token: /);
  t.notOk(fs.existsSync(paths.mainAgentTokenFile), 'an unusable generated token is not written');
});
