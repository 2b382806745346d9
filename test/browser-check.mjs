// `npm test` says up front whether the panel's browser tests run: they need Debian's chromium
// (README.md, Set up) and skip without it, and a skip buried in tap's output is easy to miss.
import { existsSync } from 'node:fs';

const found = [process.env.SVC_TEST_CHROMIUM, '/usr/bin/chromium', '/usr/bin/chromium-browser'].find((p) => p && existsSync(p));
if (found) console.log(`browser tests: run with ${found}`);
else console.log('browser tests: SKIPPED — chromium not found (on Debian: apt install chromium, or set SVC_TEST_CHROMIUM to a chromium binary)');
