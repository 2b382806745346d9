import t from 'tap';
import {
  claudeAdapter,
  codexAdapter,
  codexSupportsEffort,
  geminiAdapter,
  LineSplitter,
  type PermissionMode,
  type ProviderAdapter,
  type StreamEvent,
  type TurnRequest,
} from '../../actors/index.js';

const MODES: PermissionMode[] = ['acceptEdits', 'auto', 'bypassPermissions', 'default', 'dontAsk', 'plan'];
const TMP = { tempDir: '/tmp/turn-1' };

function req(over: Partial<TurnRequest> = {}): TurnRequest {
  return {
    provider: 'claude',
    prompt: 'hi',
    permissionMode: 'default',
    additionalDirectories: [],
    cliParameters: [],
    streaming: true,
    cwd: '/ws',
    ...over,
  };
}

function parseAll(adapter: ProviderAdapter, lines: string[], sessionId?: string): StreamEvent[] {
  const p = adapter.createParser(sessionId === undefined ? {} : { sessionId });
  return [...lines.flatMap((l) => p.push(l)), ...p.end()];
}

const DOCKER = { container: 'svc-sandbox', containerCwd: '/workspace', env: { SVC_AGENT_NAME: 'main', SVC_CHAT_ID: '7' } };

await t.test('claude argv', async (t) => {
  await t.test('streaming with every option, in PROVIDERS.md order', async (t) => {
    const inv = claudeAdapter.buildInvocation(
      req({
        model: 'claude-opus',
        permissionMode: 'acceptEdits',
        reasoningEffort: 'xhigh',
        systemPrompt: 'You remember: tea.',
        maxTurns: 5,
        maxBudgetUsd: 1.5,
        additionalDirectories: ['/data/a', '/data/b'],
        resumeSessionId: 's-1',
        cliParameters: ['--foo', 'bar baz'],
        prompt: '-rf looks like a flag',
      }),
      TMP,
    );
    t.same(inv, {
      command: 'claude',
      args: [
        '--verbose', '-p', '--output-format', 'stream-json',
        '--permission-mode', 'acceptEdits',
        '--model', 'claude-opus',
        '--effort', 'xhigh',
        '--append-system-prompt', 'You remember: tea.',
        '--max-turns', '5',
        '--max-budget-usd', '1.5',
        '--add-dir', '/data/a', '--add-dir', '/data/b',
        '--resume', 's-1',
        '--foo', 'bar baz',
        '--', '-rf looks like a flag',
      ],
      stdin: null,
      env: {},
      tempFiles: [],
    });
  });

  await t.test('one-shot is -p --output-format json without --verbose; unset options are omitted', async (t) => {
    const inv = claudeAdapter.buildInvocation(req({ streaming: false }), TMP);
    t.same(inv.args, ['-p', '--output-format', 'json', '--permission-mode', 'default', '--', 'hi']);
  });

  await t.test('every permission mode is passed through verbatim', async (t) => {
    for (const mode of MODES) {
      const args = claudeAdapter.buildInvocation(req({ permissionMode: mode }), TMP).args;
      t.same(args.slice(4, 6), ['--permission-mode', mode], mode);
    }
  });

  await t.test('docker wraps the argv and maps workspace paths', async (t) => {
    const inv = claudeAdapter.buildInvocation(req({ docker: DOCKER, additionalDirectories: ['/ws/sub', '/elsewhere'] }), TMP);
    t.same(inv, {
      command: 'docker',
      args: [
        'exec', '-i', '-w', '/workspace', '-e', 'SVC_AGENT_NAME=main', '-e', 'SVC_CHAT_ID=7', 'svc-sandbox',
        'claude', '--verbose', '-p', '--output-format', 'stream-json', '--permission-mode', 'default',
        '--add-dir', '/workspace/sub', '--add-dir', '/elsewhere', '--', 'hi',
      ],
      stdin: null,
      env: {},
      tempFiles: [],
    });
  });
});

