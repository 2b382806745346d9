// Issue 14: a webhook call answered 202 whose dispatch a `kill -9` of the daemon cut is dealt with
// once at the next start, from the log: the call whose turn had started is recorded failed
// `interrupted` (its turn is recovered as interrupted, not asked again); the call still waiting
// behind it, which the agent never saw, is asked then, from the fenced prompt its fact holds, so an
// accepted call is not lost; a second restart changes nothing.
import t from 'tap';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { exited, readEvents, startSvc, until } from './cli-helpers.js';

const BIN = fileURLToPath(new URL('../fixtures/bin', import.meta.url));
const TOKEN = 'recovery-test-token-0123456789abcdef';

function start(t: { teardown(f: () => unknown): void }, home: string, env: NodeJS.ProcessEnv) {
  const daemon = startSvc(home, ['start'], { PATH: `${BIN}:${process.env.PATH}`, HOME: home, ...env });
  t.teardown(() => void daemon.kill('SIGKILL'));
  return daemon;
}

const webhookPort = (d: { output: () => string }) =>
  until('the webhook server to listen', () => /webhook server listening on 127\.0\.0\.1:(\d+)/.exec(d.output()), 30_000).then((m) => Number(m[1]));

await t.test('kill -9 after two 202s: the started call is interrupted, the waiting one runs after the restart, nothing is asked twice', async (t) => {
  const dir = t.testdir();
  const home = join(dir, 'home');
  const gate = join(dir, 'gate');
  const record = join(dir, 'cli.jsonl');
  mkdirSync(gate);
  mkdirSync(join(home, 'config'), { recursive: true });
  writeFileSync(
    join(home, 'config', 'config.json'),
    JSON.stringify({ interagent_port: 0, allowed_user_ids: [555], webhooks: { enabled: true, host: '127.0.0.1', port: 0, token: TOKEN } }),
  );
  writeFileSync(
    join(home, 'webhooks.json'),
    JSON.stringify([
      { id: 'deploy', agent: 'main', name: 'Deploys', enabled: true, prompt_template: 'Deployed {{service}}' },
      { id: 'alerts', agent: 'main', name: 'Alerts', enabled: true, prompt_template: 'Alert {{what}}' },
    ]),
  );
  // Whatever happens, no fake CLI is left waiting at the gate.
  t.teardown(() => {
    try {
      writeFileSync(join(gate, 'open'), '');
    } catch {
      /* the test folder is gone, and the gate with it */
    }
  });
  const db = join(home, 'events.db');
  const hooks = () => JSON.parse(readFileSync(join(home, 'webhooks.json'), 'utf8')) as Record<string, unknown>[];
  const hook = (id: string) => hooks().find((h) => h.id === id)!;
  const asks = () => (existsSync(record) ? readFileSync(record, 'utf8').trim().split('\n').filter(Boolean).length : 0);
  const webhookFacts = () => readEvents(db).filter((e) => e.stream.startsWith('webhook:'));
  const call = (port: number, id: string, body: unknown) =>
    fetch(`http://127.0.0.1:${port}/hooks/${id}`, {
      method: 'POST',
      headers: { connection: 'close', 'content-type': 'application/json', authorization: `Bearer ${TOKEN}` },
      body: JSON.stringify(body),
    });

  const first = start(t, home, { FAKE_CLI_GATE_DIR: gate, FAKE_CLI_RECORD: record });
  const port = await webhookPort(first);
  t.equal((await call(port, 'deploy', { service: 'api' })).status, 202);
  const deployId = hook('deploy').last_request_id as string;
  // The first call's turn starts and its CLI waits at the gate.
  await until('the deploy turn to start', () => readEvents(db).some((e) => e.type === 'turn.started' && e.data.request_id === deployId), 20_000);
  await until('the CLI to be held at the gate', () => asks() === 1, 20_000);
  // The second call waits in the same chat's session behind the first: accepted, never asked.
  t.equal((await call(port, 'alerts', { what: 'disk full' })).status, 202);
  const alertsId = hook('alerts').last_request_id as string;
  t.match([hook('deploy').last_status, hook('alerts').last_status], ['running', 'running']);
  const alertsFact = webhookFacts().find((e) => e.type === 'webhook.triggered' && e.data.request_id === alertsId)!;
  t.match(alertsFact.data.prompt, /^\[Webhook "Alerts" \(id alerts\) was called\.[^\n]*untrusted external input[^\n]*\]\n<<<WEBHOOK-PAYLOAD-[0-9a-f]{32}\nAlert disk full\nWEBHOOK-PAYLOAD-[0-9a-f]{32}>>>$/, 'the 202 kept the fenced prompt, not the body');
  first.kill('SIGKILL');
  await exited(first);
  t.same(
    webhookFacts().filter((e) => e.type === 'webhook.completed' || e.type === 'webhook.failed'),
    [],
    'nothing was settled before the kill',
  );
  const startedBefore = readEvents(db).filter((e) => e.type === 'turn.started').length;
  t.equal(startedBefore, 1, 'only the first call had a turn');

  const second = start(t, home, { FAKE_CLI_RECORD: record });
  await webhookPort(second);
  const settled = () => webhookFacts().filter((e) => e.type === 'webhook.completed' || e.type === 'webhook.failed');
  await until('both calls to settle', () => settled().length === 2, 30_000);
  const byRequest = new Map(settled().map((e) => [e.data.request_id as string, e]));
  const deploy = byRequest.get(deployId)!;
  const alerts = byRequest.get(alertsId)!;
  t.match(deploy, { type: 'webhook.failed', correlation: deployId, data: { id: 'deploy', mode: 'wake', reason: 'interrupted' } });
  t.match(deploy.data.error, /turn .* was running.*not asked again/);
  t.match(alerts, { type: 'webhook.completed', correlation: alertsId, data: { id: 'alerts', mode: 'wake', status: 'completed' } }, 'the call the agent never saw ran after the restart');
  t.ok(typeof deploy.causation === 'number' && typeof alerts.causation === 'number', 'each follows from its webhook.triggered fact');
  t.match(hook('deploy'), { trigger_count: 1, last_status: 'failed', last_error: /was running/ });
  t.match(hook('alerts'), { trigger_count: 1, last_status: 'completed', last_error: null });
  const alertsTurn = readEvents(db).find((e) => e.type === 'turn.started' && e.data.request_id === alertsId)!;
  t.equal(alertsTurn.data.prompt, alertsFact.data.prompt, 'asked with the prompt made at the 202');
  // The cut turn is the interrupted-turn machinery's: recorded failed `daemon-restarted`, not asked again.
  const turnStream = readEvents(db).find((e) => e.type === 'turn.started' && e.data.request_id === deployId)!.stream;
  await until('the cut turn to be recorded', () => readEvents(db, turnStream).some((e) => e.type === 'turn.failed'), 10_000);
  t.equal(readEvents(db, turnStream).find((e) => e.type === 'turn.failed')!.data.reason, 'daemon-restarted');
  t.same(
    readEvents(db).filter((e) => e.type === 'turn.started').map((e) => e.data.request_id),
    [deployId, alertsId],
    'one turn per call: the cut one was not started again',
  );
  t.equal(asks(), 2, 'the CLI was asked once per call');
  second.kill('SIGTERM');
  t.equal(await exited(second), 0);

  const before = webhookFacts().length;
  const hooksBefore = hooks();
  const third = start(t, home, { FAKE_CLI_RECORD: record });
  // Recovery has run once the server listens (it is started after it), and found nothing to do.
  await webhookPort(third);
  t.equal(webhookFacts().length, before, 'a second restart records nothing more');
  t.same(hooks(), hooksBefore, 'and leaves the records as they were');
  t.equal(asks(), 2);
  third.kill('SIGTERM');
  t.equal(await exited(third), 0);
});
