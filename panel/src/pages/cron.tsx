import { useState } from 'preact/hooks';
import type { CronRun } from '../../../schemas/index.js';
import { del, get, post, put, query, seg } from '../api/client';
import { formatTime, texts, useT } from '../i18n';
import { isAdmin, isOperator, useSession } from '../session';
import { useAction, useAsync } from '../ui/async';
import { common } from '../ui/common-texts';
import { Badge, Button, Card, ErrorBanner, Field, Modal, Notice, Page, Table, useConfirm } from '../ui/components';
import './automation.css';
import { AgentSelect, pickAgent, useAgents } from './agent-pick';
import { formatSeconds, numberOr, statusTone, textOr } from './automation/shared';
import { ListOf } from '../ui/list-of';

/*
 * Cron jobs (SPEC.md "Cron job and webhook records", WIRE.md §2): the list, a form to create and
 * change one (the server checks the schedule with croner and its message is shown as is), pause and
 * resume, delete, run now (operators too) and each job's run history from `GET /api/cron/{id}/runs`.
 */

const tx = texts({
  en: {
    title: 'Cron jobs',
    add: 'New cron job',
    jobs: 'Jobs',
    jobTitle: 'Title',
    schedule: 'Schedule',
    scheduleHint: 'Five fields: minute hour day-of-month month day-of-week (e.g. 0 9 * * 1-5), or @daily, @hourly…',
    nextRun: 'Next run',
    lastRun: 'Last run',
    executions: 'Runs',
    avgDuration: 'Avg. duration',
    active: 'Active',
    paused: 'Paused',
    pause: 'Pause',
    resume: 'Resume',
    runNow: 'Run now',
    started: 'Run started',
    details: 'Details',
    description: 'Prompt / description',
    timezone: 'Time zone',
    timezoneHint: 'IANA name such as Europe/Moscow; empty: the default zone',
    provider: 'Provider',
    model: 'Model',
    optional: 'optional',
    defaultProvider: 'The agent\'s default',
    enabled: 'Enabled',
    editJob: 'Edit cron job',
    newJob: 'New cron job',
    deleteQ: 'Delete the cron job "{name}"?',
    runs: 'Run history',
    noRuns: 'No runs yet',
    fired: 'Fired',
    trigger: 'Trigger',
    duration: 'Duration',
    delivered: 'Delivered',
    result: 'Result',
    trigger_schedule: 'schedule',
    trigger_manual: 'manual',
    trigger_missed: 'missed',
    running: 'running',
    none: 'No cron jobs yet',
  },
  ru: {
    title: 'Задания cron',
    add: 'Новое задание',
    jobs: 'Задания',
    jobTitle: 'Название',
    schedule: 'Расписание',
    scheduleHint: 'Пять полей: минута час день-месяца месяц день-недели (например, 0 9 * * 1-5) или @daily, @hourly…',
    nextRun: 'Следующий запуск',
    lastRun: 'Последний запуск',
    executions: 'Запусков',
    avgDuration: 'Средняя длительность',
    active: 'Активно',
    paused: 'На паузе',
    pause: 'Приостановить',
    resume: 'Возобновить',
    runNow: 'Запустить сейчас',
    started: 'Запуск начат',
    details: 'Подробнее',
    description: 'Промпт / описание',
    timezone: 'Часовой пояс',
    timezoneHint: 'Имя IANA, например Europe/Moscow; пусто — пояс по умолчанию',
    provider: 'Провайдер',
    model: 'Модель',
    optional: 'необязательно',
    defaultProvider: 'Как у агента',
    enabled: 'Включено',
    editJob: 'Изменить задание',
    newJob: 'Новое задание',
    deleteQ: 'Удалить задание «{name}»?',
    runs: 'История запусков',
    noRuns: 'Запусков пока не было',
    fired: 'Запущено',
    trigger: 'Причина',
    duration: 'Длительность',
    delivered: 'Доставлено',
    result: 'Результат',
    trigger_schedule: 'по расписанию',
    trigger_manual: 'вручную',
    trigger_missed: 'пропущенный',
    running: 'выполняется',
    none: 'Заданий пока нет',
  },
});

export interface CronJob {
  id: string;
  title: string;
  name?: string;
  schedule: string;
  agent: string;
  enabled: boolean;
  status: 'active' | 'paused';
  description?: string;
  timezone?: string | null;
  provider?: string | null;
  model?: string | null;
  next_run?: string | null;
  last_run_at?: string | null;
  last_status?: string | null;
  execution_count?: number;
  avg_duration?: number | null;
  [k: string]: unknown;
}

const PROVIDERS = ['claude', 'codex', 'gemini'];

interface Form {
  title: string;
  schedule: string;
  agent: string;
  description: string;
  timezone: string;
  provider: string;
  model: string;
  enabled: boolean;
}

