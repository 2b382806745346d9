import { useState } from 'preact/hooks';
import { get, post } from '../../api/client';
import { texts, useT } from '../../i18n';
import { useAction } from '../../ui/async';
import { Button, Card, ErrorBanner, Field, Notice } from '../../ui/components';

const s = texts({
  en: {
    title: 'Export and import',
    intro: 'Cron jobs, webhooks and users as one JSON file. Passwords, 2FA secrets and webhook secrets are never exported: imported users need a new password.',
    export: 'Download export',
    exported: 'Export downloaded: {cron} cron jobs, {hooks} webhooks, {users} users.',
    file: 'Export file to import (JSON)',
    import: 'Import',
    imported: 'Imported: {cron} cron jobs, {hooks} webhooks, {users} users added; {skipped} already existing skipped.',
    notJson: 'The file is not valid JSON: {error}',
    pick: 'Choose a file first.',
  },
  ru: {
    title: 'Экспорт и импорт',
    intro: 'Cron-задания, вебхуки и пользователи одним файлом JSON. Пароли, секреты 2FA и секреты вебхуков не экспортируются: импортированным пользователям нужен новый пароль.',
    export: 'Скачать экспорт',
    exported: 'Экспорт скачан: cron-заданий {cron}, вебхуков {hooks}, пользователей {users}.',
    file: 'Файл экспорта для импорта (JSON)',
    import: 'Импортировать',
    imported: 'Импортировано: cron-заданий {cron}, вебхуков {hooks}, пользователей {users}; пропущено уже существующих: {skipped}.',
    notJson: 'Файл не является корректным JSON: {error}',
    pick: 'Сначала выберите файл.',
  },
});

interface ExportData {
  cron_jobs: unknown[];
  webhooks: unknown[];
  users: unknown[];
}
interface ImportResult {
  cron_jobs_added: number;
  webhooks_added: number;
  users_added: number;
  skipped: number;
}

/** A download through a Blob object URL and an `<a download>`: a navigation, which the CSP allows. */
function download(name: string, text: string): void {
  const url = URL.createObjectURL(new Blob([text], { type: 'application/json' }));
  const a = document.createElement('a');
  a.href = url;
  a.download = name;
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}

export function PortabilityCard() {
  const t = useT(s);
  const exporting = useAction();
  const importing = useAction();
  const [file, setFile] = useState<File | null>(null);
  const [exported, setExported] = useState('');
  const [imported, setImported] = useState('');

  const doExport = () => {
    setExported('');
    void exporting.run(async () => {
      const data = await get<ExportData>('/api/export');
      download(`svc-export-${new Date().toISOString().slice(0, 10)}.json`, JSON.stringify(data, null, 2));
      setExported(t('exported', { cron: data.cron_jobs.length, hooks: data.webhooks.length, users: data.users.length }));
    });
  };

  const doImport = (e: Event) => {
    e.preventDefault();
    setImported('');
    void importing.run(async () => {
      if (!file) throw new Error(t('pick'));
      const text = await file.text();
      let data: unknown;
      try {
        data = JSON.parse(text);
      } catch (err) {
        throw new Error(t('notJson', { error: err instanceof Error ? err.message : String(err) }));
      }
      const r = await post<ImportResult>('/api/import', data);
      setImported(t('imported', { cron: r.cron_jobs_added, hooks: r.webhooks_added, users: r.users_added, skipped: r.skipped }));
    });
  };

  return (
    <Card title={t('title')}>
      <p class="muted">{t('intro')}</p>
      <ErrorBanner error={exporting.error} />
      {exported ? <Notice>{exported}</Notice> : null}
      <Button onClick={doExport} busy={exporting.busy}>
        {t('export')}
      </Button>
      <form class="narrow-form import-form" onSubmit={doImport}>
        <ErrorBanner error={importing.error} />
        {imported ? <Notice>{imported}</Notice> : null}
        <Field label={t('file')}>
          <input class="import-file" type="file" name="import_file" accept="application/json,.json" required onChange={(e) => setFile(e.currentTarget.files?.[0] ?? null)} />
        </Field>
        <Button type="submit" variant="primary" busy={importing.busy}>
          {t('import')}
        </Button>
      </form>
    </Card>
  );
}