// The argv PROVIDERS.md §provider_b writes down, expanded here from its own lines rather than
// restated from the adapter: a change to the adapter that strays from the contract fails below.
const CODEX_NEW = 'exec --json --color never <sandbox> --skip-git-repo-check [--model M] [-c model_reasoning_effort=E] [params] -';
const CODEX_RESUME = 'exec resume --json <sandbox> [--model M] [-c ...] -- <thread_id> -';
function codexArgvFromDoc(doc: string, o: { sandbox: string[]; model?: string; effort?: string; params?: string[]; thread?: string }): string[] {
  const out: string[] = [];
  for (const word of doc.replace('[--model M]', '<model>').replace(/\[-c model_reasoning_effort=E\] \[params\]|\[-c \.\.\.\]/, '<extra>').split(' ')) {
    if (word === '<sandbox>') out.push(...o.sandbox);
    else if (word === '<model>') out.push(...(o.model ? ['--model', o.model] : []));
    else if (word === '<extra>') out.push(...(o.effort ? ['-c', `model_reasoning_effort=${o.effort}`] : []), ...(o.params ?? []));
    else if (word === '<thread_id>') out.push(o.thread!);
    else out.push(word);
  }
  // Departure, written at actors/providers/codex.ts: --skip-git-repo-check is global in `codex exec`, and a resume
  // outside a git repository fails without it, so the resumed line carries it after the sandbox too.
  if (doc === CODEX_RESUME) out.splice(3 + o.sandbox.length, 0, '--skip-git-repo-check');
  return out;
}

