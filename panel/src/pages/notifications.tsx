import { useEffect, useState } from 'preact/hooks';
import type { Notification } from '../../../schemas/index.js';
import { get, post, put, query, seg } from '../api/client';
import { adminSocket } from '../api/socket';
import { formatTime, texts, useT } from '../i18n';
import { reloadUnread } from '../unread';
import { useAsync, useAction } from '../ui/async';
import { Badge, Button, Card, Empty, ErrorBanner, Field, Loading, Page } from '../ui/components';
import './dashboard.css';

/*
 * Notifications, newest first: filtered by severity on the server and by type (the source: cron,
 * task, webhook, system) here, since the list endpoint has no type filter. A `notification` frame
 * puts a new one on top without a reload; marking read updates the header's bell.
 */

const t_ = texts({
  en: {
    title: 'Notifications',
    list: 'Notification list',
    severity: 'Severity',
    type: 'Type',
    unreadOnly: 'Unread only',
    visible: 'All but silent',
    everything: 'All, silent too',
    critical: 'Critical',
    warning: 'Warning',
    info: 'Info',
    silent: 'Silent',
    anyType: 'Any type',
    cron: 'Cron job',
    task: 'Task',
    webhook: 'Webhook',
    system: 'System',
    markRead: 'Mark read',
    markReadOf: 'Mark read: {title}',
    readAll: 'Mark all read',
    markedAll: 'Marked {n} read',
    none: 'No notifications',
    unread: 'unread',
    agent: 'Agent: {name}',
  },
  ru: {
    title: 'Уведомления',
    list: 'Список уведомлений',
    severity: 'Важность',
    type: 'Тип',
    unreadOnly: 'Только непрочитанные',
    visible: 'Все, кроме тихих',
    everything: 'Все, включая тихие',
    critical: 'Критичные',
    warning: 'Предупреждения',
    info: 'Сведения',
    silent: 'Тихие',
    anyType: 'Любой тип',
    cron: 'Cron-задание',
    task: 'Задача',
    webhook: 'Вебхук',
    system: 'Система',
    markRead: 'Прочитано',
    markReadOf: 'Прочитано: {title}',
    readAll: 'Прочитать все',
    markedAll: 'Отмечено прочитанными: {n}',
    none: 'Уведомлений нет',
    unread: 'не прочитано',
    agent: 'Агент: {name}',
  },
});

type SeverityFilter = 'visible' | 'everything' | Notification['severity'];
const SEVERITY_QUERY: Record<SeverityFilter, string> = {
  visible: 'critical,warning,info',
  everything: 'critical,warning,info,silent',
  critical: 'critical',
  warning: 'warning',
  info: 'info',
  silent: 'silent',
};
const TYPES = ['cron', 'task', 'webhook', 'system'] as const;
const LIMIT = 200;
const TONE = { critical: 'bad', warning: 'warn', info: 'info', silent: 'neutral' } as const;

