import { useLocation, useRoute } from 'preact-iso';
import { useCallback, useEffect, useState } from 'preact/hooks';
import type { ChatReadState, ChatSessionView } from '../../../schemas/index.js';
import { get, post, query, seg } from '../api/client';
import { adminSocket } from '../api/socket';
import { formatTime, useT } from '../i18n';
import { isOperator, useSession } from '../session';
import { useAction, useAsync } from '../ui/async';
import { Button, Card, Empty, ErrorBanner, Field, Loading, Notice, Page } from '../ui/components';
import { Conversation } from './chat/conversation';
import { SessionTools } from './chat/session-tools';
import { pickAgent } from './agent-pick';
import { chatTexts } from './chat/texts';
import './chat.css';

/*
 * Chat with the agents (SPEC.md "Admin REST: chat", "Admin WebSocket"): pick an agent, one of its
 * sessions (`/chat/<agent>?session=<id>`), read and write. The sessions list keeps each session's
 * unread count current from the socket: answers and deliveries into sessions not open raise it,
 * `chat.read` from this user's other tabs sets it.
 */

interface AgentRow {
  name: string;
  display_name?: string | null;
}

export default function Chat() {
  const t = useT(chatTexts);
  const user = useSession();
  const canWrite = isOperator(user);
  const { params, query: q } = useRoute();
  const { route } = useLocation();
  const agent = params['agent'] ?? '';
  const activeId = q['session'] ?? '';
  const agents = useAsync(() => get<AgentRow[]>('/api/agents'), []);
  const [showArchived, setShowArchived] = useState(false);
  // Only an agent the server listed is asked about: another (a stale link, one outside allowed_agents) would be a 403.
  const listed = agents.data?.some((a) => a.name === agent) ?? false;
  const sessions = useAsync(() => (listed ? get<ChatSessionView[]>(`/api/chat/sessions${query({ agent })}`) : Promise.resolve([])), [agent, listed]);
  const create = useAction();

  // `/chat` alone, or with an agent this user may not see, opens the first listed agent.
  useEffect(() => {
    const first = pickAgent(agents.data, agent);
    if (first && first !== agent) route(`/chat/${seg(first)}`, true);
  }, [agent, agents.data, route]);

  const list = sessions.data ?? [];
  const patch = useCallback(
    (id: string, change: (s: ChatSessionView) => ChatSessionView) => {
      const cur = sessions.data;
      if (cur?.some((s) => s.id === id)) sessions.setData(cur.map((s) => (s.id === id ? change(s) : s)));
    },
    // The list, not the `sessions` object (new on every render), decides what a patch sees.
    [sessions.data],
  );

  // Unread counts from the socket; a session this tab has not seen yet (made elsewhere) reloads the list.
  useEffect(
    () =>
      adminSocket.subscribe((f) => {
        if (f.type === 'chat.read') patch(f.session_id, (s) => ({ ...s, unread_count: f.unread_count, last_read_message_id: f.last_read_message_id }));
        if ((f.type === 'result' || f.type === 'chat_message') && f.agent === agent && f.session_id) {
          const known = sessions.data?.some((s) => s.id === f.session_id);
          if (!known) void sessions.reload();
          else if (f.session_id !== activeId || document.visibilityState !== 'visible') patch(f.session_id, (s) => ({ ...s, unread_count: s.unread_count + 1 }));
        }
      }),
    // The list, not the `sessions` object (new on every render), decides which sessions are known.
    [agent, activeId, patch, sessions.data],
  );

  const open = (id: string) => route(`/chat/${seg(agent)}${query({ session: id })}`);
  const active = list.find((s) => s.id === activeId);
  const shown = list.filter((s) => showArchived || !s.archived || s.id === activeId);
  const agentRows = agents.data ?? [];

  const newChat = async () => {
    let made: ChatSessionView | null = null;
    const ok = await create.run(async () => {
      made = await post<ChatSessionView>('/api/chat/sessions', { agent });
    });
    if (ok && made) {
      const s: ChatSessionView = { ...(made as ChatSessionView), last_read_message_id: null, unread_count: 0 };
      sessions.setData([s, ...list]);
      open(s.id);
    }
  };

  const onRead = useCallback((r: ChatReadState) => patch(r.session_id, (s) => ({ ...s, unread_count: r.unread_count, last_read_message_id: r.last_read_message_id })), [patch]);

  return (
    <Page title={t('title')}>
      <ErrorBanner error={agents.error} onRetry={() => void agents.reload()} />
      {agents.data && agentRows.length === 0 ? <Notice>{t('noAgents')}</Notice> : null}
      <div class="chat-layout">
        <Card class="chat-side" title={t('sessions')}>
          <Field label={t('agentPicker')}>
            <select name="agent" value={agent} onChange={(e) => route(`/chat/${seg(e.currentTarget.value)}`)}>
              {!listed ? <option value="">—</option> : null}
              {agentRows.map((a) => (
                <option key={a.name} value={a.name}>
                  {a.display_name && a.display_name !== a.name ? `${a.display_name} (${a.name})` : a.name}
                </option>
              ))}
            </select>
          </Field>
          {canWrite && listed ? (
            <Button variant="primary" class="chat-new" busy={create.busy} onClick={() => void newChat()}>
              {t('newChat')}
            </Button>
          ) : null}
          <ErrorBanner error={create.error} />
          <ErrorBanner error={sessions.error} onRetry={() => void sessions.reload()} />
          {sessions.loading && !sessions.data ? <Loading /> : null}
          {sessions.data && shown.length === 0 ? <Empty>{t('noSessions')}</Empty> : null}
          <nav aria-label={t('sessionList')}>
            <ul class="chat-sessions">
              {shown.map((s) => (
                <li key={s.id}>
                  <a
                    href={`/chat/${seg(agent)}${query({ session: s.id })}`}
                    class={`chat-session ${s.id === activeId ? 'chat-session-on' : ''}`}
                    aria-current={s.id === activeId ? 'page' : undefined}
                  >
                    <span class="chat-session-title">{s.title}</span>
                    <span class="chat-session-sub muted small">
                      {formatTime(s.updated_at)}
                      {s.archived ? ` · ${t('archived')}` : ''}
                    </span>
                    {s.unread_count > 0 ? (
                      <span class="badge badge-bad chat-unread" aria-label={t('unread', { n: s.unread_count })}>
                        {s.unread_count}
                      </span>
                    ) : null}
                  </a>
                </li>
              ))}
            </ul>
          </nav>
          {list.some((s) => s.archived) ? (
            <label class="check small">
              <input type="checkbox" checked={showArchived} onChange={(e) => setShowArchived(e.currentTarget.checked)} />
              {t('showArchived')}
            </label>
          ) : null}
        </Card>
        <div class="chat-main">
          {active ? (
            <ActiveSession
              key={active.id}
              session={active}
              canWrite={canWrite}
              onRead={onRead}
              onChanged={(s) => patch(s.id, () => s)}
              onDeleted={() => {
                sessions.setData(list.filter((x) => x.id !== active.id));
                route(`/chat/${seg(agent)}`, true);
              }}
            />
          ) : (
            <Card>
              {sessions.loading && activeId ? <Loading /> : <Empty>{t(list.length ? 'pickSession' : 'noSessions')}</Empty>}
            </Card>
          )}
        </div>
      </div>
    </Page>
  );
}

function ActiveSession({
  session,
  canWrite,
  onRead,
  onChanged,
  onDeleted,
}: {
  session: ChatSessionView;
  canWrite: boolean;
  onRead: (r: ChatReadState) => void;
  onChanged: (s: ChatSessionView) => void;
  onDeleted: () => void;
}) {
  return (
    <Card class="chat-card" title={session.title} actions={canWrite ? <SessionTools session={session} onChanged={onChanged} onDeleted={onDeleted} /> : undefined}>
      <Conversation session={session} canWrite={canWrite} canFiles={canWrite} onRead={onRead} />
    </Card>
  );
}