await t.test('codex argv', async (t) => {
  // PROVIDERS.md: bypassPermissions -> --dangerously-bypass-approvals-and-sandbox; `--sandbox workspace-write` for
  // edit-allowed modes, `--sandbox read-only` for read-only ones; resumed turns pass `-c sandbox_mode=<mode>` instead.
  const sandboxOf = (mode: PermissionMode): string | null =>
    mode === 'bypassPermissions' ? null : (['acceptEdits', 'auto', 'dontAsk'] as PermissionMode[]).includes(mode) ? 'workspace-write' : 'read-only';
  const sandboxNew = (mode: PermissionMode) => {
    const box = sandboxOf(mode);
    return box === null ? ['--dangerously-bypass-approvals-and-sandbox'] : ['--sandbox', box];
  };
  const sandboxResume = (mode: PermissionMode) => {
    const box = sandboxOf(mode);
    return box === null ? ['--dangerously-bypass-approvals-and-sandbox'] : ['-c', `sandbox_mode=${box}`];
  };

  await t.test('new thread per permission mode, prompt on stdin via -', async (t) => {
    for (const mode of MODES) {
      const inv = codexAdapter.buildInvocation(req({ provider: 'codex', permissionMode: mode }), TMP);
      t.same(inv, {
        command: 'codex',
        args: codexArgvFromDoc(CODEX_NEW, { sandbox: sandboxNew(mode) }),
        stdin: 'hi',
        env: {},
        tempFiles: [],
      }, mode);
    }
  });

  await t.test('resume per permission mode: thread id after --, sandbox through -c', async (t) => {
    for (const mode of MODES) {
      const inv = codexAdapter.buildInvocation(req({ provider: 'codex', permissionMode: mode, resumeSessionId: 'th-42' }), TMP);
      t.same(inv.args, codexArgvFromDoc(CODEX_RESUME, { sandbox: sandboxResume(mode), thread: 'th-42' }), mode);
    }
  });

  await t.test('model, supported effort and cli_parameters, in order; memory prepended to the prompt', async (t) => {
    const r = req({
      provider: 'codex',
      permissionMode: 'acceptEdits',
      model: 'gpt-5.1-codex-max',
      reasoningEffort: 'xhigh',
      cliParameters: ['-c', 'foo=1'],
      systemPrompt: 'Memory: tea.',
    });
    const inv = codexAdapter.buildInvocation(r, TMP);
    const extra = { model: 'gpt-5.1-codex-max', effort: 'xhigh', params: ['-c', 'foo=1'] };
    t.same(inv.args, codexArgvFromDoc(CODEX_NEW, { sandbox: ['--sandbox', 'workspace-write'], ...extra }));
    t.equal(inv.stdin, 'Memory: tea.\n\nhi', 'no system-prompt flag: memory text is prepended to the prompt');
    const resumed = codexAdapter.buildInvocation({ ...r, resumeSessionId: 'th-1' }, TMP);
    t.same(resumed.args, codexArgvFromDoc(CODEX_RESUME, { sandbox: ['-c', 'sandbox_mode=workspace-write'], thread: 'th-1', ...extra }));
  });

  await t.test('effort is dropped when the model does not support it', async (t) => {
    const cases: [string | undefined, 'low' | 'medium' | 'high' | 'xhigh', boolean][] = [
      ['gpt-5.1-codex-mini', 'high', true],
      ['gpt-5.1-codex-mini', 'xhigh', false],
      ['gpt-5-mini', 'xhigh', false],
      ['gpt-5.1-codex-max', 'xhigh', true],
      ['gpt-5-codex', 'medium', true],
      ['gpt-5-codex', 'xhigh', false],
      ['gpt-5.2', 'xhigh', true],
      ['gpt-4.1', 'low', false],
      [undefined, 'medium', true],
      [undefined, 'xhigh', false],
    ];
    for (const [model, effort, ok] of cases) {
      t.equal(codexSupportsEffort(model, effort), ok, `${model} ${effort}`);
      const args = codexAdapter.buildInvocation(req({ provider: 'codex', ...(model ? { model } : {}), reasoningEffort: effort }), TMP).args;
      t.equal(args.includes(`model_reasoning_effort=${effort}`), ok, `argv ${model} ${effort}`);
    }
  });

  await t.test('docker', async (t) => {
    const inv = codexAdapter.buildInvocation(req({ provider: 'codex', docker: DOCKER, permissionMode: 'bypassPermissions' }), TMP);
    t.same(inv.args, [
      'exec', '-i', '-w', '/workspace', '-e', 'SVC_AGENT_NAME=main', '-e', 'SVC_CHAT_ID=7', 'svc-sandbox',
      'codex', ...codexArgvFromDoc(CODEX_NEW, { sandbox: ['--dangerously-bypass-approvals-and-sandbox'] }),
    ]);
    t.equal(inv.command, 'docker');
    t.equal(inv.stdin, 'hi');
  });

  await t.test('errorText strips the stdin notice', async (t) => {
    t.equal(codexAdapter.errorText('Reading prompt from stdin...\nerror: model not found\n'), 'error: model not found');
    t.equal(codexAdapter.errorText('Reading prompt from stdin...\n'), '');
    t.equal(codexAdapter.errorText('plain failure'), 'plain failure');
  });
});

