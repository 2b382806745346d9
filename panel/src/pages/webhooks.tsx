import { useState } from 'preact/hooks';
import type { WebhookRun, WebhookSignature } from '../../../schemas/index.js';
import { del, get, post, put, query, seg } from '../api/client';
import { formatTime, texts, useT } from '../i18n';
import { isAdmin, useSession } from '../session';
import { useAction, useAsync } from '../ui/async';
import { common } from '../ui/common-texts';
import { Badge, Button, Card, ErrorBanner, Field, Modal, Notice, Page, Table, useConfirm } from '../ui/components';
import './automation.css';
import { AgentSelect, pickAgent, useAgents } from './agent-pick';
import { numberOr, statusTone, textOr } from './automation/shared';
import { ListOf } from '../ui/list-of';

/*
 * Webhooks (WIRE.md §2 and §4): the list, a form (mode, prompt template, bearer or HMAC auth), pause
 * and resume, delete, each hook's accepted calls from `GET /api/webhooks/{id}/runs`, and a signature
 * test against the hook's secret. The secret is only ever shown masked, except the one svc generates,
 * which the create reply carries once; an edit form never holds the stored one.
 */

const tx = texts({
  en: {
    title: 'Webhooks',
    add: 'New webhook',
    hooks: 'Webhooks',
    url: 'Receives at',
    mode: 'Mode',
    mode_wake: 'wake (into the agent\'s chat)',
    mode_cron_task: 'cron_task (a fresh run)',
    lastTriggered: 'Last triggered',
    triggers: 'Calls',
    active: 'Active',
    paused: 'Paused',
    pause: 'Pause',
    resume: 'Resume',
    details: 'Details',
    verify: 'Test signature',
    newHook: 'New webhook',
    editHook: 'Edit webhook',
    hookName: 'Name',
    description: 'Description',
    promptTemplate: 'Prompt template',
    promptHint: '{{field}} is replaced with the payload\'s top-level field',
    auth: 'Authentication',
    authMethod: 'Method',
    bearer: 'Bearer token',
    hmac: 'HMAC signature',
    secret: 'Secret',
    secretKeep: 'Leave empty to keep the current secret ({masked})',
    secretNew: 'Leave empty to have one generated',
    preset: 'Preset',
    presetNone: 'Custom',
    header: 'Signature header',
    algorithm: 'Algorithm',
    encoding: 'Encoding',
    prefix: 'Prefix',
    enabled: 'Enabled',
    generated: 'The generated secret, shown only this once: {secret}',
    deleteQ: 'Delete the webhook "{name}"?',
    runs: 'Calls',
    noRuns: 'No calls yet',
    when: 'When',
    from: 'From',
    size: 'Size',
    result: 'Result',
    payload: 'Payload (raw body)',
    signature: 'Signature (hex or base64 HMAC-SHA256, optionally sha256=…)',
    check: 'Check',
    valid: 'Valid: the signature matches the webhook\'s secret',
    invalid: 'Invalid: the signature does not match',
    none: 'No webhooks yet',
    running: 'running',
  },
  ru: {
    title: 'Вебхуки',
    add: 'Новый вебхук',
    hooks: 'Вебхуки',
    url: 'Адрес приёма',
    mode: 'Режим',
    mode_wake: 'wake (в чат агента)',
    mode_cron_task: 'cron_task (отдельный запуск)',
    lastTriggered: 'Последний вызов',
    triggers: 'Вызовов',
    active: 'Активен',
    paused: 'На паузе',
    pause: 'Приостановить',
    resume: 'Возобновить',
    details: 'Подробнее',
    verify: 'Проверить подпись',
    newHook: 'Новый вебхук',
    editHook: 'Изменить вебхук',
    hookName: 'Название',
    description: 'Описание',
    promptTemplate: 'Шаблон промпта',
    promptHint: '{{field}} заменяется полем верхнего уровня из тела запроса',
    auth: 'Аутентификация',
    authMethod: 'Способ',
    bearer: 'Bearer-токен',
    hmac: 'Подпись HMAC',
    secret: 'Секрет',
    secretKeep: 'Оставьте пустым, чтобы сохранить текущий секрет ({masked})',
    secretNew: 'Оставьте пустым — секрет будет сгенерирован',
    preset: 'Шаблон',
    presetNone: 'Свой',
    header: 'Заголовок подписи',
    algorithm: 'Алгоритм',
    encoding: 'Кодировка',
    prefix: 'Префикс',
    enabled: 'Включён',
    generated: 'Сгенерированный секрет, показывается только сейчас: {secret}',
    deleteQ: 'Удалить вебхук «{name}»?',
    runs: 'Вызовы',
    noRuns: 'Вызовов пока не было',
    when: 'Когда',
    from: 'Откуда',
    size: 'Размер',
    result: 'Результат',
    payload: 'Тело запроса (как есть)',
    signature: 'Подпись (HMAC-SHA256 в hex или base64, можно с sha256=…)',
    check: 'Проверить',
    valid: 'Верна: подпись совпадает с секретом вебхука',
    invalid: 'Неверна: подпись не совпадает',
    none: 'Вебхуков пока нет',
    running: 'выполняется',
  },
});

