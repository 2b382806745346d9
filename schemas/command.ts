import type * as v from 'valibot';
import type { ErrorCode } from './error-codes.js';

/**
 * A command declared once: its dot-named type, the schema its data must pass (the bus parses it
 * before the handler runs) and the schema of its reply. `bus.handle` and `bus.send` both take the
 * declaration, so a sender and a handler cannot disagree on the name or the shapes.
 */
export interface CommandDef<T extends string = string, D extends v.GenericSchema = v.GenericSchema, R extends v.GenericSchema = v.GenericSchema> {
  readonly type: T;
  readonly data: D;
  readonly reply: R;
  /** The SvcError code a payload the schema refuses is answered with. */
  readonly invalidCode: ErrorCode;
}

// `any` here only widens the constraint, so any declaration fits where a command is accepted.
export type AnyCommandDef = CommandDef<string, any, any>;

/** What a sender hands over: the schema's input (defaults may be left out). */
export type CommandInput<C extends AnyCommandDef> = v.InferInput<C['data']>;
/** What the handler receives: the schema's output. */
export type CommandData<C extends AnyCommandDef> = v.InferOutput<C['data']>;
export type CommandReply<C extends AnyCommandDef> = v.InferOutput<C['reply']>;

export function defineCommand<T extends string, D extends v.GenericSchema, R extends v.GenericSchema>(
  type: T,
  data: D,
  reply: R,
  opts: { invalidCode?: ErrorCode } = {},
): CommandDef<T, D, R> {
  return { type, data, reply, invalidCode: opts.invalidCode ?? 'invalid-command' };
}
