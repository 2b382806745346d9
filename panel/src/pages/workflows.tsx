import { useEffect, useState } from 'preact/hooks';
import type { WorkflowDefinitionView, WorkflowRunSummary } from '../../../schemas/index.js';
import { get, post, seg } from '../api/client';
import { formatTime, language, useT } from '../i18n';
import { isOperator, useSession } from '../session';
import { useStore } from '../store';
import { useAction, useAsync } from '../ui/async';
import { Button, Card, ErrorBanner, Loading, Notice, Page, Table, useConfirm } from '../ui/components';
import { RunBadge, RunDetails, StartRun, shortId } from './workflows/parts';
import { ACTIVE_RUN, wfTexts } from './workflows/texts';
import './tasks.css';

/*
 * Workflows (SPEC.md "Workflow definition", "Workflow run"): the definitions in the home's
 * workflows/ folder with the files that did not load shown first, starting a run with variables,
 * the runs and each run's steps, cancelling an active run. The list is polled every 3 s while a run
 * is active (runs have no live frame on /ws/admin).
 */

type Listing = { enabled: boolean; definitions: WorkflowDefinitionView[]; runs: WorkflowRunSummary[] };
const POLL_MS = 3000;

export default function Workflows() {
  const t = useT(wfTexts);
  const lang = useStore(language);
  const operator = isOperator(useSession());
  const [version, setVersion] = useState(0);
  const list = useAsync(() => get<Listing>('/api/workflows'), [version]);
  const [starting, setStarting] = useState<WorkflowDefinitionView | null>(null);
  const [open, setOpen] = useState<string | null>(null);
  const [notice, setNotice] = useState('');
  const action = useAction();
  const [confirmEl, ask] = useConfirm();
  const refresh = () => setVersion((n) => n + 1);

  const data = list.data;
  const anyActive = (data?.runs ?? []).some((r) => ACTIVE_RUN.includes(r.status));
  useEffect(() => {
    if (!anyActive) return;
    const timer = setInterval(refresh, POLL_MS);
    return () => clearInterval(timer);
  }, [anyActive]);

  const loaded = (data?.definitions ?? []).filter((d) => d.error === null);
  const broken = (data?.definitions ?? []).filter((d) => d.error !== null);
  const cancel = async (r: { run_id: string; name: string }) => {
    if (!(await ask(t('confirmCancel', { id: shortId(r.run_id), name: r.name })))) return;
    if (await action.run(() => post(`/api/workflows/runs/${seg(r.run_id)}/cancel`))) refresh();
  };

  return (
    <Page title={t('title')}>
      {!operator ? <Notice>{t('readOnly')}</Notice> : null}
      <ErrorBanner error={list.error} onRetry={() => void list.reload()} />
      <ErrorBanner error={action.error} />
      {notice ? (
        <p class="banner banner-info" role="status">
          {notice}
        </p>
      ) : null}
      {data && !data.enabled ? <p class="banner banner-warn">{t('disabled')}</p> : null}
      {broken.length > 0 ? (
        <div class="banner banner-error wf-broken" role="alert">
          <div>
            <strong>{t('loadErrors')}</strong>
            <span class="muted"> — {t('loadErrorsHint')}</span>
            <ul class="wf-errors">
              {broken.map((d) => (
                <li key={d.file ?? d.id}>
                  <code>{d.error}</code>
                </li>
              ))}
            </ul>
          </div>
        </div>
      ) : null}
      {!data && list.loading ? <Loading /> : null}
      {data ? (
        <>
          <Card title={t('definitions')}>
            {loaded.length === 0 ? (
              <p class="muted empty">{t('noDefinitions')}</p>
            ) : (
              <Table label={t('definitionsTable')} head={[t('id'), t('name'), t('description'), t('steps'), ...(operator ? [t('actions')] : [])]}>
                {loaded.map((d) => (
                  <tr key={d.id}>
                    <td>
                      <code>{d.id}</code>
                    </td>
                    <td>{d.name}</td>
                    <td>{d.description ?? ''}</td>
                    <td>{d.step_count}</td>
                    {operator ? (
                      <td>
                        <Button variant="primary" disabled={!data.enabled} aria-label={t('startOf', { id: d.id ?? '' })} onClick={() => setStarting(d)}>
                          {t('start')}
                        </Button>
                      </td>
                    ) : null}
                  </tr>
                ))}
              </Table>
            )}
          </Card>
          <Card title={t('runs')}>
            {data.runs.length === 0 ? (
              <p class="muted empty">{t('noRuns')}</p>
            ) : (
              <Table label={t('runsTable')} head={[t('runId'), t('workflow'), t('status'), t('currentStep'), t('startedAt'), t('endedAt'), t('actions')]}>
                {data.runs.map((r) => (
                  <tr key={r.run_id}>
                    <td>
                      <code title={r.run_id}>{shortId(r.run_id)}</code>
                    </td>
                    <td>{r.name}</td>
                    <td>
                      <RunBadge status={r.status} />
                    </td>
                    <td>{r.current_step ?? '—'}</td>
                    <td class="nowrap">{formatTime(r.started_at, lang)}</td>
                    <td class="nowrap">{formatTime(r.ended_at, lang)}</td>
                    <td class="nowrap">
                      <Button variant="ghost" aria-label={t('detailsOf', { id: shortId(r.run_id) })} onClick={() => setOpen(r.run_id)}>
                        {t('details')}
                      </Button>
                      {operator && ACTIVE_RUN.includes(r.status) ? (
                        <Button variant="danger" aria-label={t('cancelOf', { id: shortId(r.run_id) })} onClick={() => void cancel(r)}>
                          {t('cancel')}
                        </Button>
                      ) : null}
                    </td>
                  </tr>
                ))}
              </Table>
            )}
          </Card>
        </>
      ) : null}
      {operator ? (
        <StartRun
          def={starting}
          onClose={() => setStarting(null)}
          onStarted={(runId) => {
            setStarting(null);
            setNotice(t('started', { id: shortId(runId) }));
            refresh();
            setOpen(runId);
          }}
        />
      ) : null}
      <RunDetails
        runId={open}
        version={version}
        onClose={() => setOpen(null)}
        footer={(r) =>
          operator && ACTIVE_RUN.includes(r.status) ? (
            <Button variant="danger" onClick={() => void cancel(r)}>
              {t('cancel')}
            </Button>
          ) : null
        }
      />
      {confirmEl}
    </Page>
  );
}
