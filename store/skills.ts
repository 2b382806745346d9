import * as fsp from 'node:fs/promises';
import { join } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { SvcError } from '../schemas/index.js';
import { readContainedFileSync, removeContained, serviceSecretRealPaths, within, writeContainedFile, type ContainmentRules } from './contained-file.js';
import type { HomePaths } from './home.js';
import { workspaceDir } from './workspace.js';

/*
 * Skills on disk (SPEC.md "Skill storage and sync", "Skill"): global ones in `~/.svc/skills/<name>/`,
 * an agent's own in `<workspace>/skills/<name>/`. A skill is a directory whose main document is
 * SKILL.md or README.md. Every name from outside is checked here and every file goes through
 * store/contained-file.ts, so a skill directory that is a symlink leading out of its root is
 * neither listed, read, written nor deleted through it.
 */

export const SKILL_NAME_PATTERN = /^[a-zA-Z0-9_-]+$/;
export const MAX_SKILL_NAME_CHARS = 128;
/** A skill document is instructions for a model; anything bigger is not one. */
export const MAX_SKILL_DOC_BYTES = 512 * 1024;
export const SKILL_DOC_FILES = ['SKILL.md', 'README.md'] as const;
const MAX_SKILLS_LISTED = 2000;
const MAX_DESCRIPTION_CHARS = 300;

export type SkillScope = 'global' | 'agent';

export interface SkillEntry {
  name: string;
  description: string;
  /** The skill's directory. */
  path: string;
  /** Epoch seconds of the main document (of the directory when it has none). */
  mtime: number;
  /** Bytes of the main document; 0 without one. */
  size: number;
  has_doc: boolean;
  doc_filename: string | null;
  scope: SkillScope;
  overrides: boolean;
}

export function checkSkillName(name: string): string {
  if (typeof name !== 'string' || name.length === 0 || name.length > MAX_SKILL_NAME_CHARS || !SKILL_NAME_PATTERN.test(name)) {
    throw new SvcError('invalid-path', `skill name ${JSON.stringify(String(name).slice(0, 200))} is not allowed (1-${MAX_SKILL_NAME_CHARS} characters of a-z, A-Z, 0-9, _ and -)`);
  }
  return name;
}

/** The directory holding skills of `scope`: global, or the agent's own. */
export function skillsRoot(paths: HomePaths, scope: SkillScope, agent: string): string {
  return scope === 'global' ? paths.skillsDir : join(workspaceDir(paths, agent), 'skills');
}

async function rulesFor(paths: HomePaths, root: string, label: string): Promise<ContainmentRules & { root: string }> {
  return { base: root, root, rootLabel: label, refused: await serviceSecretRealPaths(paths) };
}

