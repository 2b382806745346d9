import { readFileSync } from 'node:fs';
import { defineConfig } from 'vite';

// The panel's build: static files under dist/panel, served same-origin by the daemon with a strict
// CSP (no inline script or style), so nothing here may emit inline code.
const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string };

// `vite panel` / `vite preview panel` during development: the API of a running daemon, same-origin through the proxy.
const target = process.env['SVC_API'] ?? 'http://127.0.0.1:8741';
const proxy = { '/api': target, '/upload': target, '/files': target, '/ws/admin': { target: target.replace(/^http/, 'ws'), ws: true } };

export default defineConfig({
  server: { proxy },
  preview: { proxy },
  root: new URL('.', import.meta.url).pathname,
  base: '/',
  publicDir: 'public',
  oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
  define: { __SVC_VERSION__: JSON.stringify(pkg.version) },
  build: {
    outDir: '../dist/panel',
    emptyOutDir: true,
    target: 'es2022',
    assetsDir: 'assets',
    sourcemap: false,
    // Vite's module-preload polyfill is an inline-free module, but every browser the panel targets has modulepreload.
    modulePreload: { polyfill: false },
    reportCompressedSize: false,
  },
  plugins: [
    {
      name: 'svc-panel-version',
      generateBundle() {
        this.emitFile({ type: 'asset', fileName: 'version.json', source: JSON.stringify({ version: pkg.version, built_at: new Date().toISOString() }) + '\n' });
      },
    },
  ],
});
