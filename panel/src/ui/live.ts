import { useEffect, useRef } from 'preact/hooks';
import { adminSocket, type Frame } from '../api/socket';

/*
 * Reloading a view when `/ws/admin` says something changed, without turning a burst of frames into
 * a burst of requests: the first frame of the given types schedules one reload `debounceMs` later (the
 * rest of the burst rides along), and two reloads are never closer than `minGapMs` (a later one
 * waits for the gap instead of being lost).
 */
export function useLiveRefresh(types: readonly Frame['type'][], reload: () => void, opts: { debounceMs?: number; minGapMs?: number } = {}): void {
  const { debounceMs = 1500, minGapMs = 10_000 } = opts;
  const latest = useRef(reload);
  latest.current = reload;
  const key = types.join(',');
  useEffect(() => {
    const wanted = new Set<string>(key.split(','));
    let timer: ReturnType<typeof setTimeout> | null = null;
    let last = Date.now();
    const fire = () => {
      timer = null;
      last = Date.now();
      latest.current();
    };
    const off = adminSocket.subscribe((f) => {
      if (!wanted.has(f.type)) return;
      // One reload is already on its way: it will see this change too.
      if (timer) return;
      const wait = Math.max(debounceMs, last + minGapMs - Date.now());
      timer = setTimeout(fire, wait);
    });
    return () => {
      off();
      if (timer) clearTimeout(timer);
    };
  }, [key, debounceMs, minGapMs]);
}
