import type { ChatMessage } from '../../../../schemas/index.js';
import { post } from '../../api/client';
import { formatTime, useT } from '../../i18n';
import { Button } from '../../ui/components';
import { Markdown } from '../../ui/markdown';
import type { FileRef } from './live';
import { chatTexts } from './texts';

/*
 * One message of the history: the user's as plain text, the agent's as sanitised markdown, and the
 * deliveries that did not come from a turn (task results and questions, inter-agent replies,
 * background texts) marked with what they are.
 */

const KINDS = ['task_result', 'task_question', 'interagent', 'text'] as const;
type Kind = (typeof KINDS)[number];
const isKind = (k: unknown): k is Kind => typeof k === 'string' && (KINDS as readonly string[]).includes(k);

function fileRefs(files: unknown): FileRef[] {
  if (!Array.isArray(files)) return [];
  return files.flatMap((f) => {
    if (typeof f !== 'object' || f === null) return [];
    const o = f as Record<string, unknown>;
    const path = typeof o['path'] === 'string' ? o['path'] : typeof o['relative_path'] === 'string' ? o['relative_path'] : null;
    if (!path) return [];
    const name = typeof o['name'] === 'string' ? o['name'] : (path.split('/').pop() ?? path);
    return [{ path, name, is_image: o['is_image'] === true }];
  });
}

/**
 * A download link made on demand: the signed URL is short-lived, so it is asked for when clicked.
 * The server signs files inside the agent's workspace, named relatively or by the absolute path an
 * answer gives; for one outside it, the click shows the server's refusal.
 */
export function FileList({ agent, files, canDownload, onError }: { agent: string; files: FileRef[]; canDownload: boolean; onError: (e: Error) => void }) {
  const t = useT(chatTexts);
  if (files.length === 0) return null;
  const open = async (f: FileRef) => {
    try {
      const r = await post<{ url: string }>('/api/files/sign-url', { agent, path: f.path, ttl: 300 });
      window.open(r.url, '_blank', 'noopener');
    } catch (e) {
      onError(e instanceof Error ? e : new Error(String(e)));
    }
  };
  return (
    <ul class="chat-files" aria-label={t('files')}>
      {files.map((f) => (
        <li key={f.path}>
          {canDownload ? (
            <Button variant="ghost" class="chat-file" aria-label={t('download', { name: f.name })} onClick={() => void open(f)}>
              <svg aria-hidden="true" viewBox="0 0 24 24" width="14" height="14" fill="none" stroke="currentColor" stroke-width="2" stroke-linecap="round" stroke-linejoin="round"><path d="M21.44 11.05l-9.19 9.19a6 6 0 0 1-8.49-8.49l9.19-9.19a4 4 0 0 1 5.66 5.66l-9.2 9.19a2 2 0 0 1-2.83-2.83l8.49-8.48" /></svg> {f.name}
            </Button>
          ) : (
            <span class="chat-file" title={f.path}>
              <svg aria-hidden="true" viewBox="0 0 24 24" width="14" height="14" fill="none" stroke="currentColor" stroke-width="2" stroke-linecap="round" stroke-linejoin="round"><path d="M21.44 11.05l-9.19 9.19a6 6 0 0 1-8.49-8.49l9.19-9.19a4 4 0 0 1 5.66 5.66l-9.2 9.19a2 2 0 0 1-2.83-2.83l8.49-8.48" /></svg> {f.name}
            </span>
          )}
        </li>
      ))}
    </ul>
  );
}

export function MessageView({ message, agent, canDownload, onError }: { message: ChatMessage; agent: string; canDownload: boolean; onError: (e: Error) => void }) {
  const t = useT(chatTexts);
  const mine = message.sender === 'user';
  const kind = isKind(message.kind) ? message.kind : null;
  const taskName = message.meta && typeof message.meta['task_name'] === 'string' ? message.meta['task_name'] : null;
  return (
    <li class={`chat-msg ${mine ? 'chat-msg-user' : 'chat-msg-agent'} ${kind ? `chat-kind chat-kind-${kind}` : ''}`} data-message-id={message.id}>
      <div class="chat-meta">
        <strong>{mine ? t('you') : t('agentSays', { agent })}</strong>
        {kind ? <span class="badge badge-info">{t(`kind_${kind}`)}</span> : null}
        {taskName ? <span class="muted">{t('task', { name: taskName })}</span> : null}
        <time class="muted" dateTime={message.timestamp}>
          {formatTime(message.timestamp)}
        </time>
      </div>
      {mine ? <p class="chat-plain">{message.content}</p> : <Markdown text={message.content} />}
      <FileList agent={agent} files={fileRefs(message.files)} canDownload={canDownload} onError={onError} />
    </li>
  );
}
