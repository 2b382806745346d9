import { basename, posix } from 'node:path';
import { lookup } from 'mime-types';
import { Subscription } from 'rxjs';
import { causedBy, type Bus } from '../../bus/index.js';
import { USER_FILES_COMMANDS, USER_FILES_EVENTS, userFilesStream, type SubAgentConfig } from '../../schemas/index.js';
import { checkRelativePath, checkUserUploadDir, listUserFiles, makeUserDir, openUserFile, removeUserFile, workspaceRelativePath, type HomePaths } from '../../store/index.js';
import { serialRunner } from '../host/serial.js';
import { targetAgent } from './agent-target.js';

/*
 * The admin API's files (WIRE.md §2 Files) in an agent's user-files area, its workspace (see
 * store/user-files.ts for why). Downloads are located here (access, containment, a regular file)
 * and opened again by the edge through the same containment helper, which checks the descriptor.
 */

export interface UserFilesAdminDeps {
  bus: Bus;
  paths: HomePaths;
  registry: () => SubAgentConfig[];
}

/** The path as later requests name it: relative, `/`-separated, without `.` segments. */
const canonical = (requested: string) => posix.normalize(checkRelativePath(requested)).replace(/\/$/, '');

export function startUserFilesAdmin(deps: UserFilesAdminDeps): Subscription {
  const { bus, paths } = deps;
  const serial = serialRunner();
  const agentOf = (cmd: { data: { principal: Parameters<typeof targetAgent>[0]; agent: string } }) => targetAgent(cmd.data.principal, cmd.data.agent, deps.registry());

  const subs = new Subscription();
  subs.add(
    bus.handle(USER_FILES_COMMANDS.list, 'user-files-admin', async (cmd) => {
      const entries = await listUserFiles(paths, agentOf(cmd), cmd.data.path);
      return entries.map((e) => ({
        name: e.name,
        path: e.path,
        size: e.size,
        mime: e.isDir ? 'inode/directory' : lookup(e.name) || 'application/octet-stream',
        modified: Math.round(e.mtimeMs) / 1000,
        isDir: e.isDir,
      }));
    }),
  );
  subs.add(
    bus.handle(USER_FILES_COMMANDS.locate, 'user-files-admin', async (cmd) => {
      const agent = agentOf(cmd);
      // An answer names its files by absolute path: a link to one is asked for by that path.
      const requested = workspaceRelativePath(paths, agent, cmd.data.path);
      const file = await openUserFile(paths, agent, requested);
      await file.handle.close();
      return { agent, relative_path: canonical(requested), name: basename(file.realPath), size: file.size };
    }),
  );
  subs.add(
    bus.handle(USER_FILES_COMMANDS.mkdir, 'user-files-admin', (cmd) =>
      serial(async () => {
        const agent = agentOf(cmd);
        await makeUserDir(paths, agent, cmd.data.path);
        const relative_path = canonical(cmd.data.path);
        await bus.publish({ stream: userFilesStream(agent), type: USER_FILES_EVENTS.directory_created, data: { agent, path: relative_path }, ...causedBy(cmd) });
        return { agent, relative_path };
      }),
    ),
  );
  subs.add(
    bus.handle(USER_FILES_COMMANDS.delete, 'user-files-admin', (cmd) =>
      serial(async () => {
        const agent = agentOf(cmd);
        const { wasDir } = await removeUserFile(paths, agent, cmd.data.path);
        const relative_path = canonical(cmd.data.path);
        await bus.publish({ stream: userFilesStream(agent), type: USER_FILES_EVENTS.deleted, data: { agent, path: relative_path, was_dir: wasDir }, ...causedBy(cmd) });
        return { agent, relative_path, deleted: true as const };
      }),
    ),
  );
  subs.add(
    bus.handle(USER_FILES_COMMANDS.placeUpload, 'user-files-admin', async (cmd) => {
      const agent = agentOf(cmd);
      const dir = cmd.data.path;
      await checkUserUploadDir(paths, agent, dir);
      return { agent, relative_path: dir === '' || dir === '.' ? '' : canonical(dir) };
    }),
  );
  return subs;
}
