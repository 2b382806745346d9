export * from './http.js';
export * from './authentication.js';
export * from './uws-http.binding.js';
export * from './http-server.js';
export * from './api-server.js';
export * from './content-headers.js';
export * from './file-access.js';
export * from './route-auth.js';
