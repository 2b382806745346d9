// Public binds on the listeners besides the API: the webhook server warns as the API does, and
// fileshare (no authentication at all) refuses anything beyond loopback unless fileshare.allow_public
// says it is meant, and warns even then. Real uWS listeners; 0.0.0.0 on port 0 stays on this host.
import t from 'tap';
import { mkdirSync } from 'node:fs';
import { Bus } from '../../bus/index.js';
import { publicBindWarning, startFileshareServer, startWebhookServer } from '../../edges/index.js';
import { MemoryEventLog, homePaths } from '../../store/index.js';

type Line = { level: string; msg: string };

await t.test('the webhook server on 0.0.0.0 or :: says what the API says about a public address; on loopback or a private address it does not', async (t) => {
  const bus = new Bus({ log: new MemoryEventLog() });
  t.teardown(() => bus.close());
  for (const [host, warned] of [['0.0.0.0', true], ['::', true], ['127.0.0.1', false]] as const) {
    const lines: Line[] = [];
    const server = await startWebhookServer({ bus, host, port: 0, maxBodyBytes: 1024, rateLimitPerMinute: () => 30, log: (level, msg) => void lines.push({ level, msg }) });
    server.close();
    const warnings = lines.filter((l) => l.level === 'warn').map((l) => l.msg);
    if (warned) {
      t.equal(warnings.length, 1, `${host}: one warning`);
      t.ok(warnings[0]!.startsWith(publicBindWarning('the webhook server', host, null)!), `${host}: the API's wording`);
      t.match(warnings[0], /not a loopback or private address; put it behind a private network; each hook's token or signature is all that guards it/);
    } else t.same(warnings, [], `${host}: no warning`);
  }
  t.equal(publicBindWarning('the webhook server', '192.168.1.5', null), null, 'a private address is not public');
});

await t.test('fileshare beyond loopback: refused without allow_public, with one line saying how; allowed and warned about with it', async (t) => {
  const paths = homePaths(t.testdir({}));
  mkdirSync(paths.fileshareDir, { recursive: true });
  for (const host of ['0.0.0.0', '::', '192.168.1.5']) {
    const lines: Line[] = [];
    await t.rejects(
      startFileshareServer({ paths, host, port: 0, allowPublic: false, log: (level, msg) => void lines.push({ level, msg }) }),
      { code: 'public-bind-refused', message: `fileshare not started: fileshare.host ${host} is reachable from other machines and fileshare has no authentication; set fileshare.host to 127.0.0.1, or fileshare.allow_public to true if anyone who reaches it may download what is shared` },
      `${host}: refused`,
    );
    t.same(lines, [], `${host}: nothing listened, nothing said about serving`);
  }
  const lines: Line[] = [];
  const server = await startFileshareServer({ paths, host: '0.0.0.0', port: 0, allowPublic: true, log: (level, msg) => void lines.push({ level, msg }) });
  t.teardown(() => server.close());
  t.equal(server.url, `http://127.0.0.1:${server.port}`);
  t.match(lines.filter((l) => l.level === 'warn'), [{ msg: /^fileshare listens on 0\.0\.0\.0, which is not a loopback or private address; .*anyone who reaches port \d+ can download what is shared, without credentials$/ }]);
  for (const host of ['127.0.0.1', 'localhost']) {
    const quiet: Line[] = [];
    const local = await startFileshareServer({ paths, host, port: 0, allowPublic: false, log: (level, msg) => void quiet.push({ level, msg }) });
    local.close();
    t.same(quiet.filter((l) => l.level !== 'info'), [], `${host}: started, nothing to warn about`);
  }
});