/** The YAML front matter's `description:`, else the first line of prose. */
export function skillDescription(doc: string): string {
  const text = doc.replace(/\r\n?/g, '\n');
  const front = /^---\n([\s\S]*?)\n---(\n|$)/.exec(text);
  if (front) {
    const m = /^description:\s*(.*)$/m.exec(front[1]!);
    if (m) return m[1]!.trim().replace(/^(["'])(.*)\1$/, '$2').slice(0, MAX_DESCRIPTION_CHARS);
  }
  const body = front ? text.slice(front[0].length) : text;
  const line = body.split('\n').find((l) => l.trim() !== '' && !/^\s*(#|<!--|```)/.test(l));
  return (line ?? '').trim().slice(0, MAX_DESCRIPTION_CHARS);
}

interface SkillDoc {
  filename: (typeof SKILL_DOC_FILES)[number];
  text: string;
  size: number;
  mtime: number;
}

/** The skill's main document, opened then checked to be inside `realRoot`; null when it has none. */
function readDoc(dir: string, rules: ContainmentRules): SkillDoc | null {
  for (const filename of SKILL_DOC_FILES) {
    try {
      const f = readContainedFileSync(join(dir, filename), rules, MAX_SKILL_DOC_BYTES);
      return { filename, text: f.text, size: f.size, mtime: Math.floor(f.mtimeMs / 1000) };
    } catch (e) {
      if (!(e instanceof SvcError) || e.code !== 'not-found') throw e;
    }
  }
  return null;
}

/** One skill directory of a root, or null when the name is not a skill there (or leads out of it). */
async function loadSkill(name: string, root: string, realRoot: string, scope: SkillScope, rules: ContainmentRules): Promise<(SkillEntry & { text: string | null }) | null> {
  const dir = join(root, name);
  let real: string;
  let dirMtime: number;
  try {
    real = await fsp.realpath(dir);
    const st = await fsp.stat(real);
    if (!st.isDirectory()) return null;
    dirMtime = st.mtimeMs;
  } catch {
    return null;
  }
  if (!within(real, realRoot) || real === realRoot) return null;
  const doc = readDoc(real, rules);
  const mtime = doc ? doc.mtime : Math.floor(dirMtime / 1000);
  return {
    name,
    description: doc ? skillDescription(doc.text) : '',
    path: dir,
    mtime,
    size: doc?.size ?? 0,
    has_doc: doc !== null,
    doc_filename: doc?.filename ?? null,
    scope,
    overrides: false,
    text: doc?.text ?? null,
  };
}

/** Skills of one scope, by name; a missing root is an empty list. Hidden and oddly named entries are skipped. */
export async function listSkills(paths: HomePaths, scope: SkillScope, agent: string): Promise<SkillEntry[]> {
  const root = skillsRoot(paths, scope, agent);
  const realRoot = await fsp.realpath(root).catch(() => null);
  if (realRoot === null) return [];
  const rules = await rulesFor(paths, root, `the ${scope} skills directory`);
  const names = (await fsp.readdir(realRoot)).filter((n) => SKILL_NAME_PATTERN.test(n)).sort().slice(0, MAX_SKILLS_LISTED);
  const out: SkillEntry[] = [];
  for (const name of names) {
    const skill = await loadSkill(name, realRoot, realRoot, scope, rules).catch(() => null);
    if (skill) {
      const { text: _text, ...entry } = skill;
      out.push({ ...entry, path: join(root, name) });
    }
  }
  return out;
}

/** One skill with its main document's text (null when it has none); not-found when absent. */
export async function readSkill(paths: HomePaths, scope: SkillScope, agent: string, name: string): Promise<SkillEntry & { content: string | null }> {
  checkSkillName(name);
  const root = skillsRoot(paths, scope, agent);
  const realRoot = await fsp.realpath(root).catch(() => null);
  const skill = realRoot === null ? null : await loadSkill(name, realRoot, realRoot, scope, await rulesFor(paths, root, `the ${scope} skills directory`));
  if (!skill) throw new SvcError('not-found', `skill "${name}" does not exist (${scope === 'global' ? 'global' : `agent "${agent}"`})`);
  const { text, ...entry } = skill;
  return { ...entry, path: join(root, name), content: text };
}

/**
 * Writes the skill's main document (its existing SKILL.md or README.md, SKILL.md for a new one),
 * atomically. `create`: the skill must not exist yet (`skill-exists`); otherwise it must.
 */
export async function writeSkill(paths: HomePaths, scope: SkillScope, agent: string, name: string, content: string, create: boolean): Promise<SkillEntry> {
  checkSkillName(name);
  const root = skillsRoot(paths, scope, agent);
  const rules = await rulesFor(paths, root, `the ${scope} skills directory`);
  await fsp.mkdir(root, { recursive: true, mode: 0o755 });
  const existing = await readSkill(paths, scope, agent, name).catch((e: unknown) => {
    if (e instanceof SvcError && e.code === 'not-found') return null;
    throw e;
  });
  if (create && existing) throw new SvcError('skill-exists', `skill "${name}" already exists; update it with PUT`);
  if (!create && !existing) throw new SvcError('not-found', `skill "${name}" does not exist; create it with POST`);
  // A name that is a file, a broken link or a link out of the root is not a skill: refused, untouched.
  if (create && (await fsp.lstat(join(root, name)).catch(() => null))) throw new SvcError('skill-exists', `skills/${name} exists and is not a skill directory; move it aside`);
  const doc = existing?.doc_filename ?? 'SKILL.md';
  await writeContainedFile(`${name}/${doc}`, rules, content, { maxBytes: MAX_SKILL_DOC_BYTES, createParents: true });
  return readSkill(paths, scope, agent, name).then(({ content: _c, ...entry }) => entry);
}

/** Deletes the skill's directory (a symlinked skill: the link only). */
export async function deleteSkill(paths: HomePaths, scope: SkillScope, agent: string, name: string): Promise<void> {
  checkSkillName(name);
  const root = skillsRoot(paths, scope, agent);
  await readSkill(paths, scope, agent, name);
  await removeContained(name, await rulesFor(paths, root, `the ${scope} skills directory`));
}

/**
 * What makes a directory a skill for the sync (SPEC.md "Skill storage and sync"): a SKILL.md that
 * opens with YAML front matter naming a `name` and a `description`, as the CLIs require to load it.
 * The reason, in a few words, when it does not.
 */
export function checkSkillFrontMatter(doc: string): { name: string; description: string } | { error: string } {
  const text = doc.replace(/^\uFEFF/, '').replace(/\r\n?/g, '\n');
  const front = /^---\n([\s\S]*?)\n?---(\n|$)/.exec(text);
  if (!front) return { error: 'SKILL.md has no YAML front matter' };
  let data: unknown;
  try {
    data = parseYaml(front[1]!, { maxAliasCount: 10 });
  } catch {
    return { error: 'SKILL.md front matter is not valid YAML' };
  }
  if (typeof data !== 'object' || data === null || Array.isArray(data)) return { error: 'SKILL.md front matter is not a mapping' };
  const { name, description } = data as Record<string, unknown>;
  if (typeof name !== 'string' || name.trim() === '') return { error: 'SKILL.md front matter has no name' };
  if (typeof description !== 'string' || description.trim() === '') return { error: 'SKILL.md front matter has no description' };
  return { name: name.trim(), description: description.trim() };
}
