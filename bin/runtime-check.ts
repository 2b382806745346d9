import { createRequire } from 'node:module';

/*
 * What must hold before anything else is imported: the right Node.js and native modules that load.
 * Checked by bin/svc.js first, so a wrong version or a failed native build is one line that says
 * what to do, not a stack trace from deep inside an import. No native import at module level here.
 */

/** package.json `engines`: chokidar 5 needs 20.19; the uWebSockets.js build ships binaries for Node 20 (ABI 115) only. */
export const NODE_RANGE = { major: 20, minMinor: 19, text: 'Node.js 20 (20.19 or a later 20.x)' } as const;

/** Null when `version` (as in `process.versions.node`) runs svc; else the one line to print. */
export function nodeVersionProblem(version: string): string | null {
  const m = /^v?(\d+)\.(\d+)\.(\d+)/.exec(version);
  const major = m ? Number(m[1]) : NaN;
  const minor = m ? Number(m[2]) : NaN;
  if (major === NODE_RANGE.major && minor >= NODE_RANGE.minMinor) return null;
  return `svc needs ${NODE_RANGE.text}; this is Node.js ${version.replace(/^v?/, 'v')}. Install Node.js 20 (e.g. with nvm: nvm install 20), then run npm install again`;
}

export interface NativeModule {
  name: string;
  /** Throws when the compiled binding is missing or built for another Node. */
  load: () => void;
}

const require = createRequire(import.meta.url);

/** What the daemon cannot run without. */
export const REQUIRED_NATIVE_MODULES: readonly NativeModule[] = [
  {
    name: 'better-sqlite3',
    load: () => {
      const Database = require('better-sqlite3') as new (file: string) => { close(): void };
      new Database(':memory:').close();
    },
  },
];

/** Everything native svc uses: node-pty only for the terminal of `svc auth`. */
export const NATIVE_MODULES: readonly NativeModule[] = [...REQUIRED_NATIVE_MODULES, { name: 'node-pty', load: () => void require('node-pty') }];

/** Null when every native module loads; else one line naming the first that does not, and the fix. */
export function nativeModuleProblem(modules: readonly NativeModule[] = REQUIRED_NATIVE_MODULES): string | null {
  for (const mod of modules) {
    try {
      mod.load();
    } catch (e) {
      const why = (e instanceof Error ? e.message : String(e)).split('\n')[0];
      return (
        `svc: the native module ${mod.name} did not build or does not load (${why}). ` +
        `It needs a C/C++ toolchain (make, g++, python3) and Node's headers (node-gyp downloads them, ` +
        `or set npm_config_nodedir); install those and run npm install again in the svc checkout`
      );
    }
  }
  return null;
}
