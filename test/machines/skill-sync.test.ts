import t from 'tap';
import { planSkillShutdown, planSkillSync, type SkillDomain, type SkillRoot, type SkillRootEntry } from '../../machines/index.js';

// Given the listings of every root, when planned, then these actions (SPEC.md "Skill storage and sync").

const root = (id: string, dir: string, entries: SkillRootEntry[], extra: Partial<SkillRoot> = {}): SkillRoot => ({ id, dir, entries, ...extra });
const skill = (name: string, stamp?: string): SkillRootEntry => ({ name, state: 'skill', ...(stamp ? { stamp } : {}) });
const link = (name: string, target: string, broken = false, validSkill = !broken): SkillRootEntry => ({ name, state: 'link', target, broken, validSkill });

function domain(g: SkillRootEntry[], c: SkillRootEntry[] = [], x: SkillRootEntry[] = [], m: SkillRootEntry[] = [], extra: { bundled?: SkillRootEntry[]; codexWritable?: boolean } = {}): SkillDomain {
  return {
    id: 'global',
    roots: [
      root('global', '/h/.svc/skills', g),
      ...(extra.bundled ? [root('bundled', '/opt/svc/skills', extra.bundled, { readOnly: true, via: 'global' })] : []),
      root('claude', '/h/.claude/skills', c, { external: true }),
      root('codex', '/h/.codex/skills', x, { external: true, ...(extra.codexWritable === false ? { writable: false } : {}) }),
      root('gemini', '/h/.gemini/skills', m, { external: true }),
    ],
  };
}

await t.test('a skill in one root is linked into every other root; a second run plans nothing', async (t) => {
  const plan = planSkillSync(domain([skill('pdf')]), 'link');
  t.same(plan.actions, [
    { type: 'link', dir: '/h/.claude/skills', name: 'pdf', target: '/h/.svc/skills/pdf' },
    { type: 'link', dir: '/h/.codex/skills', name: 'pdf', target: '/h/.svc/skills/pdf' },
    { type: 'link', dir: '/h/.gemini/skills', name: 'pdf', target: '/h/.svc/skills/pdf' },
  ]);
  t.equal(plan.skills, 1);
  const again = planSkillSync(
    domain([skill('pdf')], [link('pdf', '/h/.svc/skills/pdf')], [link('pdf', '/h/.svc/skills/pdf')], [link('pdf', '/h/.svc/skills/pdf')]),
    'link',
  );
  t.same(again.actions, []);
  t.equal(again.unchanged, 3);
});

await t.test('the same name in several roots: svc first, then claude, codex, gemini; the others keep their own', async (t) => {
  const plan = planSkillSync(domain([], [skill('x')], [skill('x')], []), 'link');
  t.same(plan.actions, [
    { type: 'link', dir: '/h/.svc/skills', name: 'x', target: '/h/.claude/skills/x' },
    { type: 'link', dir: '/h/.gemini/skills', name: 'x', target: '/h/.claude/skills/x' },
  ]);
  t.equal(plan.conflicts, 1, 'codex keeps its own x');
  const svcWins = planSkillSync(domain([skill('x')], [skill('x')], [], []), 'link');
  t.same(
    svcWins.actions.map((a) => [a.dir, a.type === 'link' ? a.target : '']),
    [
      ['/h/.codex/skills', '/h/.svc/skills/x'],
      ['/h/.gemini/skills', '/h/.svc/skills/x'],
    ],
  );
});

await t.test('a managed link is never a source: when the source goes, its links go', async (t) => {
  const plan = planSkillSync(domain([], [link('gone', '/h/.svc/skills/gone', true)], [link('gone', '/h/.svc/skills/gone', true)]), 'link');
  t.same(plan.actions, [
    { type: 'remove', dir: '/h/.claude/skills', name: 'gone', expect: { link: '/h/.svc/skills/gone' }, reason: 'broken' },
    { type: 'remove', dir: '/h/.codex/skills', name: 'gone', expect: { link: '/h/.svc/skills/gone' }, reason: 'broken' },
  ]);
  t.equal(plan.skills, 0);
});

await t.test("the user's own link to a skill elsewhere is a source; a link to nothing is reported and kept", async (t) => {
  const plan = planSkillSync(domain([], [link('mine', '/home/me/src/mine'), link('dead', '/nowhere/dead', true)]), 'link');
  t.same(
    plan.actions.map((a) => [a.type, a.dir, a.name]),
    [
      ['link', '/h/.svc/skills', 'mine'],
      ['link', '/h/.codex/skills', 'mine'],
      ['link', '/h/.gemini/skills', 'mine'],
    ],
  );
  t.same(plan.invalid, ['claude/dead: a link to no valid skill']);
});

