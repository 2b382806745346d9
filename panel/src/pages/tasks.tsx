import { useEffect, useState } from 'preact/hooks';
import type { TaskView } from '../../../schemas/index.js';
import { del, get, post, query, seg } from '../api/client';
import { adminSocket } from '../api/socket';
import { formatTime, language, useT } from '../i18n';
import { isAdmin, isOperator, useSession } from '../session';
import { useStore } from '../store';
import { useAction, useAsync } from '../ui/async';
import { Button, Card, ErrorBanner, Loading, Notice, Page, Table, Tabs, useConfirm } from '../ui/components';
import { Markdown } from '../ui/markdown';
import { ACTIVE, AnswerForm, CreateTask, FINISHED, StatusBadge, TaskDetails } from './tasks/parts';
import { formatElapsed, taskTexts } from './tasks/texts';
import './tasks.css';

/*
 * Background tasks (SPEC.md "Task status"): a list per status, a task's details with its result,
 * the questions waiting tasks ask, cancel (operator), delete of finished ones and create (admin).
 * Live: a task's result or question arrives as a `chat_message` on /ws/admin; while tasks run the
 * list is polled every 15 s too (their elapsed time moves, and a cancel by someone else shows).
 */

type Filter = 'all' | 'running' | 'waiting' | 'done' | 'failed' | 'cancelled';
const FILTERS: Filter[] = ['all', 'running', 'waiting', 'done', 'failed', 'cancelled'];
const POLL_MS = 15_000;

export default function Tasks() {
  const t = useT(taskTexts);
  const lang = useStore(language);
  const user = useSession();
  const operator = isOperator(user);
  const admin = isAdmin(user);
  const [filter, setFilter] = useState<Filter>('all');
  const [open, setOpen] = useState<string | null>(null);
  const [creating, setCreating] = useState(false);
  const [version, setVersion] = useState(0);
  const tasks = useAsync(() => get<TaskView[]>(`/api/tasks${query({ status: filter === 'all' ? undefined : filter, limit: 200 })}`), [filter, version]);
  // The questions are shown whatever the filter: answering one should not need a tab.
  const waiting = useAsync(() => get<TaskView[]>('/api/tasks?status=waiting&limit=50'), [version]);
  const action = useAction();
  const [confirmEl, ask] = useConfirm();
  const refresh = () => setVersion((n) => n + 1);

  useEffect(
    () =>
      adminSocket.subscribe((f) => {
        if (f.type === 'chat_message' && (f.kind === 'task_result' || f.kind === 'task_question')) refresh();
      }),
    [],
  );
  const anyActive = (tasks.data ?? []).some((x) => ACTIVE.includes(x.status)) || (waiting.data ?? []).length > 0;
  useEffect(() => {
    if (!anyActive) return;
    const timer = setInterval(refresh, POLL_MS);
    return () => clearInterval(timer);
  }, [anyActive]);

  const label = (x: TaskView) => x.name || x.task_id;
  const cancel = async (x: TaskView) => {
    if (!(await ask(t('confirmCancel', { name: label(x) })))) return;
    if (await action.run(() => post(`/api/tasks/${seg(x.task_id)}/cancel`))) refresh();
  };
  const remove = async (x: TaskView) => {
    if (!(await ask(t('confirmDelete', { name: label(x) })))) return;
    if (await action.run(() => del(`/api/tasks/${seg(x.task_id)}`))) {
      if (open === x.task_id) setOpen(null);
      refresh();
    }
  };
  const opened = (tasks.data ?? []).find((x) => x.task_id === open) ?? (waiting.data ?? []).find((x) => x.task_id === open);

  return (
    <Page
      title={t('title')}
      actions={
        admin ? (
          <Button variant="primary" onClick={() => setCreating(true)}>
            {t('newTask')}
          </Button>
        ) : null
      }
    >
      {!operator ? <Notice>{t('readOnly')}</Notice> : null}
      <ErrorBanner error={action.error} />
      {(waiting.data ?? []).length > 0 ? (
        <Card title={t('waitingTitle')} class="task-waiting">
          <p class="muted">{t('waitingHint')}</p>
          <ul class="task-questions">
            {waiting.data!.map((x) => (
              <li key={x.task_id} class="stack">
                <div class="row spread">
                  <strong>{label(x)}</strong>
                  <span class="muted small">{x.agent}</span>
                </div>
                <Markdown text={x.description ?? ''} />
                {operator ? <AnswerForm task={x} onAnswered={refresh} /> : null}
              </li>
            ))}
          </ul>
        </Card>
      ) : null}
      <Card>
        <Tabs value={filter} label={t('filter')} options={FILTERS.map((k) => ({ key: k, label: t(k) }))} onChange={setFilter} />
        <ErrorBanner error={tasks.error} onRetry={() => void tasks.reload()} />
        {tasks.data === undefined && tasks.loading ? <Loading /> : null}
        {tasks.data && tasks.data.length === 0 ? <p class="muted empty">{t('none')}</p> : null}
        {tasks.data && tasks.data.length > 0 ? (
          <Table label={t('list')} head={[t('name'), t('agent'), t('status'), t('created'), t('elapsed'), t('actions')]}>
            {tasks.data.map((x) => (
              <tr key={x.task_id}>
                <td>
                  <button type="button" class="linklike" onClick={() => setOpen(x.task_id)} aria-label={t('detailsOf', { name: label(x) })}>
                    {label(x)}
                  </button>
                </td>
                <td>{x.agent ?? '—'}</td>
                <td>
                  <StatusBadge status={x.status} />
                </td>
                <td class="nowrap">{formatTime(x.created_at, lang)}</td>
                <td class="nowrap">{formatElapsed(x.elapsed_seconds, lang)}</td>
                <td class="nowrap">
                  <Button variant="ghost" onClick={() => setOpen(x.task_id)} aria-label={t('detailsOf', { name: label(x) })}>
                    {t('details')}
                  </Button>
                  {operator && ACTIVE.includes(x.status) ? (
                    <Button variant="ghost" onClick={() => void cancel(x)} aria-label={t('cancelOf', { name: label(x) })}>
                      {t('cancel')}
                    </Button>
                  ) : null}
                  {admin && FINISHED.includes(x.status) ? (
                    <Button variant="danger" onClick={() => void remove(x)} aria-label={t('deleteOf', { name: label(x) })}>
                      {t('delete')}
                    </Button>
                  ) : null}
                </td>
              </tr>
            ))}
          </Table>
        ) : null}
      </Card>
      <TaskDetails
        id={open}
        version={version}
        canAnswer={operator}
        onClose={() => setOpen(null)}
        footer={
          opened ? (
            <>
              {operator && ACTIVE.includes(opened.status) ? (
                <Button onClick={() => void cancel(opened)}>{t('cancel')}</Button>
              ) : null}
              {admin && FINISHED.includes(opened.status) ? (
                <Button variant="danger" onClick={() => void remove(opened)}>
                  {t('delete')}
                </Button>
              ) : null}
            </>
          ) : undefined
        }
      />
      {admin ? (
        <CreateTask
          open={creating}
          onClose={() => setCreating(false)}
          onCreated={() => {
            setCreating(false);
            setFilter('all');
            refresh();
          }}
        />
      ) : null}
      {confirmEl}
    </Page>
  );
}
