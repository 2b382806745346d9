import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { agentsOf, type Bus } from '../../bus/index.js';
import { cronDeliveryText, decodeSignature, fencedWebhookPrompt, isSuccessStatus, jobInQuietHours, renderWebhookTemplate, wakeTarget, type WakeTarget, type WebhookAuthPlan } from '../../machines/index.js';
import { AUTOMATION_EVENTS, CHAT_DELIVERY_COMMANDS, CRON_RUN_STATUS, MAX_CRON_RESULT_CHARS, MAX_DELIVERED_TEXT_CHARS, describeError, webhookStream, webhookTaskFolder, type AgentConfig, type OneShotRequest, type Principal, type WebhookTriggerSettings, systemPrincipal } from '../../schemas/index.js';
import { recordChatEnvelope } from '../chat-delivery/chat-envelope.js';

/*
 * The side effects of a webhook call (WIRE.md §4): checking its credential in constant time over
 * the raw body bytes, and running it (`wake` into a chat through the agent contract, `cron_task`
 * through a one-shot runner). What to check and how the prompt reads are machines/webhook.logic.
 */

/** Constant time whatever the lengths: both sides are hashed to one size first. */
export function constantTimeEqual(a: string, b: string): boolean {
  const ha = createHash('sha256').update(a, 'utf8').digest();
  const hb = createHash('sha256').update(b, 'utf8').digest();
  return timingSafeEqual(ha, hb);
}

/** True when the call proves what the plan asks; a refusal plan never passes. */
export function webhookAuthPasses(plan: WebhookAuthPlan, rawBody: Uint8Array): boolean {
  if (plan.kind === 'refuse') return false;
  if (plan.kind === 'bearer') return constantTimeEqual(plan.given, plan.expected);
  const expected = signedDigest(plan, rawBody);
  let ok = false;
  // Every candidate is checked, so the time taken does not say which one matched.
  for (const candidate of plan.candidates) {
    const given = decodeSignature(candidate, plan.encoding);
    if (given !== null && given.length === expected.length && timingSafeEqual(given, expected)) ok = true;
  }
  return ok;
}

/** The digest a signed call must carry: what it proves, whatever encoding or case it was written in. */
export function signedDigest(plan: Extract<WebhookAuthPlan, { kind: 'hmac' }>, rawBody: Uint8Array): Buffer {
  return createHmac(plan.algorithm, plan.key).update(plan.signedPrefix, 'utf8').update(rawBody).digest();
}

/**
 * The port `cron_task` runs go through; the task hub implements it. `start` resolves once the run
 * is queued or started, with its task id; it rejects (an SvcError) when the run cannot be made.
 */
/** How a one-shot run ended: its status and what the CLI answered. */
export interface RunEnd {
  status: string;
  text: string;
}

/** A run a stop of svc cut (`recovered()`): queued again (`done`), or interrupted mid-run (no `done`). */
export interface CutRun {
  run_id: string;
  correlation: string | null;
  source: string | null;
  agent: string | null;
  done?: Promise<RunEnd>;
}

export interface OneShotRunner {
  /** `done` settles when the run ends (it never rejects): how, and what the CLI answered. */
  start(req: OneShotRequest): Promise<{ task_id: string; done: Promise<RunEnd> }>;
  /** The runs the last stop cut, once the runner's own recovery ran. */
  recovered?(): Promise<{ interrupted: readonly CutRun[]; restarted: readonly CutRun[] }> | null;
}

export interface WebhookDispatchDeps {
  /** The global bearer fallback: `webhooks.token`, or the one generated when the server started. */
  globalToken: () => string;
  /** What `wake` needs to find the agent's main chat. */
  config: () => Pick<AgentConfig, 'transport' | 'allowed_user_ids' | 'api' | 'matrix'>;
  /**
   * The configured zone (user_timezone → TZ → host → UTC, as cron jobs without a zone of their
   * own use) that a hook's quiet_start/quiet_end are read in; hooks have no `timezone` field.
   */
  timezone: () => string;
  /** The `cron_task` runner once one is attached; until then such calls are recorded as failed. */
  oneShot?: () => OneShotRunner | null;
  /** Per-call fence boundary; random by default (tests pin it). */
  newBoundary?: () => string;
}

export type DispatchResult =
  | { ok: true; status: string; turn_id: string | null; task_id: string | null }
  | { ok: false; reason: string; error: string };

export function webhookPrincipal(hookId: string, target: WakeTarget | null): Principal {
  return systemPrincipal(`webhook:${hookId}`, { transport: 'webhook', chat_id: target?.chat_id ?? null, topic_id: target?.topic_id ?? null });
}

export const NO_RUNNER_ERROR = 'cron_task webhooks need a one-shot runner (the task hub) and none is attached in this version: nothing was run';

/** The prompt an accepted call becomes: made once, at the 202, and kept in the call's fact. */
export function webhookPrompt(deps: Pick<WebhookDispatchDeps, 'newBoundary'>, hook: WebhookTriggerSettings, payload: Record<string, unknown>): string {
  const boundary = (deps.newBoundary ?? (() => randomBytes(16).toString('hex')))();
  return fencedWebhookPrompt({ hookId: hook.id, hookName: hook.name ?? hook.id, rendered: renderWebhookTemplate(hook.prompt_template, payload), boundary });
}

