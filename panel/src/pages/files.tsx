import { useRef, useState } from 'preact/hooks';
import { api, del, get, post, query } from '../api/client';
import { formatBytes, formatTime, texts, useT } from '../i18n';
import { isAdmin, isOperator, useSession } from '../session';
import { useAction, useAsync } from '../ui/async';
import { common } from '../ui/common-texts';
import { Button, Card, ErrorBanner, Field, Modal, Notice, Page, Table, useConfirm } from '../ui/components';
import './automation.css';
import { AgentSelect, forAgent, useAgents, usePickedAgent } from './agent-pick';
import { ListOf } from '../ui/list-of';

/*
 * An agent's files (WIRE.md §2): browse folders with breadcrumbs, upload into the open folder
 * (`/upload?agent=&relative_path=`, operators too, as attaching a file to a chat is theirs), download
 * through a short-lived signed link, and, for admins, new folders and deletion.
 */

const tx = texts({
  en: {
    title: 'Files',
    noAccess: 'Your role cannot browse files.',
    root: 'Files',
    crumbs: 'Folder path',
    listing: 'Folder contents',
    size: 'Size',
    modified: 'Modified',
    type: 'Type',
    folder: 'folder',
    upload: 'Upload',
    chooseFile: 'File to upload',
    mkdir: 'New folder',
    folderName: 'Folder name',
    download: 'Download',
    open: 'Open folder',
    deleteQ: 'Delete "{name}"? A folder is deleted with everything in it.',
    uploaded: 'Uploaded {name}',
    empty: 'This folder is empty',
    up: 'Up one level',
  },
  ru: {
    title: 'Файлы',
    noAccess: 'Ваша роль не может просматривать файлы.',
    root: 'Файлы',
    crumbs: 'Путь к папке',
    listing: 'Содержимое папки',
    size: 'Размер',
    modified: 'Изменён',
    type: 'Тип',
    folder: 'папка',
    upload: 'Загрузить',
    chooseFile: 'Файл для загрузки',
    mkdir: 'Новая папка',
    folderName: 'Имя папки',
    download: 'Скачать',
    open: 'Открыть папку',
    deleteQ: 'Удалить «{name}»? Папка удаляется со всем содержимым.',
    uploaded: 'Загружен {name}',
    empty: 'Папка пуста',
    up: 'На уровень выше',
  },
});

interface Entry {
  name: string;
  path: string;
  size: number;
  mime: string;
  modified: number;
  isDir: boolean;
}

const join = (dir: string, name: string) => (dir ? `${dir}/${name}` : name);

