import type { AdminAgent } from '../../../schemas/index.js';
import { get, seg } from '../api/client';
import { formatTime, texts, useT } from '../i18n';
import { useAsync } from '../ui/async';
import { Badge, Button, ErrorBanner, Page, Table } from '../ui/components';
import { useLiveRefresh } from '../ui/live';
import { Avatar } from './dash/avatar';
import './dashboard.css';
import { ListOf } from '../ui/list-of';

/* The agents the caller may see (the server filters by allowed_agents), each linking to its page. */

export const agentTexts = texts({
  en: {
    title: 'Agents',
    list: 'Agent list',
    agent: 'Agent',
    status: 'Status',
    provider: 'Provider',
    model: 'Model',
    sessions: 'Active sessions',
    lastActive: 'Last active',
    online: 'online',
    busy: 'busy',
    offline: 'offline',
    none: 'No agents you may see',
    refresh: 'Refresh',
  },
  ru: {
    title: 'Агенты',
    list: 'Список агентов',
    agent: 'Агент',
    status: 'Статус',
    provider: 'Провайдер',
    model: 'Модель',
    sessions: 'Активные сессии',
    lastActive: 'Последняя активность',
    online: 'в сети',
    busy: 'занят',
    offline: 'не в сети',
    none: 'Нет доступных вам агентов',
    refresh: 'Обновить',
  },
});

export function StatusBadge({ status }: { status: AdminAgent['status'] }) {
  const t = useT(agentTexts);
  return <Badge tone={status === 'online' ? 'ok' : status === 'busy' ? 'warn' : 'neutral'}>{t(status)}</Badge>;
}

export default function Agents() {
  const t = useT(agentTexts);
  const agents = useAsync(() => get<AdminAgent[]>('/api/agents'), []);
  // A turn starting or ending changes status and last activity; chat frames say one happened.
  useLiveRefresh(['chat_message', 'result'], () => void agents.reload(), { minGapMs: 30_000 });
  return (
    <Page
      title={t('title')}
      actions={
        <Button variant="ghost" onClick={() => void agents.reload()} busy={agents.loading && agents.data !== undefined}>
          {t('refresh')}
        </Button>
      }
    >
      <ErrorBanner error={agents.error} onRetry={() => void agents.reload()} />
      <ListOf list={agents} empty={t('none')}>
        {(items) => (
          <Table label={t('list')} head={[t('agent'), t('status'), t('provider'), t('model'), t('sessions'), t('lastActive')]}>
            {items.map((a) => (
              <tr key={a.name}>
                <td>
                  <div class="agent-cell">
                    <Avatar name={a.name} has={a.has_avatar} />
                    <div>
                      <a href={`/agents/${seg(a.name)}`}>{a.display_name || a.name}</a>
                      {a.display_name && a.display_name !== a.name ? <div class="muted small">{a.name}</div> : null}
                    </div>
                  </div>
                </td>
                <td>
                  <StatusBadge status={a.status} />
                </td>
                <td>{a.provider}</td>
                <td>{a.model}</td>
                <td>{a.active_sessions}</td>
                <td>{formatTime(a.last_active)}</td>
              </tr>
            ))}
          </Table>
        )}
      </ListOf>
    </Page>
  );
}
