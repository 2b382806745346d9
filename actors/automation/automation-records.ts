import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { Subscription } from 'rxjs';
import { causedBy, type Bus } from '../../bus/index.js';
import {
  AUTOMATION_EVENTS,
  CRON_COMMANDS,
  MAIN_AGENT,
  MASKED_SECRET,
  hookIdInUrl,
  SvcError,
  WEBHOOK_COMMANDS,
  cronJobStream,
  maskSecrets,
  webhookStream,
  type CronJobRecord,
  type Principal,
  type SubAgentConfig,
  type WebhookRecord,
  type WebhookSignature,
} from '../../schemas/index.js';
import { agentAccess, cronTimeZone, scheduleProblem, signatureProblem } from '../../machines/index.js';
import { loadCronJobs, loadWebhooks, saveCronJobs, saveWebhooks, type EventLog, type HomePaths } from '../../store/index.js';
import { prepareCronJobFolder, type CronScheduler } from './cron-scheduler.js';
import { cronRuns, webhookRuns } from './run-history.js';
import { handleTriggers } from './webhook-calls.js';
import { type WebhookDispatchDeps } from './webhook-dispatch.js';

/*
 * Cron job and webhook records through the admin API (SPEC.md "Admin REST: cron jobs", "Admin
 * REST: webhooks", "Agent-scoped access"), and the webhook server's calls (webhook-calls.ts), which
 * update the same webhooks.json under the same subscription: one owner of the file. An admin change is load → change → save
 * with no await in between, then a fact; a call's run fields are patches the store writes in
 * batches over the file as it then is (patchWebhookRecord), so neither loses the other's writes.
 * A manual run goes to the cron scheduler (refused `no-scheduler` while it is not running).
 */

export interface AutomationRecordsDeps {
  bus: Bus;
  paths: HomePaths;
  registry: () => readonly SubAgentConfig[];
  /** Injected so tests get predictable ids and secrets. */
  newId?: () => string;
  newSecret?: () => string;
  /** What the webhook server's calls need; without it `webhook.trigger` is not handled. */
  webhooks?: WebhookDispatchDeps;
  /** The scheduler once it runs: manual runs go to it; until then they are refused `no-scheduler`. */
  cron?: () => Pick<CronScheduler, 'runNow'> | null;
  /** The zone a job without one is read in (user_timezone → TZ → host → UTC). */
  defaultZone?: () => string;
  /** The event log the run histories are folded from; without it they are not handled. */
  log?: Pick<EventLog, 'read'>;
}

/** Lists show whether a secret is set, never the secret. */
export function maskSecret(secret: unknown): string {
  return typeof secret === 'string' && secret !== '' ? MASKED_SECRET : '';
}

/** WIRE.md §2's cron job; any field named like a credential (a hand edit's `token`) is masked. */
export function cronJobView(j: CronJobRecord): Record<string, unknown> & { id: string; agent: string } {
  return maskSecrets({
    ...j,
    name: j.name ?? j.title,
    status: j.enabled ? 'active' : 'paused',
    last_run_at: j.last_run_at ?? null,
    next_run: j.next_run ?? null,
    execution_count: typeof j.execution_count === 'number' ? j.execution_count : 0,
    avg_duration: j.avg_duration ?? null,
    timezone: j.timezone ?? null,
    provider: j.provider ?? null,
    model: j.model ?? null,
  });
}

/**
 * WIRE.md §2's webhook; `url` is the path the webhook server receives it on. Every field named like
 * a credential is masked, not only `secret`: ductor's `token` and `hmac_secret`, or whatever else a
 * hand edit left in the file.
 */
export function webhookView(h: WebhookRecord): Record<string, unknown> & { id: string; agent: string } {
  return maskSecrets({
    ...h,
    name: h.name ?? h.title ?? h.id,
    title: h.title ?? h.name ?? h.id,
    url: `/hooks/${h.id}`,
    method: 'POST',
    status: h.enabled ? 'active' : 'paused',
    mode: h.mode ?? 'wake',
    last_triggered: h.last_triggered ?? null,
    trigger_count: typeof h.trigger_count === 'number' ? h.trigger_count : 0,
    secret: maskSecret(h.secret),
  });
}