await t.test('gemini argv', async (t) => {
  await t.test('minimal: stream-json, include ., prompt on stdin', async (t) => {
    t.same(geminiAdapter.buildInvocation(req({ provider: 'gemini' }), TMP), {
      command: 'gemini',
      args: ['--output-format', 'stream-json', '--include-directories', '.'],
      stdin: 'hi',
      env: {},
      tempFiles: [],
    });
  });

  await t.test('--approval-mode yolo iff bypassPermissions', async (t) => {
    for (const mode of MODES) {
      const args = geminiAdapter.buildInvocation(req({ provider: 'gemini', permissionMode: mode }), TMP).args;
      t.equal(args.includes('yolo'), mode === 'bypassPermissions', mode);
    }
  });

  await t.test('model, yolo, resume, params in order; system text through a temp file', async (t) => {
    const inv = geminiAdapter.buildInvocation(
      req({
        provider: 'gemini',
        model: 'gemini-2.5-pro',
        permissionMode: 'bypassPermissions',
        resumeSessionId: 'g-1',
        cliParameters: ['--sandbox'],
        systemPrompt: 'Memory: tea.',
        reasoningEffort: 'high',
      }),
      TMP,
    );
    t.same(inv, {
      command: 'gemini',
      args: [
        '--output-format', 'stream-json', '--include-directories', '.', '--model', 'gemini-2.5-pro',
        '--approval-mode', 'yolo', '--resume', 'g-1', '--sandbox',
      ],
      stdin: 'hi',
      env: { GEMINI_SYSTEM_MD: '/tmp/turn-1/gemini-system.md' },
      tempFiles: [{ path: '/tmp/turn-1/gemini-system.md', content: 'Memory: tea.' }],
    });
  });

  await t.test('docker: system file path as the container sees it, passed with -e', async (t) => {
    const inv = geminiAdapter.buildInvocation(req({ provider: 'gemini', docker: DOCKER, systemPrompt: 'S' }), { tempDir: '/ws/.svc-tmp/t1' });
    t.same(inv.args, [
      'exec', '-i', '-w', '/workspace', '-e', 'SVC_AGENT_NAME=main', '-e', 'SVC_CHAT_ID=7',
      '-e', 'GEMINI_SYSTEM_MD=/workspace/.svc-tmp/t1/gemini-system.md', 'svc-sandbox',
      'gemini', '--output-format', 'stream-json', '--include-directories', '.',
    ]);
    t.same(inv.tempFiles, [{ path: '/ws/.svc-tmp/t1/gemini-system.md', content: 'S' }]);
    t.same(inv.env, {});
  });
});

await t.test('claude parser', async (t) => {
  await t.test('PROVIDERS.md lines', async (t) => {
    const table: [string, StreamEvent[]][] = [
      ['{"type":"system","subtype":"init","session_id":"s-1","model":"...","tools":["Bash","Read"]}', [{ kind: 'init', sessionId: 's-1' }]],
      ['{"type":"assistant","message":{"content":[{"type":"text","text":"Hello"},{"type":"tool_use","id":"t1","name":"Read","input":{}}]}}',
        [{ kind: 'text', text: 'Hello' }, { kind: 'tool', name: 'Read' }]],
      ['{"type":"assistant","message":{"content":[{"type":"thinking","thinking":"..."}]}}', [{ kind: 'status', status: 'thinking' }]],
      ['{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t1","content":"..."}]}}', []],
      ['{"type":"system","subtype":"status","status":"compacting"}', [{ kind: 'status', status: 'compacting' }]],
      ['{"type":"system","subtype":"compact_boundary","compact_metadata":{"trigger":"auto","pre_tokens":150000}}', []],
      ['{"type":"result","subtype":"success","session_id":"s-1","result":"Done.","is_error":false,"duration_ms":1500,"num_turns":3,"total_cost_usd":0.05,"usage":{"input_tokens":500,"output_tokens":200}}',
        [{ kind: 'result', sessionId: 's-1', text: 'Done.', isError: false, usage: { input_tokens: 500, output_tokens: 200 }, costUsd: 0.05, durationMs: 1500, numTurns: 3 }]],
    ];
    const p = claudeAdapter.createParser();
    for (const [line, want] of table) t.same(p.push(line), want, line.slice(0, 60));
    t.same(p.end(), []);
  });

  await t.test('a message with several blocks yields one event per block in order; empty text skipped', async (t) => {
    const line = JSON.stringify({
      type: 'assistant',
      message: { content: [
        { type: 'text', text: 'A' }, { type: 'text', text: '' }, { type: 'tool_use', name: 'Bash' },
        { type: 'thinking', thinking: 'x' }, { type: 'text', text: 'B' }, { type: 'image' }, 'junk',
      ] },
    });
    t.same(parseAll(claudeAdapter, [line]), [
      { kind: 'text', text: 'A' }, { kind: 'tool', name: 'Bash' }, { kind: 'status', status: 'thinking' }, { kind: 'text', text: 'B' },
    ]);
  });

  await t.test('status null clears; unknown status values are ignored', async (t) => {
    t.same(parseAll(claudeAdapter, ['{"type":"system","subtype":"status","status":null}']), [{ kind: 'status', status: null }]);
    t.same(parseAll(claudeAdapter, ['{"type":"system","subtype":"status","status":"dreaming"}']), []);
  });

  await t.test('result: cache reads become cached_tokens, missing session id comes from init or the resumed id, error subtypes are errors', async (t) => {
    const ev = parseAll(claudeAdapter, [
      '{"type":"system","subtype":"init","session_id":"s-9"}',
      '{"type":"result","subtype":"error_max_turns","is_error":true,"usage":{"input_tokens":1,"output_tokens":2,"cache_read_input_tokens":3}}',
    ]);
    t.same(ev[1], { kind: 'result', sessionId: 's-9', text: 'error_max_turns', isError: true, usage: { input_tokens: 1, output_tokens: 2, cached_tokens: 3 } });
    t.same(parseAll(claudeAdapter, ['{"type":"result","result":"ok"}'], 's-old'), [
      { kind: 'result', sessionId: 's-old', text: 'ok', isError: false, usage: { input_tokens: 0, output_tokens: 0 } },
    ]);
  });

  await t.test('the one-shot json output is a single result line', async (t) => {
    const ev = parseAll(claudeAdapter, ['{"type":"result","subtype":"success","session_id":"s-2","result":"Hi","is_error":false,"usage":{"input_tokens":1,"output_tokens":1}}']);
    t.equal(ev.length, 1);
    t.match(ev[0], { kind: 'result', sessionId: 's-2', text: 'Hi' });
  });
});

