import * as v from 'valibot';

/*
 * The request pipeline's one strictness rule: a field a route's schema does not name is refused,
 * not dropped. valibot's plain `object` strips unknown keys silently, so a client's typo
 * (`titel`) or a field meant for another version would be accepted and ignored; `withBody` and
 * `withQuery` refuse them instead, naming the field. A schema that says so (`looseObject`,
 * `objectWithRest`) still takes extras: that is then the schema's own, visible decision.
 */

type AnySchema = v.GenericSchema & {
  type: string;
  entries?: Record<string, AnySchema>;
  wrapped?: AnySchema;
  options?: AnySchema[];
  item?: AnySchema;
  items?: AnySchema[];
  value?: AnySchema;
  getter?: (input: unknown) => AnySchema;
};

const isRecord = (x: unknown): x is Record<string, unknown> => typeof x === 'object' && x !== null && !Array.isArray(x);

/** The dot path (`title`, `signature.header`, `items.2.name`) of the first key `schema` does not name, or null. */
export function unknownField(schema: v.GenericSchema, input: unknown): string | null {
  return walk(schema as AnySchema, input, []);
}

function walk(s: AnySchema, input: unknown, path: (string | number)[]): string | null {
  switch (s.type) {
    case 'object':
    case 'strict_object':
    case 'loose_object': {
      if (!isRecord(input) || !s.entries) return null;
      for (const key of Object.keys(input)) {
        const entry = Object.hasOwn(s.entries, key) ? s.entries[key] : undefined;
        if (!entry) {
          if (s.type === 'loose_object') continue;
          return [...path, key].join('.');
        }
        const inner = walk(entry, input[key], [...path, key]);
        if (inner) return inner;
      }
      return null;
    }
    case 'optional':
    case 'exact_optional':
    case 'nullable':
    case 'nullish':
    case 'undefinedable':
    case 'non_optional':
    case 'non_nullable':
    case 'non_nullish':
      return s.wrapped ? walk(s.wrapped, input, path) : null;
    case 'lazy':
      return s.getter ? walk(s.getter(input), input, path) : null;
    case 'array':
      if (!Array.isArray(input) || !s.item) return null;
      for (let i = 0; i < input.length; i++) {
        const inner = walk(s.item, input[i], [...path, i]);
        if (inner) return inner;
      }
      return null;
    case 'record':
      if (!isRecord(input) || !s.value) return null;
      for (const [key, value] of Object.entries(input)) {
        const inner = walk(s.value, value, [...path, key]);
        if (inner) return inner;
      }
      return null;
    case 'union':
    case 'variant': {
      // The input must fit one option without extras; the complaint names the first option's extra.
      // When it fits none, the options of its shape (an object for an object) are asked, so
      // `{"typo": 1}` sent where `[...]` or `{messages}` goes is still named.
      const options = s.options ?? [];
      const fitting = options.filter((o) => v.is(o, input));
      const asked = fitting.length > 0 ? fitting : options.filter((o) => sameShape(o, input));
      let first: string | null = null;
      for (const option of asked) {
        const found = walk(option, input, path);
        if (found === null) return null;
        first ??= found;
      }
      return first;
    }
    default:
      return null;
  }
}

/** Whether `s` (wrappers aside) is an object schema for an object, or an array schema for an array. */
function sameShape(s: AnySchema, input: unknown): boolean {
  if (s.wrapped) return sameShape(s.wrapped, input);
  if (s.type.endsWith('object')) return isRecord(input);
  if (s.type === 'array') return Array.isArray(input);
  return false;
}
