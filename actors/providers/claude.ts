import {
  checkTurnRequest,
  containerPath,
  isJsonObject,
  jsonNumber,
  readJsonLine,
  jsonString,
  wrapInDocker,
  type Invocation,
  type ParserOptions,
  type ProviderAdapter,
  type StreamEvent,
  type TurnParser,
  type TurnRequest,
  type Usage,
} from './provider.js';

/** Claude Code (`claude`): prompt in argv after `--`, NDJSON (or one JSON object) on stdout. */
export const claudeAdapter: ProviderAdapter = {
  id: 'claude',

  buildInvocation(req: TurnRequest): Invocation {
    checkTurnRequest(req, { promptInArgv: true });
    // claude refuses `-p --output-format stream-json` without --verbose; the one-shot json form needs no flag.
    const args = req.streaming
      ? ['--verbose', '-p', '--output-format', 'stream-json']
      : ['-p', '--output-format', 'json'];
    args.push('--permission-mode', req.permissionMode);
    if (req.model) args.push('--model', req.model);
    if (req.reasoningEffort) args.push('--effort', req.reasoningEffort);
    if (req.systemPrompt) args.push('--append-system-prompt', req.systemPrompt);
    if (req.maxTurns !== undefined) args.push('--max-turns', String(req.maxTurns));
    if (req.maxBudgetUsd !== undefined) args.push('--max-budget-usd', String(req.maxBudgetUsd));
    for (const dir of req.additionalDirectories) args.push('--add-dir', containerPath(dir, req));
    if (req.resumeSessionId) args.push('--resume', req.resumeSessionId);
    args.push(...req.cliParameters, '--', req.prompt);
    const inv: Invocation = { command: 'claude', args, stdin: null, env: {}, tempFiles: [] };
    return req.docker ? wrapInDocker(inv, req.docker) : inv;
  },

  createParser(opts?: ParserOptions): TurnParser {
    let sessionId = opts?.sessionId ?? '';
    return {
      push(line) {
        const read = readJsonLine(line);
        if ('events' in read) return read.events;
        const o = read.obj;
        switch (o['type']) {
          case 'system':
            return systemLine(o, (id) => (sessionId = id));
          case 'assistant':
            return assistantBlocks(o);
          case 'result': {
            const ev = resultLine(o, sessionId);
            sessionId = ev.sessionId;
            return [ev];
          }
          default:
            // user (tool results), stream_event (partial messages) and future types carry nothing we show.
            return [];
        }
      },
      end: () => [],
    };
  },

  errorText: (stderr) => stderr.trim(),
};

function systemLine(o: Record<string, unknown>, setSession: (id: string) => void): StreamEvent[] {
  if (o['subtype'] === 'init') {
    const id = jsonString(o['session_id']);
    if (id === undefined) return [];
    setSession(id);
    return [{ kind: 'init', sessionId: id }];
  }
  if (o['subtype'] === 'status') {
    const s = o['status'];
    if (s === null || s === 'thinking' || s === 'compacting' || s === 'recovering') return [{ kind: 'status', status: s }];
  }
  return [];
}

function assistantBlocks(o: Record<string, unknown>): StreamEvent[] {
  const message = o['message'];
  if (!isJsonObject(message) || !Array.isArray(message['content'])) return [];
  const out: StreamEvent[] = [];
  for (const block of message['content']) {
    if (!isJsonObject(block)) continue;
    if (block['type'] === 'text') {
      const text = jsonString(block['text']);
      if (text) out.push({ kind: 'text', text });
    } else if (block['type'] === 'tool_use') {
      const name = jsonString(block['name']);
      if (name) out.push({ kind: 'tool', name });
    } else if (block['type'] === 'thinking' || block['type'] === 'redacted_thinking') {
      out.push({ kind: 'status', status: 'thinking' });
    }
  }
  return out;
}

function resultLine(o: Record<string, unknown>, knownSession: string): Extract<StreamEvent, { kind: 'result' }> {
  const u = isJsonObject(o['usage']) ? o['usage'] : {};
  const usage: Usage = { input_tokens: jsonNumber(u['input_tokens']) ?? 0, output_tokens: jsonNumber(u['output_tokens']) ?? 0 };
  const cached = jsonNumber(u['cache_read_input_tokens']);
  if (cached !== undefined) usage.cached_tokens = cached;
  const subtype = jsonString(o['subtype']);
  const isError = o['is_error'] === true || (subtype !== undefined && subtype.startsWith('error'));
  const ev: Extract<StreamEvent, { kind: 'result' }> = {
    kind: 'result',
    sessionId: jsonString(o['session_id']) ?? knownSession,
    // error_max_turns / error_during_execution results carry no `result` text: name the subtype instead.
    text: jsonString(o['result']) ?? (isError && subtype ? subtype : ''),
    isError,
    usage,
  };
  const cost = jsonNumber(o['total_cost_usd']);
  const duration = jsonNumber(o['duration_ms']);
  const turns = jsonNumber(o['num_turns']);
  if (cost !== undefined) ev.costUsd = cost;
  if (duration !== undefined) ev.durationMs = duration;
  if (turns !== undefined) ev.numTurns = turns;
  return ev;
}
