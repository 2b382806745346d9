export * from './memory.js';
export * from './rag.js';
export * from './skills.js';
export * from './user-files.js';
export * from './skill-sync.js';
export * from './image-normaliser.js';
