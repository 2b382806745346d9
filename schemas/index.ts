export * from './error.js';
export * from './event.schema.js';
export * from './secrets.js';
export * from './config.schema.js';
export * from './registry.schema.js';
export * from './users.schema.js';
export * from './agent-commands.schema.js';
export * from './chat-sessions.schema.js';
