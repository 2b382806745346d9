import t from 'tap';
import * as fs from 'node:fs';
import { join } from 'node:path';
import { filter, firstValueFrom, timeout } from 'rxjs';
import { SkillSync, type SkillSyncReport, type SkillSyncSeams } from '../../actors/index.js';
import { Bus, ofType } from '../../bus/index.js';
import { SKILL_MANAGED_MARKER } from '../../machines/index.js';
import { SKILL_EVENTS, defaultConfig, type SubAgentConfig } from '../../schemas/index.js';
import { MemoryEventLog, homePaths, listSkills } from '../../store/index.js';

type TT = { testdir(): string; teardown(fn: () => unknown): void };

const doc = (name: string, description = `does ${name}`) => `---\nname: ${name}\ndescription: ${description}\n---\n\n# ${name}\n`;

function makeSkill(dir: string, name: string, text = doc(name)): string {
  fs.mkdirSync(join(dir, name), { recursive: true });
  fs.writeFileSync(join(dir, name, 'SKILL.md'), text);
  return join(dir, name);
}

const linkOf = (p: string): string | null => {
  try {
    return fs.readlinkSync(p);
  } catch {
    return null;
  }
};

/** `codexHome`, `bundled`: relative to the test's directory (tap's testdir is one per test). */
function setup(t: TT, opts: { docker?: boolean; codexHome?: string; gemini?: boolean; bundled?: string; registry?: SubAgentConfig[]; seams?: SkillSyncSeams } = {}) {
  // Registered before t.testdir(), so it runs before tap removes the test's folder: tap runs
  // teardowns added after testdir() only once the folder is gone, and a watcher still running
  // would write into it meanwhile (ENOTEMPTY, then a timeout with the watcher never stopped).
  let stop = async () => {};
  t.teardown(() => stop());
  const base = t.testdir();
  const home = join(base, 'home');
  const paths = homePaths(join(home, '.svc'));
  fs.mkdirSync(join(home, '.claude'), { recursive: true });
  if (opts.gemini) fs.mkdirSync(join(home, '.gemini'), { recursive: true });
  fs.mkdirSync(join(paths.workspace, 'skills'), { recursive: true });
  const log = new MemoryEventLog();
  const bus = new Bus({ log });
  const config = defaultConfig();
  config.docker.enabled = opts.docker ?? false;
  const env: NodeJS.ProcessEnv = { HOME: home, ...(opts.codexHome ? { CODEX_HOME: join(base, opts.codexHome) } : {}) };
  const bundledDir = opts.bundled ? join(base, opts.bundled) : null;
  const sync = new SkillSync({ bus, paths, registry: () => opts.registry ?? [], config: () => config, env, userHome: home, bundledDir, debounceMs: 50, ...(opts.seams ? { seams: opts.seams } : {}) });
  stop = async () => {
    await sync.stop();
    bus.close();
  };
  const facts = () => log.read({ stream: 'skills:*sync' }).map((e) => e.data as unknown as SkillSyncReport);
  return { base, home, paths, bus, sync, config, facts };
}

await t.test('link mode: priority, conflicts, invalid and hidden directories, CODEX_HOME, a CLI not installed', async (t) => {
  const { base, home, paths, sync, facts } = setup(t, { codexHome: 'codex-elsewhere' });
  const codexHome = join(base, 'codex-elsewhere');
  fs.mkdirSync(codexHome, { recursive: true });
  const claudeSkills = join(home, '.claude', 'skills');
  makeSkill(paths.skillsDir, 'pdf');
  makeSkill(paths.skillsDir, 'dup', doc('dup', 'the svc one'));
  makeSkill(claudeSkills, 'dup', doc('dup', 'the claude one'));
  makeSkill(claudeSkills, 'from-claude');
  fs.mkdirSync(join(claudeSkills, 'bad'));
  fs.writeFileSync(join(claudeSkills, 'bad', 'SKILL.md'), '# no front matter\n');
  makeSkill(join(claudeSkills, '.system'), 'inner');
  fs.mkdirSync(join(claudeSkills, 'nodoc'));

  const report = await sync.start();
  t.match(report, { trigger: 'start', mode: 'link', skills: 3, conflicts: 1, invalid: 2, failed: 0 });
  t.equal(linkOf(join(claudeSkills, 'pdf')), join(paths.skillsDir, 'pdf'));
  t.equal(linkOf(join(codexHome, 'skills', 'pdf')), join(paths.skillsDir, 'pdf'), 'codex honours CODEX_HOME');
  t.equal(linkOf(join(codexHome, 'skills', 'dup')), join(paths.skillsDir, 'dup'), 'svc wins over claude');
  t.equal(fs.readFileSync(join(claudeSkills, 'dup', 'SKILL.md'), 'utf8'), doc('dup', 'the claude one'), "claude's own copy is untouched");
  t.equal(linkOf(join(paths.skillsDir, 'from-claude')), join(claudeSkills, 'from-claude'), 'a CLI skill reaches the svc home');
  t.notOk(fs.existsSync(join(home, '.codex')), 'nothing under ~/.codex when CODEX_HOME names another place');
  t.notOk(fs.existsSync(join(home, '.gemini')), 'gemini is not installed: its home is not created');
  for (const n of ['bad', 'nodoc', '.system']) t.notOk(fs.existsSync(join(paths.skillsDir, n)), `${n} is not mirrored`);
  t.ok(fs.statSync(join(claudeSkills, 'bad')).isDirectory(), 'an invalid skill stays where it is');
  t.equal(facts().length, 1, 'one fact for the sync, not one per file');

  const again = await sync.sync('watch');
  t.match(again, { linked: 0, removed: 0, copied: 0, unchanged: 5 });
  t.equal(facts().length, 1, 'a sync that changed nothing records nothing');
});

