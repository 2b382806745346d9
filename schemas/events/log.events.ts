import * as v from 'valibot';
import { typeNames } from './type-names.js';

export const LOG_LINE_LEVELS = ['debug', 'info', 'warn', 'error'] as const;
export type LogLevel = (typeof LOG_LINE_LEVELS)[number];

/** Transient on stream `log`: a log line for the log sink and live log followers; never persisted. */
export const LOG_CHUNK_SCHEMAS = {
  'log.line': v.looseObject({ level: v.picklist(LOG_LINE_LEVELS), msg: v.string() }),
};
export const LOG_CHUNKS = typeNames(LOG_CHUNK_SCHEMAS);
