import {
  checkTurnRequest,
  isJsonObject,
  jsonNumber,
  readJsonLine,
  jsonString,
  wrapInDocker,
  type Invocation,
  type ParserOptions,
  type PermissionMode,
  type ProviderAdapter,
  type ReasoningEffort,
  type StreamEvent,
  type TurnParser,
  type TurnRequest,
  type Usage,
} from './provider.js';

/**
 * Which `model_reasoning_effort` values a codex model accepts; first matching row wins.
 * Sending an effort the model lacks makes the API reject the whole turn, so an unsupported
 * effort is dropped (the model's default applies) rather than passed. Extend rows as models ship.
 */
const EFFORT_CAPABILITIES: ReadonlyArray<{ match: RegExp; efforts: readonly ReasoningEffort[]; why: string }> = [
  { match: /codex-max/, efforts: ['low', 'medium', 'high', 'xhigh'], why: 'xhigh arrived with gpt-5.1-codex-max' },
  { match: /codex-mini|-mini\b/, efforts: ['low', 'medium', 'high'], why: 'small models stop at high' },
  { match: /^gpt-5\.[2-9]/, efforts: ['low', 'medium', 'high', 'xhigh'], why: 'gpt-5.2 and later accept xhigh' },
  { match: /^(gpt-5|o\d)/, efforts: ['low', 'medium', 'high'], why: 'reasoning models before xhigh' },
  { match: /^gpt-4|^gpt-3/, efforts: [], why: 'not reasoning models' },
  // Unset or unknown id: codex picks its own default model, a gpt-5-class reasoning model.
  { match: /(?:)/, efforts: ['low', 'medium', 'high'], why: 'codex default model' },
];

export function codexSupportsEffort(model: string | undefined, effort: ReasoningEffort): boolean {
  const id = (model ?? '').toLowerCase();
  const row = EFFORT_CAPABILITIES.find((r) => r.match.test(id));
  return row !== undefined && row.efforts.includes(effort);
}

type SandboxLevel = 'bypass' | 'workspace-write' | 'read-only';

const SANDBOX_BY_MODE: Record<PermissionMode, SandboxLevel> = {
  bypassPermissions: 'bypass',
  acceptEdits: 'workspace-write',
  auto: 'workspace-write',
  dontAsk: 'workspace-write',
  default: 'read-only',
  plan: 'read-only',
};

/**
 * `--full-auto` is deprecated in codex exec (it now only warns and means `--sandbox workspace-write`,
 * and some releases rejected it outright), so the sandbox is named directly. `codex exec resume`
 * rejects `--sandbox`, so a resumed turn sets the same policy through `-c sandbox_mode=`.
 */
function sandboxArgs(level: SandboxLevel, resume: boolean): string[] {
  if (level === 'bypass') return ['--dangerously-bypass-approvals-and-sandbox'];
  return resume ? ['-c', `sandbox_mode=${level}`] : ['--sandbox', level];
}

