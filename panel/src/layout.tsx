import type { ComponentChildren } from 'preact';
import { useLocation } from 'preact-iso';
import { useEffect, useState } from 'preact/hooks';
import { adminSocket, type SocketState } from './api/socket';
import { language, texts, useT, type Lang } from './i18n';
import { isAdmin, logout, useSession } from './session';
import { useStore } from './store';
import { instanceName, loadInstanceName } from './ui/instance-name';
import { theme, type Theme } from './theme';
import { unreadCount } from './unread';

const nav = texts({
  en: {
    dashboard: 'Dashboard',
    agents: 'Agents',
    chat: 'Chat',
    tasks: 'Tasks',
    workflows: 'Workflows',
    cron: 'Cron jobs',
    webhooks: 'Webhooks',
    notifications: 'Notifications',
    memory: 'Memory',
    skills: 'Skills',
    files: 'Files',
    users: 'Users',
    audit: 'Audit log',
    settings: 'Settings',
    profile: 'Profile',
    logout: 'Log out',
    menu: 'Menu',
    main: 'Main navigation',
    language: 'Language',
    theme: 'Theme',
    system: 'System',
    light: 'Light',
    dark: 'Dark',
    unread: '{n} unread notifications',
    offline: 'Live updates paused, reconnecting…',
    skip: 'Skip to content',
  },
  ru: {
    dashboard: 'Обзор',
    agents: 'Агенты',
    chat: 'Чат',
    tasks: 'Задачи',
    workflows: 'Воркфлоу',
    cron: 'Cron-задания',
    webhooks: 'Вебхуки',
    notifications: 'Уведомления',
    memory: 'Память',
    skills: 'Навыки',
    files: 'Файлы',
    users: 'Пользователи',
    audit: 'Журнал аудита',
    settings: 'Настройки',
    profile: 'Профиль',
    logout: 'Выйти',
    menu: 'Меню',
    main: 'Основная навигация',
    language: 'Язык',
    theme: 'Тема',
    system: 'Системная',
    light: 'Светлая',
    dark: 'Тёмная',
    unread: 'Непрочитанных уведомлений: {n}',
    offline: 'Живые обновления приостановлены, переподключение…',
    skip: 'К содержимому',
  },
});

type NavKey = 'dashboard' | 'agents' | 'chat' | 'tasks' | 'workflows' | 'cron' | 'webhooks' | 'notifications' | 'memory' | 'skills' | 'files' | 'users' | 'audit' | 'settings';
const LINKS: { href: string; key: NavKey; admin?: boolean }[] = [
  { href: '/', key: 'dashboard' },
  { href: '/agents', key: 'agents' },
  { href: '/chat', key: 'chat' },
  { href: '/tasks', key: 'tasks' },
  { href: '/workflows', key: 'workflows' },
  { href: '/cron', key: 'cron' },
  { href: '/webhooks', key: 'webhooks' },
  { href: '/notifications', key: 'notifications' },
  { href: '/memory', key: 'memory' },
  { href: '/skills', key: 'skills' },
  { href: '/user-files', key: 'files' },
  { href: '/users', key: 'users', admin: true },
  { href: '/audit', key: 'audit', admin: true },
  { href: '/settings', key: 'settings' },
];

function isCurrent(href: string, path: string): boolean {
  return href === '/' ? path === '/' : path === href || path.startsWith(`${href}/`);
}

export function Layout({ children }: { children: ComponentChildren }) {
  const t = useT(nav);
  const user = useSession();
  const { path } = useLocation();
  const lang = useStore(language);
  const currentTheme = useStore(theme);
  const unread = useStore(unreadCount);
  const [open, setOpen] = useState(false);
  const instance = useStore(instanceName);
  const [live, setLive] = useState<SocketState>('connecting');
  useEffect(() => adminSocket.onState(setLive), []);
  useEffect(() => setOpen(false), [path]);
  useEffect(loadInstanceName, []);
  return (
    <div class={`shell ${open ? 'nav-open' : ''}`}>
      <a class="skip" href="#main">
        {t('skip')}
      </a>
      <header class="topbar">
        <button type="button" class="btn btn-ghost menu-toggle" aria-expanded={open} aria-controls="nav" onClick={() => setOpen(!open)}>
          <span aria-hidden="true">☰</span>
          <span class="sr-only">{t('menu')}</span>
        </button>
        <a href="/" class="brand">
          svc{instance ? <span class="instance"> · {instance}</span> : null}
        </a>
        <div class="topbar-tools">
          <a href="/notifications" class="bell" aria-label={t('unread', { n: unread })}>
            <svg aria-hidden="true" viewBox="0 0 24 24" width="20" height="20" fill="none" stroke="currentColor" stroke-width="2" stroke-linecap="round" stroke-linejoin="round">
              <path d="M6 8a6 6 0 0 1 12 0c0 7 3 9 3 9H3s3-2 3-9" />
              <path d="M10.3 21a1.94 1.94 0 0 0 3.4 0" />
            </svg>
            {unread > 0 ? <span class="bell-count">{unread > 99 ? '99+' : unread}</span> : null}
          </a>
          <label class="compact">
            <span class="sr-only">{t('language')}</span>
            <select value={lang} onChange={(e) => language.set((e.currentTarget as HTMLSelectElement).value as Lang)}>
              <option value="en">EN</option>
              <option value="ru">RU</option>
            </select>
          </label>
          <label class="compact">
            <span class="sr-only">{t('theme')}</span>
            <select value={currentTheme} onChange={(e) => theme.set((e.currentTarget as HTMLSelectElement).value as Theme)}>
              <option value="system">{t('system')}</option>
              <option value="light">{t('light')}</option>
              <option value="dark">{t('dark')}</option>
            </select>
          </label>
          <a href="/profile" class="user-link">
            {user?.display_name || user?.username}
            <span class="muted"> ({user?.role})</span>
          </a>
          <button type="button" class="btn btn-ghost" onClick={() => void logout()}>
            {t('logout')}
          </button>
        </div>
      </header>
      <nav id="nav" class="sidebar" aria-label={t('main')}>
        <ul>
          {LINKS.filter((l) => !l.admin || isAdmin(user)).map((l) => (
            <li key={l.href}>
              <a href={l.href} aria-current={isCurrent(l.href, path) ? 'page' : undefined}>
                {t(l.key)}
                {l.key === 'notifications' && unread > 0 ? <span class="nav-count">{unread}</span> : null}
              </a>
            </li>
          ))}
        </ul>
      </nav>
      <main id="main" class="content" tabIndex={-1}>
        {live === 'closed' ? (
          <p class="banner banner-warn" role="status">
            {t('offline')}
          </p>
        ) : null}
        {children}
      </main>
    </div>
  );
}
