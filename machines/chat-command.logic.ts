import { messageText } from './directive.logic.js';
import { isTaskCallback } from './task-selector.logic.js';

/*
 * Chat commands (`/new`, `/stop`, `/model`, ...): parsed once, here, for every transport.
 */

export const CHAT_COMMANDS = ['new', 'reset', 'stop', 'model', 'retry', 'agent_restart', 'workflow'] as const;
/** About the orchestration rather than the chat (`GET /api/commands` lists them as `multiagent`). */
export const MULTIAGENT_COMMANDS = ['tasks'] as const;
export type ChatCommandName = (typeof CHAT_COMMANDS)[number] | (typeof MULTIAGENT_COMMANDS)[number];

export interface ChatCommand {
  cmd: ChatCommandName;
  /** Trimmed text after the command; absent when empty (handlers answer `/agent_restart` alone with usage). */
  arg?: string;
}

const COMMAND_SET = new Set<string>([...CHAT_COMMANDS, ...MULTIAGENT_COMMANDS]);

/**
 * `/new`, `/reset`, `/stop`, `/model [id]`, `/retry` (ask again what a restart cut off),
 * `/agent_restart <name>`, `/workflow ...`, `/tasks` (and its `tsc:` callbacks), also as `/cmd@botname`. With
 * `botName` set, a command addressed to another bot is not ours (null). Anything else: null.
 */
export function parseChatCommand(text: string, opts: { botName?: string } = {}): ChatCommand | null {
  const input = messageText(text);
  // A pressed `/tasks` button arrives as its callback data (machines/task-selector.logic.ts).
  if (isTaskCallback(input)) return { cmd: 'tasks', arg: input.trim() };
  const m = /^\s*\/([A-Za-z0-9_]{1,32})(?:@([A-Za-z0-9_]{1,64}))?(?=\s|$)([\s\S]*)$/.exec(input);
  if (!m) return null;
  const cmd = m[1]!.toLowerCase();
  if (!COMMAND_SET.has(cmd)) return null;
  const target = m[2];
  if (target !== undefined && opts.botName && target.toLowerCase() !== opts.botName.replace(/^@/, '').toLowerCase()) return null;
  const arg = m[3]!.trim();
  return arg === '' ? { cmd: cmd as ChatCommandName } : { cmd: cmd as ChatCommandName, arg };
}

/**
 * Text that reads as a slash command, known to svc or not: a run waiting for a reply never takes
 * it, so `/stop`, `/workflow cancel` and commands meant for another bot keep working while it waits.
 */
export function looksLikeCommand(text: string): boolean {
  return /^\s*\//.test(text);
}