export interface Webhook {
  id: string;
  name: string;
  title: string;
  url: string;
  agent: string;
  enabled: boolean;
  mode: 'wake' | 'cron_task';
  description?: string;
  prompt_template?: string | null;
  auth?: 'bearer' | 'hmac';
  signature?: WebhookSignature | null;
  secret: string;
  last_triggered?: string | null;
  trigger_count?: number;
  last_status?: string | null;
  [k: string]: unknown;
}

interface Form {
  name: string;
  agent: string;
  mode: 'wake' | 'cron_task';
  description: string;
  prompt_template: string;
  auth: 'bearer' | 'hmac';
  secret: string;
  preset: string;
  header: string;
  algorithm: string;
  encoding: string;
  prefix: string;
  enabled: boolean;
}

const formOf = (h: Webhook | null): Form => ({
  name: h?.name ?? '',
  agent: h?.agent ?? '',
  mode: h?.mode ?? 'wake',
  description: textOr(h?.description),
  prompt_template: textOr(h?.prompt_template),
  auth: h?.auth ?? 'bearer',
  // Never the stored secret: the listing only has it masked, and a form must not echo it back.
  secret: '',
  preset: h?.signature?.preset ?? '',
  header: h?.signature?.header ?? '',
  algorithm: h?.signature?.algorithm ?? '',
  encoding: h?.signature?.encoding ?? '',
  prefix: h?.signature?.prefix ?? '',
  enabled: h?.enabled ?? true,
});

function signatureOf(f: Form): WebhookSignature | null {
  if (f.auth !== 'hmac') return null;
  const s: Record<string, string> = {};
  if (f.preset) s.preset = f.preset;
  if (f.header.trim()) s.header = f.header.trim();
  if (f.algorithm) s.algorithm = f.algorithm;
  if (f.encoding) s.encoding = f.encoding;
  if (f.prefix) s.prefix = f.prefix;
  return s as WebhookSignature;
}

