import { MAIN_AGENT, TRANSPORTS } from '../schemas/index.js';
import { alwaysLoadModules } from './memory.logic.js';
import { shouldExpire, type ExpiryRules } from './session-expiry.logic.js';
import { sessionKey } from './session-key.logic.js';
import { inDailyWindow, latestDailyBoundary } from './time-zone.logic.js';

/*
 * Rules of the daemon's upkeep (SPEC.md CleanupConfig, MemoryConfig, HeartbeatConfig), pure: a
 * listing, a config and `now` in, a decision out. The actors in actors/housekeeping/ do the I/O.
 */

const DAY_MS = 86_400_000;
/** Longer than any civil day (DST days are 23 or 25 hours), shorter than two. */
const MORE_THAN_A_DAY_MS = 25 * 3_600_000 + 1;

/**
 * The first `hour`:00 in `timeZone` strictly after `now`: when a daily job runs next. A DST day
 * without that hour runs at the instant the clock jumps over it.
 */
export function nextDailyRun(now: number, hour: number, timeZone: string): number {
  const latest = latestDailyBoundary(now, hour, timeZone);
  return latestDailyBoundary(latest + MORE_THAN_A_DAY_MS, hour, timeZone);
}

// ------------------------------------------------------------------ cleanup

/** One entry of a cleanup folder as lstat saw it (links are never followed). */
export interface ListedEntry {
  /** Relative to the folder being cleaned, `/`-separated; never empty. */
  path: string;
  kind: 'file' | 'symlink' | 'dir' | 'other';
  mtimeMs: number;
  size: number;
}

export interface CleanupPlan {
  /** Files and links whose own mtime is past the limit, to unlink (a link goes, never its target). */
  remove: ListedEntry[];
  /** Subfolders left empty afterwards, deepest first, to rmdir. The folder itself is never pruned. */
  prune: string[];
}

const parentOf = (p: string): string => {
  const i = p.lastIndexOf('/');
  return i < 0 ? '' : p.slice(0, i);
};

/**
 * What a cleanup run removes from one folder. `maxAgeDays` 0 keeps everything (the folder is not
 * cleaned). A file or link goes when its own mtime is older than the limit. A subfolder goes when
 * nothing is left in it afterwards and it either lost entries in this run (an emptied dated upload
 * folder) or is itself older than the limit; a fresh empty folder stays, since an agent may have
 * made it to write into. Sockets, FIFOs and devices are left alone, and so is every folder holding one.
 */
export function planCleanup(entries: readonly ListedEntry[], now: number, maxAgeDays: number): CleanupPlan {
  if (!(maxAgeDays > 0)) return { remove: [], prune: [] };
  const cutoff = now - maxAgeDays * DAY_MS;
  const remove = entries.filter((e) => (e.kind === 'file' || e.kind === 'symlink') && e.mtimeMs < cutoff);
  const removed = new Set(remove.map((e) => e.path));
  const dirs = entries.filter((e) => e.kind === 'dir');
  const kept = new Map<string, number>(dirs.map((d) => [d.path, 0]));
  const lost = new Set<string>();
  const childDirs = new Map<string, string[]>();
  for (const d of dirs) {
    const parent = parentOf(d.path);
    childDirs.set(parent, [...(childDirs.get(parent) ?? []), d.path]);
  }
  for (const e of entries) {
    const parent = parentOf(e.path);
    if (parent === '') continue;
    if (removed.has(e.path)) lost.add(parent);
    else if (e.kind !== 'dir') kept.set(parent, (kept.get(parent) ?? 0) + 1);
  }
  // Deepest first, so a folder's pruned children count as gone before the folder is judged.
  const byDepth = [...dirs].sort((a, b) => b.path.split('/').length - a.path.split('/').length || (a.path < b.path ? -1 : 1));
  const prune: string[] = [];
  const pruned = new Set<string>();
  for (const d of byDepth) {
    const children = childDirs.get(d.path) ?? [];
    if ((kept.get(d.path) ?? 0) > 0 || children.some((c) => !pruned.has(c))) continue;
    const emptiedNow = lost.has(d.path) || children.length > 0;
    if (!emptiedNow && d.mtimeMs >= cutoff) continue;
    prune.push(d.path);
    pruned.add(d.path);
  }
  return { remove, prune };
}

