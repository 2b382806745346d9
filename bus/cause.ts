/**
 * Why a fact exists, stamped on its envelope. `correlation` names the user request (or the daemon
 * start, for what svc does on its own) the fact serves, and is carried unchanged from the first
 * command through every fact and command that follows. `causation` is the seq of the fact that
 * caused it. A command is not persisted, so it has no seq: a fact a command caused carries the
 * command's correlation, and the command's own `causation` when a fact led to the command.
 */
export interface Cause {
  causation?: number;
  correlation?: string;
  by?: string;
}

/** The stamp a handler puts on every fact its command causes. */
export function causedBy(cmd: Cause): Cause {
  return {
    ...(cmd.causation !== undefined ? { causation: cmd.causation } : {}),
    ...(cmd.correlation !== undefined ? { correlation: cmd.correlation } : {}),
    ...(cmd.by !== undefined ? { by: cmd.by } : {}),
  };
}

/** The stamp for a fact (or a command) that follows from `e`: it serves the same request. */
export function followsFrom(e: { seq: number; correlation?: string | undefined }): Cause {
  return { causation: e.seq, ...(e.correlation !== undefined ? { correlation: e.correlation } : {}) };
}
