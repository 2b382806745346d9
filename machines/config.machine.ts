import { emit, enqueueActions, fromCallback, setup, type EventObject } from 'xstate';
import { CONFIG_EVENTS, type AgentConfig, type Fact } from '../schemas/index.js';
import { applyHotFields, diffConfig, parseConfigText, pendingRestartFields } from './config.logic.js';

export interface ConfigMachineInput {
  /** The config the service started with (already loaded and validated). */
  config: AgentConfig;
  /** Path named in error messages and watched for edits. */
  file: string;
  /** Poll interval handed to the watcher; SPEC.md's 5 s when absent. */
  intervalMs?: number;
  /** Unknown keys the file had at start-up (already reported then). */
  unknownKeys?: string[];
}

export interface ConfigMachineContext {
  file: string;
  intervalMs: number | undefined;
  /** What the running service uses: hot fields from the file, restart-required ones from start-up. */
  config: AgentConfig;
  /** The last valid content of the file; edits are diffed against it. */
  fileConfig: AgentConfig;
  /** Restart-required fields whose file value is not running yet. */
  pendingRestart: string[];
  /** Keys of the file the schema does not know, as last reported. */
  unknownKeys: string[];
}

/** The watcher read the file: its text and which `additional_directories` it found to exist. */
export interface ConfigFileChanged {
  type: 'file.changed';
  text: string;
  existingDirs: string[];
}

export type ConfigFact = Fact<typeof CONFIG_EVENTS.reloaded | typeof CONFIG_EVENTS.rejected>;

/**
 * Holds the last good config.json. A bad edit is reported and changes nothing; a good one applies
 * hot-reloadable fields at once and records the rest as waiting for a restart.
 */
export const configMachine = setup({
  types: {
    input: {} as ConfigMachineInput,
    context: {} as ConfigMachineContext,
    events: {} as ConfigFileChanged,
    emitted: {} as ConfigFact,
  },
  actors: {
    // Bound with .provide() by the host: it polls the file and sends `file.changed`.
    watcher: fromCallback<EventObject, { file: string; intervalMs?: number }>(() => undefined),
  },
}).createMachine({
  id: 'config',
  initial: 'watching',
  context: ({ input }) => ({
    file: input.file,
    intervalMs: input.intervalMs,
    config: input.config,
    fileConfig: input.config,
    pendingRestart: [],
    unknownKeys: input.unknownKeys ?? [],
  }),
  invoke: {
    src: 'watcher',
    input: ({ context }) => ({ file: context.file, ...(context.intervalMs ? { intervalMs: context.intervalMs } : {}) }),
  },
  states: {
    watching: {
      on: {
        'file.changed': {
          actions: enqueueActions(({ context, event, enqueue }) => {
            const checked = parseConfigText(event.text, context.file, event.existingDirs);
            if (!checked.ok) {
              enqueue(emit({ type: CONFIG_EVENTS.rejected, data: { file: context.file, errors: checked.errors } }));
              return;
            }
            const next = checked.config;
            const { hot, restart } = diffConfig(context.fileConfig, next);
            const config = applyHotFields(context.config, next);
            const pendingRestart = pendingRestartFields(config, next);
            enqueue.assign({ fileConfig: next, config, pendingRestart });
            // A restart-required field edited back to its running value needs nothing.
            const restartRequired = restart.filter((f) => pendingRestart.includes(f));
            // A typo'd key changes nothing else, so it is news on its own; the same set again is not.
            const unknownChanged = checked.unknownKeys.join('\n') !== context.unknownKeys.join('\n');
            if (unknownChanged) enqueue.assign({ unknownKeys: checked.unknownKeys });
            if (hot.length === 0 && restartRequired.length === 0 && !unknownChanged) return;
            const unknown = checked.unknownKeys.length ? { unknown_keys: checked.unknownKeys } : {};
            enqueue(emit({ type: CONFIG_EVENTS.reloaded, data: { hot_applied: hot, restart_required: restartRequired, ...unknown } }));
          }),
        },
      },
    },
  },
});
