import { useEffect, useState } from 'preact/hooks';
import { get, put } from '../../api/client';
import { formatBytes, texts, useT } from '../../i18n';
import { useAction, useAsync } from '../../ui/async';
import { common } from '../../ui/common-texts';
import { Badge, Button, Card, ErrorBanner, Field, Loading } from '../../ui/components';

const s = texts({
  en: {
    title: 'RAG (retrieval)',
    state: 'State',
    enabled: 'Enabled',
    disabled: 'Disabled',
    embedding: 'Embedding model',
    reranker: 'Reranker',
    indexWorkspace: 'Index workspace',
    indexMemory: 'Index memory',
    topKRetrieval: 'Chunks retrieved (top k)',
    topKFinal: 'Chunks kept (final k)',
    db: 'Vector database',
    missing: 'not created yet',
    chunks: 'Indexed chunks',
    facts: 'Memory facts',
    enable: 'Enable RAG',
    enableReranker: 'Use the reranker',
    restart: 'Saved. Restart svc for the new RAG settings to take effect.',
    running: 'Running now',
    next: 'Settings (applied at the next start)',
    yes: 'yes',
    no: 'no',
  },
  ru: {
    title: 'RAG (поиск по контексту)',
    state: 'Состояние',
    enabled: 'Включён',
    disabled: 'Выключен',
    embedding: 'Модель эмбеддингов',
    reranker: 'Реранкер',
    indexWorkspace: 'Индексировать рабочую папку',
    indexMemory: 'Индексировать память',
    topKRetrieval: 'Извлекаемых фрагментов (top k)',
    topKFinal: 'Оставляемых фрагментов (final k)',
    db: 'Векторная база',
    missing: 'ещё не создана',
    chunks: 'Фрагментов в индексе',
    facts: 'Фактов в памяти',
    enable: 'Включить RAG',
    enableReranker: 'Использовать реранкер',
    restart: 'Сохранено. Перезапустите svc, чтобы новые настройки RAG вступили в силу.',
    running: 'Работает сейчас',
    next: 'Настройки (применяются при следующем запуске)',
    yes: 'да',
    no: 'нет',
  },
});

interface RagStatus {
  enabled: boolean;
  embedding_model: string;
  reranker_enabled: boolean;
  reranker_model: string;
  index_workspace: boolean;
  index_memory: boolean;
  top_k_retrieval: number;
  top_k_final: number;
  vector_db_path: string;
  vector_db_exists: boolean;
  vector_db_size_bytes: number;
  chunk_count: number;
  memory_fact_count: number;
}
type RagFields = Pick<RagStatus, 'enabled' | 'reranker_enabled' | 'index_workspace' | 'index_memory' | 'top_k_retrieval' | 'top_k_final'>;
const FLAGS = ['enabled', 'reranker_enabled', 'index_workspace', 'index_memory'] as const;
const NUMBERS = ['top_k_retrieval', 'top_k_final'] as const;

/** RAG status for operators; the admin also gets the settings form (`PUT /api/rag/config`, applied on restart). */
export function RagCard({ canWrite }: { canWrite: boolean }) {
  const t = useT(s);
  const c = useT(common);
  const status = useAsync(() => get<RagStatus>('/api/rag/status'), []);
  const action = useAction();
  const [draft, setDraft] = useState<RagFields | null>(null);
  const [saved, setSaved] = useState<RagFields | null>(null);
  const [restart, setRestart] = useState(false);
  useEffect(() => {
    if (status.data && saved === null) {
      const d = status.data;
      const f: RagFields = { enabled: d.enabled, reranker_enabled: d.reranker_enabled, index_workspace: d.index_workspace, index_memory: d.index_memory, top_k_retrieval: d.top_k_retrieval, top_k_final: d.top_k_final };
      setSaved(f);
      setDraft(f);
    }
  }, [status.data]);

  const yn = (b: boolean) => (b ? t('yes') : t('no'));
  const label: Record<keyof RagFields, string> = {
    enabled: t('enable'),
    reranker_enabled: t('enableReranker'),
    index_workspace: t('indexWorkspace'),
    index_memory: t('indexMemory'),
    top_k_retrieval: t('topKRetrieval'),
    top_k_final: t('topKFinal'),
  };

  const submit = async (e: Event) => {
    e.preventDefault();
    if (!draft || !saved) return;
    const changes = Object.fromEntries(Object.entries(draft).filter(([k, v]) => saved[k as keyof RagFields] !== v));
    if (Object.keys(changes).length === 0) return;
    setRestart(false);
    const ok = await action.run(async () => {
      const r = await put<{ restart_required?: boolean; rag?: Partial<RagFields> }>('/api/rag/config', changes);
      const next = { ...draft, ...(r.rag ?? {}) } as RagFields;
      setSaved(next);
      setDraft(next);
      setRestart(r.restart_required === true);
    });
    if (ok) await status.reload();
  };

  const d = status.data;
  return (
    <Card title={t('title')}>
      <ErrorBanner error={status.error} onRetry={() => void status.reload()} />
      {status.loading && !d ? <Loading /> : null}
      {d && canWrite ? <p class="muted rag-caption">{t('running')}</p> : null}
      {d ? (
        <dl class="kv">
          <dt>{t('state')}</dt>
          <dd>{d.enabled ? <Badge tone="ok">{t('enabled')}</Badge> : <Badge>{t('disabled')}</Badge>}</dd>
          <dt>{t('embedding')}</dt>
          <dd>{d.embedding_model || '—'}</dd>
          <dt>{t('reranker')}</dt>
          <dd>
            {yn(d.reranker_enabled)}
            {d.reranker_model ? ` · ${d.reranker_model}` : ''}
          </dd>
          <dt>{t('indexWorkspace')}</dt>
          <dd>{yn(d.index_workspace)}</dd>
          <dt>{t('indexMemory')}</dt>
          <dd>{yn(d.index_memory)}</dd>
          <dt>{t('topKRetrieval')}</dt>
          <dd>{d.top_k_retrieval}</dd>
          <dt>{t('topKFinal')}</dt>
          <dd>{d.top_k_final}</dd>
          <dt>{t('db')}</dt>
          <dd>{d.vector_db_exists ? `${d.vector_db_path} · ${formatBytes(d.vector_db_size_bytes)}` : `${d.vector_db_path} (${t('missing')})`}</dd>
          <dt>{t('chunks')}</dt>
          <dd>{d.chunk_count}</dd>
          <dt>{t('facts')}</dt>
          <dd>{d.memory_fact_count}</dd>
        </dl>
      ) : null}
      {canWrite && draft ? (
        <form class="narrow-form rag-form" onSubmit={(e) => void submit(e)}>
          <p class="muted rag-caption">{t('next')}</p>
          <ErrorBanner error={action.error} />
          {restart ? (
            <p class="banner banner-warn" role="status">
              {t('restart')}
            </p>
          ) : null}
          {FLAGS.map((k) => (
            <label class="check block-check" key={k}>
              <input type="checkbox" name={k} checked={draft[k]} onChange={(e) => setDraft({ ...draft, [k]: e.currentTarget.checked })} />
              {label[k]}
            </label>
          ))}
          {NUMBERS.map((k) => (
            <Field label={label[k]} key={k}>
              <input type="number" name={k} min={1} max={1000} step={1} required value={draft[k]} onInput={(e) => setDraft({ ...draft, [k]: Number(e.currentTarget.value) })} />
            </Field>
          ))}
          <Button type="submit" variant="primary" busy={action.busy}>
            {c('save')}
          </Button>
        </form>
      ) : null}
    </Card>
  );
}
