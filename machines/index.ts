export * from './fact.js';
export * from './daemon.logic.js';
export * from './daemon.machine.js';
export * from './config.logic.js';
export * from './config.machine.js';
export * from './registry.machine.js';
