import { CLAUDE_MODELS, DEFAULT_MODEL, GEMINI_ALIASES, PROVIDERS, SvcError, type Provider } from '../schemas/index.js';
import { resolveProvider } from './config.logic.js';

/**
 * What provider discovery found for one CLI (actors/providers/discovery.ts fills it). Plain data so the
 * listing rules below stay pure and testable without a file system.
 */
export interface DetectedProvider {
  id: Provider;
  /** Display name: "Claude Code", "Codex", "Gemini CLI". */
  name: string;
  installed: boolean;
  /** Absolute path of the executable found on PATH, null when not installed. */
  path: string | null;
  /** Credentials were found (independent of `installed`: a key can be set for a CLI not yet installed). */
  authenticated: boolean;
  /** Where they were found, e.g. `env:ANTHROPIC_API_KEY`, `file:~/.claude/.credentials.json`. */
  auth_source: string | null;
  models: string[];
  /** The provider's own default model when the agent does not use this provider. */
  default_model: string;
}

/** SPEC.md "Provider listing" entry. `name` is the provider id, the value `agent_default_provider` holds. */
export interface ProviderListingEntry {
  name: Provider;
  authenticated: boolean;
  models: string[];
  default_model: string;
}

export interface ProviderListing {
  providers: ProviderListingEntry[];
  agent_default_model: string;
  agent_default_provider: Provider;
}

/** WIRE.md §1 `auth_ok.providers` entry. */
export interface AuthOkProvider {
  id: Provider;
  name: string;
  models: string[];
}

/** The agent whose defaults the listing reports: the main config or a sub-agent registry entry. */
export interface ListingAgent {
  model: string;
  /** Absent or null: derived from the model, as for a registry entry without `provider`. */
  provider?: Provider | null;
}

const DISPLAY_NAMES: Record<Provider, string> = { claude: 'Claude Code', codex: 'Codex', gemini: 'Gemini CLI' };

/** Models a provider is known to offer even when discovery did not report it at all. */
const STATIC_MODELS: Record<Provider, readonly string[]> = { claude: CLAUDE_MODELS, codex: [], gemini: GEMINI_ALIASES };
const STATIC_DEFAULTS: Record<Provider, string> = { claude: DEFAULT_MODEL, codex: '', gemini: 'auto' };

/** The providers in PROVIDERS order, one per id; anything else in the input is a caller bug worth a loud error. */
function byId(detected: readonly DetectedProvider[]): Map<Provider, DetectedProvider> {
  const out = new Map<Provider, DetectedProvider>();
  detected.forEach((d, i) => {
    if (!(PROVIDERS as readonly string[]).includes(d?.id as string)) {
      throw new SvcError('invalid-provider', `detected[${i}].id = ${JSON.stringify(d?.id) ?? String(d?.id)} is not allowed (one of ${PROVIDERS.join(', ')})`);
    }
    if (out.has(d.id)) throw new SvcError('invalid-provider', `detected[${i}].id = "${d.id}" appears twice; each provider is detected once`);
    out.set(d.id, d);
  });
  return out;
}

/** Usable means the daemon can actually run it: installed and with credentials. */
export function isUsable(d: DetectedProvider | undefined): boolean {
  return !!d && d.installed && d.authenticated;
}

/**
 * SPEC.md "Provider listing": every provider is listed, unauthenticated (or not installed) ones with
 * `authenticated: false`. The agent's provider reports the agent's model as its default.
 */
export function providerListing(detected: readonly DetectedProvider[], agent: ListingAgent): ProviderListing {
  if (typeof agent?.model !== 'string' || agent.model.trim() === '') {
    throw new SvcError('invalid-model', `agent model = ${JSON.stringify(agent?.model) ?? 'undefined'} is not allowed (a non-empty model id)`);
  }
  if (agent.provider != null && !(PROVIDERS as readonly string[]).includes(agent.provider)) {
    throw new SvcError('invalid-provider', `agent provider = ${JSON.stringify(agent.provider)} is not allowed (one of ${PROVIDERS.join(', ')})`);
  }
  const found = byId(detected);
  const geminiModels = found.get('gemini')?.models ?? [];
  const agentProvider = agent.provider ?? resolveProvider(agent.model, geminiModels);
  const providers = PROVIDERS.map((id): ProviderListingEntry => {
    const d = found.get(id);
    const models = d ? [...d.models] : [...STATIC_MODELS[id]];
    const ownDefault = d?.default_model || STATIC_DEFAULTS[id] || models[0] || '';
    return {
      name: id,
      authenticated: isUsable(d),
      models,
      default_model: id === agentProvider ? agent.model : ownDefault,
    };
  });
  return { providers, agent_default_model: agent.model, agent_default_provider: agentProvider };
}

/**
 * WIRE.md §1 `auth_ok.providers`: only the providers a client can switch to right now (installed and
 * authenticated), in PROVIDERS order.
 */
export function authOkProviders(detected: readonly DetectedProvider[]): AuthOkProvider[] {
  const found = byId(detected);
  return PROVIDERS.flatMap((id) => {
    const d = found.get(id);
    return d && isUsable(d) ? [{ id, name: d.name || DISPLAY_NAMES[id], models: [...d.models] }] : [];
  });
}

export function providerDisplayName(id: Provider): string {
  return DISPLAY_NAMES[id];
}
