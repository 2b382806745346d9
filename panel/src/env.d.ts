/// <reference types="vite/client" />

/** package.json's version, put in by the build (vite.config.ts). */
declare const __SVC_VERSION__: string;
