import { ChatReadsFileSchema, type ChatReads } from '../schemas/index.js';
import type { HomePaths } from './home.js';
import { readJsonFile, writeJsonAtomic } from './json-file.js';

/**
 * `~/.<home>/chat_reads.json` (SPEC.md "Chat session and messages"): `{user_id: {session_id:
 * {last_read_message_id, updated_at}}}`. A missing file is no markers; a corrupt one is refused
 * (and left for the user to fix) rather than silently reset.
 */
export function loadChatReads(paths: Pick<HomePaths, 'chatReadsFile'>): Promise<ChatReads> {
  return readJsonFile(paths.chatReadsFile, ChatReadsFileSchema, { missing: () => ({}) });
}

/** Atomic (temp file + rename), 0600: it says who read what. */
export function saveChatReads(paths: Pick<HomePaths, 'chatReadsFile'>, reads: ChatReads): Promise<void> {
  return writeJsonAtomic(paths.chatReadsFile, reads, { mode: 0o600 });
}
