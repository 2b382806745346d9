#!/usr/bin/env node
// The checkout's own entry point (README: ./bin/svc.js). Runs the compiled CLI built by `npm install`.
import { existsSync } from 'node:fs';

const dist = (path) => new URL(`../dist/bin/${path}`, import.meta.url);
if (!existsSync(dist('main.js'))) {
  process.stderr.write('svc: not built yet; run `npm install` (or `npm run build`) in the svc checkout\n');
  process.exit(1);
}
const { nodeVersionProblem, nativeModuleProblem } = await import(dist('runtime-check.js').href);
// `svc doctor` reports these itself, with everything else it checks.
const args = process.argv.slice(2);
const command = args.find((a, i) => !a.startsWith('-') && args[i - 1] !== '--home');
const problem = command === 'doctor' ? null : (nodeVersionProblem(process.versions.node) ?? nativeModuleProblem());
if (problem) {
  process.stderr.write(`${problem.startsWith('svc') ? '' : 'svc: '}${problem}\n`);
  process.exit(1);
}
const { main } = await import(dist('main.js').href);
process.exitCode = await main(process.argv.slice(2));
// Done: a library timer still armed (matrix-js-sdk never clears its requests' timeouts, up to 110 s)
// must not keep a stopped daemon's process alive. Unreferenced, this fires only if something does.
setTimeout(() => process.exit(), 1000).unref();
