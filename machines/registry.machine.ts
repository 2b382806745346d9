import { emit, enqueueActions, fromCallback, setup, type EventObject } from 'xstate';
import { REGISTRY_EVENTS, type Fact, type TypesOf, type SubAgentConfig } from '../schemas/index.js';
import { diffRegistry, parseRegistryText } from './config.logic.js';

export interface RegistryMachineInput {
  entries: SubAgentConfig[];
  /** Path named in error messages. */
  file: string;
  /** Where the watcher looks; absent in tests that drive the machine by hand. */
  paths?: RegistryLocations;
  intervalMs?: number;
}

/** Both places the registry may live: `_secrets/agents.json` first, the legacy root file second. */
export interface RegistryLocations {
  agentsRegistry: string;
  legacyAgentsRegistry: string;
}

export interface RegistryMachineContext {
  file: string;
  paths: RegistryLocations | undefined;
  intervalMs: number | undefined;
  entries: SubAgentConfig[];
}

/** The watcher read the registry; `file` is whichever location it read (`_secrets/` or legacy). */
export interface RegistryFileChanged {
  type: 'file.changed';
  text: string;
  file?: string;
}

export type RegistryFact = Fact<TypesOf<typeof REGISTRY_EVENTS>>;

/**
 * Holds the last good sub-agent registry and reports each agent that appeared, disappeared or
 * changed; whoever supervises sub-agents starts, stops or restarts them from those facts.
 */
export const registryMachine = setup({
  types: {
    input: {} as RegistryMachineInput,
    context: {} as RegistryMachineContext,
    events: {} as RegistryFileChanged,
    emitted: {} as RegistryFact,
  },
  actors: {
    // Bound with .provide() by the host: it polls both locations and sends `file.changed`.
    watcher: fromCallback<EventObject, { paths: RegistryLocations; intervalMs?: number }>(() => undefined),
  },
}).createMachine({
  id: 'registry',
  initial: 'watching',
  context: ({ input }) => ({ file: input.file, entries: input.entries, paths: input.paths, intervalMs: input.intervalMs }),
  invoke: {
    src: 'watcher',
    input: ({ context }) => ({
      paths: context.paths ?? { agentsRegistry: context.file, legacyAgentsRegistry: context.file },
      ...(context.intervalMs ? { intervalMs: context.intervalMs } : {}),
    }),
  },
  states: {
    watching: {
      on: {
        'file.changed': {
          actions: enqueueActions(({ context, event, enqueue }) => {
            const file = event.file ?? context.file;
            const checked = parseRegistryText(event.text, file);
            if (!checked.ok) {
              enqueue(emit({ type: REGISTRY_EVENTS.rejected, data: { file, errors: checked.errors } }));
              return;
            }
            const diff = diffRegistry(context.entries, checked.entries);
            enqueue.assign({ file, entries: checked.entries });
            for (const name of diff.removed) enqueue(emit({ type: REGISTRY_EVENTS.agent_removed, data: { name } }));
            for (const name of diff.added) enqueue(emit({ type: REGISTRY_EVENTS.agent_added, data: { name } }));
            for (const c of diff.changed) {
              enqueue(emit({ type: REGISTRY_EVENTS.agent_changed, data: { name: c.name, restart: c.restart, fields: c.fields } }));
            }
          }),
        },
      },
    },
  },
});
