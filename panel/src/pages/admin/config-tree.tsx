import { Fragment } from 'preact';
import { texts, useT } from '../../i18n';

const s = texts({
  en: { empty: 'empty', items: '{n} items', keys: '{n} keys' },
  ru: { empty: 'пусто', items: 'элементов: {n}', keys: 'ключей: {n}' },
});

/** A key that names a credential: its value is masked here too, whatever the server sent. */
const SECRET_KEY = /(token|secret|password|passwd|api_?key|private_?key|credential)s?$/i;
const MASK = '***';

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };

function leaf(key: string, value: Json): string {
  if (typeof value === 'string' && value !== '' && SECRET_KEY.test(key)) return MASK;
  if (value === null) return 'null';
  return typeof value === 'string' ? value || '""' : JSON.stringify(value);
}

const isTree = (v: Json): v is Json[] | { [k: string]: Json } => v !== null && typeof v === 'object' && (Array.isArray(v) ? v.some((x) => x !== null && typeof x === 'object') : Object.keys(v).length > 0);

/** An object's plain values as key/value rows, then its nested objects as collapsible groups. */
export function ConfigEntries({ value }: { value: Json[] | { [k: string]: Json } }) {
  const t = useT(s);
  const entries: [string, Json][] = Array.isArray(value) ? value.map((v, i) => [String(i), v]) : Object.entries(value);
  const plain = entries.filter(([, v]) => !isTree(v));
  const nested = entries.filter(([, v]) => isTree(v));
  return (
    <>
      {plain.length ? (
        <dl class="kv">
          {plain.map(([k, v]) => (
            <Fragment key={k}>
              <dt>{k}</dt>
              <dd>{Array.isArray(v) && v.length === 0 ? <span class="muted">{t('empty')}</span> : leaf(k, SECRET_KEY.test(k) && Array.isArray(v) ? (v.map(() => MASK) as Json) : v)}</dd>
            </Fragment>
          ))}
        </dl>
      ) : null}
      {nested.map(([k, v]) => (
        <ConfigTree key={k} name={k} value={v} />
      ))}
    </>
  );
}

/** A nested block as a collapsible group (closed at first); a plain value as one key/value row. */
export function ConfigTree({ value, name }: { value: Json; name: string }) {
  const t = useT(s);
  if (!isTree(value)) return <dl class="kv"><dt>{name}</dt><dd>{leaf(name, value)}</dd></dl>;
  const n = Array.isArray(value) ? value.length : Object.keys(value).length;
  return (
    <details>
      <summary>
        {name} <span class="muted small">({Array.isArray(value) ? t('items', { n }) : t('keys', { n })})</span>
      </summary>
      <ConfigEntries value={value} />
    </details>
  );
}

export type { Json };
