export * from './admin-auth.js';
export * from './admin-deps.js';
export * from './admin-surface.js';
export * from './errors.js';
export * from './static-token.js';
export * from './sessions.routes.js';
export * from './agents.routes.js';
export * from './system.routes.js';
