import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import type { ChatMessage, ChatMessagePage, ChatReadState, ChatSessionView } from '../../../../schemas/index.js';
import { api, get, post, query, seg } from '../../api/client';
import { adminSocket } from '../../api/socket';
import { useT } from '../../i18n';
import { Button, Empty, ErrorBanner, Loading, Notice } from '../../ui/components';
import { Markdown } from '../../ui/markdown';
import { liveTurns, newMessageId, type LiveTurn } from './live';
import { FileList, MessageView } from './message-view';
import { chatTexts } from './texts';

/*
 * One open chat session: its stored history (newest page first, older ones on demand), the answer
 * streaming in, and the composer. Sending goes over `/ws/admin`; once an answer is final the stored
 * history is read again, so what is shown is what the server keeps, under the server's ids.
 */

const PAGE = 50;

interface Upload {
  name: string;
  prompt: string;
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
const visible = () => document.visibilityState === 'visible';

export function Conversation({
  session,
  canWrite,
  canFiles,
  onRead,
}: {
  session: ChatSessionView;
  canWrite: boolean;
  canFiles: boolean;
  onRead: (state: ChatReadState) => void;
}) {
  const t = useT(chatTexts);
  const { id, agent } = session;
  const [messages, setMessages] = useState<ChatMessage[] | null>(null);
  const [hasMore, setHasMore] = useState(false);
  const [loadError, setLoadError] = useState<Error | null>(null);
  const [error, setError] = useState<Error | null>(null);
  const [notice, setNotice] = useState<string | null>(null);
  const [turn, setTurn] = useState<LiveTurn | undefined>(() => liveTurns.get(id));
  const [draft, setDraft] = useState('');
  const [upload, setUpload] = useState<Upload | null>(null);
  const [uploading, setUploading] = useState(false);
  const [olderBusy, setOlderBusy] = useState(false);
  const logRef = useRef<HTMLDivElement>(null);
  const stickToBottom = useRef(true);
  /** The newest message id the server has confirmed: the only kind a read marker may name. */
  const newestStored = useRef<string | null>(null);
  const readMarker = useRef<string | null>(session.last_read_message_id);
  const current = useRef(id);
  current.current = id;

  const markRead = useCallback(async () => {
    const newest = newestStored.current;
    if (!newest || newest === readMarker.current || !visible()) return;
    readMarker.current = newest;
    try {
      onRead(await post<ChatReadState>(`/api/chat/sessions/${seg(id)}/read`, { last_read_message_id: newest }));
    } catch (e) {
      setError(e instanceof Error ? e : new Error(String(e)));
    }
  }, [id, onRead]);

  /** The newest page merged into what is shown: older pages loaded before are kept. */
  const absorb = useCallback((page: ChatMessagePage) => {
    const ids = new Set(page.messages.map((m) => m.id));
    setMessages((prev) => [...(prev ?? []).filter((m) => !ids.has(m.id) && !m.id.startsWith('local:')), ...page.messages]);
    newestStored.current = page.messages[page.messages.length - 1]?.id ?? null;
    return page;
  }, []);

  const fetchNewest = useCallback(() => get<ChatMessagePage>(`/api/chat/sessions/${seg(id)}/messages${query({ limit: PAGE })}`), [id]);

  // A new session: its history from scratch.
  useEffect(() => {
    setMessages(null);
    setLoadError(null);
    setError(null);
    setNotice(null);
    setDraft('');
    setUpload(null);
    // A turn that ended while this session was not open is in the history being loaded.
    const live = liveTurns.get(id);
    if (live?.done) liveTurns.clear(id);
    setTurn(live?.done ? undefined : live);
    readMarker.current = session.last_read_message_id;
    stickToBottom.current = true;
    fetchNewest()
      .then((page) => {
        if (current.current !== id) return;
        setHasMore(page.has_more);
        absorb(page);
        readMarker.current = page.last_read_message_id;
        void markRead();
      })
      .catch((e: unknown) => setLoadError(e instanceof Error ? e : new Error(String(e))));
    // Loaded once per conversation: the helpers it calls are new closures on every render.
  }, [id]);

  /*
   * A finished turn: the stored history is read until it holds the answer (it is stored as the
   * final frame goes out, so it may lag by a moment), then the live bubble gives way to it.
   */
  const settle = useCallback(
    async (done: LiveTurn) => {
      for (let attempt = 0; attempt < 8; attempt++) {
        let page: ChatMessagePage;
        try {
          page = await fetchNewest();
        } catch (e) {
          setError(e instanceof Error ? e : new Error(String(e)));
          return;
        }
        if (current.current !== id) return;
        const last = page.messages[page.messages.length - 1];
        const stored = done.error !== null || (last?.sender === 'agent' && (done.assistantId ? last.id === done.assistantId : last.content === done.final?.text));
        if (stored || attempt === 7) {
          absorb(page);
          setHasMore((h) => h || page.has_more);
          if (done.error !== null) setError(new Error(t('errorFrame', { message: done.error })));
          liveTurns.clear(id);
          void markRead();
          return;
        }
        await sleep(150 * (attempt + 1));
      }
    },
    [id, absorb, fetchNewest, markRead, t],
  );

  // The live turn of this session, as frames arrive.
  useEffect(
    () =>
      liveTurns.subscribe((sid) => {
        if (sid !== id) return;
        const live = liveTurns.get(id);
        setTurn(live ? { ...live } : undefined);
        if (live?.done) void settle(live);
      }),
    [id, settle],
  );

  // Deliveries into this session (task results, questions, other agents) and refused frames.
  useEffect(
    () =>
      adminSocket.subscribe((f) => {
        if (f.type === 'chat_message' && f.session_id === id) {
          void fetchNewest()
            .then((page) => {
              if (current.current !== id) return;
              absorb(page);
              void markRead();
            })
            .catch((e: unknown) => setError(e instanceof Error ? e : new Error(String(e))));
        }
        if (f.type === 'error' && !f.session_id && (f.agent === agent || !f.agent)) setError(new Error(t('errorFrame', { message: f.message })));
        if (f.type === 'error' && f.session_id === id && !liveTurns.get(id)) setError(new Error(t('errorFrame', { message: f.message })));
        if (f.type === 'abort_ok') setNotice(t('aborted', { n: f.killed }));
        if (f.type === 'chat.read' && f.session_id === id) readMarker.current = f.last_read_message_id;
      }),
    [id, agent, absorb, fetchNewest, markRead, t],
  );

  // Coming back to the tab reads what arrived meanwhile.
  useEffect(() => {
    const on = () => void markRead();
    document.addEventListener('visibilitychange', on);
    return () => document.removeEventListener('visibilitychange', on);
  }, [markRead]);

  // Follow the newest message while the reader is at the bottom.
  useEffect(() => {
    const el = logRef.current;
    if (el && stickToBottom.current) el.scrollTop = el.scrollHeight;
  }, [messages, turn]);

  const older = async () => {
    const first = messages?.[0];
    if (!first) return;
    setOlderBusy(true);
    stickToBottom.current = false;
    try {
      const page = await get<ChatMessagePage>(`/api/chat/sessions/${seg(id)}/messages${query({ limit: PAGE, before: first.id })}`);
      setMessages((prev) => [...page.messages, ...(prev ?? [])]);
      setHasMore(page.has_more);
    } catch (e) {
      setError(e instanceof Error ? e : new Error(String(e)));
    } finally {
      setOlderBusy(false);
    }
  };

  const attach = async (input: HTMLInputElement) => {
    const file = input.files?.[0];
    if (!file) return;
    setUploading(true);
    setError(null);
    try {
      const form = new FormData();
      form.append('file', file, file.name);
      const r = await api<{ name: string; prompt: string }>('POST', `/upload${query({ agent })}`, form);
      setUpload({ name: file.name, prompt: r.prompt });
    } catch (e) {
      setError(e instanceof Error ? e : new Error(String(e)));
    } finally {
      setUploading(false);
      input.value = '';
    }
  };

  const running = turn !== undefined && !turn.done;

  const send = (e?: Event) => {
    e?.preventDefault();
    const typed = draft.trim();
    const text = upload ? (typed ? `${upload.prompt}\n\n${typed}` : upload.prompt) : typed;
    if (!text || running) return;
    const user_msg_id = newMessageId();
    const assistant_msg_id = newMessageId();
    setError(null);
    setNotice(null);
    if (!adminSocket.send({ type: 'message', agent, text, session_id: id, user_msg_id, assistant_msg_id })) {
      setError(new Error(t('notConnected')));
      return;
    }
    stickToBottom.current = true;
    setMessages((prev) => [...(prev ?? []), { id: user_msg_id, sender: 'user', content: text, timestamp: new Date().toISOString() }]);
    liveTurns.begin(agent, id, assistant_msg_id);
    setDraft('');
    setUpload(null);
  };

  const abort = () => {
    setNotice(null);
    if (!adminSocket.send({ type: 'abort', agent })) setError(new Error(t('notConnected')));
  };

  return (
    <div class="chat-conversation">
      <ErrorBanner error={loadError} />
      <div
        class="chat-log"
        ref={logRef}
        role="log"
        aria-label={t('conversation', { agent })}
        tabIndex={0}
        onScroll={(e) => {
          const el = e.currentTarget;
          stickToBottom.current = el.scrollHeight - el.scrollTop - el.clientHeight < 40;
        }}
      >
        {messages === null && !loadError ? <Loading /> : null}
        {hasMore ? (
          <div class="chat-older">
            <Button onClick={() => void older()} busy={olderBusy}>
              {t('loadOlder')}
            </Button>
          </div>
        ) : null}
        {messages !== null && messages.length === 0 && !turn ? <Empty>{t('noMessages')}</Empty> : null}
        <ol class="chat-messages">
          {(messages ?? []).map((m) => (
            <MessageView key={m.id} message={m} agent={agent} canDownload={canFiles} onError={setError} />
          ))}
          {turn ? (
            <li class="chat-msg chat-msg-agent chat-live" aria-busy={running ? 'true' : 'false'}>
              <div class="chat-meta">
                <strong>{agent}</strong>
                {running ? <span class="muted">{t('working', { agent })}</span> : null}
              </div>
              {turn.final ? <Markdown text={turn.final.text} /> : turn.text ? <Markdown class="chat-stream" text={turn.text} /> : null}
              {running && (turn.tools.length > 0 || turn.status) ? (
                <p class="chat-activity muted">
                  {turn.tools.map((tool, i) => (
                    <span class="badge badge-neutral" key={`${tool}-${i}`}>
                      {t('tool', { tool })}
                    </span>
                  ))}
                  {turn.status ? <span>{turn.status}</span> : null}
                </p>
              ) : null}
              {turn.final ? <FileList agent={agent} files={turn.final.files} canDownload={canFiles} onError={setError} /> : null}
            </li>
          ) : null}
        </ol>
      </div>
      <ErrorBanner error={error} />
      {notice ? <Notice>{notice}</Notice> : null}
      {canWrite ? (
        <form class="chat-composer" onSubmit={send}>
          <label class="field chat-input">
            <span class="field-label">{t('message')}</span>
            <textarea
              name="message"
              value={draft}
              placeholder={t('messagePlaceholder', { agent })}
              onInput={(e) => setDraft(e.currentTarget.value)}
              onKeyDown={(e) => {
                if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) send(e);
              }}
            />
          </label>
          <div class="chat-composer-tools">
            <label class="btn chat-attach">
              <span>{uploading ? t('uploading') : t('attach')}</span>
              <input type="file" class="sr-only" disabled={uploading} onChange={(e) => void attach(e.currentTarget)} />
            </label>
            {upload ? (
              <span class="badge badge-info chat-attached">
                {t('attached', { name: upload.name })}
                <button type="button" class="chat-unattach" aria-label={t('removeAttachment', { name: upload.name })} onClick={() => setUpload(null)}>
                  ×
                </button>
              </span>
            ) : null}
            <span class="chat-spacer" />
            {running ? (
              <Button variant="danger" onClick={abort}>
                {t('abort')}
              </Button>
            ) : null}
            <Button type="submit" variant="primary" disabled={running || uploading || (!draft.trim() && !upload)}>
              {t('send')}
            </Button>
          </div>
        </form>
      ) : (
        <p class="muted">{t('readOnly')}</p>
      )}
    </div>
  );
}
