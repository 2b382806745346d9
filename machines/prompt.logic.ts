import { SvcError } from '../schemas/index.js';
import { parseDirective, type Directive } from './directive.logic.js';

/** Characters of one prompt: far below what a CLI's argv or stdin takes. */
export const MAX_PROMPT_CHARS = 256 * 1024;

/**
 * What a message asks the CLI, after its `@model` directive. Refused with `empty` or
 * `message-too-large` — when the message is accepted, so the sender hears it at once with its own
 * code, and again when a turn starts (`/retry` replaces the text after acceptance).
 */
export function promptOf(text: string): { prompt: string; directive: Directive } {
  const directive = parseDirective(text);
  const prompt = directive.rest.trim();
  if (!prompt) throw new SvcError('empty', 'the message is empty');
  if (prompt.length > MAX_PROMPT_CHARS) throw new SvcError('message-too-large', `the message has ${prompt.length} characters; the limit is ${MAX_PROMPT_CHARS}`);
  return { prompt, directive };
}
