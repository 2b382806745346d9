import type { SystemStatus } from '../../../schemas/index.js';
import { get } from './client';

/*
 * `GET /api/system/status`, shared: the shell wants the instance name and the dashboard the
 * version, and one page load asks once. An answer older than a minute is asked again.
 */
const FRESH_MS = 60_000;
let cached: { at: number; value: Promise<SystemStatus> } | null = null;

export function systemStatus(): Promise<SystemStatus> {
  if (!cached || Date.now() - cached.at > FRESH_MS) {
    const value = get<SystemStatus>('/api/system/status');
    cached = { at: Date.now(), value };
    // A failure is not kept: the next caller asks again.
    value.catch(() => {
      if (cached?.value === value) cached = null;
    });
  }
  return cached.value;
}
