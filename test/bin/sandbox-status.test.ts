// docker.enabled: true in a build without the sandbox is never silently ignored: the start-up log,
// the banner and `svc doctor` say the agents run on the host, and bypassPermissions without a
// sandbox is warned about. In the same start, a fileshare asked on a public bind without
// fileshare.allow_public is left off with one line while the rest of the daemon runs.
import t from 'tap';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startDaemon } from '../../bin/daemon.js';
import { doctorFindings } from '../../bin/doctor-command.js';
import { sandboxStatus } from '../../machines/index.js';
import { defaultConfig } from '../../schemas/index.js';
import { homePaths } from '../../store/index.js';
import { tempHome } from '../fixtures/temp-home.js';

const ON_HOST = 'off: docker.enabled is true, but this version of svc has no Docker sandbox yet; the agents run on the host';

await t.test('sandboxStatus: on the host always; docker.enabled said out loud, bypassPermissions warned about only then', async (t) => {
  t.same(sandboxStatus(defaultConfig()), { on: false, requested: false, why: 'off: the agents run on the host (docker.enabled is false)', warnings: [] });
  const asked = { ...defaultConfig(), docker: { ...defaultConfig().docker, enabled: true } };
  const s = sandboxStatus(asked);
  t.same([s.on, s.requested, s.why], [false, true, ON_HOST]);
  t.equal(s.warnings.length, 2);
  t.match(s.warnings[1], /^bypassPermissions without a sandbox: the agents run every command on the host without asking \(for admin, permission_mode\)/);
  const careful = sandboxStatus({ ...asked, permission_mode: 'default', permission_mode_by_role: { admin: 'acceptEdits' } });
  t.same(careful.warnings, [ON_HOST], 'no bypassPermissions anywhere: only where the agents run');
});

await t.test('a start with docker.enabled: warned in the log, said in the banner and by svc doctor; a public fileshare without allow_public stays off', async (t) => {
  const home = tempHome(t);
  const paths = homePaths(join(home.dir, 'home'));
  mkdirSync(paths.configDir, { recursive: true });
  writeFileSync(paths.configFile, JSON.stringify({ docker: { enabled: true }, fileshare: { enabled: true, host: '0.0.0.0' } }));
  const d = await startDaemon({ paths, logToStderr: false, internalPort: 0, filesharePort: 0 });
  let stopped = false;
  home.beforeRemove(() => (stopped ? undefined : d.stop('test')));
  t.match(d.banner(), `\n  sandbox     ${ON_HOST}\n`, 'the banner says where the agents run');
  t.equal(d.filesharePort, null, 'fileshare did not start');
  t.notOk(d.listeners.some((l) => l.surface === 'fileshare'));
  t.ok(d.agents.names().includes('main'), 'the rest of the daemon runs');
  await d.stop('test');
  stopped = true;
  const log = readFileSync(join(paths.logsDir, 'svc.log'), 'utf8');
  t.match(log, new RegExp(`WARN +${ON_HOST.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`));
  t.match(log, /WARN +bypassPermissions without a sandbox: the agents run every command on the host without asking/);
  t.match(log, /ERROR +fileshare not started: fileshare\.host 0\.0\.0\.0 is reachable from other machines and fileshare has no authentication; set fileshare\.host to 127\.0\.0\.1, or fileshare\.allow_public to true/);
  t.equal(log.match(/fileshare not started/g)?.length, 1, 'one line');

  const findings = await doctorFindings(paths, { PATH: '', HOME: home.dir });
  t.ok(findings.some((f) => f.status === 'warn' && f.text === ON_HOST), 'svc doctor says it too');
  t.ok(findings.some((f) => f.status === 'warn' && f.text.startsWith('bypassPermissions without a sandbox')));
  t.ok(findings.some((f) => f.status === 'fail' && /^fileshare\.host 0\.0\.0\.0 reaches beyond this machine without fileshare\.allow_public/.test(f.text)));
});
