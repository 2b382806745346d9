import type { ErrorCode } from './error-codes.js';

/**
 * A broken invariant or a rejected request. `code` is stable kebab-case: edges map it to an
 * HTTP status or an error frame in one table each, so wording can change without breaking clients.
 */
export class SvcError extends Error {
  readonly code: ErrorCode;
  readonly details: Record<string, unknown> | undefined;

  constructor(code: ErrorCode, message: string, details?: Record<string, unknown>) {
    super(message);
    this.name = 'SvcError';
    this.code = code;
    this.details = details;
  }
}

export function isSvcError(e: unknown, code?: ErrorCode): e is SvcError {
  return e instanceof SvcError && (code === undefined || e.code === code);
}

/** One line naming what went wrong, for logs and CLI output. */
export function describeError(e: unknown): string {
  if (e instanceof SvcError) return `${e.message} [${e.code}]`;
  if (e instanceof Error) return e.message;
  return String(e);
}