const formOf = (j: CronJob | null, agent: string): Form => ({
  title: j?.title ?? '',
  schedule: j?.schedule ?? '0 9 * * *',
  agent: j?.agent ?? agent,
  description: textOr(j?.description),
  timezone: textOr(j?.timezone),
  provider: textOr(j?.provider),
  model: textOr(j?.model),
  enabled: j?.enabled ?? true,
});

function JobForm({ job, onDone, onClose }: { job: CronJob | null; onDone: () => void; onClose: () => void }) {
  const t = useT(tx);
  const c = useT(common);
  const agents = useAgents();
  const [f, setF] = useState<Form>(() => formOf(job, ''));
  const action = useAction();
  const agent = pickAgent(agents.data, f.agent);
  const set = <K extends keyof Form>(k: K) => (v: Form[K]) => setF({ ...f, [k]: v });
  const submit = async (e: Event) => {
    e.preventDefault();
    const body = { title: f.title, schedule: f.schedule, agent, description: f.description, enabled: f.enabled, timezone: f.timezone.trim() || null, provider: f.provider || null, model: f.model.trim() || null };
    const ok = await action.run(() => (job ? put(`/api/cron/${seg(job.id)}`, body) : post('/api/cron', body)));
    if (ok) onDone();
  };
  return (
    <Modal title={job ? t('editJob') : t('newJob')} open onClose={onClose}>
      <form onSubmit={(e) => void submit(e)}>
        <ErrorBanner error={action.error} />
        <Field label={t('jobTitle')}>
          <input name="title" required value={f.title} onInput={(e) => set('title')(e.currentTarget.value)} />
        </Field>
        <Field label={t('schedule')} hint={t('scheduleHint')}>
          <input name="schedule" required class="auto-code" value={f.schedule} onInput={(e) => set('schedule')(e.currentTarget.value)} />
        </Field>
        <AgentSelect value={agent} onChange={set('agent')} agents={agents.data} />
        <Field label={t('description')}>
          <textarea name="description" value={f.description} onInput={(e) => set('description')(e.currentTarget.value)} />
        </Field>
        <Field label={t('timezone')} hint={t('timezoneHint')}>
          <input name="timezone" value={f.timezone} onInput={(e) => set('timezone')(e.currentTarget.value)} />
        </Field>
        <Field label={`${t('provider')} (${t('optional')})`}>
          <select name="provider" value={f.provider} onChange={(e) => set('provider')(e.currentTarget.value)}>
            <option value="">{t('defaultProvider')}</option>
            {PROVIDERS.map((p) => (
              <option key={p} value={p}>
                {p}
              </option>
            ))}
          </select>
        </Field>
        <Field label={`${t('model')} (${t('optional')})`}>
          <input name="model" value={f.model} onInput={(e) => set('model')(e.currentTarget.value)} />
        </Field>
        <label class="check">
          <input type="checkbox" name="enabled" checked={f.enabled} onChange={(e) => set('enabled')(e.currentTarget.checked)} />
          {t('enabled')}
        </label>
        <div class="modal-foot">
          <Button onClick={onClose}>{c('cancel')}</Button>
          <Button type="submit" variant="primary" busy={action.busy}>
            {c('save')}
          </Button>
        </div>
      </form>
    </Modal>
  );
}

function RunHistory({ job, onClose }: { job: CronJob; onClose: () => void }) {
  const t = useT(tx);
  const c = useT(common);
  const runs = useAsync(() => get<CronRun[]>(`/api/cron/${seg(job.id)}/runs${query({ limit: 50 })}`), [job.id]);
  const label = (s: string) => (s === 'running' ? t('running') : s);
  return (
    <Modal title={job.title} open onClose={onClose}>
      <dl class="small">
        <dt class="muted">{t('schedule')}</dt>
        <dd class="auto-code">{job.schedule}</dd>
        {job.description ? (
          <>
            <dt class="muted">{t('description')}</dt>
            <dd>
              <pre class="auto-pre">{job.description}</pre>
            </dd>
          </>
        ) : null}
      </dl>
      <div class="spread">
        <h3>{t('runs')}</h3>
        <Button variant="ghost" onClick={() => void runs.reload()}>
          {c('refresh')}
        </Button>
      </div>
      <ErrorBanner error={runs.error} onRetry={() => void runs.reload()} />
      <ListOf list={runs} empty={t('noRuns')}>
        {(items) => (
          <Table label={t('runs')} head={[t('fired'), t('trigger'), c('status'), t('duration'), t('result')]}>
            {items.map((r) => (
              <tr key={r.fire_id}>
                <td>{formatTime(r.fired_at)}</td>
                <td>{t(`trigger_${r.trigger}` as 'trigger_schedule') || r.trigger}</td>
                <td>
                  <Badge tone={statusTone(r.status)}>{label(r.status)}</Badge>
                  {r.delivered ? <span class="muted small"> · {t('delivered')}</span> : null}
                </td>
                <td>{r.duration_ms === null ? '—' : formatSeconds(r.duration_ms / 1000)}</td>
                <td>{r.result ? <pre class="auto-pre">{r.result}</pre> : '—'}</td>
              </tr>
            ))}
          </Table>
        )}
      </ListOf>
    </Modal>
  );
}

