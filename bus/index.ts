export * from './bus.js';
export * from './cause.js';
