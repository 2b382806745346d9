import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { Subscription } from 'rxjs';
import * as v from 'valibot';
import { causedBy, followsFrom, type Bus, type Cause } from '../../bus/index.js';
import {
  CRON_RUN_STATUS,
  AUTOMATION_EVENTS,
  CRON_COMMANDS,
  ONESHOT_EVENTS,
  TURN_EVENTS,
  MAIN_AGENT,
  MASKED_SECRET,
  hookIdInUrl,
  SvcError,
  WEBHOOK_COMMANDS,
  describeError,
  cronJobStream,
  maskSecrets,
  webhookStream,
  WebhookTriggerSettingsSchema,
  type CronJobRecord,
  type Principal,
  type SubAgentConfig,
  type WebhookRecord,
  type WebhookTriggerSettings,
  type WebhookSignature,
} from '../../schemas/index.js';
import { agentAccess, cronTimeZone, payloadKeys, unsupportedHookFields, scheduleProblem, recoverCutWebhookCall, signatureProblem, unsettledWebhookCalls, webhookAuthPlan, webhookCallEvidence, WEBHOOK_INTERRUPTED_REASON } from '../../machines/index.js';
import { loadCronJobs, loadWebhooks, patchWebhookRecord, saveCronJobs, saveWebhooks, type EventLog, type HomePaths } from '../../store/index.js';
import { prepareCronJobFolder, type CronScheduler } from './cron-scheduler.js';
import { cronRuns, webhookRuns } from './run-history.js';
import { WebhookReplayMemory } from './webhook-replay.js';
import { dispatchWebhook, reportWebhookRun, signedDigest, webhookAuthPasses, webhookPrompt, type CutRun, type DispatchResult, type RunEnd, type WebhookDispatchDeps } from './webhook-dispatch.js';

/*
 * Cron job and webhook records through the admin API (SPEC.md "Admin REST: cron jobs", "Admin
 * REST: webhooks", "Agent-scoped access"), and the webhook server's calls (WIRE.md §4), which
 * update the same webhooks.json: one owner of the file. An admin change is load → change → save
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

/** `last_error` is a line for the panel, not a log. */
const MAX_LAST_ERROR_CHARS = 500;

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

/** A call answered 202, as its `webhook.triggered` fact names it. */
interface AcceptedCall {
  id: string;
  agent: string;
  mode: string;
  request_id: string;
}

/**
 * How one accepted call ended: on the record's last_* fields (unless a later call owns them now)
 * and as a `webhook.completed`/`webhook.failed` fact.
 */
async function settleWebhookCall(bus: Bus, paths: HomePaths, call: AcceptedCall, result: DispatchResult, cause: Cause): Promise<void> {
  const at = new Date(bus.now()).toISOString();
  const requestId = call.request_id;
  // A later call owns the record's last_* fields now; this one's end is still a fact.
  const hook = loadWebhooks(paths).find((h) => h.id === call.id);
  if (hook?.last_request_id === requestId) {
    const last = result.ok ? { last_status: result.status, last_error: null } : { last_status: 'failed', last_error: result.error.slice(0, MAX_LAST_ERROR_CHARS) };
    await patchWebhookRecord(paths, call.id, { ...last, last_finished_at: at });
  }
  const base = { id: call.id, agent: call.agent, mode: call.mode, request_id: requestId, ...(hook?.name ? { name: hook.name } : {}) };
  await bus.publish(
    result.ok
      ? { stream: webhookStream(call.id), type: AUTOMATION_EVENTS.completed, data: { ...base, status: result.status, turn_id: result.turn_id, task_id: result.task_id }, ...cause }
      : { stream: webhookStream(call.id), type: AUTOMATION_EVENTS.failed, data: { ...base, reason: result.reason, error: result.error.slice(0, MAX_LAST_ERROR_CHARS) }, ...cause },
  );
}

/** Runs an accepted call without holding up its caller, then records how it ended. */
function dispatchInBackground(
  bus: Bus,
  paths: HomePaths,
  deps: WebhookDispatchDeps,
  hook: WebhookTriggerSettings,
  prompt: string,
  call: AcceptedCall,
  cause: Cause,
): void {
  void dispatchWebhook(bus, deps, hook, prompt, call.request_id).then((result) =>
    settleWebhookCall(bus, paths, call, result, cause).catch((e: unknown) => bus.emitLog('error', `webhook ${call.id}: could not record how call ${call.request_id} ended: ${describeError(e)}`)),
  );
}