await t.test('codex parser', async (t) => {
  await t.test('PROVIDERS.md lines', async (t) => {
    const table: [string, StreamEvent[]][] = [
      ['{"type":"thread.started","thread_id":"th-42"}', [{ kind: 'init', sessionId: 'th-42' }]],
      ['{"type":"turn.started"}', []],
      ['{"type":"item.started","item":{"id":"i0","type":"reasoning","text":"..."}}', [{ kind: 'status', status: 'thinking' }]],
      ['{"type":"item.started","item":{"id":"i1","type":"command_execution","command":"ls","status":"in_progress"}}', [{ kind: 'tool', name: 'Bash' }]],
      ['{"type":"item.started","item":{"type":"file_change"}}', [{ kind: 'tool', name: 'Edit' }]],
      ['{"type":"item.started","item":{"type":"mcp_tool_call","name":"search_docs"}}', [{ kind: 'tool', name: 'search_docs' }]],
      ['{"type":"item.completed","item":{"id":"i2","type":"agent_message","text":"Hello"}}', [{ kind: 'text', text: 'Hello' }]],
      ['{"type":"turn.completed","usage":{"input_tokens":100,"cached_input_tokens":0,"output_tokens":50}}',
        [{ kind: 'result', sessionId: 'th-42', text: 'Hello', isError: false, usage: { input_tokens: 100, output_tokens: 50, cached_tokens: 0 } }]],
    ];
    const p = codexAdapter.createParser();
    for (const [line, want] of table) t.same(p.push(line), want, line.slice(0, 60));
    t.same(p.end(), []);
    t.same(parseAll(codexAdapter, ['{"type":"thread.started","thread_id":"th-1"}', '{"type":"turn.failed","error":{"message":"Rate limited"}}']), [
      { kind: 'init', sessionId: 'th-1' },
      { kind: 'result', sessionId: 'th-1', text: 'Rate limited', isError: true, usage: { input_tokens: 0, output_tokens: 0 } },
    ]);
  });

  await t.test('agent text is not tripled by started/updated/completed', async (t) => {
    const msg = { id: 'm1', type: 'agent_message', text: 'Once' };
    const ev = parseAll(codexAdapter, [
      JSON.stringify({ type: 'item.started', item: msg }),
      JSON.stringify({ type: 'item.updated', item: msg }),
      JSON.stringify({ type: 'item.completed', item: msg }),
      '{"type":"item.completed","item":{"id":"m2","type":"agent_message","text":"Twice"}}',
      '{"type":"item.completed","item":{"id":"m3","type":"agent_message","text":""}}',
      '{"type":"turn.completed","usage":{"input_tokens":1,"output_tokens":1}}',
    ], 'th-resumed');
    t.same(ev, [
      { kind: 'text', text: 'Once' },
      { kind: 'text', text: 'Twice' },
      { kind: 'result', sessionId: 'th-resumed', text: 'Once\n\nTwice', isError: false, usage: { input_tokens: 1, output_tokens: 1 } },
    ]);
  });

  await t.test('real codex items: a tool is reported once across started/completed; completed-only items count; mcp name in `tool`', async (t) => {
    const ev = parseAll(codexAdapter, [
      '{"type":"item.started","item":{"id":"c1","type":"command_execution","command":"ls","status":"in_progress"}}',
      '{"type":"item.completed","item":{"id":"c1","type":"command_execution","command":"ls","status":"completed"}}',
      '{"type":"item.completed","item":{"id":"r1","type":"reasoning","text":"plan"}}',
      '{"type":"item.completed","item":{"id":"f1","type":"file_change","changes":[],"status":"completed"}}',
      '{"type":"item.started","item":{"id":"x1","type":"mcp_tool_call","server":"docs","tool":"lookup","status":"in_progress"}}',
      '{"type":"item.started","item":{"id":"w1","type":"web_search","query":"q"}}',
      '{"type":"item.started","item":{"id":"t1","type":"todo_list","items":[]}}',
    ]);
    t.same(ev, [
      { kind: 'tool', name: 'Bash' }, { kind: 'status', status: 'thinking' }, { kind: 'tool', name: 'Edit' },
      { kind: 'tool', name: 'lookup' }, { kind: 'tool', name: 'WebSearch' },
    ]);
  });

  await t.test('a stream error with no turn result becomes an error result at end; none after a result', async (t) => {
    t.same(parseAll(codexAdapter, ['{"type":"thread.started","thread_id":"th-5"}', '{"type":"error","message":"stream disconnected"}']), [
      { kind: 'init', sessionId: 'th-5' },
      { kind: 'result', sessionId: 'th-5', text: 'stream disconnected', isError: true, usage: { input_tokens: 0, output_tokens: 0 } },
    ]);
    const ev = parseAll(codexAdapter, ['{"type":"error","message":"retrying 1/5"}', '{"type":"turn.failed","error":{}}']);
    t.same(ev, [{ kind: 'result', sessionId: '', text: 'retrying 1/5', isError: true, usage: { input_tokens: 0, output_tokens: 0 } }]);
  });
});

