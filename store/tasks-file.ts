import { TasksFileSchema, type TaskRecord } from '../schemas/index.js';
import type { HomePaths } from './home.js';
import { readJsonFileSync } from './json-file.js';

/** `tasks.json` as the task hub writes it (SPEC.md "Task records"); no file yet is no tasks. */
export function loadTasks(paths: HomePaths): TaskRecord[] {
  return readJsonFileSync(paths.tasksFile, TasksFileSchema, { missing: () => [] });
}
