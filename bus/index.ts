export * from './bus.js';
export * from './agents.js';
export * from './cause.js';
export * from './transports.js';
export * from './clock.js';
