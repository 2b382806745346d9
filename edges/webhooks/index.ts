export * from './errors.js';
export * from './rate-limit.js';
export * from './webhook-server.js';
