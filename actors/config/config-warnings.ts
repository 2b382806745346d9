import type { Subscription } from 'rxjs';
import type { Bus } from '../../bus/index.js';
import { CONFIG_EVENTS, REGISTRY_EVENTS, USER_EVENTS } from '../../schemas/index.js';

/*
 * A rejected edit or an unknown key is something the operator must see where they look — the
 * terminal and svc.log — not only in `svc events`. The facts stay the record; this turns them into
 * warning lines.
 */

const REJECTED = new Set<string>([CONFIG_EVENTS.rejected, REGISTRY_EVENTS.rejected, USER_EVENTS.file_rejected]);
const WATCHED = new Set<string>([CONFIG_EVENTS.loaded, CONFIG_EVENTS.reloaded, ...REJECTED]);

export function logConfigWarnings(bus: Bus): Subscription {
  return bus.subscribe(
    'config-warnings',
    (e) => {
      const data = e.data as { file?: string; errors?: string[]; unknown_keys?: string[] };
      if (REJECTED.has(e.type)) {
        const errors = data.errors ?? [];
        const kept = e.type === USER_EVENTS.file_rejected ? 'the last good users and roles stay' : 'the last good configuration stays';
        bus.emitLog('warn', `${data.file ?? 'config'}: edit rejected, ${kept} in force: ${errors.join('; ')}`, { file: data.file ?? null });
        return;
      }
      const unknown = data.unknown_keys ?? [];
      if (unknown.length) {
        bus.emitLog('warn', `config.json: unknown key${unknown.length > 1 ? 's' : ''} ${unknown.join(', ')} (kept in the file, ignored by svc; a typo?)`, { keys: unknown });
      }
    },
    (e) => WATCHED.has(e.type),
  );
}
