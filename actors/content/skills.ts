import { Subscription } from 'rxjs';
import { causedBy, type Bus, type Command } from '../../bus/index.js';
import { MAIN_AGENT, SKILL_COMMANDS, SKILL_EVENTS, SvcError, skillsStream, type CommandData, type Principal, type SkillEntryWire, type SubAgentConfig } from '../../schemas/index.js';

const visibleToAll = (p: Principal) => p.allowed_agents.length === 0 || p.allowed_agents.includes('*');
import { deleteSkill, listSkills, readSkill, writeSkill, type HomePaths, type SkillScope } from '../../store/index.js';
import { serialRunner } from '../host/serial.js';
import { targetAgent } from './agent-target.js';

/*
 * The admin API's skills (SPEC.md "Skill storage and sync", "Admin REST: skills", WIRE.md §2):
 * `agent: null` is the global scope, otherwise the agent's own directory. Per-agent reads fall back
 * to the global copy; writes never do (an agent's write never changes what every agent sees).
 */

export interface SkillsAdminDeps {
  bus: Bus;
  paths: HomePaths;
  registry: () => SubAgentConfig[];
}

export function startSkillsAdmin(deps: SkillsAdminDeps): Subscription {
  const { bus, paths } = deps;
  const serial = serialRunner();
  /** The scope and agent directory a command names; the agent is checked against the principal. */
  const scopeOf = (principal: Principal, agent: string | null): { scope: SkillScope; agent: string } =>
    agent === null ? { scope: 'global', agent: MAIN_AGENT } : { scope: 'agent', agent: targetAgent(principal, agent, deps.registry()) };

  const exists = (scope: SkillScope, agent: string, name: string) =>
    readSkill(paths, scope, agent, name).then(
      () => true,
      (e: unknown) => {
        if (e instanceof SvcError && e.code === 'not-found') return false;
        throw e;
      },
    );

  const list = async (cmd: Command<string, CommandData<typeof SKILL_COMMANDS.list>>): Promise<SkillEntryWire[]> => {
    const { principal, scope } = cmd.data;
    const where = scopeOf(principal, cmd.data.agent);
    const global = scope === 'own' && where.scope === 'agent' ? [] : await listSkills(paths, 'global', where.agent);
    if (where.scope === 'global' || scope === 'global') return global;
    const own = await listSkills(paths, 'agent', where.agent);
    if (scope === 'own') return own;
    const shadowed = new Set(own.map((s) => s.name));
    const merged = [...global.filter((s) => !shadowed.has(s.name)), ...own.map((s) => ({ ...s, overrides: global.some((g) => g.name === s.name) }))];
    return merged.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  };

  const read = async (cmd: Command<string, CommandData<typeof SKILL_COMMANDS.read>>) => {
    const { principal, name } = cmd.data;
    const where = scopeOf(principal, cmd.data.agent);
    try {
      return await readSkill(paths, where.scope, where.agent, name);
    } catch (e) {
      if (where.scope === 'agent' && e instanceof SvcError && e.code === 'not-found') return readSkill(paths, 'global', where.agent, name);
      throw e;
    }
  };

  /**
   * A global skill is every agent's: a user restricted to some agents may read it but not change
   * it, since the change would reach agents outside its list.
   */
  const writableScopeOf = (principal: Principal, agent: string | null) => {
    if (agent === null && !visibleToAll(principal)) {
      throw new SvcError('agent-not-allowed', `user "${principal.id ?? '(token)'}" is restricted to some agents (allowed_agents), so may not change global skills`);
    }
    return scopeOf(principal, agent);
  };

  const write = async (cmd: Command<string, CommandData<typeof SKILL_COMMANDS.write>>): Promise<SkillEntryWire> => {
    const { principal, name, content } = cmd.data;
    const where = writableScopeOf(principal, cmd.data.agent);
    // Updating an agent's view of a skill it only has globally makes its own copy, which then overrides.
    const create = cmd.data.create || (where.scope === 'agent' && !(await exists('agent', where.agent, name)) && (await exists('global', where.agent, name)));
    const entry = await writeSkill(paths, where.scope, where.agent, name, content, create);
    await bus.publish({
      stream: skillsStream(cmd.data.agent),
      type: SKILL_EVENTS.written,
      data: { agent: cmd.data.agent, name, doc_filename: entry.doc_filename ?? 'SKILL.md', bytes: Buffer.byteLength(content, 'utf8'), created: create },
      ...causedBy(cmd),
    });
    return entry;
  };

  const remove = async (cmd: Command<string, CommandData<typeof SKILL_COMMANDS.delete>>) => {
    const { principal, name } = cmd.data;
    const where = writableScopeOf(principal, cmd.data.agent);
    await deleteSkill(paths, where.scope, where.agent, name);
    await bus.publish({ stream: skillsStream(cmd.data.agent), type: SKILL_EVENTS.deleted, data: { agent: cmd.data.agent, name }, ...causedBy(cmd) });
    return { name, deleted: true as const };
  };

  const subs = new Subscription();
  subs.add(bus.handle(SKILL_COMMANDS.list, 'skills-admin', list));
  subs.add(bus.handle(SKILL_COMMANDS.read, 'skills-admin', read));
  subs.add(bus.handle(SKILL_COMMANDS.write, 'skills-admin', (cmd) => serial(() => write(cmd))));
  subs.add(bus.handle(SKILL_COMMANDS.delete, 'skills-admin', (cmd) => serial(() => remove(cmd))));
  return subs;
}
