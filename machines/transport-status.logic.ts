import { TRANSPORTS, type AgentConfig, type Transport, type TransportHealth } from '../schemas/index.js';

/*
 * Which messenger transports run and, for each that does not, why — for the start banner and
 * `svc doctor`. Pure: the config arrives as an argument.
 */

/** Transports this build of svc can run; the others are reported as not built yet, never as on. */
export const BUILT_TRANSPORTS: readonly Transport[] = ['telegram', 'matrix'];

export interface TransportStatus {
  name: Transport;
  on: boolean;
  /** Why it is off, or what it connects to; one phrase. */
  why: string;
  /** What to do to turn it on; null when it is on or nothing the user can do helps. */
  fix: string | null;
}

function selected(config: Pick<AgentConfig, 'transport' | 'transports'>): readonly Transport[] {
  return config.transports.length ? config.transports : [config.transport];
}

/**
 * What @BotFather hands out: the bot's numeric id, a colon, a secret of letters, digits, `_` and `-`
 * (35 characters today; a little room either way). Anything else can never log in, so svc says so
 * instead of asking Telegram again and again.
 */
const BOT_TOKEN = /^\d{1,20}:[A-Za-z0-9_-]{30,64}$/;

function missingCredentials(name: Transport, config: Pick<AgentConfig, 'telegram_token' | 'matrix'>): string | null {
  if (name === 'telegram') {
    const token = config.telegram_token.trim();
    if (token === '') return 'no telegram_token in config.json';
    return BOT_TOKEN.test(token) ? null : 'telegram_token is not a bot token (expected <bot id>:<secret> as @BotFather gives it)';
  }
  const m = config.matrix;
  const missing = [
    m.homeserver.trim() === '' ? 'matrix.homeserver' : null,
    m.user_id.trim() === '' ? 'matrix.user_id' : null,
    m.password === '' && m.access_token === '' ? 'matrix.password or matrix.access_token' : null,
  ].filter((x): x is string => x !== null);
  return missing.length ? `no ${missing.join(', ')} in config.json` : null;
}

export function transportStatuses(
  config: Pick<AgentConfig, 'transport' | 'transports' | 'telegram_token' | 'matrix'>,
  built: readonly Transport[] = BUILT_TRANSPORTS,
): TransportStatus[] {
  const chosen = selected(config);
  return TRANSPORTS.map((name): TransportStatus => {
    // Never point someone at a token for a transport this build cannot run: it would change nothing.
    if (!built.includes(name)) return { name, on: false, why: 'not included in this version of svc yet', fix: null };
    if (!chosen.includes(name)) {
      return { name, on: false, why: 'not listed in transports', fix: `add "${name}" to transports in config.json` };
    }
    const missing = missingCredentials(name, config);
    if (missing) {
      const fix = name === 'telegram' ? 'set telegram_token (from @BotFather) in config.json' : 'set matrix.homeserver, matrix.user_id and a password or access_token in config.json';
      return { name, on: false, why: missing, fix };
    }
    return { name, on: true, why: name === 'telegram' ? 'bot token set' : `as ${config.matrix.user_id} on ${config.matrix.homeserver}`, fix: null };
  });
}

/** Where something svc says in a chat goes (chat.deliver, a wake's answer, a cron result). */
export type DeliveryRoute = { kind: 'origin' } | { kind: 'admin-chat'; reason: string };

/**
 * The chat asked for when its transport is running and can reach it now; otherwise the agent's
 * admin chat, which is always there, with the reason: a messenger this build does not include, one
 * not configured or not running now (its state and why), a transport svc has no chat delivery for at
 * all, or (the direct API, which keeps no history) no connection of that chat open to take it.
 */
export function deliveryRoute(transport: string, health: TransportHealth | null, reachable: boolean): DeliveryRoute {
  if (health?.state === 'running' && reachable) return { kind: 'origin' };
  if (health?.state === 'running') return { kind: 'admin-chat', reason: transport === 'api' ? 'no api connection of that chat is open' : `${transport} cannot reach that chat` };
  if (health) return { kind: 'admin-chat', reason: `transport ${transport} is ${health.state === 'retrying' ? 'reconnecting' : health.state} (${health.detail})` };
  if ((TRANSPORTS as readonly string[]).includes(transport)) {
    return {
      kind: 'admin-chat',
      reason: BUILT_TRANSPORTS.includes(transport as Transport) ? `transport ${transport} is not running` : `transport ${transport} is not included in this version of svc yet`,
    };
  }
  return { kind: 'admin-chat', reason: `transport ${transport} has no chat delivery in svc` };
}
