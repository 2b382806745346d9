import * as v from 'valibot';
import { defineCommand } from '../command.js';
import { ExportSchema, ImportBodySchema, ImportResultSchema } from '../portability.schema.js';
import { PrincipalSchema } from '../principal.schema.js';

export const PORTABILITY_COMMANDS = {
  export: defineCommand('portability.export', v.strictObject({ principal: PrincipalSchema }), ExportSchema),
  import: defineCommand('portability.import', v.strictObject({ principal: PrincipalSchema, data: ImportBodySchema }), ImportResultSchema),
} as const;
