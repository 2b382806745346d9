import * as v from 'valibot';
import { defineCommand } from '../command.js';
import { PrincipalSchema } from '../principal.schema.js';

/* The audit log (SPEC.md `/api/audit`): the admin edge records, an actor publishes `audit.recorded`. */

export const MAX_AUDIT_LIMIT = 1000;
export const DEFAULT_AUDIT_LIMIT = 200;

export const AuditEntrySchema = v.object({
  id: v.number(),
  timestamp: v.string(),
  actor: v.nullable(v.string()),
  action: v.string(),
  target: v.nullable(v.string()),
  status: v.nullable(v.number()),
  ip: v.nullable(v.string()),
  detail: v.nullable(v.record(v.string(), v.union([v.string(), v.number(), v.boolean(), v.null()]))),
});
export type AuditEntry = v.InferOutput<typeof AuditEntrySchema>;

const Text = (max: number) => v.pipe(v.string(), v.maxLength(max));

export const AUDIT_COMMANDS = {
  record: defineCommand(
    'audit.record',
    v.strictObject({
      principal: PrincipalSchema,
      /** `METHOD /pattern` of the admin route. */
      action: Text(300),
      target: v.nullable(Text(300)),
      /** What else names the change (its agent, the fields it set): never a value of a secret. */
      detail: v.optional(v.record(v.string(), Text(300))),
      status: v.nullable(v.number()),
      ip: v.nullable(Text(64)),
    }),
    v.object({ seq: v.number() }),
  ),
  list: defineCommand(
    'audit.list',
    v.strictObject({ principal: PrincipalSchema, limit: v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(MAX_AUDIT_LIMIT)) }),
    v.array(AuditEntrySchema),
  ),
} as const;
