export * from './memory.js';
export * from './rag.js';
export * from './skills.js';
export * from './user-files.js';
