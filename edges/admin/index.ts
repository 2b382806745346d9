export * from './admin-auth.js';
export * from './admin-deps.js';
export * from './admin-surface.js';
export * from './errors.js';
export * from './static-token.js';
export * from './access-token.js';
export * from './cors.js';
export * from './login-rate-limit.js';
