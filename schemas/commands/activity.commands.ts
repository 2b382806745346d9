import * as v from 'valibot';
import { ACTIVITY_SEVERITIES, ActivityEventSchema, LANGUAGES, LegacyActivitySchema, MAX_ACTIVITY_ID_CHARS, MAX_ACTIVITY_LIMIT } from '../activity.schema.js';
import { defineCommand } from '../command.js';
import { PrincipalSchema } from '../principal.schema.js';

/* The activity feed (SPEC.md "Activity event"): filtered by the caller's allowed_agents where handled. */

const Limit = v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(MAX_ACTIVITY_LIMIT));

export const ACTIVITY_COMMANDS = {
  recent: defineCommand(
    'activity.recent',
    v.strictObject({
      principal: PrincipalSchema,
      lang: v.picklist(LANGUAGES),
      limit: Limit,
      /** null: every severity. */
      severity: v.nullable(v.array(v.picklist(ACTIVITY_SEVERITIES))),
    }),
    v.array(ActivityEventSchema),
  ),
  get: defineCommand(
    'activity.get',
    v.strictObject({ principal: PrincipalSchema, lang: v.picklist(LANGUAGES), id: v.pipe(v.string(), v.minLength(1), v.maxLength(MAX_ACTIVITY_ID_CHARS)), verbose: v.boolean() }),
    ActivityEventSchema,
  ),
  legacy: defineCommand('activity.legacy', v.strictObject({ principal: PrincipalSchema, limit: Limit }), v.array(LegacyActivitySchema)),
} as const;
