export * from './bus.js';
export * from './agents.js';
