export * from './api-auth.js';
export * from './errors.js';
export * from './notifications.routes.js';
export * from './chat-sessions.routes.js';
export * from './transcribe.routes.js';
export * from './avatar.routes.js';
export * from './api-surface.js';
