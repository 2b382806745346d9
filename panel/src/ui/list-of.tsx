import type { ComponentChildren } from 'preact';
import type { Async } from './async';
import { Empty, Loading } from './components';

/**
 * A list loaded by `useAsync`, shown as every page shows one: loading until the first answer, the
 * page's own words when it is empty, else its rows. A failure is the page's ErrorBanner's to show.
 */
export function ListOf<T>({ list, empty, children }: { list: Pick<Async<T[]>, 'data' | 'error'>; empty: string; children: (items: T[]) => ComponentChildren }) {
  if (list.data === undefined) return list.error ? null : <Loading />;
  if (list.data.length === 0) return <Empty>{empty}</Empty>;
  return <>{children(list.data)}</>;
}
