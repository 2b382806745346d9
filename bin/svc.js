#!/usr/bin/env node
// The installed entry point: runs the compiled CLI (built by `npm install` through `prepare`).
import { existsSync } from 'node:fs';

const entry = new URL('../dist/bin/main.js', import.meta.url);
if (!existsSync(entry)) {
  process.stderr.write('svc: not built yet; run `npm install` (or `npm run build`) in the svc checkout\n');
  process.exit(1);
}
const { main } = await import(entry.href);
process.exitCode = await main(process.argv.slice(2));