await t.test('gemini parser', async (t) => {
  await t.test('PROVIDERS.md lines', async (t) => {
    const table: [string, StreamEvent[]][] = [
      ['{"type":"init","session_id":"g-1","model":"gemini-2.5-pro"}', [{ kind: 'init', sessionId: 'g-1' }]],
      ['{"type":"message","role":"user","content":"question"}', []],
      ['{"type":"message","role":"assistant","content":"Hello","delta":true}', [{ kind: 'text', text: 'Hello' }]],
      ['{"type":"tool_use","tool_name":"run_shell_command","tool_id":"b1","parameters":{"command":"ls"}}', [{ kind: 'tool', name: 'run_shell_command' }]],
      ['{"type":"tool_result","tool_id":"b1","status":"success","output":"file.txt"}', []],
      ['{"type":"error","severity":"warning","message":"..."}', []],
      ['{"type":"result","status":"success","session_id":"g-1","response":"Done!","stats":{"input_tokens":100,"output_tokens":50,"cached":20,"duration_ms":1234}}',
        [{ kind: 'result', sessionId: 'g-1', text: 'Done!', isError: false, usage: { input_tokens: 100, output_tokens: 50, cached_tokens: 20 }, durationMs: 1234 }]],
    ];
    const p = geminiAdapter.createParser();
    for (const [line, want] of table) t.same(p.push(line), want, line.slice(0, 60));
    t.same(p.end(), [], 'a warning is not a failed turn');
  });

  await t.test('real gemini result without response/session_id: streamed deltas and the init id', async (t) => {
    const ev = parseAll(geminiAdapter, [
      '{"type":"init","session_id":"g-2"}',
      '{"type":"message","role":"assistant","content":"Hel","delta":true}',
      '{"type":"message","role":"assistant","content":"","delta":true}',
      '{"type":"message","role":"assistant","content":"lo","delta":true}',
      '{"type":"result","status":"success","stats":{"input":7,"output_tokens":3}}',
    ]);
    t.same(ev.at(-1), { kind: 'result', sessionId: 'g-2', text: 'Hello', isError: false, usage: { input_tokens: 7, output_tokens: 3 } });
    t.equal(ev.length, 4);
  });

  await t.test('error results and hard errors without a result', async (t) => {
    t.match(parseAll(geminiAdapter, ['{"type":"result","status":"error","error":{"type":"Error","message":"quota"}}']), [
      { kind: 'result', isError: true, text: 'quota' },
    ]);
    t.same(parseAll(geminiAdapter, ['{"type":"error","severity":"error","message":"auth failed"}'], 'g-3'), [
      { kind: 'result', sessionId: 'g-3', text: 'auth failed', isError: true, usage: { input_tokens: 0, output_tokens: 0 } },
    ]);
  });
});

