import { createStore } from './store';

/** Light, dark, or the system's choice; remembered in this browser and applied as `data-theme` on <html>. */
export type Theme = 'system' | 'light' | 'dark';
const KEY = 'svc.theme';

const saved = localStorage.getItem(KEY);
export const theme = createStore<Theme>(saved === 'light' || saved === 'dark' ? saved : 'system');

function apply(t: Theme): void {
  const dark = t === 'dark' || (t === 'system' && matchMedia('(prefers-color-scheme: dark)').matches);
  document.documentElement.dataset['theme'] = dark ? 'dark' : 'light';
}
theme.subscribe((t) => {
  localStorage.setItem(KEY, t);
  apply(t);
});
matchMedia('(prefers-color-scheme: dark)').addEventListener('change', () => apply(theme.get()));
apply(theme.get());
