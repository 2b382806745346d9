import { useState } from 'preact/hooks';
import type { UserInfo } from '../../../schemas/index.js';
import { put } from '../api/client';
import { formatTime, language, texts, useT, type Lang } from '../i18n';
import { logout, session, useSession } from '../session';
import { useStore } from '../store';
import { theme, type Theme } from '../theme';
import { useAction } from '../ui/async';
import { common } from '../ui/common-texts';
import { Button, Card, ErrorBanner, Field, Loading, Notice, Page } from '../ui/components';
import { allAgents } from './admin/agent-picker';
import { TwoFactorCard } from './admin/two-factor-card';
import { roleText } from './admin/users-texts';
import './admin.css';

const s = texts({
  en: {
    title: 'Profile',
    account: 'Account',
    username: 'Username',
    role: 'Role',
    agents: 'Agents',
    allAgents: 'All agents',
    since: 'Created',
    displayName: 'Display name',
    nameSaved: 'Display name saved.',
    password: 'Password',
    oldPassword: 'Current password',
    newPassword: 'New password',
    repeat: 'Repeat the new password',
    minLength: 'At least 8 characters',
    tooShort: 'The new password must be at least 8 characters long.',
    mismatch: 'The two new passwords differ.',
    change: 'Change password',
    changeNote: 'Every session of this account ends, this one too: you sign in again with the new password.',
    preferences: 'Preferences',
    language: 'Language',
    theme: 'Theme',
    system: 'System',
    light: 'Light',
    dark: 'Dark',
    prefsNote: 'Kept in this browser.',
    tokenAdmin: 'You are signed in with the API token: it has no user record, so there is no profile to change.',
  },
  ru: {
    title: 'Профиль',
    account: 'Учётная запись',
    username: 'Имя пользователя',
    role: 'Роль',
    agents: 'Агенты',
    allAgents: 'Все агенты',
    since: 'Создана',
    displayName: 'Отображаемое имя',
    nameSaved: 'Отображаемое имя сохранено.',
    password: 'Пароль',
    oldPassword: 'Текущий пароль',
    newPassword: 'Новый пароль',
    repeat: 'Повторите новый пароль',
    minLength: 'Не менее 8 символов',
    tooShort: 'Новый пароль должен быть не короче 8 символов.',
    mismatch: 'Новые пароли не совпадают.',
    change: 'Сменить пароль',
    changeNote: 'Все сеансы этой учётной записи завершатся, включая текущий: войдите снова с новым паролем.',
    preferences: 'Предпочтения',
    language: 'Язык',
    theme: 'Тема',
    system: 'Системная',
    light: 'Светлая',
    dark: 'Тёмная',
    prefsNote: 'Хранится в этом браузере.',
    tokenAdmin: 'Вы вошли по API-токену: у него нет учётной записи, поэтому менять в профиле нечего.',
  },
});

function NameCard({ me }: { me: UserInfo }) {
  const t = useT(s);
  const c = useT(common);
  const [name, setName] = useState(me.display_name);
  const [done, setDone] = useState(false);
  const action = useAction();
  const submit = (e: Event) => {
    e.preventDefault();
    setDone(false);
    void action.run(async () => {
      session.set(await put<UserInfo>('/api/auth/profile', { display_name: name.trim() }));
      setDone(true);
    });
  };
  return (
    <form class="narrow-form" onSubmit={submit}>
      <ErrorBanner error={action.error} />
      {done ? <Notice>{t('nameSaved')}</Notice> : null}
      <Field label={t('displayName')}>
        <input name="display_name" maxLength={128} value={name} onInput={(e) => setName(e.currentTarget.value)} />
      </Field>
      <Button type="submit" variant="primary" busy={action.busy}>
        {c('save')}
      </Button>
    </form>
  );
}

function PasswordCard() {
  const t = useT(s);
  const [old, setOld] = useState('');
  const [next, setNext] = useState('');
  const [repeat, setRepeat] = useState('');
  const action = useAction();
  const submit = (e: Event) => {
    e.preventDefault();
    void action.run(async () => {
      if (next.length < 8) throw new Error(t('tooShort'));
      if (next !== repeat) throw new Error(t('mismatch'));
      await put('/api/auth/profile', { old_password: old, new_password: next });
      // The server ended every session of the account; the login page follows.
      await logout();
    });
  };
  return (
    <Card title={t('password')}>
      <form class="narrow-form" onSubmit={submit}>
        <p class="muted">{t('changeNote')}</p>
        <ErrorBanner error={action.error} />
        <Field label={t('oldPassword')}>
          <input name="old_password" type="password" autoComplete="current-password" required value={old} onInput={(e) => setOld(e.currentTarget.value)} />
        </Field>
        <Field label={t('newPassword')} hint={t('minLength')}>
          <input name="new_password" type="password" autoComplete="new-password" required minLength={8} value={next} onInput={(e) => setNext(e.currentTarget.value)} />
        </Field>
        <Field label={t('repeat')}>
          <input name="repeat_password" type="password" autoComplete="new-password" required minLength={8} value={repeat} onInput={(e) => setRepeat(e.currentTarget.value)} />
        </Field>
        <Button type="submit" variant="primary" busy={action.busy}>
          {t('change')}
        </Button>
      </form>
    </Card>
  );
}

function PreferencesCard() {
  const t = useT(s);
  const lang = useStore(language);
  const current = useStore(theme);
  return (
    <Card title={t('preferences')}>
      <div class="narrow-form">
        <Field label={t('language')}>
          <select name="language" value={lang} onChange={(e) => language.set(e.currentTarget.value as Lang)}>
            <option value="en">English</option>
            <option value="ru">Русский</option>
          </select>
        </Field>
        <Field label={t('theme')} hint={t('prefsNote')}>
          <select name="theme" value={current} onChange={(e) => theme.set(e.currentTarget.value as Theme)}>
            <option value="system">{t('system')}</option>
            <option value="light">{t('light')}</option>
            <option value="dark">{t('dark')}</option>
          </select>
        </Field>
      </div>
    </Card>
  );
}

export default function Profile() {
  const t = useT(s);
  const r = useT(roleText);
  const me = useSession();
  if (!me) return <Loading />;
  const tokenAdmin = me.username === 'api-token' && me.created_at === 0;
  return (
    <Page title={t('title')}>
      <div class="stack">
        <Card title={t('account')}>
          <dl class="kv">
            <dt>{t('username')}</dt>
            <dd>{me.username}</dd>
            <dt>{t('role')}</dt>
            <dd>{r(me.role)}</dd>
            <dt>{t('agents')}</dt>
            <dd>{allAgents(me.allowed_agents) ? t('allAgents') : me.allowed_agents.join(', ')}</dd>
            <dt>{t('since')}</dt>
            <dd>{formatTime(me.created_at || null)}</dd>
          </dl>
          {tokenAdmin ? <Notice>{t('tokenAdmin')}</Notice> : <NameCard me={me} />}
        </Card>
        {tokenAdmin ? null : (
          <>
            <PasswordCard />
            <TwoFactorCard me={me} />
          </>
        )}
        <PreferencesCard />
      </div>
    </Page>
  );
}
