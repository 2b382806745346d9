export * from './matrix-media.js';
