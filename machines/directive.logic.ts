import { SvcError } from '../schemas/index.js';

/*
 * A leading `@<model>` directive in a chat message.
 */

export const MODEL_ID_MAX_LENGTH = 128;
/** SPEC's id charset `[A-Za-z0-9._:-]`, starting with a letter or digit so "@..." or "@-" stay text. */
const MODEL_ID = /^[A-Za-z0-9][A-Za-z0-9._:-]*$/;

export function isModelId(value: unknown): value is string {
  return typeof value === 'string' && value.length <= MODEL_ID_MAX_LENGTH && MODEL_ID.test(value);
}

export function messageText(text: unknown): string {
  if (typeof text !== 'string') throw new SvcError('invalid-text', `message text = ${JSON.stringify(text) ?? String(text)} is not allowed (a string)`);
  return text;
}

export interface Directive {
  model?: string;
  rest: string;
}

/**
 * A leading `@<model>` directive ("@sonnet explain this"): the id must be followed by whitespace or
 * the end. Anything else ("@", "@ foo", "a@b.c", "@foo@bar", "@söng") is plain text, returned as is.
 * `ignore` lists names that are mentions, not models (the bot's own @username in a group).
 */
export function parseDirective(text: string, opts: { ignore?: readonly string[] } = {}): Directive {
  const input = messageText(text);
  const m = /^\s*@(\S+)/.exec(input);
  if (!m) return { rest: input };
  const id = m[1]!;
  if (!isModelId(id)) return { rest: input };
  const lower = id.toLowerCase();
  if ((opts.ignore ?? []).some((name) => name.replace(/^@/, '').toLowerCase() === lower)) return { rest: input };
  return { model: id, rest: input.slice(m[0].length).trimStart() };
}
