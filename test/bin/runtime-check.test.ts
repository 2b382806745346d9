import t from 'tap';
import { NATIVE_MODULES, nativeModuleProblem, nodeVersionProblem } from '../../bin/runtime-check.js';

await t.test('the Node.js version svc runs on, and one line naming the one it needs otherwise', async (t) => {
  for (const ok of ['20.19.0', '20.20.2', 'v20.99.1']) t.equal(nodeVersionProblem(ok), null, ok);
  for (const bad of ['20.18.3', '18.20.0', '22.11.0', '24.0.0', 'garbage']) {
    const line = nodeVersionProblem(bad);
    t.match(line, /^svc needs Node\.js 20 \(20\.19 or a later 20\.x\); this is Node\.js v/, bad);
    t.notMatch(line, /\n/, 'one line');
  }
  t.equal(nodeVersionProblem(process.versions.node), null, 'the Node.js running this suite is supported');
});

await t.test('native modules: the real ones load here; a broken one is named in one line with the fix', async (t) => {
  t.equal(nativeModuleProblem(), null);
  t.equal(nativeModuleProblem(NATIVE_MODULES), null, 'node-pty too, which svc auth needs');
  const line = nativeModuleProblem([
    { name: 'fine', load: () => undefined },
    {
      name: 'better-sqlite3',
      load: () => {
        throw new Error('Could not locate the bindings file. Tried:\n → /x/build/better_sqlite3.node');
      },
    },
  ]);
  t.match(line, /the native module better-sqlite3 did not build or does not load \(Could not locate the bindings file\. Tried:\)/);
  t.match(line, /C\/C\+\+ toolchain .* Node's headers .* npm install again/);
  t.notMatch(line, /\n/);
});
