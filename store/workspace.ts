import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import { basename, dirname, join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { AGENT_NAME_PATTERN, MAIN_AGENT, SvcError, isPlainObject } from '../schemas/index.js';
import { readContainedFileSync, within, writeContainedFile } from './contained-file.js';
import { agentHomeRoot, type HomePaths } from './home.js';
import { writeJsonAtomicSync } from './json-file.js';

/*
 * Agent workspaces (SPEC.md "Common rules", "Memory module", "Task records", "Sub-agent sandbox"):
 * seeding from the shipped home-defaults, task folders, memory module files and the sub-agent
 * pre-tool hook. Seeding only ever creates what is missing: a file the user edited is theirs.
 */

/** Source runs from `store/` (tap), the build from `dist/store/`: the shipped folder is one or two levels up. */
const DEFAULTS_CANDIDATES = [new URL('../home-defaults/', import.meta.url), new URL('../../home-defaults/', import.meta.url)];

export function homeDefaultsDir(): string {
  for (const url of DEFAULTS_CANDIDATES) {
    const dir = fileURLToPath(url);
    if (isDir(join(dir, 'workspace'))) return dir.endsWith(sep) ? dir.slice(0, -1) : dir;
  }
  throw new SvcError(
    'home-defaults-missing',
    `home-defaults/workspace not found next to the code (looked in ${DEFAULTS_CANDIDATES.map((u) => fileURLToPath(u)).join(', ')}); reinstall svc`,
  );
}

export const INSTRUCTION_FILES = ['CLAUDE.md', 'AGENTS.md', 'GEMINI.md'] as const;
export const MEMORY_DIR = 'memory_system';
export const MEMORY_ROOT_FILES = ['MAINMEMORY.md', 'SHAREDMEMORY.md'] as const;
export const WORKSPACE_DIRS = [`${MEMORY_DIR}/modules`, 'output_to_user', 'api_files', 'tools', 'skills'] as const;
/** Bundled skills are copied into the global skills directory by skill sync (SPEC.md), never per agent. */
const NOT_SEEDED = new Set(['skills']);

export interface SeedResult {
  /** The directory that was seeded. */
  workspace: string;
  /** Paths created by this call, relative with `/`; directories end in `/`. Empty when nothing was missing. */
  created: string[];
}

function isDir(path: string): boolean {
  try {
    return fs.statSync(path).isDirectory();
  } catch {
    return false;
  }
}

function exists(path: string): boolean {
  try {
    fs.lstatSync(path);
    return true;
  } catch {
    return false;
  }
}

const toSlash = (p: string) => p.split(sep).join('/');

/** mkdir that reports whether it created the directory and names a file squatting on the path. */
function ensureDirectory(path: string, root: string, created: string[]): void {
  if (isDir(path)) return;
  if (exists(path)) throw new SvcError('not-a-directory', `${path}: exists but is not a directory; move it aside`, { path });
  const parent = dirname(path);
  if (parent !== path && !isDir(parent)) ensureDirectory(parent, root, created);
  const rel = toSlash(relative(root, path));
  const outsideRoot = rel === '..' || rel.startsWith('../');
  try {
    // Parents above the seeded root (the home, agents/<name>) stay private like the home itself.
    fs.mkdirSync(path, { mode: outsideRoot ? 0o700 : 0o755 });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST' || !isDir(path)) throw err;
    return;
  }
  // The root and its parents are not part of what the caller seeds.
  if (rel && !outsideRoot) created.push(`${rel}/`);
}

/** Copies `src` to `dest` only when nothing is at `dest`; COPYFILE_EXCL keeps a concurrent seeder from clobbering. */
function seedFile(src: string, dest: string, root: string, created: string[]): void {
  if (exists(dest)) return;
  try {
    fs.copyFileSync(src, dest, fs.constants.COPYFILE_EXCL);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return;
    throw err;
  }
  fs.chmodSync(dest, fs.statSync(src).mode & 0o755);
  created.push(toSlash(relative(root, dest)));
}

function seedTree(srcDir: string, destDir: string, root: string, created: string[], top: boolean): void {
  ensureDirectory(destDir, root, created);
  for (const entry of fs.readdirSync(srcDir, { withFileTypes: true })) {
    if (top && NOT_SEEDED.has(entry.name)) continue;
    const src = join(srcDir, entry.name);
    const dest = join(destDir, entry.name);
    if (entry.isDirectory()) seedTree(src, dest, root, created, false);
    else if (entry.isFile()) seedFile(src, dest, root, created);
  }
}

function checkAgentName(agentName: string): void {
  if (typeof agentName !== 'string' || !AGENT_NAME_PATTERN.test(agentName) || agentName.length > 64) {
    throw new SvcError(
      'invalid-agent-name',
      `agent name ${JSON.stringify(agentName)} is not allowed (1-64 characters of a-z, 0-9, _ and -, or "main")`,
      { agent: agentName },
    );
  }
}

/** `~/.svc/workspace` for the main agent, `~/.svc/agents/<name>/workspace` for a sub-agent. */
export function workspaceDir(paths: HomePaths, agentName: string): string {
  checkAgentName(agentName);
  return agentName === MAIN_AGENT ? paths.workspace : join(agentHomeRoot(paths, agentName), 'workspace');
}

/**
 * Creates the agent's workspace from home-defaults/workspace plus the working directories. Safe to
 * run on every start: existing files (edited or not) are never touched; only what is missing is created.
 */
export function initWorkspace(paths: HomePaths, agentName: string): SeedResult {
  const workspace = workspaceDir(paths, agentName);
  const created: string[] = [];
  seedTree(join(homeDefaultsDir(), 'workspace'), workspace, workspace, created, true);
  for (const dir of WORKSPACE_DIRS) ensureDirectory(join(workspace, dir), workspace, created);
  return { workspace, created };
}

const TASK_ID_PATTERN = /^[A-Za-z0-9_-]{1,128}$/;

export interface TaskFolderResult {
  folder: string;
  created: string[];
}

/**
 * `~/.svc/workspace/tasks/<id>/` with TASKMEMORY.md and the three instruction files. The instruction
 * files come from the main workspace when present, so the user's edits reach task agents too.
 */
export function initTaskFolder(paths: HomePaths, taskId: string): TaskFolderResult {
  if (typeof taskId !== 'string' || !TASK_ID_PATTERN.test(taskId)) {
    throw new SvcError('invalid-task-id', `task id ${JSON.stringify(taskId)} is not allowed (1-128 characters of A-Z, a-z, 0-9, _ and -)`, {
      task_id: taskId,
    });
  }
  const folder = join(paths.workspace, 'tasks', taskId);
  const created: string[] = [];
  ensureDirectory(folder, folder, created);
  const defaults = homeDefaultsDir();
  seedFile(join(defaults, 'task', 'TASKMEMORY.md'), join(folder, 'TASKMEMORY.md'), folder, created);
  for (const name of INSTRUCTION_FILES) {
    const own = join(paths.workspace, name);
    const src = fs.existsSync(own) && fs.statSync(own).isFile() ? own : join(defaults, 'workspace', name);
    seedFile(src, join(folder, name), folder, created);
  }
  return { folder, created };
}

/** The mandatory rules suffix the task hub appends to every task prompt. */
export function readTaskRules(): string {
  return fs.readFileSync(join(homeDefaultsDir(), 'task', 'task-rules.md'), 'utf8');
}

// ---------------------------------------------------------------- memory modules

export interface MemoryModuleEntry {
  /** `MAINMEMORY`, `SHAREDMEMORY`, or the module path under `modules/` without `.md` (`people/alice`). */
  name: string;
  /** Relative to `memory_system/`, with `/`: `MAINMEMORY.md`, `modules/people/alice.md`. */
  filename: string;
  lines: number;
  /** Human-readable, e.g. `812 B`, `1.2 KB`. */
  size: string;
}

export interface MemoryModuleFile extends MemoryModuleEntry {
  text: string;
}

/**
 * A memory file's version as the admin API hands it out: a digest of its text, so an editor that
 * sends back the version it loaded is refused when the file changed since (another tab, the agent).
 */
export function memoryVersion(text: string): string {
  return createHash('sha256').update(text, 'utf8').digest('hex').slice(0, 32);
}

/** Module files are small markdown; one this big is not a memory module and would flood a prompt. */
export const MAX_MEMORY_MODULE_BYTES = 1024 * 1024;
const MAX_MODULE_DEPTH = 16;
const MAX_MODULE_FILES = 5000;

export function formatSize(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  const units = ['KB', 'MB', 'GB', 'TB'];
  let n = bytes / 1024;
  let i = 0;
  while (n >= 1024 && i < units.length - 1) {
    n /= 1024;
    i++;
  }
  return `${n.toFixed(1)} ${units[i]}`;
}

/** Lines as an editor shows them: a trailing newline does not start another line; empty text has none. */
export function countLines(text: string): number {
  if (text === '') return 0;
  const breaks = text.match(/\r\n|\r|\n/g)?.length ?? 0;
  return /(\r\n|\r|\n)$/.test(text) ? breaks : breaks + 1;
}

function realOrNull(path: string): string | null {
  try {
    return fs.realpathSync(path);
  } catch {
    return null;
  }
}

function moduleName(filename: string): string {
  return filename.replace(/^modules\//, '').replace(/\.md$/i, '');
}

/**
 * The workspace's own `memory_system/` folder and its real path; null when there is none. It must
 * be a real directory whose real path is the workspace's real path plus `/memory_system`: a link
 * there (or a folder resolving elsewhere) is refused as `forbidden`, as a skills root leading out
 * is, since every containment check below is made against where memory_system/ resolves and would
 * follow it out of the workspace. Callers pin the real path (ContainmentRules.realRoot), so a swap
 * after this check does not move the root either.
 */
function memoryDir(workspace: string): { memDir: string; realMem: string } | null {
  const memDir = join(workspace, MEMORY_DIR);
  let st: fs.Stats;
  try {
    st = fs.lstatSync(memDir);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return null;
    throw err;
  }
  const refused = (why: string) => new SvcError('forbidden', `${memDir} ${why}; memory is read and written only in the workspace's own ${MEMORY_DIR}/ folder`, { path: memDir });
  if (st.isSymbolicLink()) throw refused('is a symlink');
  if (!st.isDirectory()) throw refused('is not a directory');
  const realWorkspace = realOrNull(workspace);
  const realMem = realOrNull(memDir);
  if (realWorkspace === null || realMem !== join(realWorkspace, MEMORY_DIR)) throw refused('does not resolve to the folder inside the workspace');
  return { memDir, realMem };
}

/**
 * Reads a module file found inside `memory_system/`. The agent can change that folder at any
 * moment, so the file is opened and then checked (store/contained-file.ts): a directory swapped for
 * a link between the lookup and the read cannot bring in a file from outside.
 */
function loadModule(path: string, filename: string, realMem: string, refused?: readonly string[]): MemoryModuleFile {
  let file: { size: number; text: string };
  try {
    file = readContainedFileSync(path, { base: realMem, root: realMem, realRoot: realMem, rootLabel: 'memory_system/', ...(refused ? { refused } : {}) }, MAX_MEMORY_MODULE_BYTES);
  } catch (err) {
    if (!(err instanceof SvcError)) throw err;
    if (err.code === 'file-too-large') {
      throw new SvcError('file-too-large', `${filename}: ${String(err.details?.size)} bytes is over the ${MAX_MEMORY_MODULE_BYTES}-byte limit for a memory module`, {
        filename,
        size: err.details?.size,
      });
    }
    // With `refused`, the helper's own words say which (a link out, or one of the secrets).
    if (err.code === 'forbidden') throw refused ? err : invalidPath(filename, 'resolves (through a symlink) outside memory_system/');
    if (err.code === 'invalid-path') throw new SvcError('invalid-path', `${filename}: not a file`, { filename });
    throw err;
  }
  return { name: moduleName(filename), filename, lines: countLines(file.text), size: formatSize(file.size), text: file.text };
}

/**
 * MAINMEMORY.md, SHAREDMEMORY.md and every `.md` under `modules/` (nested too). Hidden entries,
 * symlinked directories and symlinks leading out of `memory_system/` are skipped.
 */
export function listMemoryModules(workspace: string): MemoryModuleEntry[] {
  return readMemoryModules(workspace).map(({ text: _text, ...entry }) => entry);
}

/** listMemoryModules with each module's text. */
export function readMemoryModules(workspace: string): MemoryModuleFile[] {
  const dirs = memoryDir(workspace);
  if (!dirs) return [];
  const { memDir, realMem } = dirs;
  const out: MemoryModuleFile[] = [];
  const add = (path: string, filename: string) => {
    const real = realOrNull(path);
    if (!real || !within(real, realMem)) return;
    try {
      out.push(loadModule(real, filename, realMem));
    } catch (err) {
      // One oversized or vanished file must not hide the others from the listing.
      if (!(err instanceof SvcError) && (err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    }
  };
  for (const name of MEMORY_ROOT_FILES) add(join(memDir, name), name);

  const modules: [string, string][] = [];
  const walk = (dir: string, rel: string, depth: number) => {
    if (depth > MAX_MODULE_DEPTH) return;
    let entries: fs.Dirent[];
    try {
      entries = fs.readdirSync(dir, { withFileTypes: true });
    } catch {
      return;
    }
    for (const e of entries) {
      if (e.name.startsWith('.') || modules.length >= MAX_MODULE_FILES) continue;
      const relName = `${rel}/${e.name}`;
      if (e.isDirectory()) walk(join(dir, e.name), relName, depth + 1);
      else if ((e.isFile() || e.isSymbolicLink()) && /\.md$/i.test(e.name)) modules.push([join(dir, e.name), relName]);
    }
  };
  walk(join(memDir, 'modules'), 'modules', 0);
  modules.sort((a, b) => (a[1] < b[1] ? -1 : a[1] > b[1] ? 1 : 0));
  for (const [path, filename] of modules) add(path, filename);
  return out;
}

function invalidPath(filename: unknown, why: string): SvcError {
  return new SvcError('invalid-path', `memory module ${JSON.stringify(filename)}: ${why} (a .md file inside memory_system/, e.g. "modules/projects.md")`, {
    filename,
  });
}

/**
 * One module by its listing filename (`refused`: the service's secrets as real paths, so not even a
 * hard link to one is read). Rejects anything that could leave `memory_system/`: `..`,
 * absolute or drive paths, backslashes, percent-encoding (the edge decodes URLs once; a second
 * layer is an attack), NUL, and symlinks resolving outside.
 */
export function readMemoryModule(workspace: string, filename: string, refused?: readonly string[]): MemoryModuleFile {
  const parts = checkModuleFilename(filename);
  const dirs = memoryDir(workspace);
  if (!dirs) throw new SvcError('not-found', `memory module ${filename} does not exist (no ${join(workspace, MEMORY_DIR)})`, { filename });
  const { memDir, realMem } = dirs;
  const path = join(memDir, ...parts);
  if (!exists(path)) throw new SvcError('not-found', `memory module ${filename} does not exist`, { filename });
  const real = realOrNull(path);
  if (!real) throw invalidPath(filename, 'a broken symlink');
  if (!within(real, realMem)) throw invalidPath(filename, 'resolves (through a symlink) outside memory_system/');
  return loadModule(real, parts.join('/'), realMem, refused);
}

/** The segments of a module filename from outside, or the refusal naming what is wrong with it. */
function checkModuleFilename(filename: string): string[] {
  if (typeof filename !== 'string' || filename === '') throw invalidPath(filename, 'empty or not a string');
  if (filename.length > 512) throw invalidPath(filename, 'longer than 512 characters');
  if (filename.includes('\0')) throw invalidPath(filename, 'contains a NUL byte');
  if (/%[0-9a-f]{2}/i.test(filename)) throw invalidPath(filename, 'percent-encoded characters are not allowed');
  if (filename.includes('\\')) throw invalidPath(filename, 'backslashes are not allowed');
  if (filename.startsWith('/') || /^[A-Za-z]:/.test(filename)) throw invalidPath(filename, 'absolute paths are not allowed');
  const parts = filename.split('/');
  if (parts.some((p) => p === '..' || p === '.' || p === '')) throw invalidPath(filename, "'..', '.' and empty path segments are not allowed");
  if (!/\.md$/i.test(filename)) throw invalidPath(filename, 'not a .md file');
  return parts;
}

/**
 * Replaces (or creates) a module with `text`, atomically, through store/contained-file.ts: only
 * the two root files or a `.md` under `modules/` (new folders there are made), never through a
 * symlink, never over the module size limit. `refused`: the service's secrets, as real paths.
 */
export async function writeMemoryModule(workspace: string, filename: string, text: string, refused: readonly string[]): Promise<MemoryModuleEntry & { created: boolean }> {
  const parts = checkModuleFilename(filename);
  const clean = parts.join('/');
  if (!(MEMORY_ROOT_FILES as readonly string[]).includes(clean) && (parts[0] !== 'modules' || parts.length < 2)) {
    throw invalidPath(filename, 'only MAINMEMORY.md, SHAREDMEMORY.md and files under modules/ are memory');
  }
  const dirs = memoryDir(workspace);
  const memDir = join(workspace, MEMORY_DIR);
  // No memory_system/ yet: the write is refused below as not-found, naming it.
  const rules = dirs
    ? { base: dirs.realMem, root: dirs.realMem, realRoot: dirs.realMem, rootLabel: 'memory_system/', refused, followSymlinks: false }
    : { base: memDir, root: memDir, rootLabel: 'memory_system/', refused, followSymlinks: false };
  const { size, created } = await writeContainedFile(clean, rules, text, { maxBytes: MAX_MEMORY_MODULE_BYTES, createParents: true });
  return { name: moduleName(clean), filename: clean, lines: countLines(text), size: formatSize(size), created };
}

// ---------------------------------------------------------------- sub-agent sandbox hook

export const SANDBOX_HOOK_FILE = 'sandbox_hook.py';
export const SANDBOX_HOOK_MATCHER = 'Read|Edit|Write|MultiEdit|NotebookEdit|Grep|Glob';
/*
 * Through $CLAUDE_PROJECT_DIR, not an absolute host path: settings.json and the script sit in the
 * same project, so the pair stays valid when the workspace is mounted elsewhere (docker sandbox).
 */
export const SANDBOX_HOOK_COMMAND = `python3 "$CLAUDE_PROJECT_DIR/.claude/hooks/${SANDBOX_HOOK_FILE}"`;

export interface SandboxHookResult {
  script: string;
  settings: string;
}

const isOurHook = (h: unknown) => isPlainObject(h) && typeof h.command === 'string' && h.command.includes(SANDBOX_HOOK_FILE);

/** The settings with exactly one svc sandbox entry in PreToolUse; every other key and hook is kept as found. */
export function mergeSandboxHookSettings(settings: Record<string, unknown>, file: string): Record<string, unknown> {
  const bad = (field: string, found: unknown, allowed: string) =>
    new SvcError('corrupt-file', `${file}: ${field} = ${JSON.stringify(found)} is not allowed (${allowed}); fix the file — it was left untouched`, {
      path: file,
      field,
    });
  const hooks = settings.hooks ?? {};
  if (!isPlainObject(hooks)) throw bad('hooks', hooks, 'a JSON object of event names');
  const pre = hooks.PreToolUse ?? [];
  if (!Array.isArray(pre)) throw bad('hooks.PreToolUse', pre, 'a list of matcher groups');
  const kept: unknown[] = [];
  for (const group of pre) {
    if (!isPlainObject(group) || !Array.isArray(group.hooks)) {
      kept.push(group);
      continue;
    }
    const others = group.hooks.filter((h) => !isOurHook(h));
    if (others.length === group.hooks.length) kept.push(group);
    else if (others.length > 0) kept.push({ ...group, hooks: others });
  }
  kept.push({ matcher: SANDBOX_HOOK_MATCHER, hooks: [{ type: 'command', command: SANDBOX_HOOK_COMMAND, timeout: 30 }] });
  return { ...settings, hooks: { ...hooks, PreToolUse: kept } };
}

/**
 * Copies the sandbox hook into a sub-agent workspace (`.claude/hooks/sandbox_hook.py`, 0755) and
 * registers it in `.claude/settings.json`. The main agent is not sandboxed (SPEC.md).
 */
export function installSandboxHook(paths: HomePaths, agentName: string): SandboxHookResult {
  if (agentName === MAIN_AGENT) throw new SvcError('invalid-agent-name', 'the main agent gets no sandbox hook (its sandbox is the home plus additional_directories)');
  const workspace = workspaceDir(paths, agentName);
  const claudeDir = join(workspace, '.claude');
  const settingsFile = join(claudeDir, 'settings.json');

  // Read and merge first so a broken settings.json stops the install before anything changes.
  let current: Record<string, unknown> = {};
  let settingsMode = 0o644;
  if (exists(settingsFile)) {
    settingsMode = fs.statSync(settingsFile).mode & 0o777;
    const text = fs.readFileSync(settingsFile, 'utf8');
    let parsed: unknown;
    try {
      parsed = text.trim() === '' ? {} : JSON.parse(text);
    } catch (err) {
      throw new SvcError('corrupt-file', `${settingsFile}: not valid JSON (${(err as Error).message}); fix or remove it — it was left untouched`, {
        path: settingsFile,
      });
    }
    if (!isPlainObject(parsed)) {
      throw new SvcError('corrupt-file', `${settingsFile}: top level is not a JSON object; fix the file — it was left untouched`, { path: settingsFile });
    }
    current = parsed;
  }
  const merged = mergeSandboxHookSettings(current, settingsFile);

  const created: string[] = [];
  ensureDirectory(join(claudeDir, 'hooks'), workspace, created);
  const script = join(claudeDir, 'hooks', SANDBOX_HOOK_FILE);
  const tmp = join(dirname(script), `.${basename(script)}.${process.pid}.tmp`);
  try {
    fs.copyFileSync(join(homeDefaultsDir(), 'hooks', SANDBOX_HOOK_FILE), tmp);
    fs.chmodSync(tmp, 0o755);
    fs.renameSync(tmp, script);
  } catch (err) {
    fs.rmSync(tmp, { force: true });
    throw err;
  }
  writeJsonAtomicSync(settingsFile, merged, { mode: settingsMode, dirMode: 0o755 });
  return { script, settings: settingsFile };
}
