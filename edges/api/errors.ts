import type { StatusTable } from '../http/index.js';

/** The one status table of the shared `/api/*` routes, beyond COMMON_STATUSES. */
export const API_STATUSES: StatusTable = {
  /** A command's data failed its schema where it is handled (chat sessions, notifications, transcription). */
  'invalid-command': 400,
  /** No transcription backend is configured or every one failed. */
  'transcription-unavailable': 503,
  /** The audio file is above what can be transcribed. */
  'file-too-large': 413,
  /** An avatar was asked for by a name that cannot be an agent's. */
  'invalid-agent-name': 400,
  /** The caller's allowed_agents (or an agent's can_call) excludes the agent the request touches. */
  'agent-not-allowed': 403,
  'call-not-allowed': 403,
  'unknown-caller': 403,
};
