// Skill sync and the fileshare server in the real daemon: the start-up sync links a global skill
// into the CLI home (HOME of a temp dir), the shutdown takes the link back; with fileshare.enabled
// the CLI's environment names the server and the folder, and a file dropped there is served.
import t from 'tap';
import { existsSync, mkdirSync, readFileSync, readlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { agentsOf } from '../../bus/index.js';
import { startDaemon } from '../../bin/daemon.js';
import { SKILL_SYNC_STREAM } from '../../schemas/index.js';
import { SqliteEventLog, homePaths } from '../../store/index.js';
import { tempHome } from '../fixtures/temp-home.js';
import { TEST_ADMIN } from '../fixtures/http-server.js';

const BIN = fileURLToPath(new URL('../fixtures/bin', import.meta.url));

await t.test('skills synced at start and taken back at stop; FILESHARE_URL and FILESHARE_DOWNLOADS reach the CLI', async (t) => {
  const scratch = tempHome(t);
  const root = join(scratch.dir, 'home');
  const user = join(scratch.dir, 'user');
  const record = join(scratch.dir, 'cli.jsonl');
  const paths = homePaths(root);
  mkdirSync(join(root, 'config'), { recursive: true });
  mkdirSync(join(user, '.claude'), { recursive: true });
  writeFileSync(join(root, 'config', 'config.json'), JSON.stringify({ fileshare: { enabled: true, host: '127.0.0.1' } }));
  mkdirSync(join(paths.skillsDir, 'report'), { recursive: true });
  writeFileSync(join(paths.skillsDir, 'report', 'SKILL.md'), '---\nname: report\ndescription: writes reports\n---\n');

  const d = await startDaemon({
    paths,
    logToStderr: false,
    internalPort: 0,
    filesharePort: 0,
    killGraceMs: 300,
    env: { PATH: `${BIN}:${process.env.PATH}`, HOME: user, FAKE_CLI_RECORD: record },
  });
  let stopped = false;
  scratch.beforeRemove(() => (stopped ? undefined : d.stop('test')));

  const link = join(user, '.claude', 'skills', 'report');
  t.equal(readlinkSync(link), join(paths.skillsDir, 'report'), 'the start-up sync linked the global skill into ~/.claude/skills');
  t.ok(d.filesharePort, 'the fileshare server listens');
  t.ok(d.listeners.some((l) => l.surface === 'fileshare' && l.port === d.filesharePort));

  const asked = agentsOf(d.bus).ask({ agent: 'main', transport: 'api', chat_id: 7, topic_id: null, text: 'share it', kind: 'foreground' }, TEST_ADMIN, { timeoutMs: 30_000 });
  await asked.outcome;
  const rec = JSON.parse(readFileSync(record, 'utf8').trim().split('\n')[0]!) as { envKeys: Record<string, string> };
  t.equal(rec.envKeys.FILESHARE_URL, `http://127.0.0.1:${d.filesharePort}`);
  t.equal(rec.envKeys.FILESHARE_DOWNLOADS, paths.fileshareDir);

  // What an agent's tool does: drop a file in the folder, hand out the link.
  writeFileSync(join(rec.envKeys.FILESHARE_DOWNLOADS!, 'out.txt'), 'made by the agent\n');
  const res = await fetch(`${rec.envKeys.FILESHARE_URL}/out.txt`, { headers: { connection: 'close' } });
  t.equal(res.status, 200);
  t.equal(await res.text(), 'made by the agent\n');

  await d.stop('test');
  stopped = true;
  t.notOk(existsSync(link), 'shutdown removed the link into svc');
  t.ok(existsSync(join(paths.skillsDir, 'report', 'SKILL.md')), 'the skill itself stays');
  const log = SqliteEventLog.open(paths.eventsDb);
  t.teardown(() => log.close());
  const synced = log.read({ stream: SKILL_SYNC_STREAM }).map((e) => e.data as { trigger: string; linked: number; removed: number });
  t.match(synced[0], { trigger: 'start', linked: 1 });
  t.match(synced.at(-1), { trigger: 'stop', removed: 1 });
});
