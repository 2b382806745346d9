import { SvcError } from '../../schemas/index.js';

/**
 * The contract every provider CLI adapter fulfils: turn a request into an argv (+ stdin, env, temp files)
 * and turn the CLI's stdout lines into normalised stream events. Adapters do no I/O themselves;
 * `runProcess` (../process-group.ts) spawns what they build.
 */

export type ProviderId = 'claude' | 'codex' | 'gemini';

export type PermissionMode = 'acceptEdits' | 'auto' | 'bypassPermissions' | 'default' | 'dontAsk' | 'plan';

export type ReasoningEffort = 'low' | 'medium' | 'high' | 'xhigh';

export interface DockerTarget {
  container: string;
  /** Working directory inside the container; the host `cwd` is mounted there. */
  containerCwd: string;
  /** Passed as `-e K=V`, because `docker exec` does not forward the host environment. */
  env: Record<string, string>;
}

export interface TurnRequest {
  provider: ProviderId;
  prompt: string;
  model?: string;
  permissionMode: PermissionMode;
  reasoningEffort?: ReasoningEffort;
  /** Memory injection text; the caller decides when to send it (normally on a new session only). */
  systemPrompt?: string;
  resumeSessionId?: string;
  maxTurns?: number;
  maxBudgetUsd?: number;
  /** Absolute paths. */
  additionalDirectories: string[];
  /** The provider's `cli_parameters`: each element is exactly one argument. */
  cliParameters: string[];
  /** Claude only: stream-json (true) or a single json result (false). */
  streaming: boolean;
  /** Host working directory (the agent's workspace). */
  cwd: string;
  docker?: DockerTarget;
}

export interface TempFile {
  path: string;
  content: string;
}

export interface Invocation {
  command: string;
  args: string[];
  /** Written to the child's stdin, then stdin is closed; null closes it at once. */
  stdin: string | null;
  /** Extra environment on top of what the caller composes (host env, settings, SVC_*). */
  env: Record<string, string>;
  /** Written before spawn, removed after exit. */
  tempFiles: TempFile[];
}

export type { AgentStatus, ResultEvent, StreamEvent, Usage } from '../../schemas/index.js';
import type { StreamEvent } from '../../schemas/index.js';

/**
 * Parses one turn's stdout. Stateful because some CLIs spread a turn's facts over lines
 * (codex: session id on `thread.started`, text on `item.completed`, usage on `turn.completed`).
 * `push` never throws; a line it cannot read becomes a `malformed` event.
 */
export interface TurnParser {
  push(line: string): StreamEvent[];
  /** Stdout ended: returns any event the stream implied but never stated (e.g. a failure without a result). */
  end(): StreamEvent[];
}

export interface ParserOptions {
  /** Session being resumed, so a result still carries an id when the CLI does not repeat it. */
  sessionId?: string;
}

export interface ProviderAdapter {
  readonly id: ProviderId;
  buildInvocation(req: TurnRequest, opts: { tempDir: string }): Invocation;
  createParser(opts?: ParserOptions): TurnParser;
  /** The part of stderr worth showing a user when the run failed. */
  errorText(stderr: string): string;
}

const SAMPLE_CHARS = 200;

/**
 * Reads one stdout line as a JSON object. Blank lines are nothing; anything else that is not a
 * JSON object becomes a `malformed` event, so a stray log line never ends a turn.
 */
export function readJsonLine(line: string): { obj: Record<string, unknown> } | { events: StreamEvent[] } {
  const trimmed = line.trim();
  if (trimmed === '') return { events: [] };
  let value: unknown;
  try {
    value = JSON.parse(trimmed);
  } catch (e) {
    return { events: [malformedEvent(`not JSON: ${(e as Error).message}`, trimmed)] };
  }
  if (!isJsonObject(value)) return { events: [malformedEvent('JSON value is not an object', trimmed)] };
  return { obj: value };
}

export function malformedEvent(reason: string, line: string): StreamEvent {
  return { kind: 'malformed', reason, sample: line.slice(0, SAMPLE_CHARS) };
}

export function isJsonObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

export function jsonString(v: unknown): string | undefined {
  return typeof v === 'string' ? v : undefined;
}

export function jsonNumber(v: unknown): number | undefined {
  return typeof v === 'number' && Number.isFinite(v) ? v : undefined;
}

/**
 * Runs the argv inside the sandbox container. Extra env rides along as `-e`, since `docker exec`
 * starts from the container's environment, not ours.
 */
