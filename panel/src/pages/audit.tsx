import { useMemo, useState } from 'preact/hooks';
import type { AuditEntry } from '../../../schemas/index.js';
import { get } from '../api/client';
import { formatTime, texts, useT } from '../i18n';
import { isAdmin, useSession } from '../session';
import { useAsync } from '../ui/async';
import { common } from '../ui/common-texts';
import { Badge, Button, Empty, ErrorBanner, Field, Loading, Notice, Page, Table } from '../ui/components';
import './admin.css';

const s = texts({
  en: {
    title: 'Audit log',
    adminsOnly: 'Only admins can read the audit log.',
    filter: 'Filter',
    filterHint: 'Matches user, action, target, address or details',
    time: 'Time',
    user: 'User',
    action: 'Action',
    target: 'Target',
    result: 'Result',
    address: 'Address',
    detail: 'Details',
    list: 'Audit entries',
    shown: '{n} of {total} entries',
    system: 'system',
    noMatch: 'No entry matches the filter.',
  },
  ru: {
    title: 'Журнал аудита',
    adminsOnly: 'Журнал аудита доступен только администраторам.',
    filter: 'Фильтр',
    filterHint: 'Ищет по пользователю, действию, объекту, адресу и подробностям',
    time: 'Время',
    user: 'Пользователь',
    action: 'Действие',
    target: 'Объект',
    result: 'Результат',
    address: 'Адрес',
    detail: 'Подробности',
    list: 'Записи аудита',
    shown: 'Показано {n} из {total}',
    system: 'система',
    noMatch: 'Под фильтр не попала ни одна запись.',
  },
});

const detailText = (d: AuditEntry['detail']) =>
  d
    ? Object.entries(d)
        .map(([k, v]) => `${k}: ${String(v)}`)
        .join(', ')
    : '';

const tone = (status: number | null) => (status === null ? 'neutral' : status < 400 ? 'ok' : status < 500 ? 'warn' : 'bad');

export default function Audit() {
  const t = useT(s);
  const me = useSession();
  if (!isAdmin(me)) {
    return (
      <Page title={t('title')}>
        <Notice>{t('adminsOnly')}</Notice>
      </Page>
    );
  }
  return <AuditLog />;
}

function AuditLog() {
  const t = useT(s);
  const c = useT(common);
  const entries = useAsync(() => get<AuditEntry[]>('/api/audit?limit=200'), []);
  const [filter, setFilter] = useState('');
  const shown = useMemo(() => {
    const all = entries.data ?? [];
    const words = filter.toLowerCase().split(/\s+/).filter(Boolean);
    if (!words.length) return all;
    return all.filter((e) => {
      const hay = [e.actor ?? t('system'), e.action, e.target ?? '', e.ip ?? '', String(e.status ?? ''), detailText(e.detail)].join(' ').toLowerCase();
      return words.every((w) => hay.includes(w));
    });
  }, [entries.data, filter]);

  return (
    <Page
      title={t('title')}
      actions={
        <Button onClick={() => void entries.reload()} busy={entries.loading}>
          {c('refresh')}
        </Button>
      }
    >
      <div class="audit-filter">
        <Field label={t('filter')} hint={t('filterHint')}>
          <input type="search" name="filter" value={filter} onInput={(e) => setFilter(e.currentTarget.value)} />
        </Field>
      </div>
      <ErrorBanner error={entries.error} onRetry={() => void entries.reload()} />
      {entries.loading && !entries.data ? <Loading /> : null}
      {entries.data && entries.data.length === 0 ? <Empty /> : null}
      {entries.data && entries.data.length > 0 ? (
        <>
          <p class="muted small" aria-live="polite">
            {t('shown', { n: shown.length, total: entries.data.length })}
          </p>
          {shown.length === 0 ? (
            <Empty>{t('noMatch')}</Empty>
          ) : (
            <Table label={t('list')} head={[t('time'), t('user'), t('action'), t('target'), t('result'), t('address'), t('detail')]}>
              {shown.map((e) => (
                <tr key={e.id}>
                  <td class="nowrap-cell">{formatTime(e.timestamp)}</td>
                  <td>{e.actor ?? <span class="muted">{t('system')}</span>}</td>
                  <td>
                    <code>{e.action}</code>
                  </td>
                  <td>{e.target ?? '—'}</td>
                  <td>{e.status === null ? '—' : <Badge tone={tone(e.status)}>{e.status}</Badge>}</td>
                  <td>{e.ip ?? '—'}</td>
                  <td class="audit-detail">{detailText(e.detail) || '—'}</td>
                </tr>
              ))}
            </Table>
          )}
        </>
      ) : null}
    </Page>
  );
}
