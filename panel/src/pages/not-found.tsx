import { texts, useT } from '../i18n';
import { Page } from '../ui/components';

const s = texts({
  en: { title: 'Page not found', back: 'Back to the dashboard' },
  ru: { title: 'Страница не найдена', back: 'На главную' },
});

export default function NotFound() {
  const t = useT(s);
  return (
    <Page title={t('title')}>
      <p>
        <a href="/">{t('back')}</a>
      </p>
    </Page>
  );
}
