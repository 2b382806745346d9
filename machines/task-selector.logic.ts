import * as v from 'valibot';
import { TaskIdSchema, type ChatButton, type TaskSelectorAction, type TaskSelectorAnswer } from '../schemas/index.js';

/*
 * The `/tasks` selector (SPEC.md "Chat commands"), the same for every transport: the answer is text
 * (sections Running, Waiting for answer, Finished) plus buttons as data. A button's data is a
 * callback, `tsc:<action>`; a transport delivers a pressed button as a chat message whose text is
 * that data, so typing it does the same and a transport without buttons needs nothing else.
 */

export const TASK_CALLBACK_PREFIX = 'tsc:';
/** Telegram's callback_data limit; a button whose data would not fit is not offered. */
export const MAX_CALLBACK_BYTES = 64;
export const TASKS_DISABLED_TEXT = 'Task system is not enabled.';

/** What the selector shows of a task. */
export interface SelectorTask {
  task_id: string;
  name: string;
  status: string;
  /** Epoch seconds. */
  created_at: number;
}

export type ParsedTaskAction = TaskSelectorAction | { kind: 'invalid'; message: string };

/** Whether a message is a `/tasks` callback rather than text for the agent. */
export function isTaskCallback(text: string): boolean {
  return text.trimStart().startsWith(TASK_CALLBACK_PREFIX);
}

/**
 * `/tasks` alone (or `tsc:refresh`) is the list; anything that is not exactly one of the four
 * callbacks is refused with a line that quotes at most a short head of it.
 */
export function parseTaskAction(arg: string | undefined): ParsedTaskAction {
  if (arg === undefined) return { kind: 'refresh' };
  const data = arg.trim();
  const shown = JSON.stringify(data.length > 40 ? `${data.slice(0, 40)}...` : data);
  const invalid = (message: string): ParsedTaskAction => ({ kind: 'invalid', message });
  if (!data.startsWith(TASK_CALLBACK_PREFIX)) return invalid(`Unknown /tasks action ${shown}: send /tasks alone, or press one of its buttons.`);
  const rest = data.slice(TASK_CALLBACK_PREFIX.length);
  if (rest === 'refresh' || rest === 'cancel_all' || rest === 'delete_finished') return { kind: rest };
  if (rest.startsWith('cancel:')) {
    const id = rest.slice('cancel:'.length);
    if (!v.safeParse(TaskIdSchema, id).success) return invalid(`${shown} does not name a task id; nothing changed.`);
    return { kind: 'cancel', task_id: id };
  }
  return invalid(`Unknown task action ${shown}; nothing changed.`);
}

/** 45s, 12m, 3h 5m, 2d 4h. */
export function formatAge(seconds: number): string {
  const s = Math.max(0, Math.floor(seconds));
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m`;
  if (s < 86400) return `${Math.floor(s / 3600)}h ${Math.floor((s % 3600) / 60)}m`;
  return `${Math.floor(s / 86400)}d ${Math.floor((s % 86400) / 3600)}h`;
}

const SECTIONS: readonly { title: string; statuses: readonly string[] }[] = [
  { title: 'Running', statuses: ['running'] },
  { title: 'Waiting for answer', statuses: ['waiting'] },
  { title: 'Finished', statuses: ['done', 'failed', 'cancelled'] },
];

function button(label: string, data: string): ChatButton[] {
  return Buffer.byteLength(data, 'utf8') <= MAX_CALLBACK_BYTES ? [{ label: label.length > 64 ? `${label.slice(0, 61)}...` : label, data }] : [];
}

/** The selector for `tasks` (newest first within a section), with `notice` (an action's outcome) above it. */
export function renderTaskSelector(tasks: readonly SelectorTask[], nowS: number, notice: string | null = null, ok = true): TaskSelectorAnswer {
  const sorted = [...tasks].sort((a, b) => b.created_at - a.created_at);
  const lines: string[] = notice ? [notice, ''] : [];
  lines.push(`Tasks in this chat (${tasks.length})`);
  const buttons: ChatButton[] = [];
  for (const { title, statuses } of SECTIONS) {
    const here = sorted.filter((t) => statuses.includes(t.status));
    lines.push('', `${title} (${here.length})`);
    if (!here.length) lines.push('  none');
    for (const t of here) lines.push(`  ${t.task_id}  ${oneLine(t.name)}  ${t.status}  ${formatAge(nowS - t.created_at)}`);
  }
  // Transports without buttons show only the text: it says what to send instead.
  lines.push('', `Send ${TASK_CALLBACK_PREFIX}cancel:<id>, ${TASK_CALLBACK_PREFIX}cancel_all, ${TASK_CALLBACK_PREFIX}delete_finished or ${TASK_CALLBACK_PREFIX}refresh (or press a button).`);
  const active = sorted.filter((t) => t.status === 'running' || t.status === 'waiting');
  for (const t of active) buttons.push(...button(`Cancel ${oneLine(t.name)}`, `${TASK_CALLBACK_PREFIX}cancel:${t.task_id}`));
  if (active.length > 1) buttons.push(...button('Cancel all', `${TASK_CALLBACK_PREFIX}cancel_all`));
  if (sorted.some((t) => !active.includes(t))) buttons.push(...button('Delete finished', `${TASK_CALLBACK_PREFIX}delete_finished`));
  buttons.push(...button('Refresh', `${TASK_CALLBACK_PREFIX}refresh`));
  return { text: lines.join('\n'), buttons, ok };
}

function oneLine(s: string): string {
  const line = s.replace(/\s+/g, ' ').trim();
  return line.length > 60 ? `${line.slice(0, 57)}...` : line;
}
