/** `'turn.completed'` → `'completed'`: the part after the stream's name. */
type ShortName<K> = K extends `${string}.${infer Rest}` ? Rest : never;

/**
 * The dot-named types of a stream's schema map, by short name (`TURN_EVENTS.completed` is
 * `'turn.completed'`, typed as that literal), so code names a type without spelling the string.
 */
export function typeNames<M extends Record<string, unknown>>(schemas: M): { readonly [K in keyof M & string as ShortName<K>]: K } {
  return Object.fromEntries(Object.keys(schemas).map((k) => [k.slice(k.indexOf('.') + 1), k])) as never;
}

/** The union of a name map's types: `TypesOf<typeof CONNECTION_EVENTS>` is every `connection.*` type. */
export type TypesOf<N extends Readonly<Record<string, string>>> = N[keyof N];