await t.test('invalid and unmanaged entries are never touched, and block nothing else', async (t) => {
  const plan = planSkillSync(domain([skill('a')], [{ name: 'a', state: 'invalid', reason: 'no SKILL.md' }], [{ name: 'b', state: 'invalid', reason: 'not a directory' }]), 'link');
  t.same(
    plan.actions.map((a) => [a.type, a.dir, a.name]),
    [
      ['link', '/h/.codex/skills', 'a'],
      ['link', '/h/.gemini/skills', 'a'],
    ],
  );
  t.same(plan.invalid, ['claude/a: no SKILL.md', 'codex/b: not a directory']);
});

await t.test('a stale managed link (pointing at a lower-priority copy) is replaced', async (t) => {
  const plan = planSkillSync(domain([skill('s')], [skill('s')], [link('s', '/h/.claude/skills/s')]), 'link');
  t.same(plan.actions.slice(0, 2), [
    { type: 'remove', dir: '/h/.codex/skills', name: 's', expect: { link: '/h/.claude/skills/s' }, reason: 'stale' },
    { type: 'link', dir: '/h/.codex/skills', name: 's', target: '/h/.svc/skills/s' },
  ]);
});

await t.test('copy mode: managed copies, updated when the source changed, replacing links; unmanaged ones kept', async (t) => {
  const copy = (name: string, source: string, stamp: string): SkillRootEntry => ({ name, state: 'copy', source, stamp });
  const plan = planSkillSync(
    domain([skill('s', 'v2')], [copy('s', '/h/.svc/skills/s', 'v1')], [copy('s', '/h/.svc/skills/s', 'v2')], [link('s', '/h/.svc/skills/s')]),
    'copy',
  );
  t.same(plan.actions, [
    { type: 'remove', dir: '/h/.claude/skills', name: 's', expect: { copy: true }, reason: 'stale' },
    { type: 'copy', dir: '/h/.claude/skills', name: 's', source: '/h/.svc/skills/s', stamp: 'v2' },
    { type: 'remove', dir: '/h/.gemini/skills', name: 's', expect: { link: '/h/.svc/skills/s' }, reason: 'stale' },
    { type: 'copy', dir: '/h/.gemini/skills', name: 's', source: '/h/.svc/skills/s', stamp: 'v2' },
  ]);
  t.equal(plan.unchanged, 1);
  const orphan = planSkillSync(domain([], [copy('old', '/h/.svc/skills/old', 'v1')]), 'copy');
  t.same(orphan.actions, [{ type: 'remove', dir: '/h/.claude/skills', name: 'old', expect: { copy: true }, reason: 'orphaned' }]);
});

await t.test('bundled skills reach the global scope, and the CLIs through it', async (t) => {
  const plan = planSkillSync(domain([], [], [], [], { bundled: [skill('intro')] }), 'link');
  t.same(plan.actions, [
    { type: 'link', dir: '/h/.svc/skills', name: 'intro', target: '/opt/svc/skills/intro' },
    { type: 'link', dir: '/h/.claude/skills', name: 'intro', target: '/h/.svc/skills/intro' },
    { type: 'link', dir: '/h/.codex/skills', name: 'intro', target: '/h/.svc/skills/intro' },
    { type: 'link', dir: '/h/.gemini/skills', name: 'intro', target: '/h/.svc/skills/intro' },
  ]);
  const own = planSkillSync(domain([skill('intro')], [], [], [], { bundled: [skill('intro')] }), 'link');
  t.notOk(
    own.actions.some((a) => a.dir === '/opt/svc/skills' || (a.type === 'link' && a.target.startsWith('/opt'))),
    "the user's global skill of the same name wins, and the bundled folder is never written",
  );
});

await t.test('a CLI that is not installed gets nothing mirrored', async (t) => {
  const plan = planSkillSync(domain([skill('a')], [], [], [], { codexWritable: false }), 'link');
  t.notOk(plan.actions.some((a) => a.dir === '/h/.codex/skills'));
});

await t.test("shutdown removes managed links in the CLIs' directories that lead into svc's roots, only those", async (t) => {
  const dm = domain(
    [skill('a'), link('c', '/h/.claude/skills/c')],
    [link('a', '/h/.svc/skills/a'), skill('c'), link('u', '/home/me/u')],
    [link('a', '/h/.svc/skills/a'), link('c', '/h/.claude/skills/c')],
  );
  t.same(planSkillShutdown(dm), [
    { type: 'remove', dir: '/h/.claude/skills', name: 'a', expect: { link: '/h/.svc/skills/a' }, reason: 'shutdown' },
    { type: 'remove', dir: '/h/.codex/skills', name: 'a', expect: { link: '/h/.svc/skills/a' }, reason: 'shutdown' },
  ]);
});