/**
 * A signature as senders write it: hex or base64 HMAC-SHA256, optionally after `sha256=`. The
 * comparison is constant-time; a signature of the wrong length or encoding is simply not valid.
 */
export function hmacMatches(secret: string, payload: string, signature: string): boolean {
  const expected = createHmac('sha256', secret).update(payload, 'utf8').digest();
  const sig = signature.trim().replace(/^sha256=/i, '');
  const given = /^[0-9a-f]{64}$/i.test(sig) ? Buffer.from(sig, 'hex') : /^[A-Za-z0-9+/]{43}=?$/.test(sig) ? Buffer.from(sig, 'base64') : null;
  return given !== null && given.length === expected.length && timingSafeEqual(given, expected);
}

/** Names of what an update set, for its fact; a kept (`***`) secret is not a change. */
function changedFields(changes: Record<string, unknown>): string[] {
  return Object.keys(changes)
    .filter((k) => changes[k] !== undefined && k !== 'url' && !(k === 'secret' && changes[k] === MASKED_SECRET))
    .sort();
}

/** Keys the body left out are not written as `undefined`. */
function defined<T extends Record<string, unknown>>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}

export function startAutomationRecords(deps: AutomationRecordsDeps): Subscription {
  const { bus, paths } = deps;
  const newId = deps.newId ?? (() => randomBytes(6).toString('hex'));
  const newSecret = deps.newSecret ?? (() => randomBytes(32).toString('hex'));

  const allowed = (p: Principal, agent: string) => agentAccess(p, agent, deps.registry()).allowed;
  /** Writes need the record's agent allowed (SPEC.md "Agent-scoped access"). */
  const mayAct = (p: Principal, agent: string, what: string) => {
    const access = agentAccess(p, agent, deps.registry());
    if (!access.allowed) throw new SvcError('agent-not-allowed', `${what}: ${access.message}`);
  };
  const agentExists = (name: string, field: string) => {
    if (name !== MAIN_AGENT && !deps.registry().some((r) => r.name === name)) throw new SvcError('invalid-body', `${field}: no agent named ${JSON.stringify(name)}`);
  };
  const nowSeconds = () => Math.floor(bus.now() / 1000);
  /** The schema checked the shape; croner checks that the schedule fires in the zone it will run in. */
  const schedulable = (schedule: string, timezone: string | null | undefined) => {
    const zone = cronTimeZone(timezone, deps.defaultZone?.() ?? 'UTC', null, null);
    const problem = scheduleProblem(schedule, zone);
    if (problem !== null) throw new SvcError('invalid-body', `body.schedule: ${problem}`);
  };

  // Cron jobs.
  const cronNotFound = (id: string) => new SvcError('not-found', `cron job ${JSON.stringify(id)} does not exist`);
  /** The job, when the caller may act on it; 404 for a job that is not there. */
  const cronJob = (p: Principal, id: string, what: string): { jobs: CronJobRecord[]; index: number } => {
    const jobs = loadCronJobs(paths);
    const index = jobs.findIndex((j) => j.id === id);
    if (index < 0) throw cronNotFound(id);
    mayAct(p, jobs[index]!.agent, what);
    return { jobs, index };
  };

  const subs = new Subscription();
  subs.add(bus.handle(CRON_COMMANDS.list, 'automation', ({ data }) => loadCronJobs(paths).filter((j) => allowed(data.principal, j.agent)).map(cronJobView)));
  subs.add(
    bus.handle(CRON_COMMANDS.create, 'automation', async (cmd) => {
      const { principal, job } = cmd.data;
      mayAct(principal, job.agent, 'create cron job');
      agentExists(job.agent, 'body.agent');
      const jobs = loadCronJobs(paths);
      const id = job.id ?? newId();
      if (jobs.some((j) => j.id === id)) throw new SvcError('cron-job-exists', `cron job ${JSON.stringify(id)} already exists`);
      schedulable(job.schedule, job.timezone);
      const record: CronJobRecord = { ...defined(job), id, name: job.name ?? job.title, enabled: job.enabled ?? true, description: job.description ?? '', created_at: nowSeconds() } as CronJobRecord;
      // Its runs work in this folder and keep their memory file there.
      prepareCronJobFolder(paths, id);
      saveCronJobs(paths, [...jobs, record]);
      await bus.publish({ stream: cronJobStream(id), type: AUTOMATION_EVENTS.job_created, data: { id, agent: job.agent, by: principal.id }, ...causedBy(cmd) });
      return cronJobView(record);
    }),
  );
  subs.add(
    bus.handle(CRON_COMMANDS.update, 'automation', async (cmd) => {
      const { principal, id, changes } = cmd.data;
      const { jobs, index } = cronJob(principal, id, 'update cron job');
      if (changes.agent !== undefined) {
        mayAct(principal, changes.agent, 'move cron job');
        agentExists(changes.agent, 'body.agent');
      }
      const record = { ...jobs[index]!, ...defined(changes), updated_at: nowSeconds() } as CronJobRecord;
      if (changes.schedule !== undefined || changes.timezone !== undefined) schedulable(record.schedule, record.timezone as string | null | undefined);
      saveCronJobs(paths, jobs.map((j, i) => (i === index ? record : j)));
      await bus.publish({ stream: cronJobStream(id), type: AUTOMATION_EVENTS.job_updated, data: { id, agent: record.agent, fields: changedFields(changes), by: principal.id }, ...causedBy(cmd) });
      return cronJobView(record);
    }),
  );
  subs.add(
    bus.handle(CRON_COMMANDS.delete, 'automation', async (cmd) => {
      const { principal, id } = cmd.data;
      const { jobs, index } = cronJob(principal, id, 'delete cron job');
      const agent = jobs[index]!.agent;
      saveCronJobs(paths, jobs.filter((_, i) => i !== index));
      await bus.publish({ stream: cronJobStream(id), type: AUTOMATION_EVENTS.job_deleted, data: { id, agent, by: principal.id }, ...causedBy(cmd) });
      return { id, deleted: true as const };
    }),
  );
  subs.add(
    bus.handle(CRON_COMMANDS.run, 'automation', async (cmd) => {
      const { data } = cmd;
      cronJob(data.principal, data.id, 'run cron job');
      const scheduler = deps.cron?.() ?? null;
      if (!scheduler) throw new SvcError('no-scheduler', `cron job ${JSON.stringify(data.id)} was not run: the cron scheduler is not running`);
      const { started } = await scheduler.runNow(data.id, causedBy(cmd));
      return { started };
    }),
  );

  // Webhooks.
  const hookNotFound = (id: string) => new SvcError('not-found', `webhook ${JSON.stringify(id)} does not exist`);
  const webhook = (p: Principal, id: string, what: string): { hooks: WebhookRecord[]; index: number } => {
    const hooks = loadWebhooks(paths);
    const index = hooks.findIndex((h) => h.id === id);
    if (index < 0) throw hookNotFound(id);
    mayAct(p, hooks[index]!.agent, what);
    return { hooks, index };
  };

  /** The schema checked each field; this checks they make a scheme whose signing time is signed. */
  const soundSignature = (signature: WebhookSignature | null | undefined) => {
    const problem = signatureProblem(signature);
    if (problem) throw new SvcError('invalid-body', `body.signature.${problem.field}: ${problem.message}`);
  };

  subs.add(bus.handle(WEBHOOK_COMMANDS.list, 'automation', ({ data }) => loadWebhooks(paths).filter((h) => allowed(data.principal, h.agent)).map(webhookView)));
  subs.add(
    bus.handle(WEBHOOK_COMMANDS.create, 'automation', async (cmd) => {
      const { principal, hook } = cmd.data;
      mayAct(principal, hook.agent, 'create webhook');
      agentExists(hook.agent, 'body.agent');
      const hooks = loadWebhooks(paths);
      const id = hook.id ?? newId();
      if (hooks.some((h) => h.id === id)) throw new SvcError('webhook-exists', `webhook ${JSON.stringify(id)} already exists`);
      soundSignature(hook.signature);
      const generated = hook.secret === undefined;
      const secret = hook.secret ?? newSecret();
      const name = hook.name ?? hook.title ?? id;
      const record = { ...defined(hook), id, name, title: hook.title ?? name, enabled: hook.enabled ?? true, description: hook.description ?? '', mode: hook.mode ?? 'wake', secret, created_at: nowSeconds() } as WebhookRecord;
      saveWebhooks(paths, [...hooks, record]);
      await bus.publish({ stream: webhookStream(id), type: AUTOMATION_EVENTS.created, data: { id, agent: hook.agent, by: principal.id }, ...causedBy(cmd) });
      // A secret svc made up is shown this once, so the sender can be configured; never again.
      return generated ? { ...webhookView(record), secret } : webhookView(record);
    }),
  );
  subs.add(
    bus.handle(WEBHOOK_COMMANDS.update, 'automation', async (cmd) => {
      const { principal, id, changes } = cmd.data;
      const { hooks, index } = webhook(principal, id, 'update webhook');
      if (changes.agent !== undefined) {
        mayAct(principal, changes.agent, 'move webhook');
        agentExists(changes.agent, 'body.agent');
      }
      // A form sends the hook's url back; it is derived, never stored, and must still name this hook.
      const { secret, url, ...rest } = changes;
      if (url !== undefined && hookIdInUrl(url) !== id) throw new SvcError('invalid-body', `body.url must be /hooks/${id} (or a URL ending with it): a hook's id does not change`);
      // The masked value a form sends back keeps the stored secret.
      const record = { ...hooks[index]!, ...defined(rest), ...(secret !== undefined && secret !== MASKED_SECRET ? { secret } : {}), updated_at: nowSeconds() } as WebhookRecord;
      // A new signature block, or a switch to hmac that puts the stored one to use.
      if (changes.signature !== undefined || changes.auth === 'hmac') soundSignature(record.signature as WebhookSignature | null | undefined);
      saveWebhooks(paths, hooks.map((h, i) => (i === index ? record : h)));
      await bus.publish({ stream: webhookStream(id), type: AUTOMATION_EVENTS.updated, data: { id, agent: record.agent, fields: changedFields(changes), by: principal.id }, ...causedBy(cmd) });
      return webhookView(record);
    }),
  );
  subs.add(
    bus.handle(WEBHOOK_COMMANDS.delete, 'automation', async (cmd) => {
      const { principal, id } = cmd.data;
      const { hooks, index } = webhook(principal, id, 'delete webhook');
      const agent = hooks[index]!.agent;
      saveWebhooks(paths, hooks.filter((_, i) => i !== index));
      await bus.publish({ stream: webhookStream(id), type: AUTOMATION_EVENTS.deleted, data: { id, agent, by: principal.id }, ...causedBy(cmd) });
      return { id, deleted: true as const };
    }),
  );
  if (deps.webhooks) subs.add(handleTriggers(bus, paths, deps.webhooks));
  const log = deps.log;
  if (log) {
    // A run's history is as visible as its record: the record must exist and its agent be allowed.
    subs.add(
      bus.handle(CRON_COMMANDS.runs, 'automation', ({ data }) => {
        cronJob(data.principal, data.id, 'read cron job runs');
        return cronRuns(log, data.id, data.limit);
      }),
    );
    subs.add(
      bus.handle(WEBHOOK_COMMANDS.runs, 'automation', ({ data }) => {
        webhook(data.principal, data.id, 'read webhook runs');
        return webhookRuns(log, data.id, data.limit);
      }),
    );
  }
  subs.add(
    bus.handle(WEBHOOK_COMMANDS.verify, 'automation', ({ data }) => {
      const { hooks, index } = webhook(data.principal, data.id, 'verify webhook signature');
      const secret = hooks[index]!.secret;
      if (typeof secret !== 'string' || secret === '') throw new SvcError('webhook-no-secret', `webhook ${JSON.stringify(data.id)} has no secret to verify against; set one first`);
      return { valid: hmacMatches(secret, data.payload, data.signature) };
    }),
  );
  return subs;
}
