import { Subscription } from 'rxjs';
import { causedBy, type Bus } from '../../bus/index.js';
import {
  AUTOMATION_EVENTS,
  DERIVED_RECORD_FIELDS,
  MAIN_AGENT,
  MASKED_SECRET,
  PORTABILITY_COMMANDS,
  SvcError,
  USER_EVENTS,
  cronJobStream,
  maskSecrets,
  webhookStream,
  type CronJobRecord,
  type ImportBody,
  type ImportResult,
  type Principal,
  type SubAgentConfig,
  type UserRecord,
  type WebhookRecord,
} from '../../schemas/index.js';
import { agentAccess, signatureProblem, unrestricted } from '../../machines/index.js';
import { loadCronJobs, loadUsers, loadWebhooks, saveCronJobs, saveUsers, saveWebhooks, type HomePaths } from '../../store/index.js';
import { prepareCronJobFolder } from '../automation/cron-scheduler.js';
import { webhookView } from '../automation/automation-records.js';

/*
 * Export and import of cron jobs, webhooks and users (SPEC.md `/api/export`, `/api/import`). Import
 * merges: a record whose id (username) exists is skipped, never overwritten. The whole import is
 * checked before anything is written, so a refused one changes nothing.
 */

export interface PortabilityDeps {
  bus: Bus;
  paths: HomePaths;
  registry: () => readonly SubAgentConfig[];
  version: string;
}

/** WIRE.md `UserInfo`: what an export may say about a user (no hash, no TOTP secret, no token version). */
function userInfo(u: UserRecord) {
  return {
    username: u.username,
    role: u.role,
    display_name: u.display_name,
    allowed_agents: u.allowed_agents,
    telegram_user_ids: u.telegram_user_ids,
    active: u.active,
    created_at: u.created_at,
    totp_enabled: u.totp_enabled,
    avatar: u.avatar,
  };
}

function withoutDerived<T extends Record<string, unknown>>(r: T): T {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(r)) if (v !== undefined && !(DERIVED_RECORD_FIELDS as readonly string[]).includes(k)) out[k] = v;
  return out as T;
}

