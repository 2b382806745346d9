// What every chat transport does, whatever carries it (schemas/chat-transport.ts): a message from
// its chat reaches the agent as that transport and chat, with the sender's origin; the streamed
// answer reaches the chat; `deliver` says something outside a turn there; a chat it cannot reach
// says so instead of swallowing the message; once stopped, it reaches nobody.
import type { Test } from 'tap';
import type { ChatAddress, ChatTransport } from '../../schemas/index.js';
import type { ScriptedAgent } from '../fixtures/scripted-agent.js';

export interface ConformanceRig {
  transport: ChatTransport;
  /** The agent runtime on the rig's bus. */
  agent: ScriptedAgent;
  /** The chat the rig's client is in. */
  address: ChatAddress;
  /** The client says `text` in that chat; absent where the transport's inbound is another surface's (the admin chat's routes). */
  say?(text: string): void;
  /** Resolves once the client shows a message containing `text`; rejects after a bound. */
  sees(text: string): Promise<void>;
  /** A chat the transport cannot reach now, when it has such chats (the direct API with no connection open). */
  unreachable?: ChatAddress;
  /** Absent for the admin chat: always there, as the place every other transport's undeliverable messages go. */
  stop?(): Promise<void>;
}

export async function chatTransportConformance(t: Test, name: string, open: (t: Test) => Promise<ConformanceRig>): Promise<void> {
  await t.test(`${name}: conforms to the chat-transport contract`, async (t) => {
    const rig = await open(t);
    const { transport, address } = rig;
    t.equal(transport.name, name);
    t.match(transport.health(), { name, state: 'running' }, 'running once started');
    t.ok(transport.reaches(address), 'reaches the chat its client is in');

    if (rig.say) {
      rig.say('conformance question');
      const turn = await rig.agent.next();
      t.match(turn.msg, { transport: name, chat_id: address.chat_id, topic_id: address.topic_id, text: 'conformance question', kind: 'foreground' });
      t.match(turn.msg.principal.origin, { transport: name, chat_id: address.chat_id, topic_id: address.topic_id }, 'the principal says where it came from');
      turn.say('conformance ');
      turn.end('conformance answer');
      await rig.sees('conformance answer');
    }

    await transport.deliver({ ...address, text: 'conformance delivery', source: 'conformance', agent: 'main', correlation: 'conformance' });
    await rig.sees('conformance delivery');

    if (rig.unreachable) {
      t.notOk(transport.reaches(rig.unreachable), 'a chat it cannot reach now is not reached');
      await t.rejects(transport.deliver({ ...rig.unreachable, text: 'lost?', source: 'conformance', agent: 'main', correlation: 'c' }), 'and delivering there fails visibly');
    }

    if (rig.stop) {
      await rig.stop();
      t.not(transport.health().state === 'running' && transport.reaches(address), true, 'stopped: it reaches nobody');
    }
  });
}
