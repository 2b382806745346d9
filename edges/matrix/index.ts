export * from './matrix-gate.js';
export * from './matrix-credentials.js';
export * from './matrix-crypto-store.js';
export * from './matrix-transport.js';
