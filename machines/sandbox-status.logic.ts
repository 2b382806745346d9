import type { AgentConfig } from '../schemas/index.js';

/*
 * Where the agents' CLIs run, for the start banner, the start-up log and `svc doctor`. This build
 * has no Docker sandbox yet, so `docker.enabled: true` is said out loud instead of being ignored:
 * SPEC.md DockerConfig has svc warn and run on the host when the sandbox cannot be set up. Pure.
 */

export interface SandboxStatus {
  /** The agents run inside the sandbox container. Never, in this build. */
  on: boolean;
  /** `docker.enabled`: the sandbox was asked for. */
  requested: boolean;
  /** Where the agents run and why; one phrase. */
  why: string;
  /** Said at every start while they hold; empty when nothing was asked for that svc does not do. */
  warnings: string[];
}

type SandboxFacts = Pick<AgentConfig, 'docker' | 'permission_mode' | 'permission_mode_by_role'>;

/**
 * `bypassPermissions` is the mode someone expects to be contained when they turn the sandbox on:
 * any role that gets it (or the fallback) now runs every tool call on the host unprompted.
 */
function bypassRoles(config: SandboxFacts): string[] {
  const roles = Object.entries(config.permission_mode_by_role as Record<string, string>)
    .filter(([, mode]) => mode === 'bypassPermissions')
    .map(([role]) => role);
  return config.permission_mode === 'bypassPermissions' ? [...roles, 'permission_mode'] : roles;
}

export function sandboxStatus(config: SandboxFacts): SandboxStatus {
  if (!config.docker.enabled) return { on: false, requested: false, why: 'off: the agents run on the host (docker.enabled is false)', warnings: [] };
  const why = 'off: docker.enabled is true, but this version of svc has no Docker sandbox yet; the agents run on the host';
  const warnings = [`${why}`];
  const bypass = bypassRoles(config);
  if (bypass.length) {
    warnings.push(
      `bypassPermissions without a sandbox: the agents run every command on the host without asking (for ${bypass.join(', ')}); set permission_mode_by_role / permission_mode to acceptEdits or default until the sandbox exists`,
    );
  }
  return { on: false, requested: true, why, warnings };
}
