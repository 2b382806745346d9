import { watch, type FSWatcher } from 'chokidar';

/** Edits arrive as bursts (an editor's temp file, rename, chmod): one reload after the burst settles. */
export const WORKFLOW_RELOAD_DEBOUNCE_MS = 150;

/**
 * Calls `onChange` after a `.yaml`/`.yml` file in `dir` is added, edited or deleted (SPEC.md: within
 * 5 seconds, without a restart). Only the directory itself is watched: definitions live at its top.
 */
export function watchWorkflowDefinitions(dir: string, onChange: () => void, debounceMs = WORKFLOW_RELOAD_DEBOUNCE_MS): { close(): Promise<void> } {
  let timer: NodeJS.Timeout | null = null;
  let closed = false;
  const changed = (path: string) => {
    if (closed || !/\.ya?ml$/i.test(path)) return;
    if (timer) clearTimeout(timer);
    timer = setTimeout(() => {
      timer = null;
      if (!closed) onChange();
    }, debounceMs);
  };
  const watcher: FSWatcher = watch(dir, { ignoreInitial: true, depth: 0, persistent: true });
  watcher.on('add', changed).on('change', changed).on('unlink', changed);
  watcher.on('error', () => undefined);
  return {
    async close() {
      closed = true;
      if (timer) clearTimeout(timer);
      await watcher.close();
    },
  };
}