await t.test('broken managed links are removed; links and directories that are not ours stay', async (t) => {
  const { base, home, paths, sync } = setup(t);
  const claudeSkills = join(home, '.claude', 'skills');
  fs.mkdirSync(claudeSkills, { recursive: true });
  fs.mkdirSync(paths.skillsDir, { recursive: true });
  fs.symlinkSync(join(paths.skillsDir, 'gone'), join(claudeSkills, 'gone'));
  fs.symlinkSync('/nonexistent/elsewhere', join(claudeSkills, 'users-own'));
  const outside = makeSkill(base, 'outside');
  fs.symlinkSync(outside, join(claudeSkills, 'linked-in'));
  const report = await sync.start();
  t.equal(report.removed, 1);
  t.notOk(linkOf(join(claudeSkills, 'gone')), 'broken managed link removed');
  t.equal(linkOf(join(claudeSkills, 'users-own')), '/nonexistent/elsewhere', "the user's broken link is theirs");
  t.equal(linkOf(join(paths.skillsDir, 'linked-in')), join(claudeSkills, 'linked-in'), "a user's link to a skill is a source");
  t.ok(fs.existsSync(join(outside, 'SKILL.md')), 'nothing is followed out');
});

await t.test("per-agent skills stay the agent's: mirrored into its workspace's CLI directories, never global", async (t) => {
  const { home, paths, sync } = setup(t, { registry: [{ name: 'helper' } as SubAgentConfig] });
  const helperWs = join(paths.agentsDir, 'helper', 'workspace');
  makeSkill(join(paths.workspace, 'skills'), 'shared');
  makeSkill(paths.skillsDir, 'shared', doc('shared', 'global'));
  makeSkill(join(helperWs, 'skills'), 'helper-only');
  await sync.start();
  t.equal(linkOf(join(paths.workspace, '.claude', 'skills', 'shared')), join(paths.workspace, 'skills', 'shared'));
  t.equal(linkOf(join(home, '.claude', 'skills', 'shared')), join(paths.skillsDir, 'shared'));
  t.equal(linkOf(join(helperWs, '.claude', 'skills', 'helper-only')), join(helperWs, 'skills', 'helper-only'));
  t.notOk(fs.existsSync(join(home, '.claude', 'skills', 'helper-only')), 'not in the CLI home every agent reads');
  t.same((await listSkills(paths, 'global', 'main')).map((s) => s.name), ['shared'], 'global scope unchanged');
  t.same((await listSkills(paths, 'agent', 'main')).map((s) => s.name), ['shared'], 'so the admin API still sees an override');
});

