export * from './fileshare-server.js';