export default function Cron() {
  const t = useT(tx);
  const c = useT(common);
  const user = useSession();
  const admin = isAdmin(user);
  const operator = isOperator(user);
  const jobs = useAsync(() => get<CronJob[]>('/api/cron'), []);
  const [editing, setEditing] = useState<CronJob | null | 'new'>(null);
  const [detail, setDetail] = useState<CronJob | null>(null);
  const [notice, setNotice] = useState<string | null>(null);
  const action = useAction();
  const [confirmEl, ask] = useConfirm();

  const act = async (fn: () => Promise<unknown>, done?: string) => {
    setNotice(null);
    if (await action.run(fn)) {
      if (done) setNotice(done);
      await jobs.reload();
    }
  };

  return (
    <Page
      title={t('title')}
      actions={
        <>
          <Button onClick={() => void jobs.reload()}>{c('refresh')}</Button>
          {admin ? (
            <Button variant="primary" onClick={() => setEditing('new')}>
              {t('add')}
            </Button>
          ) : null}
        </>
      }
    >
      {confirmEl}
      <ErrorBanner error={action.error ?? jobs.error} onRetry={jobs.error ? () => void jobs.reload() : undefined} />
      {notice ? <Notice>{notice}</Notice> : null}
      <Card title={t('jobs')}>
        <ListOf list={jobs} empty={t('none')}>
          {(items) => (
            <Table
              label={t('jobs')}
              head={[t('jobTitle'), t('schedule'), c('agent'), c('status'), t('nextRun'), t('lastRun'), t('executions'), t('avgDuration'), ...(operator ? [c('actions')] : [])]}
            >
              {items.map((j) => (
                <tr key={j.id}>
                  <td>
                    <button type="button" class="auto-link" onClick={() => setDetail(j)} aria-label={`${t('details')}: ${j.title}`}>
                      {j.title}
                    </button>
                  </td>
                  <td class="auto-code">{j.schedule}</td>
                  <td>{j.agent}</td>
                  <td>
                    <Badge tone={j.enabled ? 'ok' : 'warn'}>{j.enabled ? t('active') : t('paused')}</Badge>
                    {j.last_status ? (
                      <>
                        {' '}
                        <Badge tone={statusTone(j.last_status)}>{j.last_status}</Badge>
                      </>
                    ) : null}
                  </td>
                  <td>{formatTime(j.next_run ?? null)}</td>
                  <td>{formatTime(j.last_run_at ?? null)}</td>
                  <td>{numberOr(j.execution_count, 0)}</td>
                  <td>{formatSeconds(numberOr(j.avg_duration))}</td>
                  {operator ? (
                    <td>
                      <div class="auto-actions">
                        <Button onClick={() => void act(() => post(`/api/cron/${seg(j.id)}/run`), t('started'))} aria-label={`${t('runNow')}: ${j.title}`}>
                          {t('runNow')}
                        </Button>
                        {admin ? (
                          <>
                            <Button onClick={() => setEditing(j)} aria-label={`${c('edit')}: ${j.title}`}>
                              {c('edit')}
                            </Button>
                            <Button onClick={() => void act(() => put(`/api/cron/${seg(j.id)}`, { enabled: !j.enabled }))} aria-label={`${j.enabled ? t('pause') : t('resume')}: ${j.title}`}>
                              {j.enabled ? t('pause') : t('resume')}
                            </Button>
                            <Button
                              variant="danger"
                              aria-label={`${c('delete')}: ${j.title}`}
                              onClick={() => void (async () => {
                                if (await ask(t('deleteQ', { name: j.title }))) await act(() => del(`/api/cron/${seg(j.id)}`));
                              })()}
                            >
                              {c('delete')}
                            </Button>
                          </>
                        ) : null}
                      </div>
                    </td>
                  ) : null}
                </tr>
              ))}
            </Table>
          )}
        </ListOf>
      </Card>
      {editing !== null ? (
        <JobForm
          job={editing === 'new' ? null : editing}
          onClose={() => setEditing(null)}
          onDone={() => {
            setEditing(null);
            void jobs.reload();
          }}
        />
      ) : null}
      {detail ? <RunHistory job={detail} onClose={() => setDetail(null)} /> : null}
    </Page>
  );
}
