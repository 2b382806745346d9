import { useEffect, useState } from 'preact/hooks';
import { ApiError, get, put, query, seg } from '../api/client';
import { texts, useT } from '../i18n';
import { isAdmin, isOperator, useSession } from '../session';
import { useAction, useAsync } from '../ui/async';
import { common } from '../ui/common-texts';
import { Badge, Button, Card, Empty, ErrorBanner, Field, Loading, Notice, Page, Tabs } from '../ui/components';
import { Markdown } from '../ui/markdown';
import './automation.css';
import { AgentSelect, forAgent, useAgents, usePickedAgent } from './agent-pick';

/*
 * An agent's memory (WIRE.md §2): MAINMEMORY.md through `/api/memory`, the modules through
 * `/api/memory/modules/{filename}` (one percent-encoded segment). Every read carries a `version`;
 * a save sends it back as `base_version`, so a module changed elsewhere since it was loaded is
 * answered 409 `memory-conflict` and the editor shows both texts instead of overwriting.
 */

const MAIN = 'MAINMEMORY.md';
/** memory.module_line_limit's default: a module past it is still used, but should be split. */
const SOFT_LINE_LIMIT = 80;

const tx = texts({
  en: {
    title: 'Memory',
    modules: 'Files',
    noAccess: 'Your role cannot read memory.',
    lines: '{n} lines',
    overLimit: 'over {n} lines: consider splitting it',
    edit: 'Edit',
    preview: 'Preview',
    view: 'View',
    content: 'Content of {name}',
    unsaved: 'Unsaved changes',
    saved: 'Saved',
    newModule: 'New module',
    newName: 'File name under modules/',
    create: 'Create',
    conflictTitle: 'This file changed on the server since you opened it.',
    conflictHelp: 'Nothing was saved. Its current text is below: reload it (your edits are dropped) or overwrite it with yours.',
    serverText: 'Current text on the server',
    reload: 'Reload from server',
    overwrite: 'Overwrite with mine',
    pick: 'Pick a file',
    empty: 'This file is empty',
  },
  ru: {
    title: 'Память',
    modules: 'Файлы',
    noAccess: 'Ваша роль не может читать память.',
    lines: 'строк: {n}',
    overLimit: 'больше {n} строк — стоит разделить',
    edit: 'Правка',
    preview: 'Просмотр',
    view: 'Вид',
    content: 'Содержимое {name}',
    unsaved: 'Есть несохранённые изменения',
    saved: 'Сохранено',
    newModule: 'Новый модуль',
    newName: 'Имя файла в modules/',
    create: 'Создать',
    conflictTitle: 'Файл изменился на сервере после того, как вы его открыли.',
    conflictHelp: 'Ничего не сохранено. Ниже его текущий текст: перезагрузите его (ваши правки пропадут) или перезапишите своими.',
    serverText: 'Текущий текст на сервере',
    reload: 'Загрузить с сервера',
    overwrite: 'Перезаписать своим',
    pick: 'Выберите файл',
    empty: 'Файл пуст',
  },
});

interface ModuleEntry {
  name: string;
  filename: string;
  size: string;
  lines: number;
}
interface ModuleText {
  filename: string;
  content: string;
  version: string;
}

const pathOf = (filename: string, agent: string) => (filename === MAIN ? '/api/memory' : `/api/memory/modules/${seg(filename)}`) + query({ agent: agent === 'main' ? undefined : agent });
/** The version of empty text (the first 32 hex digits of SHA-256 of nothing), what a module not there yet has. */
const EMPTY_VERSION = 'e3b0c44298fc1c149afbf4c8996fb924';
const countLines = (s: string) => (s === '' ? 0 : s.replace(/\n$/, '').split('\n').length);

