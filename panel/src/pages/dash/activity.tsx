import type { ActivityEvent } from '../../../../schemas/index.js';
import { get, query, seg } from '../../api/client';
import { formatTime, texts, useT } from '../../i18n';
import { useAsync } from '../../ui/async';
import { Badge, ErrorBanner, Loading, Modal } from '../../ui/components';

/*
 * Activity events as the dashboard lists them, and one event in detail (`verbose=1`: the raw
 * record it came from) in a dialog.
 */

const t_ = texts({
  en: {
    details: 'Event details',
    when: 'When',
    agent: 'Agent',
    severity: 'Severity',
    type: 'Type',
    source: 'Source',
    raw: 'Source record',
    error: 'error',
    warning: 'warning',
    success: 'success',
    info: 'info',
  },
  ru: {
    details: 'Подробности события',
    when: 'Когда',
    agent: 'Агент',
    severity: 'Важность',
    type: 'Тип',
    source: 'Источник',
    raw: 'Исходная запись',
    error: 'ошибка',
    warning: 'предупреждение',
    success: 'успех',
    info: 'сведения',
  },
});

const TONE = { error: 'bad', warning: 'warn', success: 'ok', info: 'info' } as const;

export function SeverityBadge({ severity }: { severity: ActivityEvent['severity'] }) {
  const t = useT(t_);
  return <Badge tone={TONE[severity] ?? 'neutral'}>{t(severity)}</Badge>;
}

export function ActivityList({ events, onOpen }: { events: readonly ActivityEvent[]; onOpen: (id: string) => void }) {
  return (
    <ul class="dash-events">
      {events.map((e) => (
        <li key={e.id}>
          <button type="button" class="dash-event" onClick={() => onOpen(e.id)}>
            <span class="dash-event-head">
              <SeverityBadge severity={e.severity} />
              <span class="dash-event-title">{e.title}</span>
            </span>
            <span class="muted small">
              {e.subtitle} · <time dateTime={e.timestamp}>{formatTime(e.timestamp)}</time>
            </span>
          </button>
        </li>
      ))}
    </ul>
  );
}

export function ActivityDetail({ id, onClose }: { id: string | null; onClose: () => void }) {
  const t = useT(t_);
  const event = useAsync(() => (id ? get<ActivityEvent>(`/api/activity/${seg(id)}${query({ verbose: 1 })}`) : Promise.resolve(null)), [id]);
  const e = event.data;
  return (
    <Modal title={e?.title ?? t('details')} open={id !== null} onClose={onClose}>
      <ErrorBanner error={event.error} onRetry={() => void event.reload()} />
      {event.loading ? <Loading /> : null}
      {e && !event.loading ? (
        <div class="stack">
          <p>{e.subtitle}</p>
          <dl class="dash-facts">
            <dt>{t('when')}</dt>
            <dd>{formatTime(e.timestamp)}</dd>
            <dt>{t('severity')}</dt>
            <dd>
              <SeverityBadge severity={e.severity} />
            </dd>
            <dt>{t('type')}</dt>
            <dd>
              <code>{e.type}</code>
            </dd>
            {e.agent_name ? (
              <>
                <dt>{t('agent')}</dt>
                <dd>
                  <a href={`/agents/${seg(e.agent_name)}`}>{e.agent_name}</a>
                </dd>
              </>
            ) : null}
            {e.source ? (
              <>
                <dt>{t('source')}</dt>
                <dd>{e.source}</dd>
              </>
            ) : null}
          </dl>
          {e.raw !== undefined ? (
            <details>
              <summary>{t('raw')}</summary>
              <pre class="log">{JSON.stringify(e.raw, null, 2)}</pre>
            </details>
          ) : null}
        </div>
      ) : null}
    </Modal>
  );
}
