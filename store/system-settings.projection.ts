import type Database from 'better-sqlite3';
import { SYSTEM_EVENTS, type AnyEnvelope } from '../schemas/index.js';
import type { Projection } from './projection.js';

/*
 * Instance-wide settings changed through the admin API (the instance name, WIRE.md §2), folded
 * from `system.*` facts: durable in the event log, rebuilt by `svc events replay`.
 */

export const systemSettingsProjection: Projection = {
  name: 'system-settings',
  tables: ['system_settings'],
  ddl: [`CREATE TABLE IF NOT EXISTS system_settings (key TEXT PRIMARY KEY, value TEXT NOT NULL, seq INTEGER NOT NULL)`],
  apply(db: Database.Database, e: AnyEnvelope): void {
    if (e.type !== SYSTEM_EVENTS.instance_renamed || typeof e.data.instance_name !== 'string') return;
    db.prepare(`INSERT INTO system_settings (key, value, seq) VALUES ('instance_name', ?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value, seq = excluded.seq`).run(
      e.data.instance_name,
      e.seq,
    );
  },
};

export interface SystemSettingsReadModel {
  /** null until an admin names the instance. */
  instanceName(): string | null;
}

export function systemSettingsReadModel(db: Database.Database): SystemSettingsReadModel {
  const get = db.prepare(`SELECT value FROM system_settings WHERE key = 'instance_name'`);
  return { instanceName: () => (get.get() as { value: string } | undefined)?.value ?? null };
}
