import type { UserInfo } from '../../../schemas/index.js';
import { del, get, post, put, seg } from '../api/client';
import { useT } from '../i18n';
import { isAdmin, useSession } from '../session';
import { useAction, useAsync } from '../ui/async';
import { common } from '../ui/common-texts';
import { Badge, Button, Empty, ErrorBanner, Loading, Notice, Page, Table, useConfirm } from '../ui/components';
import { allAgents } from './admin/agent-picker';
import { UserForm, type UserDraft } from './admin/user-form';
import { useState } from 'preact/hooks';
import { roleText, usersText } from './admin/users-texts';
import './admin.css';

export default function Users() {
  const t = useT(usersText);
  const me = useSession();
  if (!isAdmin(me)) {
    return (
      <Page title={t('title')}>
        <Notice>{t('adminsOnly')}</Notice>
      </Page>
    );
  }
  return <UsersAdmin me={me?.username ?? ''} />;
}

function UsersAdmin({ me }: { me: string }) {
  const t = useT(usersText);
  const c = useT(common);
  const r = useT(roleText);
  const users = useAsync(() => get<UserInfo[]>('/api/users'), []);
  const action = useAction();
  const [confirmEl, ask] = useConfirm();
  const [editing, setEditing] = useState<UserInfo | 'new' | null>(null);
  const [done, setDone] = useState('');

  const save = async (draft: UserDraft): Promise<boolean> => {
    setDone('');
    if (editing === 'new') {
      const ok = await action.run(() => post('/api/users', draft.create));
      if (ok) setDone(t('created', { name: draft.create.username }));
      return ok && (await users.reload(), true);
    }
    if (editing === null) return false;
    const name = editing.username;
    const ok = Object.keys(draft.update).length === 0 || (await action.run(() => put(`/api/users/${seg(name)}`, draft.update)));
    if (ok) setDone(t('updated', { name }));
    return ok && (await users.reload(), true);
  };

  const remove = async (u: UserInfo) => {
    setDone('');
    if (!(await ask(t('confirmDelete', { name: u.username })))) return;
    if (await action.run(() => del(`/api/users/${seg(u.username)}`))) {
      setDone(t('deleted', { name: u.username }));
      await users.reload();
    }
  };

  return (
    <Page
      title={t('title')}
      actions={
        <Button variant="primary" onClick={() => (action.clear(), setEditing('new'))}>
          {t('add')}
        </Button>
      }
    >
      {confirmEl}
      {editing === null ? <ErrorBanner error={action.error} /> : null}
      {done ? <Notice>{done}</Notice> : null}
      <ErrorBanner error={users.error} onRetry={() => void users.reload()} />
      {users.loading && !users.data ? <Loading /> : null}
      {users.data && users.data.length === 0 ? <Empty /> : null}
      {users.data && users.data.length > 0 ? (
        <Table label={t('list')} head={[t('username'), t('displayName'), t('role'), t('agents'), t('active'), t('twoFactor'), c('actions')]}>
          {users.data.map((u) => (
            <tr key={u.username}>
              <td>
                <strong>{u.username}</strong>
                {u.username === me ? <span class="muted"> ({t('you')})</span> : null}
              </td>
              <td>{u.display_name || '—'}</td>
              <td>
                <Badge tone={u.role === 'admin' ? 'info' : 'neutral'}>{r(u.role)}</Badge>
              </td>
              <td>{allAgents(u.allowed_agents) ? t('all') : u.allowed_agents.join(', ')}</td>
              <td>{u.active ? <Badge tone="ok">{c('yes')}</Badge> : <Badge tone="warn">{t('inactive')}</Badge>}</td>
              <td>{u.totp_enabled ? <Badge tone="ok">{t('on')}</Badge> : <span class="muted">{t('off')}</span>}</td>
              <td>
                <div class="row nowrap">
                  <Button aria-label={t('editUser', { name: u.username })} onClick={() => (action.clear(), setEditing(u))}>
                    {c('edit')}
                  </Button>
                  <Button variant="danger" aria-label={t('deleteUser', { name: u.username })} onClick={() => void remove(u)}>
                    {c('delete')}
                  </Button>
                </div>
              </td>
            </tr>
          ))}
        </Table>
      ) : null}
      {editing !== null ? <UserForm user={editing === 'new' ? null : editing} busy={action.busy} error={action.error} onSave={save} onClose={() => setEditing(null)} /> : null}
    </Page>
  );
}
