import { Subscription } from 'rxjs';
import { causedBy, type Bus } from '../../bus/index.js';
import { auditVisibleTo, unrestricted } from '../../machines/index.js';
import { AUDIT_COMMANDS, AUDIT_EVENTS, AUDIT_STREAM, MAX_AUDIT_LIMIT } from '../../schemas/index.js';
import type { AuditReadModel } from '../../store/index.js';

/*
 * The audit log's writer and reader (SPEC.md `/api/audit`): the admin edge sends what a request
 * did, this actor records it as an `audit.recorded` fact; the list is the projection of those facts.
 */

export interface AuditRecorderDeps {
  bus: Bus;
  readModel: AuditReadModel;
}

export function startAuditRecorder(deps: AuditRecorderDeps): Subscription {
  const { bus, readModel } = deps;
  const subs = new Subscription();
  subs.add(
    bus.handle(AUDIT_COMMANDS.record, 'audit', async (cmd) => {
      const { principal, action, target, detail, status, ip } = cmd.data;
      const actor = principal.kind === 'agent' ? (principal.acting_for ?? principal.id) : principal.id;
      const env = await bus.publish({ stream: AUDIT_STREAM, type: AUDIT_EVENTS.recorded, data: { actor, action, target, status, ip, ...(detail ? { detail } : {}) }, ...causedBy(cmd) });
      return { seq: env.seq };
    }),
  );
  subs.add(
    bus.handle(AUDIT_COMMANDS.list, 'audit', ({ data }) => {
      const { principal, limit } = data;
      if (unrestricted(principal)) return readModel.list(limit);
      // A restricted admin reads the entries about its agents (machines/audit-visibility.logic.ts),
      // looked for among the newest MAX_AUDIT_LIMIT.
      return readModel.list(MAX_AUDIT_LIMIT).filter((e) => auditVisibleTo(principal, e)).slice(0, limit);
    }),
  );
  return subs;
}
