import { useState } from 'preact/hooks';
import { language, texts, useT, type Lang } from '../i18n';
import { login, loginWithCode } from '../session';
import { useStore } from '../store';
import { Button, ErrorBanner, Field } from '../ui/components';
import { useAction } from '../ui/async';

const s = texts({
  en: {
    title: 'Sign in to svc',
    username: 'Username',
    password: 'Password',
    signIn: 'Sign in',
    code: 'Code from your authenticator app',
    verify: 'Verify',
    back: 'Back',
    twoFactor: 'Two-factor authentication',
    firstStart: 'First start? The admin password is in ~/.svc/_secrets/.initial_admin_password (svc admin setup makes a new one).',
    language: 'Language',
  },
  ru: {
    title: 'Вход в svc',
    username: 'Имя пользователя',
    password: 'Пароль',
    signIn: 'Войти',
    code: 'Код из приложения-аутентификатора',
    verify: 'Проверить',
    back: 'Назад',
    twoFactor: 'Двухфакторная аутентификация',
    firstStart: 'Первый запуск? Пароль администратора в ~/.svc/_secrets/.initial_admin_password (svc admin setup создаёт новый).',
    language: 'Язык',
  },
});

export function Login() {
  const t = useT(s);
  const lang = useStore(language);
  const [username, setUsername] = useState('');
  const [password, setPassword] = useState('');
  const [code, setCode] = useState('');
  const [temp, setTemp] = useState<string | null>(null);
  const action = useAction();

  const submit = (e: Event) => {
    e.preventDefault();
    void action.run(async () => {
      if (temp === null) {
        const step = await login(username.trim(), password);
        if (step) setTemp(step.temp_token);
      } else {
        await loginWithCode(temp, code.replace(/\s+/g, ''));
      }
    });
  };

  return (
    <main class="login" id="main">
      <form class="card login-card" onSubmit={submit}>
        <h1>{temp === null ? t('title') : t('twoFactor')}</h1>
        <ErrorBanner error={action.error} />
        {temp === null ? (
          <>
            <Field label={t('username')}>
              <input name="username" autoComplete="username" required value={username} onInput={(e) => setUsername(e.currentTarget.value)} />
            </Field>
            <Field label={t('password')}>
              <input name="password" type="password" autoComplete="current-password" required value={password} onInput={(e) => setPassword(e.currentTarget.value)} />
            </Field>
            <Button type="submit" variant="primary" busy={action.busy}>
              {t('signIn')}
            </Button>
            <p class="muted small">{t('firstStart')}</p>
          </>
        ) : (
          <>
            <Field label={t('code')}>
              <input name="code" inputMode="numeric" autoComplete="one-time-code" pattern="[0-9 ]{6,8}" required value={code} onInput={(e) => setCode(e.currentTarget.value)} />
            </Field>
            <div class="row">
              <Button
                onClick={() => {
                  setTemp(null);
                  setCode('');
                  action.clear();
                }}
              >
                {t('back')}
              </Button>
              <Button type="submit" variant="primary" busy={action.busy}>
                {t('verify')}
              </Button>
            </div>
          </>
        )}
        <label class="compact login-lang">
          <span>{t('language')}</span>
          <select value={lang} onChange={(e) => language.set(e.currentTarget.value as Lang)}>
            <option value="en">English</option>
            <option value="ru">Русский</option>
          </select>
        </label>
      </form>
    </main>
  );
}
