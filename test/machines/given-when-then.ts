/**
 * Given/when/then for deciders (DESIGN.md §8): given these facts, when this command, then these facts
 * or this rejection. The facts decided are also folded back in, so a test sees the state they lead to.
 */
export interface Decider<C, S, F> {
  decide(command: C, state: S): { ok: true; facts: F[] } | { ok: false; code: string; message: string };
  evolve(state: S, fact: F): S;
  initial: S;
}

export function given<C, S, F>(decider: Decider<C, S, F>, facts: readonly F[]) {
  const state = facts.reduce(decider.evolve, decider.initial);
  return {
    state,
    when(command: C) {
      const d = decider.decide(command, state);
      return {
        decision: d,
        /** The facts decided; throws with the rejection's code when the command was refused. */
        facts(): F[] {
          if (!d.ok) throw new Error(`rejected: ${d.code}: ${d.message}`);
          return d.facts;
        },
        /** The rejection's code; throws when the command was accepted. */
        rejection(): string {
          if (d.ok) throw new Error(`accepted with ${d.facts.length} fact(s)`);
          return d.code;
        },
        /** The state after the decided facts. */
        state(): S {
          return d.ok ? d.facts.reduce(decider.evolve, state) : state;
        },
      };
    },
  };
}
