export * from './messenger-turn.js';
export * from './messenger-health.js';
export * from './messenger-media.js';