await t.test('bad requests are refused with a named error before anything runs', async (t) => {
  const bad: [Partial<TurnRequest>, string][] = [
    [{ permissionMode: 'yolo' as PermissionMode }, 'invalid-permission-mode'],
    [{ reasoningEffort: 'max' as 'high' }, 'invalid-reasoning-effort'],
    [{ maxTurns: 0 }, 'invalid-max-turns'],
    [{ maxTurns: 2.5 }, 'invalid-max-turns'],
    [{ maxBudgetUsd: -1 }, 'invalid-max-budget'],
    [{ maxBudgetUsd: Number.NaN }, 'invalid-max-budget'],
    [{ additionalDirectories: ['relative/dir'] }, 'invalid-additional-directory'],
    [{ additionalDirectories: [42 as unknown as string] }, 'invalid-additional-directory'],
    [{ cliParameters: ['--ok', 7 as unknown as string] }, 'invalid-turn-request'],
    [{ cliParameters: ['--x\0y'] }, 'invalid-turn-request'],
    [{ model: 'gpt\0' }, 'invalid-turn-request'],
    [{ prompt: undefined as unknown as string }, 'invalid-turn-request'],
    [{ resumeSessionId: '' }, 'invalid-session-id'],
    [{ resumeSessionId: '--last' }, 'invalid-session-id'],
  ];
  for (const adapter of [claudeAdapter, codexAdapter, geminiAdapter]) {
    for (const [over, code] of bad) {
      t.throws(() => adapter.buildInvocation(req({ provider: adapter.id, ...over }), TMP), { name: 'SvcError', code }, `${adapter.id} ${JSON.stringify(over)}`);
    }
  }
  // A NUL cannot go in argv (claude) but is just a byte on stdin (codex, gemini).
  t.throws(() => claudeAdapter.buildInvocation(req({ prompt: 'a\0b' }), TMP), { code: 'invalid-turn-request', message: /prompt contains a NUL/ });
  t.equal(codexAdapter.buildInvocation(req({ provider: 'codex', prompt: 'a\0b' }), TMP).stdin, 'a\0b');
  t.equal(geminiAdapter.buildInvocation(req({ provider: 'gemini', prompt: 'a\0b' }), TMP).stdin, 'a\0b');
});

