import type { ComponentChildren } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import type { WorkflowDefinitionView, WorkflowRunView } from '../../../../schemas/index.js';
import { get, post, seg } from '../../api/client';
import { formatTime, language, useT } from '../../i18n';
import { useStore } from '../../store';
import { useAction, useAsync } from '../../ui/async';
import { Badge, Button, ErrorBanner, Field, Modal, Table } from '../../ui/components';
import { STATUS_TONE } from '../tasks/texts';
import { ACTIVE_RUN, RUN_STATES, wfTexts } from './texts';

export function RunBadge({ status }: { status: string }) {
  const t = useT(wfTexts);
  return <Badge tone={STATUS_TONE[status] ?? 'neutral'}>{(RUN_STATES as readonly string[]).includes(status) ? t(status as 'running') : status}</Badge>;
}

export const shortId = (id: string) => id.slice(0, 8);

type Row = { key: string; value: string };

/** The start form: the definition's variables with their defaults, and rows to add more (the server refuses undeclared ones). */
export function StartRun({ def, onClose, onStarted }: { def: WorkflowDefinitionView | null; onClose: () => void; onStarted: (runId: string) => void }) {
  const t = useT(wfTexts);
  const [rows, setRows] = useState<Row[]>([]);
  const action = useAction();
  useEffect(() => {
    setRows(def ? Object.entries(def.variables).map(([key, value]) => ({ key, value })) : []);
    action.clear();
  }, [def]);
  const set = (i: number, patch: Partial<Row>) => setRows(rows.map((r, j) => (j === i ? { ...r, ...patch } : r)));
  return (
    <Modal title={def ? t('startTitle', { id: def.id ?? '' }) : t('start')} open={def !== null} onClose={onClose}>
      {def ? (
        <form
          class="stack wf-vars"
          onSubmit={(e) => void (async () => {
            e.preventDefault();
            const variables: Record<string, string> = {};
            for (const r of rows) if (r.key.trim()) variables[r.key.trim()] = r.value;
            let runId = '';
            if (await action.run(async () => (runId = (await post<{ run_id: string }>(`/api/workflows/${seg(def.id ?? '')}/run`, { variables })).run_id))) onStarted(runId);
          })()}
        >
          <p class="muted">{t('startHint')}</p>
          {rows.map((r, i) => (
            <div class="wf-var-row" key={i}>
              <Field label={t('variableN', { n: i + 1 })}>
                <input value={r.key} onInput={(e) => set(i, { key: (e.currentTarget as HTMLInputElement).value })} />
              </Field>
              <Field label={t('valueN', { n: i + 1 })}>
                <input value={r.value} onInput={(e) => set(i, { value: (e.currentTarget as HTMLInputElement).value })} />
              </Field>
              <Button variant="ghost" aria-label={t('removeVariable', { n: i + 1 })} onClick={() => setRows(rows.filter((_, j) => j !== i))}>
                ×
              </Button>
            </div>
          ))}
          <div>
            <Button onClick={() => setRows([...rows, { key: '', value: '' }])}>{t('addVariable')}</Button>
          </div>
          <ErrorBanner error={action.error} />
          <div>
            <Button type="submit" variant="primary" busy={action.busy}>
              {t('run')}
            </Button>
          </div>
        </form>
      ) : null}
    </Modal>
  );
}

/** One run with its steps; polled every 2 s while it is active. */
export function RunDetails({ runId, onClose, footer, version }: { runId: string | null; onClose: () => void; footer?: (run: WorkflowRunView) => ComponentChildren; version: number }) {
  const t = useT(wfTexts);
  const lang = useStore(language);
  const run = useAsync(() => (runId ? get<WorkflowRunView>(`/api/workflows/runs/${seg(runId)}`) : Promise.resolve(undefined)), [runId, version]);
  const active = run.data ? ACTIVE_RUN.includes(run.data.status) : false;
  useEffect(() => {
    if (!runId || !active) return;
    const timer = setInterval(() => void run.reload(), 2000);
    return () => clearInterval(timer);
  }, [runId, active]);
  const r = run.data;
  return (
    <Modal title={runId ? t('runTitle', { id: shortId(runId) }) : t('details')} open={runId !== null} onClose={onClose} footer={r && footer ? footer(r) : undefined}>
      <ErrorBanner error={run.error} onRetry={() => void run.reload()} />
      {r ? (
        <div class="stack wf-run">
          <dl class="task-facts">
            <dt>{t('workflow')}</dt>
            <dd>{r.name} ({r.workflow_id})</dd>
            <dt>{t('status')}</dt>
            <dd>
              <RunBadge status={r.status} />
            </dd>
            <dt>{t('startedAt')}</dt>
            <dd>{formatTime(r.started_at, lang)}</dd>
            <dt>{t('endedAt')}</dt>
            <dd>{formatTime(r.ended_at, lang)}</dd>
            {r.error ? (
              <>
                <dt>{t('error')}</dt>
                <dd>{r.error}</dd>
              </>
            ) : null}
          </dl>
          <Table label={t('detailsOf', { id: shortId(r.run_id) })} head={[t('step'), t('type'), t('status'), t('attempts'), t('output')]}>
            {r.steps.map((s) => (
              <tr key={s.id}>
                <td>{s.parent ? `${s.parent} › ${s.id}` : s.id}</td>
                <td>{s.type}</td>
                <td>
                  <RunBadge status={s.status} />
                </td>
                <td>{s.attempts}</td>
                <td>
                  {s.error ? <p class="wf-step-error">{s.error}</p> : null}
                  {s.output ? (
                    <pre class="wf-output">
                      {s.output}
                      {s.output_truncated ? ` ${t('truncated')}` : ''}
                    </pre>
                  ) : null}
                </td>
              </tr>
            ))}
          </Table>
        </div>
      ) : null}
    </Modal>
  );
}
