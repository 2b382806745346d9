// Issue 14's "done when", end to end on the real daemon with the fake CLIs: a user signs in to the
// admin API and creates two cron jobs in New York time sharing a `dependency`, and two webhooks
// (one bearer, one GitHub-signed). On a simulated clock the first job fires on time and its CLI
// holds the queue; the second fires and waits behind it; a bearer call's turn holds the main chat
// and the signed GitHub call waits behind it. Then the daemon is SIGKILLed. After the restart the
// waiting job runs and delivers "TASK: <title>" with its result to the chat, the waiting GitHub
// call wakes the agent, the two that had started are recorded failed (and told) without running
// again, every CLI was asked once, and a second restart changes nothing.
import t from 'tap';
import { spawn } from 'node:child_process';
import { createHmac } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { SimulatedClock } from 'xstate';
import { startDaemon } from '../../bin/daemon.js';
import { homePaths } from '../../store/index.js';
import { tempHome } from '../fixtures/temp-home.js';
import { exited, readEvents, until } from './cli-helpers.js';

const BIN = fileURLToPath(new URL('../fixtures/bin', import.meta.url));
const CHILD = fileURLToPath(new URL('../fixtures/daemon-clock-child.ts', import.meta.url));
const TS_LOADER = import.meta.resolve('@tapjs/typescript/import');
const ZONE = 'America/New_York';
const GH_SECRET = 'gh-webhook-secret-0123456789';
const BLOCKER_TOKEN = 'blocker-token-0123456789abcdef';

/** `M H * * *` of an instant, read in `zone`. */
function dailyAt(ms: number, zone: string): string {
  const parts = new Intl.DateTimeFormat('en-US', { timeZone: zone, hour: 'numeric', minute: 'numeric', hourCycle: 'h23' }).formatToParts(new Date(ms));
  const part = (type: string) => Number(parts.find((p) => p.type === type)!.value);
  return `${part('minute')} ${part('hour')} * * *`;
}

type Api = (method: string, path: string, body?: unknown) => Promise<{ status: number; body: any }>;

