import { useState } from 'preact/hooks';
import { useRoute } from 'preact-iso';
import type { AdminAgent } from '../../../schemas/index.js';
import { get, seg } from '../api/client';
import { formatTime, useT } from '../i18n';
import { isAdmin, isOperator, useSession } from '../session';
import { useAsync } from '../ui/async';
import { Card, ErrorBanner, Loading, Page } from '../ui/components';
import { StatusBadge } from './agents';
import { AvatarCard, DirectoriesCard } from './dash/agent-admin';
import { AgentLogs } from './dash/agent-logs';
import { AgentMetricsCard } from './dash/agent-metrics';
import { detailTexts } from './dash/agent-texts';
import { Avatar } from './dash/avatar';
import './dashboard.css';

/*
 * One agent: what it is and whether it runs, its metrics and their history, its live log, and for
 * the admin its avatar and additional directories.
 */
export default function AgentDetail() {
  const t = useT(detailTexts);
  const { params } = useRoute();
  const name = params['name'] ?? '';
  const user = useSession();
  const agent = useAsync(() => get<AdminAgent>(`/api/agents/${seg(name)}`), [name]);
  // Bumped after an avatar change, so the browser fetches the new picture instead of its cached one.
  const [avatarVersion, setAvatarVersion] = useState(0);
  const a = agent.data;

  return (
    <Page
      title={a?.display_name || name}
      actions={
        <div class="row">
          <a href="/agents">{t('back')}</a>
          <a class="btn btn-primary" href={`/chat/${seg(name)}`}>
            {t('chat')}
          </a>
        </div>
      }
    >
      <ErrorBanner error={agent.error} onRetry={() => void agent.reload()} />
      {!a ? (
        agent.loading ? <Loading /> : null
      ) : (
        <div class="stack">
          <Card title={t('about')}>
            <div class="agent-cell">
              <Avatar name={a.name} has={a.has_avatar} version={avatarVersion} />
              <div>
                <strong>{a.name}</strong> <StatusBadge status={a.status} />
              </div>
            </div>
            <dl class="dash-facts">
              <dt>{t('provider')}</dt>
              <dd>{a.provider}</dd>
              <dt>{t('model')}</dt>
              <dd>{a.model}</dd>
              <dt>{t('sessions')}</dt>
              <dd>{a.active_sessions}</dd>
              <dt>{t('lastActive')}</dt>
              <dd>{formatTime(a.last_active)}</dd>
              {a.description ? (
                <>
                  <dt>{t('description')}</dt>
                  <dd>{a.description}</dd>
                </>
              ) : null}
            </dl>
          </Card>
          <AgentMetricsCard name={a.name} />
          {/* Logs are for operators and admins (SPEC.md "Roles"). */}
          {isOperator(user) ? <AgentLogs name={a.name} /> : null}
          {isAdmin(user) ? (
            <>
              <AvatarCard
                agent={a}
                version={avatarVersion}
                onChanged={(next) => {
                  setAvatarVersion(Date.now());
                  if (next) agent.setData(next);
                  else agent.setData({ ...a, has_avatar: false });
                }}
              />
              <DirectoriesCard agent={a} onSaved={(next) => agent.setData(next)} />
            </>
          ) : null}
        </div>
      )}
    </Page>
  );
}
