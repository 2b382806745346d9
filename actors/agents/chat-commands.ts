import { TASKS_DISABLED_TEXT, parseTaskAction, resolveModel, resolveProviderForModel, sessionKey, type ChatCommand } from '../../machines/index.js';
import { isSvcError, type AgentMessage, type ChatButton, type TaskSelectorAction, type TaskSelectorAnswer, type TurnOutcome } from '../../schemas/index.js';

export interface ChatCommandDeps {
  /** The model in force (a fresh `/model` included). */
  currentModel(): { model: string; provider: string };
  /** Persists a `/model` change and makes it the model in force at once. */
  setModel(model: string, provider: string): void;
  discoveredGemini(): string[];
  /** `/new`, `/reset`: a fresh session for the message's chat. */
  resetSession(msg: AgentMessage, key: string, reason: 'new' | 'reset'): Promise<void>;
  /** `/stop`: kills the chat's running turns, drops what waits behind them; how many were running. */
  abortChat(chatId: number): number;
  /** `/retry`: the prompt of this chat's last answer a restart cut off, handed out once; null if none. */
  takeRetry?(key: string, requestId: string): Promise<string | null>;
  /** `/agent_restart`: `unknown` when no agent has that name, else whether it came back. */
  restartAgent?(name: string): Promise<'unknown' | 'restarted' | 'not-started'>;
  /** `/workflow ...`: the answer as text, and whether it is a success. */
  workflow?(msg: AgentMessage, arg: string | undefined): Promise<{ text: string; ok: boolean }>;
  /** `tasks.enabled`, read per `/tasks`. */
  tasksEnabled?(): boolean;
  /** `/tasks`: the task hub's selector for this agent's tasks in one chat, after the action. */
  taskSelector?(req: { agent: string; chat_id: number; action: TaskSelectorAction }, correlation: string): Promise<TaskSelectorAnswer>;
}

/** What a command in a session's lane comes to: an answer, or the message to run as a turn instead (`/retry`). */
export type CommandAnswer = { outcome: TurnOutcome } | { turn: AgentMessage };

/**
 * Every chat command an agent answers (`/new`, `/reset`, `/stop`, `/model`, `/retry`,
 * `/agent_restart`), in one place; they arrive parsed (parseChatCommand, once per message).
 */
export class ChatCommands {
  constructor(private readonly d: ChatCommandDeps) {}

  /**
   * Commands answered at once, outside the session's lane: they are about the agent or the
   * orchestration, not the chat's conversation, so they never wait behind a running turn.
   */
  immediate(cmd: ChatCommand | null, msg: AgentMessage): Promise<TurnOutcome> | null {
    // `/tasks` and `/workflow` are about background work, so a long turn in the chat's lane does not hold them up.
    if (cmd?.cmd === 'tasks') return this.tasks(msg, cmd.arg);
    if (cmd?.cmd === 'workflow') return this.workflow(msg, cmd.arg);
    if (cmd?.cmd === 'agent_restart') return this.agentRestart(msg, cmd.arg);
    return null;
  }

  /** A command whose turn has come in its session's lane; null when `cmd` is none of them. */
  async inLane(cmd: ChatCommand | null, msg: AgentMessage, key: string): Promise<CommandAnswer | null> {
    switch (cmd?.cmd) {
      case 'new':
      case 'reset':
        await this.d.resetSession(msg, key, cmd.cmd);
        return { outcome: this.reply(msg, 'Started a new session.') };
      case 'stop':
        return { outcome: this.reply(msg, `Stopped ${this.d.abortChat(msg.chat_id)} running turn(s).`) };
      case 'model':
        return { outcome: this.model(msg, cmd.arg) };
      case 'retry': {
        const prompt = (await this.d.takeRetry?.(key, msg.request_id)) ?? null;
        if (prompt === null) return { outcome: this.reply(msg, 'Nothing to retry: no answer in this chat was cut off by a restart.', 'failed', 'nothing-to-retry') };
        // The question asked again as it was first sent, in the same session.
        return { turn: { ...msg, text: prompt } };
      }
      default:
        return null;
    }
  }

