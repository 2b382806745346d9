export * from './http/index.js';
export * from './direct/index.js';
export * from './api/index.js';
export * from './internal/index.js';
export * from './admin/index.js';
export * from './webhooks/index.js';
export * from './fileshare/index.js';
export * from './telegram/index.js';
