import { Subject, type Observable } from 'rxjs';
import { agentsOf, type Asked, type Bus } from '../../bus/index.js';
import { CHAT_SESSION_COMMANDS, describeError, type Principal, type TurnOutcome } from '../../schemas/index.js';

/** A chat message as the admin panel sends it (REST `POST /api/chat/{agent}` or a `/ws/admin` message frame). */
export interface AdminChatRequest {
  agent: string;
  text: string;
  session_id?: string;
  user_msg_id?: string;
  assistant_msg_id?: string;
}

/** A turn the admin surfaces started: who asked, from which socket, and the agent contract's request. */
export interface AdminTurn {
  readonly principal: Principal;
  readonly agent: string;
  readonly session_id: string;
  /** The runtime's chat of the session (abort is chat-scoped). */
  readonly chat_id: number;
  /** The socket it came from (it shows the turn already, so the fan-out skips it); null for REST. */
  readonly origin: string | null;
  readonly asked: Asked;
  /** Settles once the answer is stored in the session (or storing it failed and was logged). */
  readonly recorded: Promise<TurnOutcome | null>;
}

/**
 * Every admin chat turn goes through here: the chat-sessions actor checks access, picks the session
 * and stores the user's message; the agent contract runs the turn; the answer is stored under the
 * client's `assistant_msg_id` (else the request id). Started turns are announced on `started$`, so
 * every live admin socket of the same user can show them, whichever surface began them.
 */
export class AdminTurns {
  private readonly started = new Subject<AdminTurn>();
  readonly started$: Observable<AdminTurn> = this.started.asObservable();

  constructor(private readonly bus: Bus) {}

  /** Rejects with the SvcError of a refusal (access, unknown session, bad input) before anything runs. */
  async start(principal: Principal, req: AdminChatRequest, origin: string | null): Promise<AdminTurn> {
    const { bus } = this;
    const turn = await bus.send(CHAT_SESSION_COMMANDS.beginTurn, {
      principal,
      agent: req.agent,
      text: req.text,
      ...(req.session_id !== undefined ? { session_id: req.session_id } : {}),
      ...(req.user_msg_id !== undefined ? { user_msg_id: req.user_msg_id } : {}),
    });
    const asked = agentsOf(bus).ask({ agent: req.agent, transport: 'admin', chat_id: turn.chat_id, topic_id: null, text: turn.text, kind: 'foreground' }, principal);
    const recorded = asked.outcome.then(
      async (outcome) => {
        try {
          await bus.send(CHAT_SESSION_COMMANDS.endTurn, {
            principal,
            session_id: turn.session_id,
            message: {
              id: req.assistant_msg_id ?? asked.request_id,
              sender: 'agent',
              content: outcome.text,
              timestamp: new Date(bus.now()).toISOString(),
              ...(outcome.files.length > 0 ? { files: outcome.files } : {}),
            },
          });
        } catch (e) {
          // The session may have been deleted meanwhile: the answer was still delivered live.
          bus.emitLog('warn', `admin chat: could not store the answer to ${asked.request_id} in session ${turn.session_id}: ${describeError(e)}`);
        }
        return outcome;
      },
      () => null,
    );
    const started: AdminTurn = { principal, agent: req.agent, session_id: turn.session_id, chat_id: turn.chat_id, origin, asked, recorded };
    this.started.next(started);
    return started;
  }
}

const turns = new WeakMap<Bus, AdminTurns>();

/** The bus's one AdminTurns, shared by the REST routes and `/ws/admin`. */
export function adminTurnsOf(bus: Bus): AdminTurns {
  let t = turns.get(bus);
  if (!t) turns.set(bus, (t = new AdminTurns(bus)));
  return t;
}
