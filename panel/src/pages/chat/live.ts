import { adminSocket, type Frame } from '../../api/socket';

/*
 * The answers being streamed right now, per chat session, for the whole tab: `/ws/admin` sends every
 * streaming frame of a user's turn to each of that user's sockets (SPEC.md rule 2), tagged with its
 * session (rule 1). The open conversation shows its session's turn; frames of the other sessions
 * are kept here too, so opening one mid-answer shows what has come so far.
 */

export interface FileRef {
  path: string;
  name: string;
  is_image?: boolean;
}

export interface LiveTurn {
  agent: string;
  session_id: string;
  /** What has been streamed so far. */
  text: string;
  tools: string[];
  status: string | null;
  /** The id the answer will be stored under, when this tab sent the message. */
  assistantId: string | null;
  done: boolean;
  /** The final answer (`result`), or the error that ended the turn. */
  final: { text: string; files: FileRef[] } | null;
  error: string | null;
}

const turns = new Map<string, LiveTurn>();
const listeners = new Set<(sessionId: string) => void>();

function changed(sessionId: string): void {
  for (const l of listeners) l(sessionId);
}

function fresh(agent: string, session_id: string, assistantId: string | null): LiveTurn {
  return { agent, session_id, text: '', tools: [], status: null, assistantId, done: false, final: null, error: null };
}

/** The session's turn, started anew when the last one has ended. */
function running(agent: string, sessionId: string): LiveTurn {
  let t = turns.get(sessionId);
  if (!t || t.done) {
    t = fresh(agent, sessionId, null);
    turns.set(sessionId, t);
  }
  return t;
}

export const liveTurns = {
  get: (sessionId: string): LiveTurn | undefined => turns.get(sessionId),
  /** This tab sent a message: its answer is expected under `assistantId`. */
  begin(agent: string, sessionId: string, assistantId: string): void {
    turns.set(sessionId, fresh(agent, sessionId, assistantId));
    changed(sessionId);
  },
  /** The finished turn is now in the stored history: it is no longer live. */
  clear(sessionId: string): void {
    if (turns.get(sessionId)?.done) turns.delete(sessionId);
    changed(sessionId);
  },
  /** The sending failed before the server took it. */
  drop(sessionId: string): void {
    turns.delete(sessionId);
    changed(sessionId);
  },
  subscribe(l: (sessionId: string) => void): () => void {
    listeners.add(l);
    return () => listeners.delete(l);
  },
};

function onFrame(f: Frame): void {
  switch (f.type) {
    case 'text_delta': {
      const t = running(f.agent, f.session_id);
      t.text += f.text;
      t.status = null;
      return changed(f.session_id);
    }
    case 'tool_activity': {
      const t = running(f.agent, f.session_id);
      if (t.tools[t.tools.length - 1] !== f.tool) t.tools = [...t.tools, f.tool].slice(-5);
      return changed(f.session_id);
    }
    case 'system_status': {
      const t = running(f.agent, f.session_id);
      t.status = f.data;
      return changed(f.session_id);
    }
    case 'result': {
      const t = running(f.agent, f.session_id);
      t.done = true;
      t.final = { text: f.text, files: f.files };
      return changed(f.session_id);
    }
    case 'error': {
      if (!f.session_id || !f.agent) return;
      const t = turns.get(f.session_id);
      if (!t || t.done) return;
      t.done = true;
      t.error = f.message;
      return changed(f.session_id);
    }
    default:
      return;
  }
}

adminSocket.subscribe(onFrame);

/** A message id the server accepts, also where `crypto.randomUUID` is missing (a page served over plain http). */
export function newMessageId(): string {
  if (typeof crypto.randomUUID === 'function') return crypto.randomUUID();
  const b = crypto.getRandomValues(new Uint8Array(16));
  return Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('');
}
