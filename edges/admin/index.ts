export * from './admin-auth.js';
export * from './admin-deps.js';
export * from './admin-surface.js';
export * from './errors.js';
export * from './static-token.js';
export * from './chat.routes.js';
export * from './admin-turns.js';