function HookForm({ hook, onDone, onClose }: { hook: Webhook | null; onDone: (created?: Webhook) => void; onClose: () => void }) {
  const t = useT(tx);
  const c = useT(common);
  const agents = useAgents();
  const [f, setF] = useState<Form>(() => formOf(hook));
  const action = useAction();
  const agent = pickAgent(agents.data, f.agent);
  const set = <K extends keyof Form>(k: K) => (v: Form[K]) => setF({ ...f, [k]: v });
  const submit = async (e: Event) => {
    e.preventDefault();
    const body: Record<string, unknown> = {
      name: f.name,
      agent,
      mode: f.mode,
      description: f.description,
      prompt_template: f.prompt_template,
      auth: f.auth,
      signature: signatureOf(f),
      enabled: f.enabled,
    };
    if (f.secret) body.secret = f.secret;
    let created: Webhook | undefined;
    const ok = await action.run(async () => {
      if (hook) await put(`/api/webhooks/${seg(hook.id)}`, body);
      else created = await post<Webhook>('/api/webhooks', body);
    });
    if (ok) onDone(created);
  };
  return (
    <Modal title={hook ? t('editHook') : t('newHook')} open onClose={onClose}>
      <form onSubmit={(e) => void submit(e)}>
        <ErrorBanner error={action.error} />
        <Field label={t('hookName')}>
          <input name="name" required value={f.name} onInput={(e) => set('name')(e.currentTarget.value)} />
        </Field>
        <AgentSelect value={agent} onChange={set('agent')} agents={agents.data} />
        <Field label={t('mode')}>
          <select name="mode" value={f.mode} onChange={(e) => set('mode')(e.currentTarget.value as Form['mode'])}>
            <option value="wake">{t('mode_wake')}</option>
            <option value="cron_task">{t('mode_cron_task')}</option>
          </select>
        </Field>
        <Field label={t('promptTemplate')} hint={t('promptHint')}>
          <textarea name="prompt_template" value={f.prompt_template} onInput={(e) => set('prompt_template')(e.currentTarget.value)} />
        </Field>
        <Field label={t('description')}>
          <input name="description" value={f.description} onInput={(e) => set('description')(e.currentTarget.value)} />
        </Field>
        <fieldset class="auto-fieldset">
          <legend>{t('auth')}</legend>
          <Field label={t('authMethod')}>
            <select name="auth" value={f.auth} onChange={(e) => set('auth')(e.currentTarget.value as Form['auth'])}>
              <option value="bearer">{t('bearer')}</option>
              <option value="hmac">{t('hmac')}</option>
            </select>
          </Field>
          <Field label={t('secret')} hint={hook?.secret ? t('secretKeep', { masked: hook.secret }) : t('secretNew')}>
            <input name="secret" type="password" autocomplete="new-password" value={f.secret} onInput={(e) => set('secret')(e.currentTarget.value)} />
          </Field>
          {f.auth === 'hmac' ? (
            <>
              <Field label={t('preset')}>
                <select name="preset" value={f.preset} onChange={(e) => set('preset')(e.currentTarget.value)}>
                  <option value="">{t('presetNone')}</option>
                  {['github', 'stripe', 'slack'].map((p) => (
                    <option key={p} value={p}>
                      {p}
                    </option>
                  ))}
                </select>
              </Field>
              <Field label={t('header')}>
                <input name="header" placeholder="X-Hub-Signature-256" value={f.header} onInput={(e) => set('header')(e.currentTarget.value)} />
              </Field>
              <Field label={t('algorithm')}>
                <select name="algorithm" value={f.algorithm} onChange={(e) => set('algorithm')(e.currentTarget.value)}>
                  <option value="">—</option>
                  {['sha256', 'sha1', 'sha512'].map((a) => (
                    <option key={a} value={a}>
                      {a}
                    </option>
                  ))}
                </select>
              </Field>
              <Field label={t('encoding')}>
                <select name="encoding" value={f.encoding} onChange={(e) => set('encoding')(e.currentTarget.value)}>
                  <option value="">—</option>
                  <option value="hex">hex</option>
                  <option value="base64">base64</option>
                </select>
              </Field>
              <Field label={t('prefix')}>
                <input name="prefix" placeholder="sha256=" value={f.prefix} onInput={(e) => set('prefix')(e.currentTarget.value)} />
              </Field>
            </>
          ) : null}
        </fieldset>
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

function Calls({ hook }: { hook: Webhook }) {
  const t = useT(tx);
  const c = useT(common);
  const runs = useAsync(() => get<WebhookRun[]>(`/api/webhooks/${seg(hook.id)}/runs${query({ limit: 50 })}`), [hook.id]);
  return (
    <>
      <div class="spread">
        <h3>{t('runs')}</h3>
        <Button variant="ghost" onClick={() => void runs.reload()}>
          {c('refresh')}
        </Button>
      </div>
      <ErrorBanner error={runs.error} onRetry={() => void runs.reload()} />
      <ListOf list={runs} empty={t('noRuns')}>
        {(items) => (
          <Table label={t('runs')} head={[t('when'), t('from'), t('size'), c('status'), t('result')]}>
            {items.map((r) => (
              <tr key={r.request_id}>
                <td>{formatTime(r.triggered_at)}</td>
                <td class="auto-code">{r.client}</td>
                <td>{r.body_bytes} B</td>
                <td>
                  <Badge tone={statusTone(r.status)}>{r.status === 'running' ? t('running') : r.status}</Badge>
                </td>
                <td>{r.error || r.result ? <pre class="auto-pre">{r.error ?? r.result}</pre> : '—'}</td>
              </tr>
            ))}
          </Table>
        )}
      </ListOf>
    </>
  );
}

function VerifyForm({ hook }: { hook: Webhook }) {
  const t = useT(tx);
  const [payload, setPayload] = useState('');
  const [signature, setSignature] = useState('');
  const [valid, setValid] = useState<boolean | null>(null);
  const action = useAction();
  const submit = async (e: Event) => {
    e.preventDefault();
    setValid(null);
    await action.run(async () => setValid((await post<{ valid: boolean }>(`/api/webhooks/${seg(hook.id)}/verify`, { payload, signature })).valid));
  };
  return (
    <form onSubmit={(e) => void submit(e)}>
      <h3>{t('verify')}</h3>
      <ErrorBanner error={action.error} />
      <Field label={t('payload')}>
        <textarea name="payload" class="auto-code" value={payload} onInput={(e) => setPayload(e.currentTarget.value)} />
      </Field>
      <Field label={t('signature')}>
        <input name="signature" class="auto-code" required value={signature} onInput={(e) => setSignature(e.currentTarget.value)} />
      </Field>
      <div class="row">
        <Button type="submit" busy={action.busy}>
          {t('check')}
        </Button>
        <span role="status">{valid === null ? null : <Badge tone={valid ? 'ok' : 'bad'}>{valid ? t('valid') : t('invalid')}</Badge>}</span>
      </div>
    </form>
  );
}

export default function Webhooks() {
  const t = useT(tx);
  const c = useT(common);
  const admin = isAdmin(useSession());
  const hooks = useAsync(() => get<Webhook[]>('/api/webhooks'), []);
  const [editing, setEditing] = useState<Webhook | null | 'new'>(null);
  const [detail, setDetail] = useState<Webhook | null>(null);
  const [generated, setGenerated] = useState<string | null>(null);
  const action = useAction();
  const [confirmEl, ask] = useConfirm();
  const act = async (fn: () => Promise<unknown>) => {
    if (await action.run(fn)) await hooks.reload();
  };

  return (
    <Page
      title={t('title')}
      actions={
        <>
          <Button onClick={() => void hooks.reload()}>{c('refresh')}</Button>
          {admin ? (
            <Button variant="primary" onClick={() => setEditing('new')}>
              {t('add')}
            </Button>
          ) : null}
        </>
      }
    >
      {confirmEl}
      <ErrorBanner error={action.error ?? hooks.error} onRetry={hooks.error ? () => void hooks.reload() : undefined} />
      {generated ? (
        <Notice>
          <span class="auto-code">{t('generated', { secret: generated })}</span>
          <Button variant="ghost" onClick={() => setGenerated(null)}>
            {c('close')}
          </Button>
        </Notice>
      ) : null}
      <Card title={t('hooks')}>
        <ListOf list={hooks} empty={t('none')}>
          {(items) => (
            <Table label={t('hooks')} head={[t('hookName'), t('url'), t('mode'), c('agent'), c('status'), t('lastTriggered'), t('triggers'), ...(admin ? [c('actions')] : [])]}>
              {items.map((h) => (
                <tr key={h.id}>
                  <td>
                    <button type="button" class="auto-link" onClick={() => setDetail(h)} aria-label={`${t('details')}: ${h.name}`}>
                      {h.name}
                    </button>
                  </td>
                  <td class="auto-code">{h.url}</td>
                  <td>{h.mode}</td>
                  <td>{h.agent}</td>
                  <td>
                    <Badge tone={h.enabled ? 'ok' : 'warn'}>{h.enabled ? t('active') : t('paused')}</Badge>
                  </td>
                  <td>{formatTime(h.last_triggered ?? null)}</td>
                  <td>{numberOr(h.trigger_count, 0)}</td>
                  {admin ? (
                    <td>
                      <div class="auto-actions">
                        <Button onClick={() => setEditing(h)} aria-label={`${c('edit')}: ${h.name}`}>
                          {c('edit')}
                        </Button>
                        <Button onClick={() => void act(() => put(`/api/webhooks/${seg(h.id)}`, { enabled: !h.enabled }))} aria-label={`${h.enabled ? t('pause') : t('resume')}: ${h.name}`}>
                          {h.enabled ? t('pause') : t('resume')}
                        </Button>
                        <Button
                          variant="danger"
                          aria-label={`${c('delete')}: ${h.name}`}
                          onClick={() => void (async () => {
                            if (await ask(t('deleteQ', { name: h.name }))) await act(() => del(`/api/webhooks/${seg(h.id)}`));
                          })()}
                        >
                          {c('delete')}
                        </Button>
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
        <HookForm
          hook={editing === 'new' ? null : editing}
          onClose={() => setEditing(null)}
          onDone={(created) => {
            setEditing(null);
            if (created && created.secret && created.secret !== '***') setGenerated(created.secret);
            void hooks.reload();
          }}
        />
      ) : null}
      {detail ? (
        <Modal title={detail.name} open onClose={() => setDetail(null)}>
          <p class="small">
            <span class="muted">{t('url')}: </span>
            <span class="auto-code">{detail.url}</span>
          </p>
          {detail.description ? <p>{detail.description}</p> : null}
          <Calls hook={detail} />
          {admin ? <VerifyForm hook={detail} /> : null}
        </Modal>
      ) : null}
    </Page>
  );
}