  private async tasks(msg: AgentMessage, arg: string | undefined): Promise<TurnOutcome> {
    const answer = (text: string, ok: boolean, buttons: ChatButton[] = []): TurnOutcome => ({
      ...this.reply(msg, text, ok ? 'completed' : 'failed', ok ? null : 'task-action-refused'),
      buttons,
    });
    if (!(this.d.tasksEnabled?.() ?? false)) return answer(TASKS_DISABLED_TEXT, true);
    const action = parseTaskAction(arg);
    if (action.kind === 'invalid') return answer(action.message, false);
    if (!this.d.taskSelector) return answer('The task system is not running.', false);
    try {
      const r = await this.d.taskSelector({ agent: msg.agent, chat_id: msg.chat_id, action }, msg.request_id);
      return answer(r.text, r.ok, r.buttons);
    } catch (e) {
      if (isSvcError(e, 'no-handler')) return answer('The task system is not running.', false);
      throw e;
    }
  }

  /** The reply to a message that ran no CLI turn: a command, or work cancelled before it started. */
  reply(msg: AgentMessage, text: string, status: TurnOutcome['status'] = 'completed', reason: string | null = null): TurnOutcome {
    return outcomeWithoutTurn(msg, { text, status, reason, session_key: sessionKey(msg.transport, msg.chat_id, msg.topic_id), ...this.d.currentModel() });
  }

  private model(msg: AgentMessage, arg: string | undefined): TurnOutcome {
    if (!arg) {
      const { model, provider } = this.d.currentModel();
      return this.reply(msg, `Model: ${model} (${provider}). Change it with /model <id>.`);
    }
    const { model } = resolveModel({ directive: arg, configModel: arg });
    if (!/^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/.test(model)) {
      return this.reply(msg, `"${arg}" is not a model id.`, 'failed', 'invalid-model');
    }
    const provider = resolveProviderForModel(model, this.d.discoveredGemini());
    this.d.setModel(model, provider);
    return this.reply(msg, `Model set to ${model} (${provider}).`);
  }

  private async workflow(msg: AgentMessage, arg: string | undefined): Promise<TurnOutcome> {
    const answer = this.d.workflow ? await this.d.workflow(msg, arg) : { text: 'Workflows are not available here.', ok: false };
    return outcomeWithoutTurn(msg, { text: answer.text, status: answer.ok ? 'completed' : 'failed', reason: answer.ok ? null : 'workflow-command', session_key: '', provider: null, model: null });
  }

  private async agentRestart(msg: AgentMessage, target: string | undefined): Promise<TurnOutcome> {
    const reply = (text: string, ok: boolean): TurnOutcome =>
      outcomeWithoutTurn(msg, { text, status: ok ? 'completed' : 'failed', reason: ok ? null : 'invalid-command', session_key: '', provider: null, model: null });
    if (!target) return reply('Usage: /agent_restart <name>', false);
    const result = (await this.d.restartAgent?.(target)) ?? 'unknown';
    if (result === 'unknown') return reply(`No agent named ${target}.`, false);
    return reply(result === 'restarted' ? `Restarted ${target}.` : `${target} did not start again; see the log.`, result === 'restarted');
  }
}

/** The reply to a message that ran no CLI turn: a chat command, or work cancelled before it started. */
function outcomeWithoutTurn(
  msg: Pick<AgentMessage, 'request_id' | 'agent'>,
  f: { text: string; status: TurnOutcome['status']; reason: string | null; session_key: string; provider: string | null; model: string | null },
): TurnOutcome {
  return {
    request_id: msg.request_id,
    turn_id: null,
    agent: msg.agent,
    session_key: f.session_key,
    status: f.status,
    text: f.text,
    is_error: f.status !== 'completed',
    stream_fallback: false,
    files: [],
    provider: f.provider,
    model: f.model,
    session_id: null,
    usage: null,
    cost_usd: null,
    duration_ms: null,
    reason: f.reason,
  };
}
