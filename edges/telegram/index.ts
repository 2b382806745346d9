export * from './telegram-transport.js';
export * from './telegram-gate.js';
export * from './telegram-format.js';
export * from './telegram-media.js';