export function wrapInDocker(inv: Invocation, docker: DockerTarget): Invocation {
  const envArgs: string[] = [];
  for (const [k, v] of Object.entries({ ...docker.env, ...inv.env })) envArgs.push('-e', `${k}=${v}`);
  return {
    command: 'docker',
    args: ['exec', '-i', '-w', docker.containerCwd, ...envArgs, docker.container, inv.command, ...inv.args],
    stdin: inv.stdin,
    env: {},
    tempFiles: inv.tempFiles,
  };
}

/**
 * A host path as the container sees it: paths under the mounted workspace map under `containerCwd`;
 * anything else is passed unchanged (the caller must then mount it).
 */
export function containerPath(hostPath: string, req: TurnRequest): string {
  if (!req.docker) return hostPath;
  const root = req.cwd.endsWith('/') ? req.cwd : `${req.cwd}/`;
  if (hostPath === req.cwd) return req.docker.containerCwd;
  if (!hostPath.startsWith(root)) return hostPath;
  const base = req.docker.containerCwd.endsWith('/') ? req.docker.containerCwd : `${req.docker.containerCwd}/`;
  return base + hostPath.slice(root.length);
}

const PERMISSION_MODES: readonly PermissionMode[] = ['acceptEdits', 'auto', 'bypassPermissions', 'default', 'dontAsk', 'plan'];
const EFFORTS: readonly ReasoningEffort[] = ['low', 'medium', 'high', 'xhigh'];

/**
 * Rejects a request no CLI could run, before anything is spawned: config is validated upstream,
 * but a request can also come from a hot reload or an API call, and a NUL byte in argv would make
 * spawn throw instead of failing the turn.
 */
export function checkTurnRequest(req: TurnRequest, opts: { promptInArgv: boolean }): void {
  if (!PERMISSION_MODES.includes(req.permissionMode)) {
    throw new SvcError('invalid-permission-mode', `permissionMode ${JSON.stringify(req.permissionMode)} is not one of ${PERMISSION_MODES.join(', ')}`);
  }
  if (req.reasoningEffort !== undefined && !EFFORTS.includes(req.reasoningEffort)) {
    throw new SvcError('invalid-reasoning-effort', `reasoningEffort ${JSON.stringify(req.reasoningEffort)} is not one of ${EFFORTS.join(', ')}`);
  }
  if (req.maxTurns !== undefined && !(Number.isInteger(req.maxTurns) && req.maxTurns > 0)) {
    throw new SvcError('invalid-max-turns', `maxTurns ${String(req.maxTurns)} must be a positive integer`);
  }
  if (req.maxBudgetUsd !== undefined && !(Number.isFinite(req.maxBudgetUsd) && req.maxBudgetUsd > 0)) {
    throw new SvcError('invalid-max-budget', `maxBudgetUsd ${String(req.maxBudgetUsd)} must be a positive number`);
  }
  for (const dir of req.additionalDirectories) {
    if (typeof dir !== 'string' || !dir.startsWith('/')) {
      throw new SvcError('invalid-additional-directory', `additionalDirectories entry ${JSON.stringify(dir)} must be an absolute path`);
    }
  }
  if (typeof req.prompt !== 'string') throw new SvcError('invalid-turn-request', `prompt must be a string, got ${typeof req.prompt}`);
  const texts: [string, unknown][] = [
    // Over stdin a NUL is just a byte; only argv cannot hold one.
    ...(opts.promptInArgv ? [['prompt', req.prompt] as [string, unknown]] : []),
    ['model', req.model],
    ['systemPrompt', req.systemPrompt],
    ['resumeSessionId', req.resumeSessionId],
    ...req.additionalDirectories.map((d, i): [string, unknown] => [`additionalDirectories[${i}]`, d]),
    ...req.cliParameters.map((p, i): [string, unknown] => [`cliParameters[${i}]`, p]),
  ];
  for (const [field, v] of texts) {
    if (v === undefined) continue;
    if (typeof v !== 'string') throw new SvcError('invalid-turn-request', `${field} must be a string, got ${typeof v}`);
    if (v.includes('\0')) throw new SvcError('invalid-turn-request', `${field} contains a NUL byte, which no command line can carry`);
  }
  if (req.resumeSessionId !== undefined && (req.resumeSessionId === '' || req.resumeSessionId.startsWith('-'))) {
    throw new SvcError('invalid-session-id', `resumeSessionId ${JSON.stringify(req.resumeSessionId)} must be non-empty and not start with "-"`);
  }
}
