import { useEffect, useState } from 'preact/hooks';
import { get, put } from '../api/client';
import { texts, useT } from '../i18n';
import { isAdmin, isOperator, useSession } from '../session';
import { useStore } from '../store';
import { useAction, useAsync } from '../ui/async';
import { common } from '../ui/common-texts';
import { Button, Card, ErrorBanner, Field, Loading, Notice, Page } from '../ui/components';
import { instanceName } from '../ui/instance-name';
import { ConfigEntries, type Json } from './admin/config-tree';
import { PortabilityCard } from './admin/portability-card';
import { RagCard } from './admin/rag-card';
import './admin.css';

const s = texts({
  en: {
    title: 'Settings',
    instance: 'Instance',
    instanceName: 'Instance name',
    instanceHint: 'Shown in the header and in notifications',
    noName: 'not set',
    renamed: 'Instance renamed.',
    config: 'Configuration',
    configIntro: 'The effective configuration, read-only; every secret is masked. Change it in config.json.',
    configDenied: 'The configuration and RAG settings are visible to operators and admins.',
    expand: 'Expand all',
    collapse: 'Collapse all',
  },
  ru: {
    title: 'Настройки',
    instance: 'Экземпляр',
    instanceName: 'Название экземпляра',
    instanceHint: 'Показывается в заголовке и в уведомлениях',
    noName: 'не задано',
    renamed: 'Экземпляр переименован.',
    config: 'Конфигурация',
    configIntro: 'Действующая конфигурация, только для чтения; все секреты скрыты. Изменяется в config.json.',
    configDenied: 'Конфигурация и настройки RAG доступны операторам и администраторам.',
    expand: 'Развернуть всё',
    collapse: 'Свернуть всё',
  },
});

function InstanceCard({ canWrite }: { canWrite: boolean }) {
  const t = useT(s);
  const c = useT(common);
  const current = useStore(instanceName);
  const [name, setName] = useState(current);
  const [done, setDone] = useState(false);
  const action = useAction();
  useEffect(() => setName(current), [current]);
  const submit = (e: Event) => {
    e.preventDefault();
    setDone(false);
    void action.run(async () => {
      const r = await put<{ instance_name: string }>('/api/system/instance-name', { instance_name: name });
      instanceName.set(r.instance_name);
      setDone(true);
    });
  };
  return (
    <Card title={t('instance')}>
      {canWrite ? (
        <form class="narrow-form" onSubmit={submit}>
          <ErrorBanner error={action.error} />
          {done ? <Notice>{t('renamed')}</Notice> : null}
          <Field label={t('instanceName')} hint={t('instanceHint')}>
            <input name="instance_name" required maxLength={100} value={name} onInput={(e) => setName(e.currentTarget.value)} />
          </Field>
          <Button type="submit" variant="primary" busy={action.busy}>
            {c('save')}
          </Button>
        </form>
      ) : (
        <dl class="kv">
          <dt>{t('instanceName')}</dt>
          <dd>{current || <span class="muted">{t('noName')}</span>}</dd>
        </dl>
      )}
    </Card>
  );
}

function ConfigCard() {
  const t = useT(s);
  const config = useAsync(() => get<{ [k: string]: Json }>('/api/config'), []);
  const toggle = (to: boolean) => {
    for (const d of document.querySelectorAll<HTMLDetailsElement>('.config-tree details')) d.open = to;
  };
  return (
    <Card
      title={t('config')}
      actions={
        config.data ? (
          <div class="row">
            <Button variant="ghost" onClick={() => toggle(true)}>
              {t('expand')}
            </Button>
            <Button variant="ghost" onClick={() => toggle(false)}>
              {t('collapse')}
            </Button>
          </div>
        ) : null
      }
    >
      <p class="muted">{t('configIntro')}</p>
      <ErrorBanner error={config.error} onRetry={() => void config.reload()} />
      {config.loading && !config.data ? <Loading /> : null}
      {config.data ? (
        <div class="config-tree">
          <ConfigEntries value={config.data} />
        </div>
      ) : null}
    </Card>
  );
}

export default function Settings() {
  const t = useT(s);
  const c = useT(common);
  const me = useSession();
  const admin = isAdmin(me);
  return (
    <Page title={t('title')}>
      {!admin ? <Notice>{c('readOnly')}</Notice> : null}
      <div class="stack">
        <InstanceCard canWrite={admin} />
        {isOperator(me) ? (
          <>
            <ConfigCard />
            <RagCard canWrite={admin} />
          </>
        ) : (
          <Notice>{t('configDenied')}</Notice>
        )}
        {admin ? <PortabilityCard /> : null}
      </div>
    </Page>
  );
}
