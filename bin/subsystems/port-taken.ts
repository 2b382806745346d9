import { SvcError, isSvcError } from '../../schemas/index.js';
import { listeningPortHolder } from '../../store/index.js';

/** Why a port cannot be bound, as the start's one line says it: the process holding it when /proc shows one. */
export function whyPortTaken(port: number): string {
  const holder = port > 0 ? listeningPortHolder(port) : null;
  return holder ? `it is in use by pid ${holder.pid} (${holder.command})` : 'it is in use, or not an address of this machine';
}

/**
 * A port that cannot be bound stops the start with one line naming the port, the config key that
 * sets it and, when /proc shows it, the process holding it.
 */
export function portTaken(key: string): (e: unknown) => never {
  return (e) => {
    if (!isSvcError(e, 'listen-failed')) throw e;
    const { host, port } = (e.details ?? {}) as { host?: string; port?: number };
    const why = whyPortTaken(typeof port === 'number' ? port : 0);
    throw new SvcError('listen-failed', `cannot listen on ${host}:${port} (${key} in config.json): ${why}; stop that process or choose another ${key}`, e.details);
  };
}
