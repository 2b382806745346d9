import { get } from '../api/client';
import { createStore } from '../store';

/*
 * The instance's name, as the header shows it: loaded once by the shell, and set by whoever
 * renames the instance, so the header follows without a reload.
 */
export const instanceName = createStore('');

export function loadInstanceName(): void {
  get<{ instance_name?: string }>('/api/system/status')
    .then((s) => instanceName.set(s.instance_name ?? ''))
    .catch(() => undefined);
}
