import { PROVIDERS, REASONING_EFFORTS, SvcError, type Provider } from '../schemas/index.js';
import { resolveProvider } from './config.logic.js';

/*
 * Which model, provider and reasoning effort a turn runs with.
 */

export type ModelSource = 'directive' | 'session' | 'topic' | 'config';

export interface ModelChoiceInput {
  /** From parseDirective. */
  directive?: string | null;
  topicId?: number | string | null;
  /** config `topic_defaults`, keyed by topic id as a string. */
  topicDefaults?: Readonly<Record<string, { model: string }>>;
  /** Per-session provider override; both null means none. */
  sessionOverride?: { provider: string | null; model: string | null } | null;
  /** config `model`. */
  configModel: string;
}

const filled = (s: unknown): s is string => typeof s === 'string' && s.trim() !== '';

/** Priority: `@directive`, per-session override, topic default, config `model`. Blank values are skipped. */
export function resolveModel(input: ModelChoiceInput): { model: string; source: ModelSource } {
  if (filled(input.directive)) return { model: input.directive.trim(), source: 'directive' };
  const override = input.sessionOverride?.model;
  if (filled(override)) return { model: override.trim(), source: 'session' };
  if (input.topicId !== undefined && input.topicId !== null && input.topicDefaults) {
    const key = String(input.topicId);
    const topic = Object.hasOwn(input.topicDefaults, key) ? input.topicDefaults[key]?.model : undefined;
    if (filled(topic)) return { model: topic.trim(), source: 'topic' };
  }
  if (!filled(input.configModel)) {
    throw new SvcError('invalid-model', `model = ${JSON.stringify(input.configModel)} is not allowed (a non-empty model id)`);
  }
  return { model: input.configModel.trim(), source: 'config' };
}

/** Which provider serves a model id; the rule lives in config.logic.ts (SPEC.md "Model and timezone resolution"). */
export function resolveProviderForModel(model: string, discoveredGemini: readonly string[] = []): Provider {
  return resolveProvider(model, discoveredGemini);
}

export type EffortLevel = (typeof REASONING_EFFORTS)[number];

/**
 * Canonical table of which `model_reasoning_effort` values a codex model accepts (first matching row
 * wins). Sending an effort the model lacks makes the API reject the whole turn, so an unsupported one
 * is dropped and the model's default applies. Same rows as actors/providers/codex.ts, which should
 * import this one (actors may import machines; machines may not import actors).
 */
const CODEX_EFFORTS: ReadonlyArray<{ match: RegExp; efforts: readonly EffortLevel[] }> = [
  { match: /codex-max/, efforts: ['low', 'medium', 'high', 'xhigh'] }, // xhigh arrived with gpt-5.1-codex-max
  { match: /codex-mini|-mini\b/, efforts: ['low', 'medium', 'high'] }, // small models stop at high
  { match: /^gpt-5\.[2-9]/, efforts: ['low', 'medium', 'high', 'xhigh'] }, // gpt-5.2 and later accept xhigh
  { match: /^(gpt-5|o\d)/, efforts: ['low', 'medium', 'high'] }, // reasoning models before xhigh
  { match: /^gpt-4|^gpt-3/, efforts: [] }, // not reasoning models
  { match: /(?:)/, efforts: ['low', 'medium', 'high'] }, // unset/unknown: codex's own default, a gpt-5-class model
];

export function codexEffortsFor(model: string | null | undefined): readonly EffortLevel[] {
  const id = (model ?? '').trim().toLowerCase();
  return CODEX_EFFORTS.find((r) => r.match.test(id))?.efforts ?? [];
}

const EFFORT_SET = new Set<string>(REASONING_EFFORTS);

/**
 * The effort flag value for a turn, or null to pass none: claude takes all four (`--effort`), gemini
 * has no such flag, codex only what the model supports (`-c model_reasoning_effort=`).
 */
export function effortFor(provider: Provider, model: string | null | undefined, requested: string | null | undefined): EffortLevel | null {
  if (requested === null || requested === undefined || requested === '') return null;
  if (!EFFORT_SET.has(requested)) {
    throw new SvcError('invalid-reasoning-effort', `reasoning_effort = ${JSON.stringify(requested)} is not allowed (one of ${REASONING_EFFORTS.join(', ')})`);
  }
  const effort = requested as EffortLevel;
  switch (provider) {
    case 'claude':
      return effort;
    case 'gemini':
      return null;
    case 'codex':
      return codexEffortsFor(model).includes(effort) ? effort : null;
    default:
      throw new SvcError('invalid-provider', `provider = ${JSON.stringify(provider)} is not allowed (one of ${PROVIDERS.join(', ')})`);
  }
}
