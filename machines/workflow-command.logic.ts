import * as v from 'valibot';
import { WorkflowVariableNameSchema, type WorkflowDefinitionView, type WorkflowRunSummary, type WorkflowRunView } from '../schemas/index.js';

/*
 * `/workflow [list|runs|run <id> [--var k=v]...|status <run>|cancel <run>]` (SPEC.md "Chat
 * commands"): parsed here, answered by the engine's commands, shown as plain text every transport
 * can carry.
 */

export type WorkflowChatCommand =
  | { op: 'list' }
  | { op: 'runs' }
  | { op: 'run'; workflow_id: string; variables: Record<string, string> }
  | { op: 'status'; run_id: string }
  | { op: 'cancel'; run_id: string }
  | { op: 'usage'; error: string | null };

export const WORKFLOW_COMMAND_USAGE = [
  'Usage:',
  '/workflow list — workflows you can run',
  '/workflow runs — active and recent runs',
  '/workflow run <id> [--var name=value]... — start one',
  '/workflow status <run id> — a run in detail',
  '/workflow cancel <run id> — stop a running or waiting run',
].join('\n');

const ID = /^[A-Za-z0-9_-]{1,64}$/;

/** Splits on whitespace; "double" or 'single' quotes keep spaces in a value (`--var topic="two words"`). */
function words(text: string): string[] | null {
  const out: string[] = [];
  const re = /\s*(?:([^\s"']+)|"([^"]*)"|'([^']*)')/y;
  let word: string | null = null;
  let i = 0;
  while (i < text.length) {
    if (/\s/.test(text[i]!)) {
      if (word !== null) out.push(word);
      word = null;
      i++;
      continue;
    }
    re.lastIndex = i;
    const m = re.exec(text.slice(0, text.length));
    if (!m) return null;
    word = (word ?? '') + (m[1] ?? m[2] ?? m[3] ?? '');
    i = re.lastIndex;
  }
  if (word !== null) out.push(word);
  return out;
}

export function parseWorkflowCommand(arg: string | undefined): WorkflowChatCommand {
  const w = words(arg ?? '');
  if (w === null) return { op: 'usage', error: 'unbalanced quotes' };
  const [sub = 'list', ...rest] = w;
  switch (sub.toLowerCase()) {
    case 'list':
    case 'runs':
      return rest.length ? { op: 'usage', error: `/workflow ${sub} takes no arguments` } : { op: sub.toLowerCase() as 'list' | 'runs' };
    case 'status':
    case 'cancel': {
      const [run, ...extra] = rest;
      if (run === undefined || extra.length || !ID.test(run)) return { op: 'usage', error: `/workflow ${sub} needs one run id` };
      return { op: sub.toLowerCase() as 'status' | 'cancel', run_id: run };
    }
    case 'run': {
      const [id, ...opts] = rest;
      if (id === undefined || !ID.test(id)) return { op: 'usage', error: '/workflow run needs a workflow id (letters, digits, _ and -)' };
      const variables: Record<string, string> = {};
      for (let i = 0; i < opts.length; i++) {
        const opt = opts[i]!;
        let pair: string | undefined;
        if (opt === '--var') pair = opts[++i];
        else if (opt.startsWith('--var=')) pair = opt.slice('--var='.length);
        else return { op: 'usage', error: `unexpected "${opt}": variables are given as --var name=value` };
        const eq = pair?.indexOf('=') ?? -1;
        if (pair === undefined || eq <= 0) return { op: 'usage', error: '--var needs name=value' };
        const name = pair.slice(0, eq);
        const checked = v.safeParse(WorkflowVariableNameSchema, name);
        if (!checked.success) return { op: 'usage', error: `--var ${name}: the name ${checked.issues[0].message}` };
        if (Object.hasOwn(variables, name)) return { op: 'usage', error: `--var ${name} is given twice` };
        variables[name] = pair.slice(eq + 1);
      }
      return { op: 'run', workflow_id: id, variables };
    }
    default:
      return { op: 'usage', error: `unknown subcommand "${sub}"` };
  }
}

export function formatWorkflowList(enabled: boolean, definitions: readonly WorkflowDefinitionView[]): string {
  const lines = [enabled ? 'Workflows:' : 'Workflows (disabled: workflow.enabled is false, nothing can be started):'];
  const loaded = definitions.filter((d) => d.error === null);
  if (loaded.length === 0) lines.push('none yet: put a <id>.yaml file in the workflows folder');
  for (const d of loaded) {
    const vars = Object.keys(d.variables);
    lines.push(`• ${d.id} — ${d.name}${d.description ? `: ${d.description}` : ''} (${d.step_count} steps${vars.length ? `; variables: ${vars.join(', ')}` : ''})`);
  }
  const broken = definitions.filter((d) => d.error !== null);
  if (broken.length) {
    lines.push('', 'Not loaded:');
    for (const d of broken) lines.push(`• ${d.error}`);
  }
  return lines.join('\n');
}

export function formatWorkflowRuns(runs: readonly WorkflowRunSummary[]): string {
  if (runs.length === 0) return 'No workflow runs yet. Start one with /workflow run <id>.';
  return ['Runs (newest first):', ...runs.map((r) => `• ${r.run_id} — ${r.workflow_id}: ${r.status}${r.current_step && (r.status === 'running' || r.status === 'waiting') ? ` at ${r.current_step}` : ''}${r.error ? ` (${r.error})` : ''}`)].join('\n');
}

export function formatWorkflowRun(run: WorkflowRunView): string {
  const lines = [`Run ${run.run_id} of ${run.workflow_id} (${run.name}): ${run.status}`, `Started ${run.started_at}${run.ended_at ? `, ended ${run.ended_at}` : ''}; ${run.step_executions} step executions`];
  if (run.error) lines.push(`Error: ${run.error}`);
  for (const s of run.steps) {
    const out = s.output ? ` → ${s.output.length > 200 ? `${s.output.slice(0, 200)}…` : s.output}` : '';
    lines.push(`${s.parent ? '    ' : ''}• ${s.id} (${s.type}): ${s.status}${s.attempts > 1 ? `, ${s.attempts} attempts` : ''}${s.error ? ` — ${s.error}` : ''}${out}`);
  }
  return lines.join('\n');
}