// ------------------------------------------------------------------ heartbeat

/**
 * Whether `now` falls in the quiet hours [start, end) of the user's zone. A window that wraps
 * midnight (21 → 8) is quiet from 21:00 to 07:59; start equal to end has no quiet hours.
 */
export function inQuietHours(now: number, quietStart: number, quietEnd: number, timeZone: string): boolean {
  return inDailyWindow(now, quietStart * 60, quietEnd * 60, timeZone);
}

export type HeartbeatSkip = 'quiet' | 'no-session' | 'session-expired' | 'provider-mismatch' | 'busy' | 'cooldown';

/** Where people chat with an agent: the messengers, the direct API and the admin panel. */
const HEARTBEAT_CHAT_TRANSPORTS: readonly string[] = [...TRANSPORTS, 'api', 'admin'];

/**
 * Whether a session is a person's chat, the only kind a heartbeat looks at: on a chat transport and
 * keyed as that chat. A task's session (`task:<id>` on its parent's transport), a workflow run's
 * (`workflow`) and an inter-agent call's (`internal`) are not.
 */
export function isUserChatSession(s: { key: string; transport: string; chat_id: number; topic_id: number | null }): boolean {
  if (!HEARTBEAT_CHAT_TRANSPORTS.includes(s.transport)) return false;
  try {
    return s.key === sessionKey(s.transport, s.chat_id, s.topic_id);
  } catch {
    return false;
  }
}

export interface HeartbeatChat {
  /** The chat's live session, or null: heartbeats only resume, they never open one. */
  session: { providers: readonly string[]; lastActiveMs: number; createdMs: number; messageCount: number; busy: boolean } | null;
  /** A heartbeat of ours is still running in this chat. */
  inFlight: boolean;
}

export interface HeartbeatRules {
  quietStart: number;
  quietEnd: number;
  cooldownMinutes: number;
  timeZone: string;
  /** The provider the agent is configured for now: a session only holding another one's conversation is not resumed. */
  provider: string;
  /** The agent's session expiry rules: a session the heartbeat's message would replace is not resumed. */
  expiry: ExpiryRules;
}

/** Whether this tick sends the heartbeat prompt to the chat, or why not (reported in this order). */
export function heartbeatDecision(chat: HeartbeatChat, now: number, rules: HeartbeatRules): { send: true } | { send: false; skip: HeartbeatSkip } {
  if (inQuietHours(now, rules.quietStart, rules.quietEnd, rules.timeZone)) return { send: false, skip: 'quiet' };
  const s = chat.session;
  if (!s) return { send: false, skip: 'no-session' };
  // The rule the runtime applies when the message arrives: if it would start afresh, the heartbeat
  // would open a new, empty session (idle timeout, daily reset, message cap).
  if (shouldExpire({ createdAt: s.createdMs, lastActiveAt: s.lastActiveMs, messageCount: s.messageCount }, now, rules.expiry)) return { send: false, skip: 'session-expired' };
  if (!s.providers.includes(rules.provider)) return { send: false, skip: 'provider-mismatch' };
  if (s.busy || chat.inFlight) return { send: false, skip: 'busy' };
  if (now - s.lastActiveMs < rules.cooldownMinutes * 60_000) return { send: false, skip: 'cooldown' };
  return { send: true };
}

/**
 * Whether an answer is only the acknowledgement (nothing for the user): the token, possibly
 * repeated, quoted, emphasised or followed by punctuation. An empty answer says nothing either.
 */
