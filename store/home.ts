import { homedir } from 'node:os';
import { isAbsolute, join, resolve } from 'node:path';

/** Every path SPEC.md names under the service home, in one place so no module guesses a path. */
export interface HomePaths {
  root: string;
  configDir: string;
  configFile: string;
  secretsDir: string;
  usersFile: string;
  /** Registry written under `_secrets/`; the legacy `agents.json` at the root is still read. */
  agentsRegistry: string;
  legacyAgentsRegistry: string;
  mainAgentTokenFile: string;
  initialAdminPasswordFile: string;
  /** Refresh-token families of the admin panel (hashes only). */
  refreshTokensFile: string;
  envFile: string;
  tasksFile: string;
  cronJobsFile: string;
  webhooksFile: string;
  chatReadsFile: string;
  workflowsDir: string;
  workspace: string;
  agentsDir: string;
  skillsDir: string;
  /** What the fileshare server serves (FileshareConfig): agents drop files here to hand the user a link. */
  fileshareDir: string;
  /** The RAG vector index (SPEC.md "RAG status"); written by an indexer, only described here. */
  ragIndex: string;
  logsDir: string;
  eventsDb: string;
  /** Written once the log has held history; its presence with no log means the log was lost. */
  eventsHistoryMarker: string;
  pidFile: string;
}

/** `SVC_HOME` wins, else `~/.svc`; a leading `~` is expanded so hand-written values work. */
export function resolveHomeRoot(env: NodeJS.ProcessEnv = process.env, home: string = homedir()): string {
  const raw = env.SVC_HOME?.trim() || join(home, '.svc');
  return expandHome(raw, home);
}

export function expandHome(p: string, home: string = homedir()): string {
  if (p === '~') return home;
  if (p.startsWith('~/')) return join(home, p.slice(2));
  return isAbsolute(p) ? p : resolve(p);
}

export function homePaths(root: string): HomePaths {
  const secretsDir = join(root, '_secrets');
  const configDir = join(root, 'config');
  return {
    root,
    configDir,
    configFile: join(configDir, 'config.json'),
    secretsDir,
    usersFile: join(secretsDir, 'users.json'),
    agentsRegistry: join(secretsDir, 'agents.json'),
    legacyAgentsRegistry: join(root, 'agents.json'),
    mainAgentTokenFile: join(secretsDir, 'main_agent_token.json'),
    initialAdminPasswordFile: join(secretsDir, '.initial_admin_password'),
    refreshTokensFile: join(secretsDir, 'refresh_tokens.json'),
    envFile: join(root, '.env'),
    tasksFile: join(root, 'tasks.json'),
    cronJobsFile: join(root, 'cron_jobs.json'),
    webhooksFile: join(root, 'webhooks.json'),
    chatReadsFile: join(root, 'chat_reads.json'),
    workflowsDir: join(root, 'workflows'),
    workspace: join(root, 'workspace'),
    agentsDir: join(root, 'agents'),
    skillsDir: join(root, 'skills'),
    fileshareDir: join(root, 'fileshare'),
    ragIndex: join(root, 'rag', 'index.db'),
    logsDir: join(root, 'logs'),
    eventsDb: join(root, 'events.db'),
    eventsHistoryMarker: join(root, 'events.db.history'),
    pidFile: join(root, 'svc.pid'),
  };
}

/**
 * What no endpoint ever serves, in any `file_access` mode: credentials and settings (`_secrets/`,
 * `config/`, `.env`, the legacy registry with agent tokens), the event log with every SQLite
 * sidecar it may have, and the pid file.
 */
export function serviceSecretPaths(paths: HomePaths): string[] {
  const db = paths.eventsDb;
  return [
    paths.secretsDir,
    paths.configDir,
    paths.envFile,
    paths.legacyAgentsRegistry,
    db,
    `${db}-wal`,
    `${db}-shm`,
    `${db}-journal`,
    paths.pidFile,
  ];
}

/** A sub-agent's own home: SPEC.md forces `svc_home` to `~/.svc/agents/<name>/`. */
export function agentHomeRoot(paths: HomePaths, name: string): string {
  return join(paths.agentsDir, name);
}
