/*
 * What a provider CLI adapter turns stdout lines into: the normalised stream a turn folds. It lives
 * here because both the turn machine (pure fold) and the adapters (parsing) speak it.
 */

export interface Usage {
  input_tokens: number;
  output_tokens: number;
  cached_tokens?: number;
}

export type AgentStatus = 'thinking' | 'compacting' | 'recovering' | null;

export type StreamEvent =
  | { kind: 'init'; sessionId: string }
  | { kind: 'text'; text: string }
  | { kind: 'tool'; name: string }
  | { kind: 'status'; status: AgentStatus }
  | {
      kind: 'result';
      sessionId: string;
      text: string;
      isError: boolean;
      usage: Usage;
      costUsd?: number;
      durationMs?: number;
      numTurns?: number;
    }
  | { kind: 'malformed'; reason: string; sample: string };

export type ResultEvent = Extract<StreamEvent, { kind: 'result' }>;
