import type { Subscription } from 'rxjs';
import type { Bus } from '../../bus/index.js';
import { INTERAGENT_EVENTS, describeError, type Envelope, type EventPayload } from '../../schemas/index.js';
import type { EventLog } from '../../store/index.js';
import { actingPrincipal, type ActingDirectory } from './acting-principal.js';
import { deliverToParent, parentChat } from './parent-delivery.js';

/**
 * An async inter-agent result (`/interagent/send_async`) goes to the caller the way a task's
 * result goes to its parent: where `reply_to` says, else the chat the call named, else the
 * caller's latest chat; `silent` keeps it in the log only.
 */
export function startInteragentDelivery(d: ActingDirectory & { bus: Bus; log: EventLog }): Subscription {
  return d.bus.subscribe(
    'interagent-delivery',
    (e) => void deliver(d, e).catch((err: unknown) => d.bus.emitLog('warn', `${e.stream}: the result was not delivered: ${describeError(err)}`)),
    (e) => e.type === INTERAGENT_EVENTS.completed,
  );
}

async function deliver(d: ActingDirectory & { bus: Bus; log: EventLog }, e: Envelope): Promise<void> {
  const done = e.data as EventPayload<typeof INTERAGENT_EVENTS.completed>;
  const req = d.log.read({ stream: e.stream, types: [INTERAGENT_EVENTS.requested] })[0]?.data as EventPayload<typeof INTERAGENT_EVENTS.requested> | undefined;
  if (!req || req.silent === true) return;
  const to = req.reply_to ?? null;
  const where = await parentChat(d.bus, { from: done.from, chat_id: to ? to.chat_id : req.chat_id, topic_id: to ? (to.topic_id ?? null) : req.topic_id, transport: to?.transport ?? null });
  const head = done.success
    ? `[Reply from agent "${done.to}" to your async request ${done.task_id}]`
    : `[Agent "${done.to}" did not answer your async request ${done.task_id}: ${done.error ?? 'failed'}]`;
  deliverToParent(d.bus, {
    agent: done.from,
    where,
    principal: () => actingPrincipal(d, done.from, req.caller_user_id, req.caller_role, where, `the user async request ${done.task_id} was made for`),
    correlation: e.correlation ?? e.stream,
    envelope: {
      kind: 'interagent',
      id: `interagent-${done.task_id}`.slice(0, 120).replace(/[^A-Za-z0-9._:-]/g, '_'),
      content: done.success ? done.text : (done.error ?? done.text),
      meta: { task_id: done.task_id, from: done.from, to: done.to, success: done.success },
    },
    turnText: `${head}\n\n${done.text}`,
  });
}
