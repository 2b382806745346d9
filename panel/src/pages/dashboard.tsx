import { useState } from 'preact/hooks';
import type { ActivityEvent, DashboardSummary } from '../../../schemas/index.js';
import { get, post, query } from '../api/client';
import { systemStatus } from '../api/system-status';
import { texts, useT } from '../i18n';
import { useSession } from '../session';
import { useAsync, useAction } from '../ui/async';
import { Button, Card, Empty, ErrorBanner, Loading, Page, Tabs } from '../ui/components';
import { useLiveRefresh } from '../ui/live';
import { ActivityDetail, ActivityList } from './dash/activity';
import { TransportsCard } from './dash/transports';
import './dashboard.css';
import { ListOf } from '../ui/list-of';

/*
 * The dashboard. One view costs three requests: the summary (counters, host figures, the ten
 * latest events; cached 5 s by the server), the system status (instance name and version, shared
 * with the shell's header) and the unacknowledged errors. A severity filter on the activity asks for that slice alone. Live:
 * `notification` and `chat_message` frames reload the summary and the errors, at most every 10 s.
 */

const t_ = texts({
  en: {
    title: 'Dashboard',
    counters: 'Overview',
    agentsOnline: 'Agents online',
    activeTasks: 'Active tasks',
    runningCrons: 'Cron jobs running',
    failed: 'Failures (24 h)',
    system: 'System',
    cpu: 'CPU',
    ram: 'Memory',
    disk: 'Disk',
    uptime: 'Uptime',
    version: 'Version',
    instance: 'Instance',
    activity: 'Recent activity',
    filter: 'Filter by severity',
    all: 'All',
    error: 'Errors',
    warning: 'Warnings',
    success: 'Success',
    info: 'Info',
    noActivity: 'No activity yet',
    errors: 'Errors',
    noErrors: 'No new errors',
    acknowledge: 'Acknowledge',
    acknowledged: 'Errors acknowledged',
    of: '{a} of {b}',
  },
  ru: {
    title: 'Обзор',
    counters: 'Сводка',
    agentsOnline: 'Агенты в сети',
    activeTasks: 'Активные задачи',
    runningCrons: 'Идущие cron-задания',
    failed: 'Сбои (24 ч)',
    system: 'Система',
    cpu: 'Процессор',
    ram: 'Память',
    disk: 'Диск',
    uptime: 'Время работы',
    version: 'Версия',
    instance: 'Экземпляр',
    activity: 'Последние события',
    filter: 'Фильтр по важности',
    all: 'Все',
    error: 'Ошибки',
    warning: 'Предупреждения',
    success: 'Успешные',
    info: 'Сведения',
    noActivity: 'Событий пока нет',
    errors: 'Ошибки',
    noErrors: 'Новых ошибок нет',
    acknowledge: 'Отметить как просмотренные',
    acknowledged: 'Ошибки отмечены как просмотренные',
    of: '{a} из {b}',
  },
});

type Severity = 'all' | 'error' | 'warning' | 'success' | 'info';

function Meter({ label, value }: { label: string; value: number }) {
  const v = Math.max(0, Math.min(100, Math.round(value)));
  return (
    <div class="dash-meter">
      <div class="spread">
        <span>{label}</span>
        <strong>{v}%</strong>
      </div>
      <meter min={0} max={100} low={70} high={90} optimum={0} value={v} aria-label={`${label}: ${v}%`} />
    </div>
  );
}