/**
 * Accepted calls (202) a stop of svc cut before their dispatch settled (machines/webhook.logic's
 * recoverCutWebhookCall): one the agent never saw is dispatched now from the prompt its fact holds,
 * in the background like a live call; the rest are settled once from the log. Nothing is asked or
 * queued twice, and a second start finds nothing left. Run after the agents and one-shot runs
 * started, before the webhook server takes new calls.
 */
export async function recoverWebhookCalls(d: { bus: Bus; log: EventLog; paths: HomePaths; dispatch: WebhookDispatchDeps }): Promise<{ settled: string[]; dispatched: string[] }> {
  const out = { settled: [] as string[], dispatched: [] as string[] };
  await reportCutWebhookRuns(d);
  const calls = unsettledWebhookCalls(d.log.read({ streamPrefix: 'webhook:', types: [AUTOMATION_EVENTS.triggered, AUTOMATION_EVENTS.completed, AUTOMATION_EVENTS.failed] }));
  if (calls.length === 0) return out;
  const evidence = webhookCallEvidence(
    calls,
    d.log.read({ streamPrefix: 'turn:', types: [TURN_EVENTS.started, TURN_EVENTS.completed] }),
    d.log.read({ streamPrefix: 'oneshot:', types: [ONESHOT_EVENTS.queued] }),
  );
  // The hooks' settings as they are now (what a dispatch runs with); read once for every call.
  const hooks = new Map(loadWebhooks(d.paths).map((h) => [h.id, h]));
  for (const call of calls) {
    const cause = followsFrom({ seq: call.seq, correlation: call.request_id });
    const next = recoverCutWebhookCall(call, evidence.get(call.request_id)!);
    const stored = next.action === 'dispatch' ? v.safeParse(WebhookTriggerSettingsSchema, hooks.get(call.id)) : null;
    if (next.action === 'dispatch' && stored?.success) {
      d.bus.emitLog('info', `webhook ${call.id}: call ${call.request_id} was accepted before a stop of svc and not yet run: running it now`);
      dispatchInBackground(d.bus, d.paths, d.dispatch, stored.output, next.prompt, call, cause);
      out.dispatched.push(call.request_id);
      continue;
    }
    const result: DispatchResult =
      next.action === 'settle' ? next.result : { ok: false, reason: WEBHOOK_INTERRUPTED_REASON, error: 'svc stopped after accepting this call; the webhook is gone or its record is not valid now, so it was not run' };
    await settleWebhookCall(d.bus, d.paths, call, result, cause);
    d.bus.emitLog('warn', `webhook ${call.id}: call ${call.request_id} was cut by a stop of svc: ${result.ok ? `its one-shot run ${result.task_id} had been queued` : result.error}`);
    out.settled.push(call.request_id);
  }
  return out;
}

/**
 * `cron_task` runs a stop of svc cut, as the one-shot runner's recovery found them: one queued
 * again has its answer reported when it ends, like a live one; one cut mid-run is reported
 * interrupted at once. Either way its agent's admin chat and the bell hear of it.
 */
async function reportCutWebhookRuns(d: { bus: Bus; paths: HomePaths; dispatch: WebhookDispatchDeps }): Promise<void> {
  const cut = await d.dispatch.oneShot?.()?.recovered?.();
  if (!cut) return;
  const names = new Map<string, string | undefined>();
  try {
    for (const h of loadWebhooks(d.paths)) names.set(h.id, typeof h.name === 'string' ? h.name : undefined);
  } catch {
    // An unreadable file names no hook: each is reported by its id.
  }
  const report = (r: CutRun, end: Promise<RunEnd>) => {
    if (r.source === null || !r.source.startsWith('webhook:') || r.agent === null) return;
    const id = r.source.slice('webhook:'.length);
    void end.then((e) => reportWebhookRun(d.bus, { id, agent: r.agent!, name: names.get(id) }, r.correlation ?? r.run_id, r.run_id, e));
  };
  for (const r of cut.restarted) if (r.done) report(r, r.done);
  for (const r of cut.interrupted) report(r, Promise.resolve({ status: CRON_RUN_STATUS.interrupted, text: 'svc stopped while this run was going; it was not run again' }));
}

/**
 * Calls that passed the edge's checks: unknown hook 404, disabled 403, failed auth 401 (WIRE.md
 * §4's order), else the call is counted in webhooks.json, recorded as a fact, and dispatched in the
 * background; the caller has its 202 before the agent sees anything. A refused call changes nothing.
 */
