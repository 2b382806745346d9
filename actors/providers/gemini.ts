import { join } from 'node:path';
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

/** Name of the system-text file inside the per-turn temp dir the caller hands to buildInvocation. */
export const GEMINI_SYSTEM_FILE = 'gemini-system.md';

/** Gemini CLI (`gemini`): prompt on stdin, stream-json on stdout, system text via GEMINI_SYSTEM_MD. */
export const geminiAdapter: ProviderAdapter = {
  id: 'gemini',

  buildInvocation(req: TurnRequest, opts: { tempDir: string }): Invocation {
    checkTurnRequest(req, { promptInArgv: false });
    const args = ['--output-format', 'stream-json', '--include-directories', '.'];
    if (req.model) args.push('--model', req.model);
    if (req.permissionMode === 'bypassPermissions') args.push('--approval-mode', 'yolo');
    if (req.resumeSessionId) args.push('--resume', req.resumeSessionId);
    args.push(...req.cliParameters);
    const env: Record<string, string> = {};
    const tempFiles = [];
    if (req.systemPrompt) {
      const path = join(opts.tempDir, GEMINI_SYSTEM_FILE);
      tempFiles.push({ path, content: req.systemPrompt });
      env['GEMINI_SYSTEM_MD'] = containerPath(path, req);
    }
    const inv: Invocation = { command: 'gemini', args, stdin: req.prompt, env, tempFiles };
    return req.docker ? wrapInDocker(inv, req.docker) : inv;
  },

  createParser(opts?: ParserOptions): TurnParser {
    let sessionId = opts?.sessionId ?? '';
    let text = '';
    let lastError: string | null = null;
    let resulted = false;
    return {
      push(line) {
        const read = readJsonLine(line);
        if ('events' in read) return read.events;
        const o = read.obj;
        switch (o['type']) {
          case 'init': {
            const id = jsonString(o['session_id']);
            if (id === undefined) return [];
            sessionId = id;
            return [{ kind: 'init', sessionId: id }];
          }
          case 'message': {
            if (o['role'] !== 'assistant') return [];
            const t = jsonString(o['content']);
            if (!t) return [];
            text += t;
            return [{ kind: 'text', text: t }];
          }
          case 'tool_use': {
            const name = jsonString(o['tool_name']);
            return name ? [{ kind: 'tool', name }] : [];
          }
          case 'error':
            // Warnings (loop detection, retries) do not end the turn; a hard error shows in the result.
            if (o['severity'] !== 'warning') lastError = jsonString(o['message']) ?? lastError;
            return [];
          case 'result': {
            resulted = true;
            return [resultLine(o, sessionId, text, lastError)];
          }
          default:
            return [];
        }
      },
      end() {
        if (resulted || lastError === null) return [];
        return [{ kind: 'result', sessionId, text: lastError, isError: true, usage: { input_tokens: 0, output_tokens: 0 } }];
      },
    };
  },

  errorText: (stderr) => stderr.trim(),
};

function resultLine(o: Record<string, unknown>, sessionId: string, streamed: string, lastError: string | null): StreamEvent {
  const stats = isJsonObject(o['stats']) ? o['stats'] : {};
  const usage: Usage = {
    input_tokens: jsonNumber(stats['input_tokens']) ?? jsonNumber(stats['input']) ?? 0,
    output_tokens: jsonNumber(stats['output_tokens']) ?? 0,
  };
  const cached = jsonNumber(stats['cached']);
  if (cached !== undefined) usage.cached_tokens = cached;
  const status = jsonString(o['status']);
  const isError = status !== undefined && status !== 'success';
  const errMsg = isJsonObject(o['error']) ? jsonString(o['error']['message']) : undefined;
  // Current gemini omits `response` in stream-json: the streamed deltas are the reply.
  const text = isError ? (errMsg ?? lastError ?? jsonString(o['response']) ?? streamed) : (jsonString(o['response']) ?? streamed);
  const ev: StreamEvent = { kind: 'result', sessionId: jsonString(o['session_id']) ?? sessionId, text, isError, usage };
  const duration = jsonNumber(stats['duration_ms']);
  if (duration !== undefined) ev.durationMs = duration;
  return ev;
}