function Editor({ filename, agent, admin, onSaved }: { filename: string; agent: string; admin: boolean; onSaved: () => void }) {
  const t = useT(tx);
  const c = useT(common);
  const loaded = useAsync(() => get<ModuleText>(pathOf(filename, agent)), [filename, agent]);
  const [text, setText] = useState('');
  const [version, setVersion] = useState('');
  const [mode, setMode] = useState<'edit' | 'preview'>(admin ? 'edit' : 'preview');
  const [conflict, setConflict] = useState<ModuleText | null>(null);
  const [saved, setSaved] = useState(false);
  const action = useAction();
  useEffect(() => {
    if (!loaded.data) return;
    setText(loaded.data.content);
    setVersion(loaded.data.version);
    setConflict(null);
  }, [loaded.data]);
  const dirty = loaded.data !== undefined && text !== loaded.data.content;
  const lines = countLines(text);

  const save = async (base: string) => {
    setSaved(false);
    let clash = false;
    const ok = await action.run(async () => {
      try {
        const r = await put<{ version: string }>(pathOf(filename, agent), { content: text, base_version: base });
        setVersion(r.version);
        loaded.setData({ filename, content: text, version: r.version });
      } catch (e) {
        if (e instanceof ApiError && e.code === 'memory-conflict') clash = true;
        else throw e;
      }
    });
    if (clash) {
      setConflict(await get<ModuleText>(pathOf(filename, agent)));
      return;
    }
    if (ok) {
      setConflict(null);
      setSaved(true);
      onSaved();
    }
  };

  if (loaded.data === undefined) return loaded.error ? <ErrorBanner error={loaded.error} onRetry={() => void loaded.reload()} /> : <Loading />;
  return (
    <Card
      title={filename}
      actions={
        <div class="row">
          <Badge tone={lines > SOFT_LINE_LIMIT ? 'warn' : 'neutral'}>{t('lines', { n: lines })}</Badge>
          {lines > SOFT_LINE_LIMIT ? <span class="small muted">{t('overLimit', { n: SOFT_LINE_LIMIT })}</span> : null}
          <Tabs
            label={t('view')}
            value={mode}
            onChange={setMode}
            options={[
              ...(admin ? [{ key: 'edit' as const, label: t('edit') }] : []),
              { key: 'preview' as const, label: t('preview') },
            ]}
          />
        </div>
      }
    >
      <ErrorBanner error={action.error} />
      {conflict ? (
        <div class="auto-conflict" role="alert">
          <p>
            <strong>{t('conflictTitle')}</strong> {t('conflictHelp')}
          </p>
          <h3 class="small">{t('serverText')}</h3>
          <pre class="auto-pre" data-testid="server-text">
            {conflict.content}
          </pre>
          <div class="row">
            <Button onClick={() => loaded.setData(conflict)}>{t('reload')}</Button>
            <Button variant="danger" busy={action.busy} onClick={() => void save(conflict.version)}>
              {t('overwrite')}
            </Button>
          </div>
        </div>
      ) : null}
      {mode === 'edit' && admin ? (
        <Field label={t('content', { name: filename })}>
          <textarea
            class="auto-editor"
            name="content"
            value={text}
            onInput={(e) => {
              setText(e.currentTarget.value);
              setSaved(false);
            }}
          />
        </Field>
      ) : text ? (
        <Markdown text={text} />
      ) : (
        <Empty>{t('empty')}</Empty>
      )}
      {admin ? (
        <div class="row">
          <Button variant="primary" busy={action.busy} disabled={!dirty} onClick={() => void save(version)}>
            {c('save')}
          </Button>
          <span role="status" class="small muted">
            {dirty ? t('unsaved') : saved ? t('saved') : ''}
          </span>
        </div>
      ) : null}
    </Card>
  );
}

export default function Memory() {
  const t = useT(tx);
  const c = useT(common);
  const user = useSession();
  const admin = isAdmin(user);
  const mayRead = isOperator(user);
  const agents = useAgents();
  const [agent, setAgent] = usePickedAgent(agents.data);
  const [selected, setSelected] = useState(MAIN);
  const [newName, setNewName] = useState('');
  const modules = useAsync(
    () => (mayRead ? forAgent(agent, agents.data, () => get<ModuleEntry[]>(`/api/memory/modules${query({ agent: agent === 'main' ? undefined : agent })}`), []) : Promise.resolve([])),
    [agent, agents.data, mayRead],
  );
  const create = useAction();

  if (!mayRead) {
    return (
      <Page title={t('title')}>
        <Notice>{t('noAccess')}</Notice>
      </Page>
    );
  }
  const names = [MAIN, ...(modules.data ?? []).map((m) => m.filename).filter((f) => f !== MAIN)];
  const entry = (f: string) => modules.data?.find((m) => m.filename === f);

  return (
    <Page title={t('title')} actions={<Button onClick={() => void modules.reload()}>{c('refresh')}</Button>}>
      <div class="compact">
        <AgentSelect
          value={agent}
          agents={agents.data}
          onChange={(a) => {
            setAgent(a);
            setSelected(MAIN);
          }}
        />
      </div>
      <ErrorBanner error={modules.error} onRetry={() => void modules.reload()} />
      <div class="auto-split">
        <Card title={t('modules')}>
          {modules.data === undefined && !modules.error ? <Loading /> : null}
          <ul class="auto-list">
            {names.map((f) => (
              <li key={f}>
                <button type="button" class="auto-link" aria-current={f === selected ? 'true' : undefined} onClick={() => setSelected(f)}>
                  {entry(f)?.name ?? f.replace(/^modules\//, '').replace(/\.md$/i, '')}
                </button>
                {entry(f) ? (
                  <span class="small muted">
                    {' '}
                    · {t('lines', { n: entry(f)!.lines })} · {entry(f)!.size}
                  </span>
                ) : null}
              </li>
            ))}
          </ul>
          {admin ? (
            <form
              onSubmit={(e) => void (async () => {
                e.preventDefault();
                const raw = newName.trim().replace(/^modules\//, '');
                const filename = `modules/${/\.md$/i.test(raw) ? raw : `${raw}.md`}`;
                // Based on the empty text: an existing module of that name is refused, not overwritten.
                const ok = await create.run(() => put(pathOf(filename, agent), { content: '', base_version: EMPTY_VERSION }));
                if (ok) {
                  setNewName('');
                  await modules.reload();
                  setSelected(filename);
                }
              })()}
            >
              <h3 class="small">{t('newModule')}</h3>
              <ErrorBanner error={create.error} />
              <Field label={t('newName')}>
                <input name="new-module" required value={newName} placeholder="people/alice.md" onInput={(e) => setNewName(e.currentTarget.value)} />
              </Field>
              <Button type="submit" busy={create.busy}>
                {t('create')}
              </Button>
            </form>
          ) : null}
        </Card>
        <div>{selected && agent ? <Editor key={`${agent}:${selected}`} filename={selected} agent={agent} admin={admin} onSaved={() => void modules.reload()} /> : <Empty>{t('pick')}</Empty>}</div>
      </div>
    </Page>
  );
}
