#!/usr/bin/env node
// Run by `npm install` after svc is compiled (package.json "postprepare"). The native modules are
// optional dependencies, so a failed build does not stop the install; this says so in one line,
// last, and never fails the install itself: `./bin/svc.js start` refuses with the same line.
const { NATIVE_MODULES, nativeModuleProblem } = await import(new URL('../dist/bin/runtime-check.js', import.meta.url).href);
const problem = nativeModuleProblem(NATIVE_MODULES);
if (problem) process.stderr.write(`${problem}\n`);