async function signIn(port: number, home: string): Promise<Api> {
  const password = readFileSync(homePaths(home).initialAdminPasswordFile, 'utf8').trim();
  const login = await fetch(`http://127.0.0.1:${port}/api/auth/login`, { method: 'POST', headers: { connection: 'close', 'content-type': 'application/json' }, body: JSON.stringify({ username: 'admin', password }) });
  const { access_token } = (await login.json()) as { access_token: string };
  return async (method, path, body) => {
    const res = await fetch(`http://127.0.0.1:${port}${path}`, {
      method,
      headers: { connection: 'close', authorization: `Bearer ${access_token}`, 'accept-language': 'en', ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : null };
  };
}

await t.test('cron and webhooks made through the admin API survive a kill -9 mid-run: nothing lost, nothing run twice', async (t) => {
  const scratch = tempHome(t);
  const home = join(scratch.dir, 'home');
  const record = join(scratch.dir, 'cli.jsonl');
  mkdirSync(join(home, 'config'), { recursive: true });
  // user_timezone differs from the jobs' zone: they must run in their own.
  writeFileSync(
    join(home, 'config', 'config.json'),
    JSON.stringify({ user_timezone: 'Asia/Tokyo', allowed_user_ids: [555], api: { enabled: true, host: '127.0.0.1', port: 0 }, webhooks: { enabled: true, host: '127.0.0.1', port: 0 } }),
  );
  const db = join(home, 'events.db');
  const facts = (prefix: string) => readEvents(db).filter((e) => e.stream.startsWith(prefix));
  const asked = () =>
    existsSync(record)
      ? readFileSync(record, 'utf8')
          .trim()
          .split('\n')
          .filter(Boolean)
          .map((l) => (JSON.parse(l) as { argv: string[]; stdin: string | null }))
          .map((r) => `${r.argv.join(' ')} ${r.stdin ?? ''}`)
      : [];
  const askedFor = (text: string) => asked().filter((a) => a.includes(text)).length;
  const env = { PATH: `${BIN}:${process.env.PATH}`, FAKE_CLI_RECORD: record };

  // The clock starts 10 s into a real minute, so tokens and schedules stay near the real time.
  const t0 = Math.floor(Date.now() / 60_000) * 60_000 + 10_000;
  const firstAt = t0 + 50_000;
  const reportAt = firstAt + 60_000;

  // First life, in a child process so it can be killed outright.
  const child = spawn(process.execPath, [`--import=${TS_LOADER}`, CHILD, home, String(t0)], { env: { ...process.env, ...env, TS_NODE_TRANSPILE_ONLY: '1' }, stdio: ['pipe', 'pipe', 'inherit'] });
  t.teardown(() => void child.kill('SIGKILL'));
  let out = '';
  child.stdout!.on('data', (b) => (out += b));
  const [, apiPortText, hookPortText] = await until('the first daemon', () => /ready (\d+) (\d+)/.exec(out), 60_000);
  const hookPort = Number(hookPortText);
  const advance = async (ms: number) => {
    const n = out.split('advanced').length;
    child.stdin!.write(`advance ${ms}\n`);
    await until('the clock to move', () => out.split('advanced').length > n);
  };
  const api = await signIn(Number(apiPortText), home);

  const job = (id: string, title: string, at: number, description: string) => ({ id, title, schedule: dailyAt(at, ZONE), timezone: ZONE, agent: 'main', description, dependency: 'nightly', enabled: true });
  const first = await api('POST', '/api/cron', job('first', 'First', firstAt, '[[hold]] hold the nightly queue'));
  t.equal(first.status, 201, JSON.stringify(first.body));
  t.equal((await api('POST', '/api/cron', job('report', 'Nightly report', reportAt, 'write the nightly report'))).status, 201);
  const listed = async () => ((await api('GET', '/api/cron')).body as Record<string, unknown>[]).find((j) => j.id === 'first' && j.next_run !== null);
  t.match(await until('the scheduler to take the new job', listed), { next_run: new Date(firstAt).toISOString(), timezone: ZONE }, 'its next run is read in the job zone');
  const gh = await api('POST', '/api/webhooks', { id: 'gh', agent: 'main', name: 'GitHub pushes', mode: 'wake', auth: 'hmac', signature: { preset: 'github' }, secret: GH_SECRET, prompt_template: 'Push to {{ref}} by {{pusher}}' });
  t.equal(gh.status, 201, JSON.stringify(gh.body));
  t.equal((await api('POST', '/api/webhooks', { id: 'blocker', agent: 'main', name: 'Blocker', mode: 'wake', auth: 'bearer', secret: BLOCKER_TOKEN, prompt_template: '[[hold]] {{what}}' })).status, 201);

  await advance(60_000);
  const firstFire = await until('the first job to fire', () => facts('cron:first').find((e) => e.type === 'cron.fired'));
  t.equal(firstFire.data.scheduled_at, new Date(firstAt).toISOString(), 'on time, in New York');
  await until('its CLI to hold the queue', () => askedFor('hold the nightly queue') === 1, 20_000);
  await advance(60_000);
  await until('the report to queue behind it', () => facts('oneshot:').some((e) => e.type === 'oneshot.queued' && e.data.source === 'cron:report'));

  const hook = (id: string, body: string, headers: Record<string, string>) =>
    fetch(`http://127.0.0.1:${hookPort}/hooks/${id}`, { method: 'POST', headers: { connection: 'close', 'content-type': 'application/json', ...headers }, body });
  t.equal((await hook('blocker', JSON.stringify({ what: 'hold the chat' }), { authorization: `Bearer ${BLOCKER_TOKEN}` })).status, 202);
  await until('the blocker to hold the chat', () => askedFor('hold the chat') === 1, 20_000);
  const push = JSON.stringify({ ref: 'refs/heads/main', pusher: 'octocat', zen: 'Keep it logically awesome.' });
  const signature = `sha256=${createHmac('sha256', GH_SECRET).update(push).digest('hex')}`;
  t.equal((await hook('gh', push, { 'x-hub-signature-256': signature, 'x-github-event': 'push' })).status, 202, 'a GitHub-signed call is accepted');
  t.equal((await hook('gh', push, { 'x-hub-signature-256': `sha256=${'0'.repeat(64)}` })).status, 401, 'a forged one is not');
  t.equal(askedFor('Push to'), 0, 'the push waits behind the blocker');
  child.kill('SIGKILL');
  await exited(child);

  // Second life, 30 s after the report's minute: no new fire is due until tomorrow.
  const clock = new SimulatedClock();
  clock.set(reportAt + 30_000);
  const paths = homePaths(home);
  const d = await startDaemon({ paths, logToStderr: false, internalPort: 0, apiPort: 0, webhookPort: 0, killGraceMs: 200, clock: () => clock.now(), cronClock: clock, env: { ...env, HOME: home } });
  let running = true;
  scratch.beforeRemove(() => (running ? d.stop('test') : undefined));
  const finished = (id: string) => facts(`cron:${id}`).find((e) => e.type === 'cron.run_finished');
  const report = await until('the waiting report to run', () => finished('report'), 30_000);
  t.match(report.data, { status: 'success', result: /echo: write the nightly report/, deliver: true });
  t.match(await until('the cut first run to be recorded', () => finished('first')), { data: { status: 'error:interrupted' } });
  const settled = (id: string) => facts(`webhook:${id}`).find((e) => e.type === 'webhook.completed' || e.type === 'webhook.failed');
  t.match(await until('the push to wake the agent', () => settled('gh'), 30_000), { type: 'webhook.completed', data: { mode: 'wake', status: 'completed' } });
  t.match(await until('the blocker to settle', () => settled('blocker')), { type: 'webhook.failed', data: { reason: 'interrupted' } });
  await until('both results to reach the chat', () => facts('cron:').filter((e) => e.type === 'cron.delivered').length === 2, 20_000);

  // What the user sees, through the admin API of the restarted daemon.
  const api2 = await signIn(d.apiPort!, home);
  const history = await api2('GET', '/api/chat?agent=main');
  t.equal(history.status, 200);
  const contents = JSON.stringify(history.body);
  t.match(contents, /TASK: Nightly report\\n\\n[^"]*echo: write the nightly report/, 'the report result is in the chat under its title');
  t.match(contents, /TASK: First/, 'the cut run is told too');
  const cron = (await api2('GET', '/api/cron')).body as Record<string, unknown>[];
  t.match(cron.find((j) => j.id === 'report'), { last_status: 'success', last_delivery_status: 'delivered', execution_count: 1 });
  t.match(cron.find((j) => j.id === 'first'), { last_status: 'error:interrupted' });
  const hooks = (await api2('GET', '/api/webhooks')).body as Record<string, unknown>[];
  t.match(hooks.find((h) => h.id === 'gh'), { trigger_count: 1, last_status: 'completed', secret: '***' });
  const pushTurn = facts('turn:').find((e) => e.type === 'turn.started' && String(e.data.prompt).includes('Push to refs/heads/main by octocat'));
  t.ok(pushTurn, 'the agent was asked with the rendered template');
  t.match(String(pushTurn!.data.prompt), /untrusted external input/, 'fenced as untrusted input');

  const once = ['hold the nightly queue', 'write the nightly report', 'hold the chat', 'Push to refs/heads/main by octocat'];
  t.same(once.map(askedFor), [1, 1, 1, 1], 'every CLI was asked exactly once');
  t.equal(facts('cron:').filter((e) => e.type === 'cron.fired').length, 2, 'each job fired once');
  await d.stop('test');
  running = false;

  // Third life: nothing is left to recover, nothing runs again.
  const before = readEvents(db).filter((e) => /^(cron|webhook|oneshot):/.test(e.stream)).length;
  const again = await startDaemon({ paths, logToStderr: false, internalPort: 0, apiPort: 0, webhookPort: 0, killGraceMs: 200, clock: () => clock.now(), cronClock: clock, env: { ...env, HOME: home } });
  await again.stop('test');
  t.equal(readEvents(db).filter((e) => /^(cron|webhook|oneshot):/.test(e.stream)).length, before, 'a second restart records nothing');
  t.same(once.map(askedFor), [1, 1, 1, 1]);
});