export function isHeartbeatAck(answer: string, ackToken: string): boolean {
  const token = ackToken.trim();
  const rest = token ? answer.split(token).join('') : answer;
  return rest.replace(/[\s`*_~.!,;:"'()[\]>-]/g, '') === '';
}

export interface LiveTurn {
  turn_id: string;
  session_key: string;
  started_ms: number;
  /** The time limit the turn started with (its kind's: foreground, background, task, workflow, ...); null or absent: unknown. */
  timeout_ms?: number | null;
}

/**
 * SPEC.md timeouts: a turn running longer than twice its limit is stale. The limit is the turn's
 * own (a task or a background turn may run far longer than `cli_timeout`); `cli_timeout` is the
 * limit only of a turn that does not say, and of the cron and inter-agent turns it bounds.
 */
export function staleThresholdMs(turn: LiveTurn, cliTimeoutSeconds: number): number {
  const own = turn.timeout_ms;
  return 2 * (typeof own === 'number' && own > 0 ? own : cliTimeoutSeconds * 1000);
}

/** The turns past their stale threshold (staleThresholdMs). */
export function staleTurns<T extends LiveTurn>(running: readonly T[], now: number, cliTimeoutSeconds: number): T[] {
  return running.filter((r) => now - r.started_ms > staleThresholdMs(r, cliTimeoutSeconds));
}

// ------------------------------------------------------------------ memory maintenance

/**
 * Sessions to end for age (MemoryConfig `session_max_age_days`, 0 keeps them): created longer ago
 * than the limit. A busy one is left for the next run rather than cut mid-answer; task sessions
 * belong to their task.
 */
export function sessionsPastMaxAge<S extends { key: string; createdMs: number; busy: boolean }>(sessions: readonly S[], now: number, maxAgeDays: number): S[] {
  if (!(maxAgeDays > 0)) return [];
  return sessions.filter((s) => !s.key.startsWith('task:') && !s.busy && now - s.createdMs > maxAgeDays * DAY_MS);
}

export interface MemoryCheck {
  /** Modules over `module_line_limit`, nested ones included (reported, never cut). */
  overLimit: { filename: string; lines: number }[];
  /** Always Load entries of MAINMEMORY.md naming a file that does not exist. */
  missing: string[];
}

/** The daily look at one workspace's memory: `modules` as the store lists them (root files and `modules/**`). */
export function checkMemory(modules: readonly { filename: string; lines: number }[], mainMemoryText: string, lineLimit: number): MemoryCheck {
  const names = new Set(modules.map((m) => m.filename));
  return {
    overLimit: modules.filter((m) => m.filename.startsWith('modules/') && m.lines > lineLimit).map((m) => ({ filename: m.filename, lines: m.lines })),
    missing: alwaysLoadModules(mainMemoryText).filter((f) => !names.has(f)),
  };
}

export const MEMORY_REVIEW_JOB_ID = 'memory-review';

export const MEMORY_REVIEW_PROMPT = [
  'Monthly memory review.',
  'Read memory_system/MAINMEMORY.md and every module under memory_system/modules/.',
  'Merge duplicates, remove facts that are no longer true, split modules that grew past the line limit into nested modules,',
  'and keep the Always Load table of MAINMEMORY.md to the modules every session needs.',
].join(' ');

/**
 * The cron record of the monthly memory review: the 1st of each month at the memory check hour in
 * the user's zone (the scheduler reads `timezone` null as the global zone). The prompt is the
 * description, which is what a cron job asks its agent.
 */
export function memoryReviewJob(checkHour: number): { id: string; title: string; name: string; schedule: string; agent: string; enabled: boolean; description: string; prompt: string; timezone: null } {
  return {
    id: MEMORY_REVIEW_JOB_ID,
    title: 'Monthly memory review',
    name: 'Monthly memory review',
    schedule: `0 ${checkHour} 1 * *`,
    agent: MAIN_AGENT,
    enabled: true,
    description: MEMORY_REVIEW_PROMPT,
    prompt: MEMORY_REVIEW_PROMPT,
    timezone: null,
  };
}