await t.test('copy mode (docker): managed copies with the marker, updated, removed; unmanaged ones kept', async (t) => {
  const { home, paths, sync } = setup(t, { docker: true, gemini: true });
  const claudeSkills = join(home, '.claude', 'skills');
  const src = makeSkill(paths.skillsDir, 'pdf');
  fs.mkdirSync(join(src, 'scripts'));
  fs.writeFileSync(join(src, 'scripts', 'run.sh'), 'echo hi\n', { mode: 0o755 });
  fs.symlinkSync('/etc', join(src, 'escape'));
  makeSkill(join(home, '.gemini', 'skills'), 'pdf', doc('pdf', 'my own'));
  // No watcher: its syncs, set off by this test's own changes, would race the ones counted here.
  const r1 = await sync.sync('start');
  t.match(r1, { mode: 'copy', copied: 1, conflicts: 1 });
  const copy = join(claudeSkills, 'pdf');
  t.ok(fs.lstatSync(copy).isDirectory() && !fs.lstatSync(copy).isSymbolicLink(), 'a real directory');
  t.match(JSON.parse(fs.readFileSync(join(copy, SKILL_MANAGED_MARKER), 'utf8')), { source: src });
  t.equal(fs.readFileSync(join(copy, 'scripts', 'run.sh'), 'utf8'), 'echo hi\n');
  t.notOk(fs.existsSync(join(copy, 'escape')), 'links inside are not carried into a sandbox');
  t.equal(fs.readFileSync(join(home, '.gemini', 'skills', 'pdf', 'SKILL.md'), 'utf8'), doc('pdf', 'my own'), 'unmanaged copy untouched');

  fs.writeFileSync(join(src, 'SKILL.md'), doc('pdf', 'version two with more words'));
  const r2 = await sync.sync('watch');
  t.match(r2, { removed: 1, copied: 1 });
  t.match(fs.readFileSync(join(copy, 'SKILL.md'), 'utf8'), /version two/);

  fs.rmSync(src, { recursive: true });
  const r3 = await sync.sync('watch');
  t.match(r3, { removed: 1, copied: 2 }, "gemini's own pdf is the source now, for claude and the svc home");
  const geminiPdf = join(home, '.gemini', 'skills', 'pdf');
  t.match(JSON.parse(fs.readFileSync(join(copy, SKILL_MANAGED_MARKER), 'utf8')), { source: geminiPdf });
  t.ok(fs.existsSync(join(geminiPdf, 'SKILL.md')), "the user's stays");

  fs.rmSync(geminiPdf, { recursive: true });
  const r4 = await sync.sync('watch');
  t.equal(r4.removed, 2);
  t.notOk(fs.existsSync(copy), 'an orphaned managed copy goes');
  t.same(fs.readdirSync(claudeSkills), [], 'no temp directories left behind');
});

await t.test('bundled skills go to the global scope', async (t) => {
  const { base, home, paths, sync } = setup(t, { bundled: 'shipped' });
  const bundled = join(base, 'shipped');
  makeSkill(bundled, 'intro');
  await sync.start();
  t.equal(linkOf(join(paths.skillsDir, 'intro')), join(bundled, 'intro'));
  t.equal(linkOf(join(home, '.claude', 'skills', 'intro')), join(paths.skillsDir, 'intro'));
  t.notOk(fs.existsSync(join(paths.workspace, 'skills', 'intro')), 'not per agent');
});

await t.test('the watcher picks up a new skill; shutdown removes the links into svc', async (t) => {
  const { home, paths, bus, sync, facts } = setup(t);
  const claudeSkills = join(home, '.claude', 'skills');
  makeSkill(claudeSkills, 'cl');
  await sync.start();
  const next = firstValueFrom(
    bus.events$.pipe(
      ofType(SKILL_EVENTS.synced),
      filter((e) => e.data.trigger === 'watch' && e.data.linked > 0),
      timeout(20_000),
    ),
  );
  makeSkill(paths.skillsDir, 'fresh');
  const fact = await next;
  t.match(fact.data, { trigger: 'watch', linked: 1 });
  t.equal(linkOf(join(claudeSkills, 'fresh')), join(paths.skillsDir, 'fresh'));

  const stopped = await sync.stop();
  t.match(stopped, { trigger: 'stop', removed: 1 });
  t.notOk(linkOf(join(claudeSkills, 'fresh')), 'the link into svc is gone');
  t.equal(linkOf(join(paths.skillsDir, 'cl')), join(claudeSkills, 'cl'), 'a link from svc to a CLI skill stays');
  t.ok(fs.existsSync(join(claudeSkills, 'cl', 'SKILL.md')));
  t.equal(facts().at(-1)?.trigger, 'stop');
});

/** Every file under `dir` (links not followed), with its text. */
function filesUnder(dir: string): Map<string, string> {
  const out = new Map<string, string>();
  const walk = (d: string) => {
    for (const e of fs.readdirSync(d, { withFileTypes: true })) {
      const p = join(d, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.isFile()) out.set(p, fs.readFileSync(p, 'utf8'));
    }
  };
  if (fs.existsSync(dir)) walk(dir);
  return out;
}