/** Codex (`codex exec`): prompt on stdin (`-`), JSONL thread events on stdout. */
export const codexAdapter: ProviderAdapter = {
  id: 'codex',

  buildInvocation(req: TurnRequest): Invocation {
    checkTurnRequest(req, { promptInArgv: false });
    const level = SANDBOX_BY_MODE[req.permissionMode];
    const tail: string[] = [];
    if (req.model) tail.push('--model', req.model);
    if (req.reasoningEffort && codexSupportsEffort(req.model, req.reasoningEffort)) {
      tail.push('-c', `model_reasoning_effort=${req.reasoningEffort}`);
    }
    tail.push(...req.cliParameters);
    const args = req.resumeSessionId
      ? // --skip-git-repo-check is global in codex exec: a resume outside a git repo fails without it.
        ['exec', 'resume', '--json', ...sandboxArgs(level, true), '--skip-git-repo-check', ...tail, '--', req.resumeSessionId, '-']
      : ['exec', '--json', '--color', 'never', ...sandboxArgs(level, false), '--skip-git-repo-check', ...tail, '-'];
    // codex has no system-prompt flag: memory rides in front of the prompt.
    const stdin = req.systemPrompt ? `${req.systemPrompt}\n\n${req.prompt}` : req.prompt;
    const inv: Invocation = { command: 'codex', args, stdin, env: {}, tempFiles: [] };
    return req.docker ? wrapInDocker(inv, req.docker) : inv;
  },

  createParser(opts?: ParserOptions): TurnParser {
    let sessionId = opts?.sessionId ?? '';
    let texts: string[] = [];
    let lastError: string | null = null;
    let resulted = false;
    // codex reports a tool on item.started and again on item.completed; some items only complete.
    const started = new Set<string>();

    const result = (isError: boolean, text: string, usage: Usage): StreamEvent => {
      resulted = true;
      return { kind: 'result', sessionId, text, isError, usage };
    };

    return {
      push(line) {
        const read = readJsonLine(line);
        if ('events' in read) return read.events;
        const o = read.obj;
        switch (o['type']) {
          case 'thread.started': {
            const id = jsonString(o['thread_id']);
            if (id === undefined) return [];
            sessionId = id;
            return [{ kind: 'init', sessionId: id }];
          }
          case 'turn.started':
            texts = [];
            lastError = null;
            resulted = false;
            return [];
          case 'item.started':
          case 'item.completed':
            return itemEvents(o['type'], o['item'], started, texts);
          case 'turn.completed': {
            const u = isJsonObject(o['usage']) ? o['usage'] : {};
            const usage: Usage = { input_tokens: jsonNumber(u['input_tokens']) ?? 0, output_tokens: jsonNumber(u['output_tokens']) ?? 0 };
            const cached = jsonNumber(u['cached_input_tokens']);
            if (cached !== undefined) usage.cached_tokens = cached;
            return [result(false, texts.join('\n\n'), usage)];
          }
          case 'turn.failed': {
            const err = isJsonObject(o['error']) ? jsonString(o['error']['message']) : undefined;
            return [result(true, err ?? lastError ?? 'codex turn failed', { input_tokens: 0, output_tokens: 0 })];
          }
          case 'error':
            // Stream errors (retries, disconnects) precede turn.failed; kept in case it never comes.
            lastError = jsonString(o['message']) ?? lastError;
            return [];
          default:
            return [];
        }
      },
      end() {
        if (resulted || lastError === null) return [];
        return [result(true, lastError, { input_tokens: 0, output_tokens: 0 })];
      },
    };
  },

  errorText(stderr) {
    return stderr
      .split(/\r?\n/)
      .filter((l) => !/^Reading prompt from stdin/.test(l.trim()))
      .join('\n')
      .trim();
  },
};

function itemEvents(phase: 'item.started' | 'item.completed', item: unknown, started: Set<string>, texts: string[]): StreamEvent[] {
  if (!isJsonObject(item)) return [];
  const type = item['type'];
  if (type === 'agent_message') {
    // Only the completed message is final text; item.started/updated would repeat it.
    if (phase !== 'item.completed') return [];
    const text = jsonString(item['text']);
    if (!text) return [];
    texts.push(text);
    return [{ kind: 'text', text }];
  }
  const id = jsonString(item['id']);
  if (phase === 'item.started') {
    if (id !== undefined) started.add(id);
  } else if (id === undefined || started.has(id)) {
    return [];
  }
  switch (type) {
    case 'reasoning':
      return [{ kind: 'status', status: 'thinking' }];
    case 'command_execution':
      return [{ kind: 'tool', name: 'Bash' }];
    case 'file_change':
      return [{ kind: 'tool', name: 'Edit' }];
    case 'mcp_tool_call': {
      // Real codex names the tool in `tool` (with `server`); older docs used `name`.
      const name = jsonString(item['tool']) ?? jsonString(item['name']);
      return name ? [{ kind: 'tool', name }] : [];
    }
    case 'web_search':
      return [{ kind: 'tool', name: 'WebSearch' }];
    default:
      return [];
  }
}