function handleTriggers(bus: Bus, paths: HomePaths, deps: WebhookDispatchDeps): Subscription {
  const subs = new Subscription();
  const replays = new WebhookReplayMemory(() => bus.now());
  /** The last unreadable-file complaint logged: said once, not once per call, and again once it changes. */
  let unreadable = '';
  const hooksOrRefuse = () => {
    try {
      const hooks = loadWebhooks(paths);
      unreadable = '';
      return hooks;
    } catch (e) {
      // Whatever keeps the file from being read (bad JSON, wrong shape, too large, EACCES, EIO), calls get 503, not 500.
      if (e instanceof SvcError && e.code !== 'corrupt-file' && e.code !== 'file-too-large') throw e;
      const why = describeError(e);
      if (why !== unreadable) bus.emitLog('error', `webhook server: every call is refused (503) until webhooks.json is fixed: ${why}`);
      unreadable = why;
      throw new SvcError('webhooks-unavailable', 'the webhooks file cannot be read; calls are refused until it is fixed');
    }
  };
  subs.add(
    bus.handle(WEBHOOK_COMMANDS.trigger, 'automation', async (cmd) => {
      const { id, headers, payload, request_id: requestId, client } = cmd.data;
      const stored = hooksOrRefuse().find((h) => h.id === id);
      if (!stored) throw new SvcError('not-found', `no webhook ${JSON.stringify(id)}`);
      if (!stored.enabled) throw new SvcError('webhook-disabled', `webhook ${JSON.stringify(id)} is disabled`);
      const refuse = (level: 'debug' | 'warn', why: string) => {
        // The reason helps whoever configures the sender; the caller learns nothing from it.
        bus.emitLog(level, `webhook ${id}: call from ${client} refused: ${why}`);
        return new SvcError('unauthorized', 'authentication failed');
      };
      const parsed = v.safeParse(WebhookTriggerSettingsSchema, stored);
      if (!parsed.success) throw refuse('warn', `its record in webhooks.json is not valid: ${v.summarize(parsed.issues)}`);
      const hook = parsed.output;
      const unsupported = unsupportedHookFields(stored);
      if (unsupported) throw refuse('warn', unsupported);
      const body = Buffer.from(cmd.data.body, 'base64');
      const plan = webhookAuthPlan(hook, headers, deps.globalToken(), bus.now());
      if (!webhookAuthPasses(plan, body)) throw refuse(plan.kind === 'refuse' && plan.misconfigured ? 'warn' : 'debug', plan.kind === 'refuse' ? plan.reason : 'the credential does not match');
      // Checked and remembered with no await since the check, so two copies sent at once cannot both pass.
      const replayKey = plan.kind === 'hmac' ? `${plan.algorithm}:${signedDigest(plan, body).toString('hex')}` : null;
      if (plan.kind === 'hmac' && replayKey !== null && !replays.admit(id, replayKey, plan.replayWindowMs)) {
        bus.emitLog('warn', `webhook ${id}: call from ${client} refused: the same signed call was accepted within the last ${Math.round(plan.replayWindowMs / 1000)} s (a replay)`);
        throw new SvcError('replayed', 'this signed call was already accepted; each delivery must be signed anew');
      }
      try {
        const prompt = webhookPrompt(deps, hook, payload);
        const at = new Date(bus.now()).toISOString();
        const count = typeof stored.trigger_count === 'number' ? stored.trigger_count : 0;
        // Counted on disk before the fact and the 202; calls arriving together share one write.
        await patchWebhookRecord(paths, id, { trigger_count: count + 1, last_triggered_at: at, last_triggered: at, last_request_id: requestId, last_status: 'running', last_error: null });
        await bus.publish({
          stream: webhookStream(id),
          type: AUTOMATION_EVENTS.triggered,
          data: { id, agent: hook.agent, mode: hook.mode, request_id: requestId, client, body_bytes: body.length, keys: payloadKeys(payload), prompt },
          ...causedBy(cmd),
        });
        dispatchInBackground(bus, paths, deps, hook, prompt, { id, agent: stored.agent, mode: hook.mode, request_id: requestId }, { correlation: requestId });
      } catch (e) {
        // Not accepted after all (no fact, no 202): the sender's redelivery of this very call must get in.
        if (replayKey !== null) replays.forget(id, replayKey);
        throw e;
      }
      return { accepted: true as const, hook_id: id };
    }),
  );
  return subs;
}
