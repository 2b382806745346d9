import type { AdminAgent } from '../../../../schemas/index.js';
import { get } from '../../api/client';
import { texts, useT } from '../../i18n';
import { useAsync } from '../../ui/async';
import { Field } from '../../ui/components';

/*
 * What the cron, webhook, memory, skills and files pages share: the agents the user may pick (the
 * server already leaves out those outside allowed_agents) and a few formatters.
 */

export const sharedTexts = texts({
  en: { agent: 'Agent', noAgents: 'No agents available' },
  ru: { agent: 'Агент', noAgents: 'Нет доступных агентов' },
});

export function useAgents() {
  return useAsync(() => get<AdminAgent[]>('/api/agents'), []);
}

/** The agent names to offer: the listed ones, plus the current value if the list does not hold it. */
export function agentNames(agents: readonly AdminAgent[] | undefined, current?: string): string[] {
  const names = (agents ?? []).map((a) => a.name);
  if (current && !names.includes(current)) names.unshift(current);
  return names;
}

export function AgentSelect({ value, onChange, agents, label, name }: { value: string; onChange: (v: string) => void; agents: readonly AdminAgent[] | undefined; label?: string; name?: string }) {
  const t = useT(sharedTexts);
  const names = agentNames(agents, value);
  return (
    <Field label={label ?? t('agent')}>
      <select name={name ?? 'agent'} value={value} onChange={(e) => onChange(e.currentTarget.value)}>
        {names.length === 0 ? <option value="">{t('noAgents')}</option> : null}
        {names.map((n) => (
          <option key={n} value={n}>
            {(agents ?? []).find((a) => a.name === n)?.display_name || n}
          </option>
        ))}
      </select>
    </Field>
  );
}

/** Seconds as "1.5 s" / "2 min 3 s"; dashes for nothing. */
export function formatSeconds(s: number | null | undefined): string {
  if (s === null || s === undefined || Number.isNaN(s)) return '—';
  if (s < 60) return `${s < 10 ? s.toFixed(1) : Math.round(s)} s`;
  const m = Math.floor(s / 60);
  return `${m} min ${Math.round(s % 60)} s`;
}

export const numberOr = (x: unknown, fallback: number | null = null): number | null => (typeof x === 'number' ? x : fallback);
export const textOr = (x: unknown, fallback = ''): string => (typeof x === 'string' ? x : fallback);

export function statusTone(status: string): 'ok' | 'bad' | 'warn' | 'info' | 'neutral' {
  if (status === 'success' || status === 'completed' || status === 'active' || status === 'valid') return 'ok';
  if (status.startsWith('error') || status === 'failed' || status === 'invalid') return 'bad';
  if (status.startsWith('skipped') || status === 'paused') return 'warn';
  if (status === 'running' || status === 'queued') return 'info';
  return 'neutral';
}
