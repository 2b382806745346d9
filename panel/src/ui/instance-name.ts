import { systemStatus } from '../api/system-status';
import { createStore } from '../store';

/*
 * The instance's name, as the header shows it: loaded once by the shell, and set by whoever
 * renames the instance, so the header follows without a reload.
 */
export const instanceName = createStore('');

export function loadInstanceName(): void {
  // Shared with the dashboard, which reads the version from the same answer.
  systemStatus()
    .then((s) => instanceName.set(s.instance_name ?? ''))
    .catch(() => undefined);
}
