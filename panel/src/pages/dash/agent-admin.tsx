import { useState } from 'preact/hooks';
import type { AdminAgent } from '../../../../schemas/index.js';
import { api, del, put, seg } from '../../api/client';
import { useT } from '../../i18n';
import { useAction } from '../../ui/async';
import { Button, Card, Empty, ErrorBanner, Field, useConfirm } from '../../ui/components';
import { Avatar } from './avatar';
import { detailTexts } from './agent-texts';

/* The admin's controls on an agent's page: its avatar and its additional directories. */

export function AvatarCard({ agent, version, onChanged }: { agent: AdminAgent; version: number; onChanged: (a: AdminAgent | null) => void }) {
  const t = useT(detailTexts);
  const [file, setFile] = useState<File | null>(null);
  const [done, setDone] = useState(false);
  const action = useAction();
  const [confirm, ask] = useConfirm();
  const upload = async (e: Event) => {
    e.preventDefault();
    if (!file) return;
    setDone(false);
    const form = new FormData();
    form.append('file', file, file.name);
    let next: AdminAgent | null = null;
    if (await action.run(async () => (next = await api<AdminAgent>('POST', `/api/agents/${seg(agent.name)}/avatar`, form)))) {
      setDone(true);
      setFile(null);
      (e.target as HTMLFormElement).reset();
      onChanged(next);
    }
  };
  const remove = async () => {
    if (!(await ask(t('removeAvatarQ', { name: agent.name })))) return;
    setDone(false);
    if (await action.run(() => del(`/api/agents/${seg(agent.name)}/avatar`))) onChanged(null);
  };
  return (
    <Card title={t('avatar')}>
      {confirm}
      <div class="row">
        <Avatar name={agent.name} has={agent.has_avatar} version={version} large />
        {agent.has_avatar ? null : <span class="muted">{t('noAvatar')}</span>}
      </div>
      <ErrorBanner error={action.error} />
      {done ? (
        <p class="muted" role="status">
          {t('uploaded')}
        </p>
      ) : null}
      <form class="row dash-form" onSubmit={(e) => void upload(e)}>
        <Field label={t('avatarFile')}>
          <input type="file" name="avatar" accept="image/png,image/jpeg,image/gif,image/webp" onChange={(e) => setFile((e.target as HTMLInputElement).files?.[0] ?? null)} />
        </Field>
        <Button type="submit" variant="primary" busy={action.busy} disabled={!file}>
          {t('upload')}
        </Button>
        {agent.has_avatar ? (
          <Button variant="danger" onClick={() => void remove()} busy={action.busy}>
            {t('removeAvatar')}
          </Button>
        ) : null}
      </form>
    </Card>
  );
}

export function DirectoriesCard({ agent, onSaved }: { agent: AdminAgent; onSaved: (a: AdminAgent) => void }) {
  const t = useT(detailTexts);
  const [draft, setDraft] = useState('');
  const [saved, setSaved] = useState(false);
  const action = useAction();
  const save = async (dirs: string[]) => {
    setSaved(false);
    let next: AdminAgent | null = null;
    if (await action.run(async () => (next = await put<AdminAgent>(`/api/agents/${seg(agent.name)}`, { additional_directories: dirs })))) {
      setSaved(true);
      setDraft('');
      if (next) onSaved(next);
    }
  };
  const add = (e: Event) => {
    e.preventDefault();
    const path = draft.trim();
    if (!path) return;
    void save([...agent.additional_directories.filter((d) => d !== path), path]);
  };
  return (
    <Card title={t('dirs')}>
      <p class="muted small">{t('dirsHint')}</p>
      <ErrorBanner error={action.error} />
      {saved && !action.error ? (
        <p class="muted" role="status">
          {t('saved')}
        </p>
      ) : null}
      {agent.additional_directories.length === 0 ? (
        <Empty>{t('noDirs')}</Empty>
      ) : (
        <ul class="dir-list">
          {agent.additional_directories.map((d) => (
            <li key={d}>
              <code>{d}</code>
              <Button variant="ghost" aria-label={t('remove', { path: d })} busy={action.busy} onClick={() => void save(agent.additional_directories.filter((x) => x !== d))}>
                ×
              </Button>
            </li>
          ))}
        </ul>
      )}
      <form class="row dash-form" onSubmit={add}>
        <Field label={t('newDir')}>
          <input name="directory" value={draft} placeholder="/srv/projects/site" onInput={(e) => setDraft((e.target as HTMLInputElement).value)} />
        </Field>
        <Button type="submit" variant="primary" busy={action.busy} disabled={!draft.trim()}>
          {t('add')}
        </Button>
      </form>
    </Card>
  );
}