export function startPortability(deps: PortabilityDeps): Subscription {
  const { bus, paths } = deps;
  const allowed = (p: Principal, agent: string) => agentAccess(p, agent, deps.registry()).allowed;

  /** Nothing is written unless every entry passes: agents exist and are the caller's, users grant no more than the caller has. */
  const check = (p: Principal, data: ImportBody): void => {
    const known = new Set([MAIN_AGENT, ...deps.registry().map((r) => r.name)]);
    const entries: [string, { agent: string }[]][] = [
      ['cron_jobs', data.cron_jobs],
      ['webhooks', data.webhooks],
    ];
    for (const [field, list] of entries) {
      list.forEach((r, i) => {
        if (!allowed(p, r.agent)) throw new SvcError('agent-not-allowed', `body.${field}[${i}].agent: you may not use agent ${JSON.stringify(r.agent)}; nothing was imported`);
        if (!known.has(r.agent)) throw new SvcError('invalid-body', `body.${field}[${i}].agent: no agent named ${JSON.stringify(r.agent)}; nothing was imported`);
      });
    }
    // As the admin API's create refuses it: a signing time that is not signed proves nothing.
    data.webhooks.forEach((h, i) => {
      const problem = signatureProblem(h.signature);
      if (problem) throw new SvcError('invalid-body', `body.webhooks[${i}].signature.${problem.field}: ${problem.message}; nothing was imported`);
    });
    if (!unrestricted(p)) {
      data.users.forEach((u, i) => {
        const agents = u.allowed_agents ?? [];
        if (agents.length === 0 || agents.includes('*') || agents.some((a) => !p.allowed_agents.includes(a))) {
          throw new SvcError('agent-not-allowed', `body.users[${i}].allowed_agents: a user may not be given agents you may not use yourself; nothing was imported`);
        }
      });
    }
  };

  const subs = new Subscription();
  subs.add(
    // Masked whole: a credential-named field of any record (a hand edit's `token`) never leaves.
    bus.handle(PORTABILITY_COMMANDS.export, 'portability', ({ data }) =>
      maskSecrets({
        version: deps.version,
        exported_at: new Date(bus.now()).toISOString(),
        cron_jobs: loadCronJobs(paths).filter((j) => allowed(data.principal, j.agent)),
        webhooks: loadWebhooks(paths)
          .filter((h) => allowed(data.principal, h.agent))
          .map((h) => ({ ...h, secret: webhookView(h).secret })),
        users: loadUsers(paths).map(userInfo),
      }),
    ),
  );
  subs.add(
    bus.handle(PORTABILITY_COMMANDS.import, 'portability', async (cmd): Promise<ImportResult> => {
      const { principal, data } = cmd.data;
      check(principal, data);
      const now = Math.floor(bus.now() / 1000);
      let skipped = 0;

      // Synchronous from each load to its save: no other command's write can fall in between.
      const jobs = loadCronJobs(paths);
      const jobIds = new Set(jobs.map((j) => j.id));
      const newJobs: CronJobRecord[] = [];
      for (const j of data.cron_jobs) {
        if (jobIds.has(j.id)) skipped++;
        else {
          jobIds.add(j.id);
          newJobs.push({ ...withoutDerived(j), name: j.name ?? j.title, enabled: j.enabled ?? true, description: j.description ?? '', created_at: now } as CronJobRecord);
        }
      }
      const hooks = loadWebhooks(paths);
      const hookIds = new Set(hooks.map((h) => h.id));
      const newHooks: WebhookRecord[] = [];
      for (const h of data.webhooks) {
        if (hookIds.has(h.id)) skipped++;
        else {
          hookIds.add(h.id);
          const secret = typeof h.secret === 'string' && h.secret.length >= 8 && h.secret !== MASKED_SECRET ? h.secret : null;
          newHooks.push({ ...withoutDerived(h), enabled: h.enabled ?? true, description: h.description ?? '', secret, created_at: now } as WebhookRecord);
        }
      }
      const users = loadUsers(paths);
      const names = new Set(users.map((u) => u.username));
      const newUsers: UserRecord[] = [];
      for (const u of data.users) {
        if (names.has(u.username)) skipped++;
        else {
          names.add(u.username);
          // No password: the user cannot log in until an admin sets one.
          newUsers.push({
            username: u.username,
            role: u.role,
            active: u.active ?? true,
            allowed_agents: u.allowed_agents ?? [],
            telegram_user_ids: u.telegram_user_ids ?? [],
            token_version: 0,
            errors_ack_at: null,
            display_name: u.display_name ?? '',
            avatar: null,
            password_hash: '',
            totp_secret: null,
            totp_enabled: false,
            created_at: now,
          });
        }
      }
      // An imported job gets its folder as a created one does, or its first run is error:folder_missing.
      for (const j of newJobs) prepareCronJobFolder(paths, j.id);
      if (newJobs.length) saveCronJobs(paths, [...jobs, ...newJobs]);
      if (newHooks.length) saveWebhooks(paths, [...hooks, ...newHooks]);
      if (newUsers.length) saveUsers(paths, [...users, ...newUsers]);

      for (const j of newJobs) {
        await bus.publish({ stream: cronJobStream(j.id), type: AUTOMATION_EVENTS.job_created, data: { id: j.id, agent: j.agent, by: principal.id }, ...causedBy(cmd) });
      }
      for (const h of newHooks) {
        await bus.publish({ stream: webhookStream(h.id), type: AUTOMATION_EVENTS.created, data: { id: h.id, agent: h.agent, by: principal.id }, ...causedBy(cmd) });
      }
      for (const u of newUsers) {
        await bus.publish({ stream: `user:${u.username}`, type: USER_EVENTS.created, data: { username: u.username, role: u.role, by: principal.id }, ...causedBy(cmd) });
      }
      return { cron_jobs_added: newJobs.length, webhooks_added: newHooks.length, users_added: newUsers.length, skipped };
    }),
  );
  return subs;
}
