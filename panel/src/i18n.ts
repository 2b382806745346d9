import { createStore, useStore } from './store';

/*
 * Russian and English. The first choice follows the browser's languages (what it sends as
 * Accept-Language; `uk` reads Russian, as the server does), the switch is remembered in this
 * browser, and every API call sends the chosen language so server-side texts (errors, the dashboard
 * summary, activity) match the page. Each page keeps its own texts beside it (`texts({en, ru})`),
 * so adding a page never touches another page's file.
 */

export type Lang = 'en' | 'ru';
const KEY = 'svc.lang';

function initial(): Lang {
  const saved = localStorage.getItem(KEY);
  if (saved === 'en' || saved === 'ru') return saved;
  for (const l of navigator.languages ?? [navigator.language]) {
    const base = l.toLowerCase().split('-')[0];
    if (base === 'ru' || base === 'uk') return 'ru';
    if (base === 'en') return 'en';
  }
  return 'en';
}

export const language = createStore<Lang>(initial());
language.subscribe((l) => {
  localStorage.setItem(KEY, l);
  document.documentElement.lang = l;
});
document.documentElement.lang = language.get();

export const currentLanguage = (): Lang => language.get();

type Dict = Record<string, string>;

/** `{name}` placeholders filled from vars. */
function fill(s: string, vars?: Record<string, string | number>): string {
  return vars ? s.replace(/\{(\w+)\}/g, (m, k: string) => (k in vars ? String(vars[k]) : m)) : s;
}

/**
 * A page's texts: English is the reference and Russian must have every key (the type says so).
 * `useT(texts)` gives `t(key, vars)` in the current language.
 */
export function texts<E extends Dict>(d: { en: E; ru: { [K in keyof E]: string } }): { en: E; ru: { [K in keyof E]: string } } {
  return d;
}

export function useT<E extends Dict>(d: { en: E; ru: { [K in keyof E]: string } }): (key: keyof E & string, vars?: Record<string, string | number>) => string {
  const lang = useStore(language);
  return (key, vars) => fill((d[lang] as Dict)[key] ?? d.en[key] ?? key, vars);
}

/** Dates and numbers in the page's language. */
export function formatTime(value: number | string | null | undefined, lang: Lang = language.get()): string {
  if (value === null || value === undefined || value === '') return '—';
  const d = typeof value === 'number' ? new Date(value < 1e12 ? value * 1000 : value) : new Date(value);
  if (Number.isNaN(d.getTime())) return String(value);
  return d.toLocaleString(lang === 'ru' ? 'ru-RU' : 'en-GB', { dateStyle: 'short', timeStyle: 'short' });
}

export function formatBytes(n: number | null | undefined): string {
  if (n === null || n === undefined) return '—';
  const units = ['B', 'KB', 'MB', 'GB', 'TB'];
  let i = 0;
  let v = n;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${i === 0 ? v : v.toFixed(1)} ${units[i]}`;
}