/** Runs one accepted call's prompt to its end; never throws (every failure is a result). */
export async function dispatchWebhook(bus: Bus, deps: WebhookDispatchDeps, hook: WebhookTriggerSettings, prompt: string, requestId: string): Promise<DispatchResult> {
  try {
    if (hook.mode === 'cron_task') {
      const runner = deps.oneShot?.() ?? null;
      if (!runner) return { ok: false, reason: 'no-runner', error: NO_RUNNER_ERROR };
      const { task_id, done } = await runner.start({
        source: `webhook:${hook.id}`,
        agent: hook.agent,
        name: hook.name ?? hook.id,
        prompt,
        provider: hook.provider,
        model: hook.model,
        reasoning_effort: hook.reasoning_effort,
        dependency: hook.dependency,
        principal: webhookPrincipal(hook.id, null),
        correlation: requestId,
        folder: webhookTaskFolder(hook.id),
        // A hook made before one-shot runs existed has no folder yet: its first run makes it.
        create_folder: true,
        cli_parameters: hook.cli_parameters,
        quiet_start: hook.quiet_start,
        quiet_end: hook.quiet_end,
      });
      void done.then((r) => reportWebhookRun(bus, hook, requestId, task_id, r));
      return { ok: true, status: 'started', turn_id: null, task_id };
    }
    /*
     * `wake` asks the chat's own session, so it has no use for the execution fields a one-shot run
     * takes: provider, model, reasoning_effort and cli_parameters are the session's, and
     * `dependency` orders cron jobs and `cron_task` runs only (SPEC.md "Cron job and webhook
     * records"). A record that sets them is left as it is, not refused. Quiet hours do apply:
     * only when the hook sets both ends, checked now, before the agent is asked.
     */
    const zone = deps.timezone();
    if (jobInQuietHours(hook.quiet_start, hook.quiet_end, bus.now(), zone)) {
      bus.emitLog('info', `webhook ${hook.id}: call ${requestId} not run: quiet hours ${hook.quiet_start}-${hook.quiet_end} (${zone})`);
      return { ok: true, status: CRON_RUN_STATUS.quietHours, turn_id: null, task_id: null };
    }
    const target = wakeTarget(hook, deps.config());
    // Queued in that chat's session like any message: it waits behind the turns already there.
    const asked = agentsOf(bus).ask({ agent: hook.agent, ...target, text: prompt, kind: 'foreground' }, webhookPrincipal(hook.id, target), { requestId });
    const admission = await asked.accepted;
    if (!admission.accepted) return { ok: false, reason: 'agent-refused', error: `${admission.message} [${admission.code}]` };
    const outcome = await asked.outcome;
    if (outcome.status !== 'completed' || outcome.is_error) {
      return { ok: false, reason: 'turn-failed', error: `the turn ended ${outcome.status}${outcome.reason ? ` (${outcome.reason})` : ''}` };
    }
    // The turn's answer came back to this caller, not to any chat: it is said in the target chat
    // now, and chat.deliver puts it in the agent's admin chat when that chat's transport is not running.
    if (outcome.text.trim() === '') {
      bus.emitLog('info', `webhook ${hook.id}: call ${requestId}: the wake turn answered nothing, so nothing was said in ${target.transport} chat ${target.chat_id}`);
    } else {
      const told = await bus.send(
        CHAT_DELIVERY_COMMANDS.deliver,
        { transport: target.transport, chat_id: target.chat_id, topic_id: target.topic_id, text: outcome.text.slice(0, MAX_DELIVERED_TEXT_CHARS), agent: hook.agent, source: `webhook:${hook.id}` },
        { correlation: requestId },
      );
      if (!told.delivered) return { ok: false, reason: 'not-delivered', error: `the answer reached no chat: ${target.transport} chat ${target.chat_id} has no delivery` };
    }
    return { ok: true, status: outcome.status, turn_id: outcome.turn_id, task_id: null };
  } catch (e) {
    return { ok: false, reason: hook.mode === 'cron_task' ? 'runner-failed' : 'turn-failed', error: describeError(e) };
  }
}

/**
 * A `cron_task` call's run ended. Its answer is for a person, and the call named no chat: it goes to
 * the agent's admin chat (like a cron job's), and `webhook.run_ended` records how the run ended,
 * which the bell reads. Never throws: a failure to keep the message is logged, the fact still made.
 */
export async function reportWebhookRun(bus: Bus, hook: Pick<WebhookTriggerSettings, 'id' | 'agent' | 'name'>, requestId: string, runId: string, r: RunEnd): Promise<void> {
  const name = hook.name ?? hook.id;
  const result = r.text.slice(0, MAX_CRON_RESULT_CHARS);
  try {
    if (result.trim() !== '' || !isSuccessStatus(r.status)) {
      await recordChatEnvelope(bus, {
        agent: hook.agent,
        id: `webhook-run-${runId}`,
        kind: 'webhook_result',
        content: cronDeliveryText(name, r.status, result),
        meta: { hook_id: hook.id, request_id: requestId, run_id: runId, status: r.status, title: name },
        correlation: requestId,
      });
    }
  } catch (e) {
    bus.emitLog('error', `webhook ${hook.id}: run ${runId}'s answer could not be put in ${hook.agent}'s admin chat: ${describeError(e)}`);
  }
  await bus
    .publish({ stream: webhookStream(hook.id), type: AUTOMATION_EVENTS.run_ended, data: { id: hook.id, agent: hook.agent, request_id: requestId, run_id: runId, status: r.status, result, name }, correlation: requestId })
    .catch((e: unknown) => bus.emitLog('error', `webhook ${hook.id}: run ${runId}'s end was not recorded: ${describeError(e)}`));
}
