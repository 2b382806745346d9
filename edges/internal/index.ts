export * from './errors.js';
export * from './bodies.js';
export { CALLER_USER_HEADER } from './caller.js';
export * from './internal.routes.js';
export * from './internal-api.binding.js';
export * from './internal-auth.js';
