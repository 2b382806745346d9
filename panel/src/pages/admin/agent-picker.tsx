import { get } from '../../api/client';
import { texts, useT } from '../../i18n';
import { useAsync } from '../../ui/async';
import { ErrorBanner } from '../../ui/components';

const s = texts({
  en: { legend: 'Allowed agents', all: 'All agents', loading: 'Loading agents…' },
  ru: { legend: 'Доступные агенты', all: 'Все агенты', loading: 'Загрузка агентов…' },
});

/** `[]` and `['*']` both mean every agent (SPEC.md "Agent-scoped access"). */
export const allAgents = (list: readonly string[]): boolean => list.length === 0 || list.includes('*');

/** Which agents a user may see: "all agents", or a pick from `GET /api/agents`. */
export function AgentPicker({ value, onChange }: { value: string[]; onChange: (v: string[]) => void }) {
  const t = useT(s);
  const agents = useAsync(() => get<{ name: string; display_name?: string }[]>('/api/agents'), []);
  const all = allAgents(value);
  const names = agents.data?.map((a) => a.name) ?? [];
  // Names the user holds that no longer exist stay selectable, so saving does not drop them silently.
  const extra = all ? [] : value.filter((n) => !names.includes(n));
  const toggle = (name: string, on: boolean) => {
    const next = on ? [...value.filter((n) => n !== '*'), name] : value.filter((n) => n !== name);
    onChange(next);
  };
  return (
    <fieldset class="agent-picker">
      <legend class="field-label">{t('legend')}</legend>
      <ErrorBanner error={agents.error} onRetry={() => void agents.reload()} />
      <label class="check">
        <input type="checkbox" name="all_agents" checked={all} onChange={(e) => onChange(e.currentTarget.checked ? [] : names.slice(0, 1))} />
        {t('all')}
      </label>
      {agents.loading && !agents.data ? <p class="muted small">{t('loading')}</p> : null}
      {!all ? (
        <div class="agent-list">
          {[...names, ...extra].map((name) => {
            const a = agents.data?.find((x) => x.name === name);
            return (
              <label class="check" key={name}>
                <input type="checkbox" name="agent" value={name} checked={value.includes(name)} onChange={(e) => toggle(name, e.currentTarget.checked)} />
                {a?.display_name && a.display_name !== name ? `${a.display_name} (${name})` : name}
              </label>
            );
          })}
        </div>
      ) : null}
    </fieldset>
  );
}
