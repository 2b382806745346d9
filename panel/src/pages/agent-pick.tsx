import { useState } from 'preact/hooks';
import type { AdminAgent } from '../../../schemas/index.js';
import { get } from '../api/client';
import { texts, useT } from '../i18n';
import { useAsync } from '../ui/async';
import { Field } from '../ui/components';

/*
 * The one way a page picks an agent: from the agents the server lists for this user (it already
 * leaves out those outside allowed_agents), starting on the first listed one. A name the list does
 * not hold (a restricted user's "main", a stale link) is never asked about: asking would be a 403.
 */

export const agentPickTexts = texts({
  en: { agent: 'Agent', noAgents: 'No agents available' },
  ru: { agent: 'Агент', noAgents: 'Нет доступных агентов' },
});

export function useAgents() {
  return useAsync(() => get<AdminAgent[]>('/api/agents'), []);
}

/** The wanted agent if the list holds it, else the first listed; '' while the list is loading or empty. */
export function pickAgent(agents: readonly { name: string }[] | undefined, wanted: string): string {
  const list = agents ?? [];
  return list.some((a) => a.name === wanted) ? wanted : (list[0]?.name ?? '');
}

/** A picked agent and its setter: the choice falls back to the first listed agent until the user picks one. */
export function usePickedAgent(agents: readonly { name: string }[] | undefined, initial = ''): [string, (name: string) => void] {
  const [wanted, setWanted] = useState(initial);
  return [pickAgent(agents, wanted), setWanted];
}

export function AgentSelect({ value, onChange, agents, label, name }: { value: string; onChange: (v: string) => void; agents: readonly AdminAgent[] | undefined; label?: string; name?: string }) {
  const t = useT(agentPickTexts);
  const list = agents ?? [];
  return (
    <Field label={label ?? t('agent')}>
      <select name={name ?? 'agent'} value={value} onChange={(e) => onChange(e.currentTarget.value)}>
        {list.length === 0 ? <option value="">{t('noAgents')}</option> : null}
        {list.map((a) => (
          <option key={a.name} value={a.name}>
            {a.display_name || a.name}
          </option>
        ))}
      </select>
    </Field>
  );
}

/**
 * What a page loads for the picked agent: nothing is asked before the agent list is in (the page
 * keeps showing it is loading), and `none` when the user may see no agent at all.
 */
export function forAgent<T>(agent: string, agents: readonly unknown[] | undefined, load: () => Promise<T>, none: T): Promise<T> {
  if (agent) return load();
  return agents === undefined ? new Promise<T>(() => undefined) : Promise.resolve(none);
}