export default function Notifications() {
  const t = useT(t_);
  const [severity, setSeverity] = useState<SeverityFilter>('visible');
  const [type, setType] = useState<string>('');
  const [unreadOnly, setUnreadOnly] = useState(false);
  const list = useAsync(
    () => get<Notification[]>(`/api/notifications${query({ limit: LIMIT, unread_only: unreadOnly ? 'true' : undefined, severity: SEVERITY_QUERY[severity] })}`),
    [severity, unreadOnly],
  );
  const action = useAction();
  const [marked, setMarked] = useState<number | null>(null);

  // A new notification goes on top when the filters would have listed it.
  useEffect(
    () =>
      adminSocket.subscribe((f) => {
        if (f.type !== 'notification') return;
        const n = f.data as unknown as Notification;
        if (typeof n.id !== 'string' || !SEVERITY_QUERY[severity].split(',').includes(n.severity)) return;
        if (unreadOnly && n.read) return;
        const old = list.data ?? [];
        if (old.some((x) => x.id === n.id)) return;
        list.setData([n, ...old].slice(0, LIMIT));
      }),
    [severity, unreadOnly, list.data],
  );

  const markRead = async (n: Notification) => {
    setMarked(null);
    let updated: Notification | null = null;
    if (await action.run(async () => (updated = await put<Notification>(`/api/notifications/${seg(n.id)}/read`)))) {
      const u = updated ?? { ...n, read: true };
      const rest = (list.data ?? []).map((x) => (x.id === n.id ? u : x));
      list.setData(unreadOnly ? rest.filter((x) => !x.read) : rest);
      void reloadUnread();
    }
  };
  const readAll = async () => {
    let count = 0;
    if (await action.run(async () => (count = (await post<{ marked: number }>('/api/notifications/read-all')).marked))) {
      setMarked(count);
      await list.reload();
      void reloadUnread();
    }
  };

  const shown = (list.data ?? []).filter((n) => !type || n.type === type);
  const anyUnread = (list.data ?? []).some((n) => !n.read);

  return (
    <Page
      title={t('title')}
      actions={
        anyUnread ? (
          <Button onClick={() => void readAll()} busy={action.busy}>
            {t('readAll')}
          </Button>
        ) : null
      }
    >
      <Card>
        <div class="notif-filters">
          <Field label={t('severity')}>
            <select value={severity} onChange={(e) => setSeverity((e.target as HTMLSelectElement).value as SeverityFilter)}>
              {(['visible', 'everything', 'critical', 'warning', 'info', 'silent'] as const).map((k) => (
                <option key={k} value={k}>
                  {t(k)}
                </option>
              ))}
            </select>
          </Field>
          <Field label={t('type')}>
            <select value={type} onChange={(e) => setType((e.target as HTMLSelectElement).value)}>
              <option value="">{t('anyType')}</option>
              {TYPES.map((k) => (
                <option key={k} value={k}>
                  {t(k)}
                </option>
              ))}
            </select>
          </Field>
          <label class="check">
            <input type="checkbox" checked={unreadOnly} onChange={(e) => setUnreadOnly((e.target as HTMLInputElement).checked)} /> {t('unreadOnly')}
          </label>
        </div>
      </Card>
      <ErrorBanner error={action.error} />
      {marked !== null && !action.error ? (
        <p class="muted" role="status">
          {t('markedAll', { n: marked })}
        </p>
      ) : null}
      <ErrorBanner error={list.error} onRetry={() => void list.reload()} />
      <Card>
        {list.data === undefined ? (
          list.loading ? <Loading /> : null
        ) : shown.length === 0 ? (
          <Empty>{t('none')}</Empty>
        ) : (
          <ul class="notif-list" aria-label={t('list')}>
            {shown.map((n) => (
              <li key={n.id} class={n.read ? '' : 'notif-unread'}>
                <div class="notif-main">
                  <div class="row">
                    <Badge tone={TONE[n.severity]}>{t(n.severity)}</Badge>
                    <Badge>{(TYPES as readonly string[]).includes(n.type) ? t(n.type as (typeof TYPES)[number]) : n.type}</Badge>
                    {n.read ? null : <span class="sr-only">{t('unread')}</span>}
                    <span class="notif-title">{n.title}</span>
                  </div>
                  {n.body ? <p class="notif-body">{n.body}</p> : null}
                  <span class="muted small">
                    <time dateTime={n.created_at}>{formatTime(n.created_at)}</time>
                    {n.agent ? (
                      <>
                        {' · '}
                        <a href={`/agents/${seg(n.agent)}`}>{t('agent', { name: n.agent })}</a>
                      </>
                    ) : null}
                  </span>
                </div>
                {n.read ? null : (
                  <Button variant="ghost" aria-label={t('markReadOf', { title: n.title })} busy={action.busy} onClick={() => void markRead(n)}>
                    {t('markRead')}
                  </Button>
                )}
              </li>
            ))}
          </ul>
        )}
      </Card>
    </Page>
  );
}
