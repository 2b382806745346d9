import { createActor, type Actor, type AnyStateMachine } from 'xstate';
import { TURN_MACHINE, turnMachine } from '../../machines/index.js';
import { ACTOR_EVENTS, type AnyEnvelope } from '../../schemas/index.js';
import type { ActorClock } from './actor-host.js';
import { show, type EmittedFact, type ReplayDiff } from './replay-diff.js';

/*
 * Replay of a journaled actor (SpawnOptions.journal), as Temporal replays a workflow's history: the
 * log holds everything that reached the actor — how it was started, each event it was sent or its
 * invoked children sent it, which of its delays fired — so its machine, with no-op children and a
 * clock that only runs the delays the journal says fired, is re-driven from the log alone and must
 * emit exactly the facts that follow. Nothing is rebuilt from the facts under test.
 *
 * An actor lives, for the replay, from its `actor.started` to the end of its process (the next
 * `daemon.started`) or its final state; what other writers put on its stream outside that life
 * (recovery's verdict on a turn cut by a crash) is theirs, not the machine's.
 */

/** A machine replay can re-drive from a journal: looked up by the name and version `actor.started` records. */
export interface JournaledMachine {
  machine: string;
  version: number;
  logic: AnyStateMachine;
}

export const JOURNALED_MACHINES: readonly JournaledMachine[] = [{ ...TURN_MACHINE, logic: turnMachine }];

/** Delays are numbered in the order the machine sets them, as the live host's journaledClock numbers them. */
class JournalClock implements ActorClock {
  private readonly pending = new Map<number, () => void>();
  private next = 0;
  setTimeout = (fn: () => void): number => {
    const n = this.next++;
    this.pending.set(n, fn);
    return n;
  };
  clearTimeout = (id: unknown): void => void this.pending.delete(id as number);
  fire(n: number): boolean {
    const fn = this.pending.get(n);
    if (!fn) return false;
    this.pending.delete(n);
    fn();
    return true;
  }
}

interface Life {
  name: string;
  actor: Actor<AnyStateMachine>;
  clock: JournalClock;
  since: number;
  emitted: EmittedFact[];
}

/** Re-drives the journaled actors of one stream; `runStarts` are the seqs of `daemon.started`, where every live actor ended. */
export function redriveJournal(stream: string, facts: readonly AnyEnvelope[], runStarts: readonly number[], machines: readonly JournaledMachine[] = JOURNALED_MACHINES): ReplayDiff[] {
  const diffs: ReplayDiff[] = [];
  let life: Life | null = null;
  const diff = (seq: number | null, line: string) => diffs.push({ machine: life?.name ?? 'journal', stream, seq, line });
  const end = (after: number, check: boolean) => {
    if (!life) return;
    if (check) for (const e of life.emitted) diff(after, `after seq ${after} the machine emitted ${show(e)}, which the log does not hold`);
    life.actor.stop();
    life = null;
  };
  let seq = 0;
  try {
    for (const fact of facts) {
      // The process the actor ran in ended; what it had not committed went with it.
      if (life && runStarts.some((s) => s > life!.since && s < fact.seq)) end(seq, false);
      seq = fact.seq;
      const d = fact.data as Record<string, unknown>;
      switch (fact.type) {
        case ACTOR_EVENTS.started: {
          end(seq, true);
          const spec = machines.find((m) => m.machine === d.machine);
          if (!spec) {
            diff(seq, `seq ${seq}: actor.started names machine ${String(d.machine)}, which this build does not have`);
            break;
          }
          if (spec.version !== d.version) {
            diff(seq, `seq ${seq}: ${spec.machine} version ${String(d.version)} wrote this actor; this build re-drives version ${spec.version} and has no upcaster for it`);
            break;
          }
          const clock = new JournalClock();
          const snapshot = d.snapshot as { value: string; context: object } | undefined;
          const actor = createActor(spec.logic, { clock, ...(snapshot ? { snapshot: spec.logic.resolveState(snapshot as never) } : { input: d.input }) });
          const started: Life = { name: spec.machine, actor, clock, since: seq, emitted: [] };
          actor.on('*', (e: EmittedFact) => void started.emitted.push(e));
          life = started;
          actor.start();
          break;
        }
        case ACTOR_EVENTS.input:
          if (!life) diff(seq, `seq ${seq}: an input (${show(d.event as EmittedFact)}) for no running actor`);
          else life.actor.send(d.event as EmittedFact);
          break;
        case ACTOR_EVENTS.timer:
          if (!life) diff(seq, `seq ${seq}: a delay fired for no running actor`);
          else if (!life.clock.fire(Number(d.n))) diff(seq, `seq ${seq}: delay ${String(d.n)} fired, which the machine never set or had cancelled`);
          break;
        case ACTOR_EVENTS.crashed:
          end(seq, false);
          break;
        default: {
          if (!life) break;
          const next = life.emitted.shift();
          if (next) {
            if (show(next) !== show(fact)) diff(seq, `seq ${seq}: the log has ${show(fact)}, the machine emitted ${show(next)}`);
          } else if (life.actor.getSnapshot().status === 'active') {
            diff(seq, `seq ${seq}: the log has ${show(fact)}, the machine emitted nothing`);
          }
        }
      }
    }
    end(seq, true);
  } catch (err) {
    diff(null, `the machine threw while being re-driven: ${(err as Error).message}`);
    life?.actor.stop();
  }
  return diffs;
}
