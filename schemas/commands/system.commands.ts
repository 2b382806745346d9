import * as v from 'valibot';
import { DashboardSummarySchema, LANGUAGES, RenameInstanceBodySchema, SystemStatusSchema } from '../activity.schema.js';
import { defineCommand } from '../command.js';
import { PrincipalSchema } from '../principal.schema.js';

/* System status, instance name and the dashboard summary (SPEC.md "Admin REST: system, dashboard"). */

const Lang = v.picklist(LANGUAGES);

export const SYSTEM_COMMANDS = {
  status: defineCommand('system.status', v.strictObject({ principal: PrincipalSchema, lang: Lang }), SystemStatusSchema),
  rename: defineCommand('system.instance_rename', v.strictObject({ principal: PrincipalSchema, ...RenameInstanceBodySchema.entries }), v.object({ instance_name: v.string() })),
  summary: defineCommand('dashboard.summary', v.strictObject({ principal: PrincipalSchema, lang: Lang }), DashboardSummarySchema),
} as const;