export default function Files() {
  const t = useT(tx);
  const c = useT(common);
  const user = useSession();
  const admin = isAdmin(user);
  const operator = isOperator(user);
  const agents = useAgents();
  const [agent, setAgent] = usePickedAgent(agents.data);
  const [dir, setDir] = useState('');
  const list = useAsync(() => (operator ? forAgent(agent, agents.data, () => get<Entry[]>(`/api/files/list${query({ agent, path: dir })}`), []) : Promise.resolve([])), [agent, agents.data, dir, operator]);
  const action = useAction();
  const [notice, setNotice] = useState<string | null>(null);
  const [mkdirOpen, setMkdirOpen] = useState(false);
  const [folder, setFolder] = useState('');
  const fileInput = useRef<HTMLInputElement>(null);
  const [confirmEl, ask] = useConfirm();

  if (!operator) {
    return (
      <Page title={t('title')}>
        <Notice>{t('noAccess')}</Notice>
      </Page>
    );
  }

  const parts = dir ? dir.split('/') : [];
  const write = async (fn: () => Promise<unknown>, done?: string) => {
    setNotice(null);
    if (await action.run(fn)) {
      if (done) setNotice(done);
      await list.reload();
      return true;
    }
    return false;
  };
  const upload = async (file: File) => {
    const form = new FormData();
    form.append('file', file, file.name);
    await write(() => api('POST', `/upload${query({ agent, relative_path: dir || undefined })}`, form), t('uploaded', { name: file.name }));
    if (fileInput.current) fileInput.current.value = '';
  };
  const download = (e: Entry) =>
    action.run(async () => {
      const { url } = await post<{ url: string }>('/api/files/sign-url', { agent, relative_path: e.path, ttl: 300 });
      const a = document.createElement('a');
      a.href = url;
      a.download = e.name;
      a.rel = 'noopener';
      document.body.appendChild(a);
      a.click();
      a.remove();
    });

  return (
    <Page
      title={t('title')}
      actions={
        <>
          <Button onClick={() => void list.reload()}>{c('refresh')}</Button>
          {admin ? <Button onClick={() => setMkdirOpen(true)}>{t('mkdir')}</Button> : null}
        </>
      }
    >
      {confirmEl}
      <div class="compact">
        <AgentSelect
          value={agent}
          agents={agents.data}
          onChange={(a) => {
            setAgent(a);
            setDir('');
          }}
        />
      </div>
      <ErrorBanner error={action.error ?? list.error} onRetry={list.error ? () => void list.reload() : undefined} />
      {notice ? <Notice>{notice}</Notice> : null}
      <Card>
        <nav aria-label={t('crumbs')}>
          <ol class="auto-crumbs">
            <li>
              <button type="button" class="auto-link" onClick={() => setDir('')} aria-current={dir === '' ? 'page' : undefined}>
                {t('root')}
              </button>
            </li>
            {parts.map((p, i) => {
              const to = parts.slice(0, i + 1).join('/');
              return (
                <li key={to}>
                  <button type="button" class="auto-link" onClick={() => setDir(to)} aria-current={to === dir ? 'page' : undefined}>
                    {p}
                  </button>
                </li>
              );
            })}
          </ol>
        </nav>
        <div class="row">
          <Field label={t('chooseFile')}>
            <input
              ref={fileInput}
              type="file"
              name="file"
              onChange={(e) => {
                const f = e.currentTarget.files?.[0];
                if (f) void upload(f);
              }}
            />
          </Field>
        </div>
        <ListOf list={list} empty={t('empty')}>
          {(items) => (
            <Table label={t('listing')} head={[c('name'), t('size'), t('type'), t('modified'), c('actions')]}>
              {dir ? (
                <tr>
                  <td>
                    <button type="button" class="auto-link" onClick={() => setDir(parts.slice(0, -1).join('/'))}>
                      .. ({t('up')})
                    </button>
                  </td>
                  <td />
                  <td />
                  <td />
                  <td />
                </tr>
              ) : null}
              {items.map((e) => (
                <tr key={e.path}>
                  <td>
                    {e.isDir ? (
                      <button type="button" class="auto-link" onClick={() => setDir(e.path)} aria-label={`${t('open')}: ${e.name}`}>
                        {e.name}/
                      </button>
                    ) : (
                      e.name
                    )}
                  </td>
                  <td>{e.isDir ? '—' : formatBytes(e.size)}</td>
                  <td>{e.isDir ? t('folder') : e.mime}</td>
                  <td>{formatTime(e.modified)}</td>
                  <td>
                    <div class="auto-actions">
                      {!e.isDir ? (
                        <Button onClick={() => void download(e)} aria-label={`${t('download')}: ${e.name}`}>
                          {t('download')}
                        </Button>
                      ) : null}
                      {admin ? (
                        <Button
                          variant="danger"
                          aria-label={`${c('delete')}: ${e.name}`}
                          onClick={() => void (async () => {
                            if (await ask(t('deleteQ', { name: e.name }))) await write(() => del('/api/files', { agent, relative_path: e.path }));
                          })()}
                        >
                          {c('delete')}
                        </Button>
                      ) : null}
                    </div>
                  </td>
                </tr>
              ))}
            </Table>
          )}
        </ListOf>
      </Card>
      {mkdirOpen ? (
        <Modal title={t('mkdir')} open onClose={() => setMkdirOpen(false)}>
          <form
            onSubmit={(ev) => void (async () => {
              ev.preventDefault();
              if (await write(() => post('/api/files/mkdir', { agent, relative_path: join(dir, folder.trim()) }))) {
                setFolder('');
                setMkdirOpen(false);
              }
            })()}
          >
            <ErrorBanner error={action.error} />
            <Field label={t('folderName')}>
              <input name="folder" required value={folder} onInput={(e) => setFolder(e.currentTarget.value)} />
            </Field>
            <div class="modal-foot">
              <Button onClick={() => setMkdirOpen(false)}>{c('cancel')}</Button>
              <Button type="submit" variant="primary" busy={action.busy}>
                {c('create')}
              </Button>
            </div>
          </form>
        </Modal>
      ) : null}
    </Page>
  );
}
