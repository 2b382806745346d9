import { useState } from 'preact/hooks';
import type { UserInfo } from '../../../../schemas/index.js';
import { texts, useT } from '../../i18n';
import { common } from '../../ui/common-texts';
import { Button, ErrorBanner, Field, Modal } from '../../ui/components';
import { AgentPicker, allAgents } from './agent-picker';
import { roleText } from './users-texts';

const s = texts({
  en: {
    newUser: 'New user',
    editUser: 'Edit user {name}',
    username: 'Username',
    usernameHint: 'Letters, digits and . _ @ -',
    displayName: 'Display name',
    password: 'Password',
    passwordHint: 'At least 8 characters',
    newPassword: 'New password',
    newPasswordHint: 'Leave empty to keep the current one; at least 8 characters',
    role: 'Role',
    active: 'Active (may sign in)',
    totpOff: 'Turn off two-factor authentication (the user lost their authenticator)',
    tooShort: 'The password must be at least 8 characters long.',
  },
  ru: {
    newUser: 'Новый пользователь',
    editUser: 'Изменить пользователя {name}',
    username: 'Имя пользователя',
    usernameHint: 'Буквы, цифры и . _ @ -',
    displayName: 'Отображаемое имя',
    password: 'Пароль',
    passwordHint: 'Не менее 8 символов',
    newPassword: 'Новый пароль',
    newPasswordHint: 'Оставьте пустым, чтобы не менять; не менее 8 символов',
    role: 'Роль',
    active: 'Активен (может входить)',
    totpOff: 'Отключить двухфакторную аутентификацию (пользователь потерял аутентификатор)',
    tooShort: 'Пароль должен быть не короче 8 символов.',
  },
});

type Role = UserInfo['role'];
const ROLES: Role[] = ['admin', 'operator', 'viewer'];

export interface UserDraft {
  create: { username: string; password: string; role: Role; display_name: string; allowed_agents: string[] };
  update: { role?: Role; display_name?: string; allowed_agents?: string[]; active?: boolean; password?: string; totp_enabled?: false };
}

const sameList = (a: readonly string[], b: readonly string[]) => (allAgents(a) && allAgents(b)) || (a.length === b.length && a.every((x) => b.includes(x)));

/** The create or edit dialog of a user; `onSave` resolves true when the server took it. */
export function UserForm({ user, busy, error, onSave, onClose }: { user: UserInfo | null; busy: boolean; error: Error | null; onSave: (d: UserDraft) => Promise<boolean>; onClose: () => void }) {
  const t = useT(s);
  const c = useT(common);
  const r = useT(roleText);
  const [username, setUsername] = useState(user?.username ?? '');
  const [displayName, setDisplayName] = useState(user?.display_name ?? '');
  const [password, setPassword] = useState('');
  const [role, setRole] = useState<Role>(user?.role ?? 'viewer');
  const [agents, setAgents] = useState<string[]>(user ? [...user.allowed_agents] : []);
  const [active, setActive] = useState(user?.active ?? true);
  const [totpOff, setTotpOff] = useState(false);
  const [local, setLocal] = useState<Error | null>(null);

  const submit = async (e: Event) => {
    e.preventDefault();
    setLocal(null);
    if ((user === null || password !== '') && password.length < 8) {
      setLocal(new Error(t('tooShort')));
      return;
    }
    const allowed = allAgents(agents) ? [] : agents;
    const update: UserDraft['update'] = {};
    if (user) {
      if (role !== user.role) update.role = role;
      if (displayName !== user.display_name) update.display_name = displayName;
      if (!sameList(allowed, user.allowed_agents)) update.allowed_agents = allowed;
      if (active !== user.active) update.active = active;
      if (password !== '') update.password = password;
      if (totpOff) update.totp_enabled = false;
    }
    const ok = await onSave({ create: { username: username.trim(), password, role, display_name: displayName, allowed_agents: allowed }, update });
    if (ok) onClose();
  };

  return (
    <Modal title={user ? t('editUser', { name: user.username }) : t('newUser')} open onClose={onClose}>
      <form class="user-form" onSubmit={(e) => void submit(e)}>
        <ErrorBanner error={local ?? error} />
        {user === null ? (
          <Field label={t('username')} hint={t('usernameHint')}>
            <input name="username" required maxLength={64} pattern="[A-Za-z0-9._@\-]{1,64}" autoComplete="off" value={username} onInput={(e) => setUsername(e.currentTarget.value)} />
          </Field>
        ) : null}
        <Field label={t('displayName')}>
          <input name="display_name" maxLength={128} value={displayName} onInput={(e) => setDisplayName(e.currentTarget.value)} />
        </Field>
        <Field label={user ? t('newPassword') : t('password')} hint={user ? t('newPasswordHint') : t('passwordHint')}>
          <input name="password" type="password" autoComplete="new-password" required={user === null} minLength={8} value={password} onInput={(e) => setPassword(e.currentTarget.value)} />
        </Field>
        <Field label={t('role')}>
          <select name="role" value={role} onChange={(e) => setRole(e.currentTarget.value as Role)}>
            {ROLES.map((x) => (
              <option key={x} value={x}>
                {r(x)}
              </option>
            ))}
          </select>
        </Field>
        <AgentPicker value={agents} onChange={setAgents} />
        {user ? (
          <label class="check">
            <input type="checkbox" name="active" checked={active} onChange={(e) => setActive(e.currentTarget.checked)} />
            {t('active')}
          </label>
        ) : null}
        {user?.totp_enabled ? (
          <label class="check">
            <input type="checkbox" name="totp_off" checked={totpOff} onChange={(e) => setTotpOff(e.currentTarget.checked)} />
            {t('totpOff')}
          </label>
        ) : null}
        <div class="row form-actions">
          <Button onClick={onClose}>{c('cancel')}</Button>
          <Button type="submit" variant="primary" busy={busy}>
            {user ? c('save') : c('create')}
          </Button>
        </div>
      </form>
    </Modal>
  );
}
