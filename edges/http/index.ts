export * from './http.js';
export * from './uws-http.binding.js';
export * from './content-headers.js';