await t.test('copy mode races: a host file never lands in a managed copy, whatever the agent swaps mid-copy', async (t) => {
  // Listed in order: SKILL.md, notes.txt, scripts/run.sh. `at`: the file about to be read when the agent swaps `what`.
  const cases = [
    { what: 'notes.txt', at: 'notes.txt', abandoned: true },
    { what: 'scripts', at: 'notes.txt', abandoned: true },
    // Its folder is already open when it is swapped: the file listed is read from there, the host's never.
    { what: 'scripts', at: 'scripts/run.sh', abandoned: false },
  ] as const;
  for (const c of cases) {
    await t.test(`${c.what} swapped for a link to the host before ${c.at} is read`, async (t) => {
      const seams: SkillSyncSeams = {};
      const { base, paths, sync } = setup(t, { docker: true, seams });
      const host = join(base, 'host');
      fs.mkdirSync(host);
      fs.writeFileSync(join(host, 'run.sh'), 'HOST-SECRET\n');
      fs.writeFileSync(join(host, 'notes.txt'), 'HOST-SECRET\n');
      // The agent writes its own skills folder (workspace/skills), which copy mode mirrors into workspace/.claude/skills.
      const src = makeSkill(join(paths.workspace, 'skills'), 'tool');
      fs.writeFileSync(join(src, 'notes.txt'), 'mine\n');
      fs.mkdirSync(join(src, 'scripts'));
      fs.writeFileSync(join(src, 'scripts', 'run.sh'), 'echo mine\n');
      let swapped = false;
      seams.sourceListed = (source, rel) => {
        if (swapped || source !== src || rel !== c.at) return;
        swapped = true;
        if (c.what === 'notes.txt') {
          fs.unlinkSync(join(src, 'notes.txt'));
          fs.symlinkSync(join(host, 'notes.txt'), join(src, 'notes.txt'));
        } else {
          fs.renameSync(join(src, 'scripts'), join(src, 'scripts-moved'));
          fs.symlinkSync(host, join(src, 'scripts'));
        }
      };
      const report = await sync.sync('watch');
      t.ok(swapped, 'the swap happened between the listing and the read');
      const cliSkills = join(paths.workspace, '.claude', 'skills');
      const copies = filesUnder(cliSkills);
      t.notOk([...copies.values()].some((text) => text.includes('HOST-SECRET')), `no host file copied (${[...copies.keys()].join(', ')})`);
      if (c.abandoned) {
        t.equal(report.failed, 1, 'the copy is abandoned');
        t.same(fs.readdirSync(cliSkills), [], 'and no half-made copy or temp folder left');
      } else {
        t.equal(report.failed, 0);
        t.equal(fs.readFileSync(join(cliSkills, 'tool', 'scripts', 'run.sh'), 'utf8'), 'echo mine\n', 'the file listed, from the folder opened');
      }
    });
  }
});

await t.test('copy mode races: removing a managed copy is never redirected by a skills folder swapped for a link', async (t) => {
  const seams: SkillSyncSeams = {};
  const { base, paths, sync } = setup(t, { docker: true, seams });
  const src = makeSkill(join(paths.workspace, 'skills'), 'tool');
  await sync.sync('watch');
  const cliSkills = join(paths.workspace, '.claude', 'skills');
  t.ok(fs.existsSync(join(cliSkills, 'tool', SKILL_MANAGED_MARKER)), 'a managed copy to remove later');
  // Somewhere else holding a managed copy of the same name (another agent's, or the CLI home's).
  const victim = join(base, 'victim', 'skills');
  fs.mkdirSync(join(victim, 'tool'), { recursive: true });
  fs.writeFileSync(join(victim, 'tool', SKILL_MANAGED_MARKER), '{"source":"","stamp":""}\n');
  fs.writeFileSync(join(victim, 'tool', 'precious.txt'), 'keep\n');
  fs.rmSync(src, { recursive: true });
  let swapped = false;
  seams.removalChecked = (path) => {
    if (swapped || path !== join(cliSkills, 'tool')) return;
    swapped = true;
    fs.renameSync(cliSkills, `${cliSkills}-moved`);
    fs.symlinkSync(victim, cliSkills);
  };
  const report = await sync.sync('watch');
  t.ok(swapped, 'the swap happened after the copy was checked');
  t.equal(fs.readFileSync(join(victim, 'tool', 'precious.txt'), 'utf8'), 'keep\n', 'the copy behind the link is untouched');
  t.ok(fs.existsSync(join(victim, 'tool', SKILL_MANAGED_MARKER)));
  t.same(fs.readdirSync(victim), ['tool'], 'nothing was moved aside there either');
  t.same(fs.readdirSync(`${cliSkills}-moved`), [], 'the copy checked is the one removed');
  t.equal(report.removed, 1);
});
