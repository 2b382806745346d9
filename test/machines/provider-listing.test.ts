import t from 'tap';
import { authOkProviders, providerListing, type DetectedProvider } from '../../machines/index.js';

function detected(over: Partial<Record<DetectedProvider['id'], Partial<DetectedProvider>>> = {}): DetectedProvider[] {
  const base: DetectedProvider[] = [
    { id: 'claude', name: 'Claude Code', installed: true, path: '/bin/claude', authenticated: true, auth_source: 'env:ANTHROPIC_API_KEY', models: ['haiku', 'sonnet', 'opus'], default_model: 'opus' },
    { id: 'codex', name: 'Codex', installed: true, path: '/bin/codex', authenticated: false, auth_source: null, models: ['gpt-a', 'gpt-b'], default_model: 'gpt-a' },
    { id: 'gemini', name: 'Gemini CLI', installed: false, path: null, authenticated: true, auth_source: 'env:GEMINI_API_KEY', models: ['auto', 'pro', 'flash', 'flash-lite', 'gemini-x-1'], default_model: 'auto' },
  ];
  return base.map((d) => ({ ...d, ...over[d.id] }));
}

await t.test('SPEC listing: every provider, usable ones authenticated, agent defaults', async (t) => {
  const listing = providerListing(detected(), { model: 'sonnet', provider: 'claude' });
  t.same(listing, {
    providers: [
      { name: 'claude', authenticated: true, models: ['haiku', 'sonnet', 'opus'], default_model: 'sonnet' },
      { name: 'codex', authenticated: false, models: ['gpt-a', 'gpt-b'], default_model: 'gpt-a' },
      { name: 'gemini', authenticated: false, models: ['auto', 'pro', 'flash', 'flash-lite', 'gemini-x-1'], default_model: 'auto' },
    ],
    agent_default_model: 'sonnet',
    agent_default_provider: 'claude',
  });
});

await t.test('agent provider derived from the model when absent (registry entries)', async (t) => {
  t.equal(providerListing(detected(), { model: 'gpt-b' }).agent_default_provider, 'codex');
  t.equal(providerListing(detected(), { model: 'gemini-x-1', provider: null }).agent_default_provider, 'gemini');
  t.equal(providerListing(detected(), { model: 'x-discovered-only' }).agent_default_provider, 'codex');
  const discovered = detected({ gemini: { models: ['auto', 'x-discovered-only'] } });
  t.equal(providerListing(discovered, { model: 'x-discovered-only' }).agent_default_provider, 'gemini', 'discovered gemini ids count');
  const l = providerListing(detected(), { model: 'gpt-b' });
  t.equal(l.providers[1]!.default_model, 'gpt-b', "the agent's provider reports the agent's model");
  t.equal(l.providers[0]!.default_model, 'opus');
});

await t.test('providers missing from detection are still listed, unauthenticated, in fixed order', async (t) => {
  const only = detected().filter((d) => d.id === 'codex');
  const l = providerListing(only, { model: 'opus', provider: 'claude' });
  t.same(l.providers.map((p) => [p.name, p.authenticated]), [['claude', false], ['codex', false], ['gemini', false]]);
  t.same(l.providers[0]!.models, ['haiku', 'sonnet', 'opus']);
  t.same(l.providers[2]!.models, ['auto', 'pro', 'flash', 'flash-lite']);
  t.equal(l.providers[2]!.default_model, 'auto');
  const empty = providerListing([], { model: 'opus' });
  t.same(empty.providers.map((p) => p.name), ['claude', 'codex', 'gemini']);
  t.equal(empty.agent_default_provider, 'claude');
});

await t.test('auth_ok providers: installed and authenticated only, WIRE shape', async (t) => {
  t.same(authOkProviders(detected()), [{ id: 'claude', name: 'Claude Code', models: ['haiku', 'sonnet', 'opus'] }]);
  const all = detected({ codex: { authenticated: true }, gemini: { installed: true } });
  t.same(authOkProviders(all).map((p) => p.id), ['claude', 'codex', 'gemini']);
  t.same(Object.keys(authOkProviders(all)[0]!), ['id', 'name', 'models']);
  t.same(authOkProviders([]), []);
  const reversed = [...all].reverse();
  t.same(authOkProviders(reversed).map((p) => p.id), ['claude', 'codex', 'gemini'], 'order does not depend on input order');
});

await t.test('outputs do not share arrays with the input', async (t) => {
  const input = detected();
  const l = providerListing(input, { model: 'opus' });
  l.providers[0]!.models.push('mutated');
  authOkProviders(input)[0]!.models.push('mutated');
  t.same(input[0]!.models, ['haiku', 'sonnet', 'opus']);
});

await t.test('bad input: clear errors', async (t) => {
  t.throws(() => providerListing(detected(), { model: '' }), { code: 'invalid-model', message: /agent model = "" is not allowed \(a non-empty model id\)/ });
  t.throws(() => providerListing(detected(), { model: '   ' }), { code: 'invalid-model' });
  t.throws(() => providerListing(detected(), { model: 5 as never }), { code: 'invalid-model' });
  t.throws(() => providerListing(detected(), { model: 'opus', provider: 'openai' as never }), { code: 'invalid-provider', message: /agent provider = "openai" is not allowed/ });
  const dup = [...detected(), detected()[0]!];
  t.throws(() => providerListing(dup, { model: 'opus' }), { code: 'invalid-provider', message: /detected\[3\]\.id = "claude" appears twice/ });
  t.throws(() => authOkProviders(dup), { code: 'invalid-provider' });
  const unknown = [{ ...detected()[0]!, id: 'grok' as never }];
  t.throws(() => authOkProviders(unknown), { code: 'invalid-provider', message: /detected\[0\]\.id = "grok" is not allowed \(one of claude, codex, gemini\)/ });
});