await t.test('every parser: bad input becomes malformed or nothing, never a throw', async (t) => {
  const bad: [string, 'malformed' | 'none'][] = [
    ['not json at all', 'malformed'],
    ['{"type":', 'malformed'],
    ['[1,2,3]', 'malformed'],
    ['"a string"', 'malformed'],
    ['null', 'malformed'],
    ['42', 'malformed'],
    ['', 'none'],
    ['   \r', 'none'],
    ['{}', 'none'],
    ['{"type":"brand_new_event","x":1}', 'none'],
    ['{"type":42}', 'none'],
    ['{"type":"assistant","message":"nope"}', 'none'],
    ['{"type":"assistant","message":{"content":{"not":"array"}}}', 'none'],
    ['{"type":"system","subtype":"init","session_id":7}', 'none'],
    ['{"type":"item.completed","item":null}', 'none'],
    ['{"type":"item.started","item":{"type":"mcp_tool_call"}}', 'none'],
    ['{"type":"thread.started"}', 'none'],
    ['{"type":"message","role":"assistant","content":{"a":1}}', 'none'],
    ['{"type":"tool_use","tool_name":null}', 'none'],
    ['{"type":"init"}', 'none'],
  ];
  for (const adapter of [claudeAdapter, codexAdapter, geminiAdapter]) {
    for (const [line, want] of bad) {
      const ev = adapter.createParser().push(line);
      if (want === 'none') t.same(ev, [], `${adapter.id}: ${line}`);
      else t.match(ev, [{ kind: 'malformed', reason: String, sample: line.trim().slice(0, 200) }], `${adapter.id}: ${line}`);
    }
    const long = 'x'.repeat(5000);
    const [m] = adapter.createParser().push(long);
    t.equal(m?.kind === 'malformed' && m.sample.length, 200, `${adapter.id}: sample is capped`);
  }
  // Numbers of the wrong type fall back to zero instead of leaking through.
  t.same(parseAll(claudeAdapter, ['{"type":"result","result":5,"usage":{"input_tokens":"many","output_tokens":null},"total_cost_usd":"x"}']), [
    { kind: 'result', sessionId: '', text: '', isError: false, usage: { input_tokens: 0, output_tokens: 0 } },
  ]);
});

await t.test('line splitter', async (t) => {
  const lines = (items: ReturnType<LineSplitter['push']>) => items.map((i) => ('line' in i ? i.line : `<tooLong ${i.length}>`));

  await t.test('UTF-8 characters split across chunks survive; \\n and \\r\\n both end lines', async (t) => {
    const s = new LineSplitter();
    const bytes = Buffer.from('héllo €uro\r\n日本\nlast', 'utf8');
    const out: string[] = [];
    for (let i = 0; i < bytes.length; i++) out.push(...lines(s.push(bytes.subarray(i, i + 1))));
    out.push(...lines(s.end()));
    t.same(out, ['héllo €uro', '日本', 'last']);
    t.same(s.end(), [], 'nothing left after end');
  });

  await t.test('several lines in one chunk, empty lines kept', async (t) => {
    const s = new LineSplitter();
    t.same(lines(s.push('a\n\nb\nc')), ['a', '', 'b']);
    t.same(lines(s.push('d\n')), ['cd']);
    t.same(s.end(), []);
  });

  await t.test('an over-long line is reported once with its length and the stream continues', async (t) => {
    const s = new LineSplitter({ maxLineBytes: 10 });
    const out: string[] = [];
    out.push(...lines(s.push('ok\n0123456789')));
    out.push(...lines(s.push('abcdef')));
    out.push(...lines(s.push('ghij\r\nafter\n0123456789\r\n')));
    out.push(...lines(s.push('tail-is-too-long')));
    out.push(...lines(s.end()));
    t.same(out, ['ok', '<tooLong 20>', 'after', '0123456789', '<tooLong 16>']);
  });

  await t.test('default limit is 1 MiB', async (t) => {
    const s = new LineSplitter();
    const big = 'y'.repeat(1024 * 1024);
    t.same(lines(s.push(big + '\n' + big + 'z\nnext\n')), [big, `<tooLong ${1024 * 1024 + 1}>`, 'next']);
  });
});
