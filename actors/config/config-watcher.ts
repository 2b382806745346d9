import * as fs from 'node:fs';
import * as fsp from 'node:fs/promises';
import { fromCallback, type EventObject } from 'xstate';
import type { ConfigFileChanged, RegistryFileChanged } from '../../machines/index.js';
import { existingDirectories } from '../../store/index.js';

/** SPEC.md: config, registry and workflow files are polled every 5 seconds. */
export const CONFIG_POLL_MS = 5000;

export interface ConfigWatcherInput {
  file: string;
  intervalMs?: number;
}

export interface RegistryWatcherInput {
  paths: { agentsRegistry: string; legacyAgentsRegistry: string };
  intervalMs?: number;
}

/**
 * What identifies a version of a file without reading it. The inode is part of it because atomic
 * writes replace the file, and a same-size rewrite within the mtime granularity would otherwise be missed.
 */
function signature(path: string): string | null {
  try {
    const st = fs.statSync(path);
    return `${st.ino}:${st.mtimeMs}:${st.size}`;
  } catch {
    return null;
  }
}

/**
 * Polls one or more candidate paths; reports the first existing one whenever its signature
 * changes. A missing file reports nothing: a vanished file is more likely mid-edit than meant as "empty".
 */
function poller(
  candidates: () => string[],
  intervalMs: number,
  onChange: (file: string, text: string) => void,
): () => void {
  const current = (): { file: string; sig: string } | null => {
    for (const file of candidates()) {
      const sig = signature(file);
      if (sig) return { file, sig: `${file}:${sig}` };
    }
    return null;
  };
  let last = current()?.sig ?? null;
  let busy = false;
  let stopped = false;
  const timer = setInterval(() => {
    if (busy || stopped) return;
    const now = current();
    if (!now || now.sig === last) return;
    busy = true;
    fsp
      .readFile(now.file, 'utf8')
      .then((text) => {
        // The signature is taken before reading, so a write landing during the read is seen next tick.
        last = now.sig;
        if (!stopped) onChange(now.file, text);
      })
      .catch(() => {
        // Gone between stat and read (an editor's rename dance); the next tick looks again.
      })
      .finally(() => {
        busy = false;
      });
  }, intervalMs);
  return () => {
    stopped = true;
    clearInterval(timer);
  };
}

/** Sends `file.changed` (text and which `additional_directories` exist) to its parent when config.json changes. */
export const configWatcher = fromCallback<EventObject, ConfigWatcherInput>(({ sendBack, input }) => {
  return poller(() => [input.file], input.intervalMs ?? CONFIG_POLL_MS, (_file, text) => {
    const event: ConfigFileChanged = { type: 'file.changed', text, existingDirs: existingDirectories(text) };
    sendBack(event);
  });
});

/** Sends `file.changed` to its parent when the registry (`_secrets/agents.json`, else legacy `agents.json`) changes. */
export const registryWatcher = fromCallback<EventObject, RegistryWatcherInput>(({ sendBack, input }) => {
  const { agentsRegistry, legacyAgentsRegistry } = input.paths;
  return poller(() => [agentsRegistry, legacyAgentsRegistry], input.intervalMs ?? CONFIG_POLL_MS, (file, text) => {
    const event: RegistryFileChanged = { type: 'file.changed', text, file };
    sendBack(event);
  });
});
