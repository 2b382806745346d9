// Given a messenger's stream and the turn facts, when svc starts again, then exactly the answers that were
// computed and never delivered are owed — not those delivered, cut off, still running, or from before request ids.
import t from 'tap';
import { owedAnswers, pendingAnswers } from '../../machines/index.js';
import type { AnyEnvelope } from '../../schemas/index.js';

let seq = 0;
const fact = (stream: string, type: string, data: Record<string, unknown>): AnyEnvelope => ({ seq: ++seq, stream, type, data, at: '2026-11-28T00:00:00.000Z' }) as unknown as AnyEnvelope;
const BOT = 'messenger:telegram:1';
const accepted = (request_id: string | undefined, chat_id = 42) => fact(BOT, 'messenger.update_accepted', { transport: 'telegram', update_id: seq, chat_id, topic_id: null, agent: 'main', ...(request_id ? { request_id } : {}) });
const delivered = (request_id: string) => fact(BOT, 'messenger.answer_delivered', { transport: 'telegram', request_id });
const started = (turn: string, request_id: string) => fact(`turn:${turn}`, 'turn.started', { request_id });
const completed = (turn: string, text: string) => fact(`turn:${turn}`, 'turn.completed', { text });

await t.test('only a completed, undelivered answer is owed, with its chat', async (t) => {
  const bot = [accepted(undefined), accepted('r-done'), accepted('r-owed', 7), accepted('r-cut'), accepted('r-running'), accepted('r-empty'), delivered('r-done')];
  const pending = pendingAnswers(bot);
  t.same(pending.map((p) => p.request_id), ['r-owed', 'r-cut', 'r-running', 'r-empty'], 'an update from before request ids, and a delivered one, owe nothing');
  const turns = [
    started('a', 'r-done'), completed('a', 'done'),
    started('b', 'r-owed'), completed('b', 'the answer'),
    started('c', 'r-cut'), fact('turn:c', 'turn.failed', { text: 'partial', reason: 'daemon-restarted' }),
    started('d', 'r-running'),
    started('e', 'r-empty'), completed('e', '   '),
    started('f', 'someone-else'), completed('f', 'not ours'),
  ];
  t.same(owedAnswers(pending, turns), [{ request_id: 'r-owed', chat_id: 7, topic_id: null, agent: 'main', text: 'the answer' }]);
});

await t.test('once delivered, nothing is owed any more', async (t) => {
  const bot = [accepted('r1'), delivered('r1')];
  t.same(pendingAnswers(bot), []);
  t.same(owedAnswers(pendingAnswers(bot), [started('x', 'r1'), completed('x', 'hi')]), []);
});
