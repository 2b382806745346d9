import type { ComponentChildren } from 'preact';
import { useState } from 'preact/hooks';
import type { TaskView } from '../../../../schemas/index.js';
import { get, post, seg } from '../../api/client';
import { formatTime, language, useT } from '../../i18n';
import { useStore } from '../../store';
import { useAsync, useAction } from '../../ui/async';
import { Badge, Button, ErrorBanner, Field, Modal } from '../../ui/components';
import { Markdown } from '../../ui/markdown';
import { STATUS_TONE, formatElapsed, taskTexts } from './texts';
import { pickAgent } from '../agent-pick';

export const FINISHED = ['done', 'failed', 'cancelled'];
export const ACTIVE = ['running', 'waiting'];

export function StatusBadge({ status }: { status: string }) {
  const t = useT(taskTexts);
  const known = ['running', 'waiting', 'done', 'failed', 'cancelled'].includes(status);
  return <Badge tone={STATUS_TONE[status] ?? 'neutral'}>{known ? t(`s_${status}` as 's_running') : status}</Badge>;
}

/** The answer to a waiting task's question (operators and admins only: the caller decides whether to render it). */
export function AnswerForm({ task, onAnswered }: { task: TaskView; onAnswered: () => void }) {
  const t = useT(taskTexts);
  const [answer, setAnswer] = useState('');
  const action = useAction();
  const [sent, setSent] = useState(false);
  return (
    <form
      class="task-answer stack"
      onSubmit={(e) => void (async () => {
        e.preventDefault();
        if (await action.run(() => post(`/api/tasks/${seg(task.task_id)}/answer`, { answer }))) {
          setAnswer('');
          setSent(true);
          onAnswered();
        }
      })()}
    >
      <Field label={t('answer')}>
        <textarea name="answer" rows={3} required value={answer} onInput={(e) => setAnswer((e.currentTarget as HTMLTextAreaElement).value)} />
      </Field>
      <ErrorBanner error={action.error} />
      {sent ? (
        <p class="muted" role="status">
          {t('answered')}
        </p>
      ) : null}
      <div>
        <Button type="submit" variant="primary" busy={action.busy} disabled={answer.trim() === ''}>
          {t('send')}
        </Button>
      </div>
    </form>
  );
}

export function TaskDetails({ id, onClose, canAnswer, footer, version }: { id: string | null; onClose: () => void; canAnswer: boolean; footer?: ComponentChildren; version: number }) {
  const t = useT(taskTexts);
  const lang = useStore(language);
  const task = useAsync(() => (id ? get<TaskView>(`/api/tasks/${seg(id)}`) : Promise.resolve(undefined)), [id, version]);
  const v = task.data;
  return (
    <Modal title={v ? t('detailsOf', { name: v.name ?? v.task_id }) : t('details')} open={id !== null} onClose={onClose} footer={footer}>
      <ErrorBanner error={task.error} onRetry={() => void task.reload()} />
      {v ? (
        <div class="stack task-details">
          <dl class="task-facts">
            <dt>{t('status')}</dt>
            <dd>
              <StatusBadge status={v.status} />
            </dd>
            <dt>{t('agent')}</dt>
            <dd>{v.agent ?? '—'}</dd>
            <dt>{t('parent')}</dt>
            <dd>{v.parent_agent ?? '—'}</dd>
            <dt>{t('provider')}</dt>
            <dd>{[v.provider, v.model].filter(Boolean).join(' / ') || '—'}</dd>
            <dt>{t('created')}</dt>
            <dd>{formatTime(v.created_at, lang)}</dd>
            <dt>{t('elapsed')}</dt>
            <dd>{formatElapsed(v.elapsed_seconds, lang)}</dd>
          </dl>
          {v.status === 'waiting' && v.description ? (
            <section class="task-question">
              <h3>{t('question')}</h3>
              <Markdown text={v.description} />
              {canAnswer ? <AnswerForm task={v} onAnswered={() => void task.reload()} /> : null}
            </section>
          ) : null}
          <section>
            <h3>{t('prompt')}</h3>
            <pre class="task-prompt">{v.prompt ?? ''}</pre>
          </section>
          <section>
            <h3>{t('result')}</h3>
            {v.result ? <Markdown text={v.result} class="task-result" /> : <p class="muted">{t('noResult')}</p>}
          </section>
        </div>
      ) : null}
    </Modal>
  );
}

export function CreateTask({ open, onClose, onCreated }: { open: boolean; onClose: () => void; onCreated: (id: string) => void }) {
  const t = useT(taskTexts);
  const agents = useAsync(() => (open ? get<{ name: string; display_name?: string }[]>('/api/agents') : Promise.resolve([])), [open]);
  const [name, setName] = useState('');
  const [agent, setAgent] = useState('');
  const [prompt, setPrompt] = useState('');
  const action = useAction();
  const list = agents.data ?? [];
  const chosen = pickAgent(list, agent);
  return (
    <Modal title={t('createTitle')} open={open} onClose={onClose}>
      <form
        class="stack"
        onSubmit={(e) => void (async () => {
          e.preventDefault();
          let id = '';
          if (await action.run(async () => (id = (await post<{ task_id: string }>('/api/tasks', { name, agent: chosen, prompt })).task_id))) {
            setName('');
            setPrompt('');
            onCreated(id);
          }
        })()}
      >
        <ErrorBanner error={agents.error} />
        <Field label={t('name')}>
          <input name="name" required maxLength={200} value={name} onInput={(e) => setName((e.currentTarget as HTMLInputElement).value)} />
        </Field>
        <Field label={t('agent')}>
          <select name="agent" value={chosen} onChange={(e) => setAgent((e.currentTarget as HTMLSelectElement).value)}>
            {list.map((a) => (
              <option key={a.name} value={a.name}>
                {a.display_name && a.display_name !== a.name ? `${a.display_name} (${a.name})` : a.name}
              </option>
            ))}
          </select>
        </Field>
        <Field label={t('promptLabel')}>
          <textarea name="prompt" rows={6} required value={prompt} onInput={(e) => setPrompt((e.currentTarget as HTMLTextAreaElement).value)} />
        </Field>
        <ErrorBanner error={action.error} />
        <div class="row">
          <Button type="submit" variant="primary" busy={action.busy} disabled={!chosen}>
            {t('create')}
          </Button>
        </div>
      </form>
    </Modal>
  );
}
