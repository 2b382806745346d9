import { describeError, type TaskRecord } from '../../schemas/index.js';
import { writeJsonAtomicSync, type FoldedTask, type TasksReadModel } from '../../store/index.js';
import type { Bus } from '../../bus/index.js';

/*
 * tasks.json as a projection of the task facts, for the agents' tool scripts that read it
 * (SPEC.md "Task records"). Facts arriving together are written once: a write is scheduled for the
 * end of the current turn of the event loop and carries every fact committed by then, each still an
 * atomic write-then-rename with its fsync. `flush` writes now (shutdown), and `written` is how a
 * command waits until a tool script would see its change.
 */
export class TasksFileWriter {
  private pending: Promise<void> | null = null;
  private dirty = false;

  constructor(
    private readonly file: string,
    private readonly tasks: TasksReadModel,
    private readonly bus: Bus,
  ) {}

  /** Marks the file stale; resolves once a write made after this call has landed (or failed, which is logged). */
  written(): Promise<void> {
    this.dirty = true;
    this.pending ??= new Promise<void>((resolve) =>
      setImmediate(() => {
        this.pending = null;
        this.flush();
        resolve();
      }),
    );
    return this.pending;
  }

  /** Writes the file now if a fact since the last write changed it. */
  flush(): void {
    if (!this.dirty) return;
    this.dirty = false;
    try {
      writeJsonAtomicSync(this.file, this.tasks.all().map(recordOf), { mode: 0o600 });
    } catch (e) {
      this.bus.emitLog('error', `tasks.json not written: ${describeError(e)}`);
    }
  }
}

/** tasks.json's entry (SPEC.md "Task records"; `thread_id` is the origin topic). */
export function recordOf(s: FoldedTask): TaskRecord & Record<string, unknown> {
  return {
    task_id: s.task_id,
    status: s.status,
    name: s.name,
    parent_agent: s.parent_agent,
    agent: s.agent,
    transport: s.transport,
    chat_id: s.chat_id,
    thread_id: s.topic_id,
    session_id: s.session_id,
    provider: s.provider,
    model: s.model,
    prompt: s.prompt,
    description: s.question,
    result: s.result,
    reason: s.reason,
    question: s.question,
    runs: s.runs,
    created_at: s.created_at,
    finished_at: s.finished_at,
    // Left to the reader (taskView), which counts a running task's time up to now.
    elapsed_seconds: null,
  };
}
