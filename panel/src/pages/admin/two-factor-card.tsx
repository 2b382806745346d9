import { useState } from 'preact/hooks';
import type { UserInfo } from '../../../../schemas/index.js';
import { post } from '../../api/client';
import { texts, useT } from '../../i18n';
import { session } from '../../session';
import { useAction } from '../../ui/async';
import { common } from '../../ui/common-texts';
import { Badge, Button, Card, ErrorBanner, Field, Notice } from '../../ui/components';

const s = texts({
  en: {
    title: 'Two-factor authentication',
    on: 'On',
    off: 'Off',
    offIntro: 'With 2FA on, signing in also asks for a code from an authenticator app on your phone.',
    setUp: 'Set up 2FA',
    scan: 'Scan this QR code with your authenticator app, or enter the secret key by hand, then type the 6-digit code it shows.',
    qrAlt: 'QR code to add svc to your authenticator app',
    secret: 'Secret key',
    code: 'Code from your authenticator app',
    verify: 'Turn on 2FA',
    enabled: '2FA is on. Keep the authenticator: you will need it at every sign-in.',
    onIntro: 'To turn 2FA off, confirm with a current code and your password.',
    password: 'Password',
    disable: 'Turn off 2FA',
    disabled: '2FA is off.',
  },
  ru: {
    title: 'Двухфакторная аутентификация',
    on: 'Включена',
    off: 'Выключена',
    offIntro: 'С 2FA при входе нужен ещё и код из приложения-аутентификатора на телефоне.',
    setUp: 'Настроить 2FA',
    scan: 'Отсканируйте QR-код приложением-аутентификатором или введите секретный ключ вручную, затем введите шестизначный код из приложения.',
    qrAlt: 'QR-код для добавления svc в приложение-аутентификатор',
    secret: 'Секретный ключ',
    code: 'Код из приложения-аутентификатора',
    verify: 'Включить 2FA',
    enabled: '2FA включена. Сохраните аутентификатор: он понадобится при каждом входе.',
    onIntro: 'Чтобы выключить 2FA, подтвердите текущим кодом и паролем.',
    password: 'Пароль',
    disable: 'Выключить 2FA',
    disabled: '2FA выключена.',
  },
});

interface Setup {
  secret: string;
  otpauth_uri: string;
  qr_data: string;
}

const digits = (code: string) => code.replace(/\s+/g, '');

/** Own 2FA: setup (QR image and secret, then a code), or turning it off (a code and the password). */
export function TwoFactorCard({ me }: { me: UserInfo }) {
  const t = useT(s);
  const c = useT(common);
  const action = useAction();
  const [setup, setSetup] = useState<Setup | null>(null);
  const [code, setCode] = useState('');
  const [password, setPassword] = useState('');
  const [done, setDone] = useState('');
  const changed = (on: boolean) => session.set({ ...me, totp_enabled: on });

  const start = () => {
    setDone('');
    void action.run(async () => setSetup(await post<Setup>('/api/auth/2fa/setup')));
  };
  const verify = (e: Event) => {
    e.preventDefault();
    void action.run(async () => {
      await post('/api/auth/2fa/verify', { code: digits(code) });
      setSetup(null);
      setCode('');
      setDone(t('enabled'));
      changed(true);
    });
  };
  const disable = (e: Event) => {
    e.preventDefault();
    setDone('');
    void action.run(async () => {
      await post('/api/auth/2fa/disable', { code: digits(code), password });
      setCode('');
      setPassword('');
      setDone(t('disabled'));
      changed(false);
    });
  };

  return (
    <Card title={t('title')} actions={me.totp_enabled ? <Badge tone="ok">{t('on')}</Badge> : <Badge>{t('off')}</Badge>}>
      <ErrorBanner error={action.error} />
      {done ? <Notice>{done}</Notice> : null}
      {me.totp_enabled ? (
        <form class="narrow-form" onSubmit={disable}>
          <p class="muted">{t('onIntro')}</p>
          <Field label={t('code')}>
            <input name="totp_code" inputMode="numeric" autoComplete="one-time-code" pattern="[0-9 ]{6,8}" required value={code} onInput={(e) => setCode(e.currentTarget.value)} />
          </Field>
          <Field label={t('password')}>
            <input name="totp_password" type="password" autoComplete="current-password" required value={password} onInput={(e) => setPassword(e.currentTarget.value)} />
          </Field>
          <Button type="submit" variant="danger" busy={action.busy}>
            {t('disable')}
          </Button>
        </form>
      ) : setup ? (
        <form class="narrow-form stack" onSubmit={verify}>
          <p>{t('scan')}</p>
          <img class="qr" src={setup.qr_data} alt={t('qrAlt')} width={192} height={192} />
          <p>
            {t('secret')}: <code class="secret" data-secret>{setup.secret}</code>
          </p>
          <Field label={t('code')}>
            <input name="totp_code" inputMode="numeric" autoComplete="one-time-code" pattern="[0-9 ]{6,8}" required value={code} onInput={(e) => setCode(e.currentTarget.value)} />
          </Field>
          <div class="row">
            <Button onClick={() => (setSetup(null), setCode(''), action.clear())}>{c('cancel')}</Button>
            <Button type="submit" variant="primary" busy={action.busy}>
              {t('verify')}
            </Button>
          </div>
        </form>
      ) : (
        <>
          <p class="muted">{t('offIntro')}</p>
          <Button variant="primary" onClick={start} busy={action.busy}>
            {t('setUp')}
          </Button>
        </>
      )}
    </Card>
  );
}