export default function Dashboard() {
  const t = useT(t_);
  const user = useSession();
  const summary = useAsync(() => get<DashboardSummary>('/api/dashboard/summary'), []);
  const status = useAsync(() => systemStatus(), []);
  const errors = useAsync(() => get<ActivityEvent[]>(`/api/activity/recent${query({ limit: 20, severity: 'error' })}`), []);
  const [severity, setSeverity] = useState<Severity>('all');
  const filtered = useAsync(
    () => (severity === 'all' ? Promise.resolve(null) : get<ActivityEvent[]>(`/api/activity/recent${query({ limit: 20, severity })}`)),
    [severity],
  );
  const [open, setOpen] = useState<string | null>(null);
  const ack = useAction();
  const [acked, setAcked] = useState(false);

  useLiveRefresh(['notification', 'chat_message'], () => {
    void summary.reload();
    void errors.reload();
    if (severity !== 'all') void filtered.reload();
  });

  const acknowledge = async () => {
    setAcked(false);
    if (await ack.run(() => post('/api/dashboard/errors/ack'))) {
      setAcked(true);
      await Promise.all([summary.reload(), errors.reload()]);
    }
  };

  const s = summary.data;
  const events = severity === 'all' ? s?.recent_activity : (filtered.data ?? undefined);
  const severities: { key: Severity; label: string }[] = [
    { key: 'all', label: t('all') },
    { key: 'error', label: t('error') },
    { key: 'warning', label: t('warning') },
    { key: 'success', label: t('success') },
    { key: 'info', label: t('info') },
  ];

  return (
    <Page title={t('title')}>
      <ErrorBanner error={summary.error} onRetry={() => void summary.reload()} />
      {!s && summary.loading ? <Loading /> : null}
      {s ? (
        <>
          <h2 class="sr-only">{t('counters')}</h2>
          <div class="dash-counters">
            <a class="card dash-counter" href="/agents">
              <span class="muted">{t('agentsOnline')}</span>
              <span class="stat">{t('of', { a: s.counters.agents_online, b: s.counters.agents_total })}</span>
            </a>
            <a class="card dash-counter" href="/tasks">
              <span class="muted">{t('activeTasks')}</span>
              <span class="stat">{s.counters.active_tasks}</span>
            </a>
            <a class="card dash-counter" href="/cron">
              <span class="muted">{t('runningCrons')}</span>
              <span class="stat">{s.counters.running_crons}</span>
            </a>
            <div class={`card dash-counter ${s.counters.failed_last_24h > 0 ? 'dash-bad' : ''}`}>
              <span class="muted">{t('failed')}</span>
              <span class="stat">{s.counters.failed_last_24h}</span>
            </div>
          </div>
        </>
      ) : null}

      <div class="dash-columns">
        <Card
          title={t('activity')}
          class="dash-activity"
          actions={<Tabs label={t('filter')} value={severity} options={severities} onChange={setSeverity} />}
        >
          <ErrorBanner error={severity === 'all' ? null : filtered.error} onRetry={() => void filtered.reload()} />
          {events === undefined ? (
            <Loading />
          ) : events.length === 0 ? (
            <Empty>{t('noActivity')}</Empty>
          ) : (
            <ActivityList events={events} onOpen={setOpen} />
          )}
        </Card>

        <div class="stack">
          <Card
            title={t('errors')}
            actions={
              user && (errors.data?.length ?? 0) > 0 ? (
                <Button onClick={() => void acknowledge()} busy={ack.busy}>
                  {t('acknowledge')}
                </Button>
              ) : null
            }
          >
            <ErrorBanner error={ack.error ?? errors.error} />
            {acked && !ack.error ? (
              <p class="muted" role="status">
                {t('acknowledged')}
              </p>
            ) : null}
            <ListOf list={errors} empty={t('noErrors')}>
              {(items) => <ActivityList events={items} onOpen={setOpen} />}
            </ListOf>
          </Card>

          <Card title={t('system')}>
            <ErrorBanner error={status.error} />
            {s ? (
              <div class="stack">
                <Meter label={t('cpu')} value={s.system.cpu_percent} />
                <Meter label={t('ram')} value={s.system.ram_percent} />
                <Meter label={t('disk')} value={s.system.disk_percent} />
              </div>
            ) : null}
            <dl class="dash-facts">
              <dt>{t('uptime')}</dt>
              <dd>{s?.system.uptime_human ?? status.data?.uptime_human ?? '—'}</dd>
              <dt>{t('version')}</dt>
              <dd>{status.data?.version ?? '—'}</dd>
              <dt>{t('instance')}</dt>
              <dd>{status.data?.instance_name ?? '—'}</dd>
            </dl>
          </Card>

          {s ? <TransportsCard transports={s.transports} /> : null}
        </div>
      </div>
      <ActivityDetail id={open} onClose={() => setOpen(null)} />
    </Page>
  );
}
