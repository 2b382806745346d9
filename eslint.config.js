// Type-aware lint for the two promise mistakes tsc cannot see: a promise nobody awaits or catches
// (its rejection vanishes), and a promise handed where a plain callback is expected (uWS handlers,
// emitters, timers drop it). Other style is left to tsc's stricter lint config and review.
import tseslint from 'typescript-eslint';

export default [
  { ignores: ['dist/', 'panel/dist/', '.tap/'] },
  {
    files: [
      '{actors,bin,bus,edges,machines,schemas,store,test,bench}/**/*.ts',
      'panel/src/**/*.{ts,tsx}',
    ],
    languageOptions: {
      parser: tseslint.parser,
      // Each file is checked against its nearest tsconfig.json: the root one, or panel/'s for the browser code.
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    plugins: { '@typescript-eslint': tseslint.plugin },
    linterOptions: { reportUnusedDisableDirectives: 'error' },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
    },
  },
];
