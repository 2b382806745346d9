import { Subscription } from 'rxjs';
import * as v from 'valibot';
import { causedBy, followsFrom, type Bus, type Cause } from '../../bus/index.js';
import {
  CRON_RUN_STATUS,
  AUTOMATION_EVENTS,
  ONESHOT_EVENTS,
  TURN_EVENTS,
  SvcError,
  WEBHOOK_COMMANDS,
  describeError,
  webhookStream,
  WebhookTriggerSettingsSchema,
  type WebhookTriggerSettings,
} from '../../schemas/index.js';
import { payloadKeys, unsupportedHookFields, recoverCutWebhookCall, unsettledWebhookCalls, webhookAuthPlan, webhookCallEvidence, WEBHOOK_INTERRUPTED_REASON } from '../../machines/index.js';
import { loadWebhooks, patchWebhookRecord, type EventLog, type HomePaths } from '../../store/index.js';
import { WebhookReplayMemory } from './webhook-replay.js';
import { dispatchWebhook, reportWebhookRun, signedDigest, webhookAuthPasses, webhookPrompt, type CutRun, type DispatchResult, type RunEnd, type WebhookDispatchDeps } from './webhook-dispatch.js';

/*
 * The webhook server's accepted calls (WIRE.md §4): each runs in the background after its 202, and
 * ends as a fact and on the hook's run fields; a restart settles the calls the last run left cut.
 */

/** `last_error` is a line for the panel, not a log. */
const MAX_LAST_ERROR_CHARS = 500;

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
export function handleTriggers(bus: Bus, paths: HomePaths, deps: WebhookDispatchDeps): Subscription {
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
