import { basename, join } from 'node:path';
import * as v from 'valibot';
import { ADMIN_ACCESS, MAIN_AGENT, SvcError, USER_FILES_COMMANDS, UploadPlacementQuerySchema, type Principal } from '../../schemas/index.js';
import { createUserFile, type HomePaths } from '../../store/index.js';
import {
  fileAccessMode,
  fileHeaders,
  json,
  openRequestedFile,
  roleSatisfies,
  withQuery,
  type RouteAuth,
  type Route,
  type StatusTable,
} from '../http/index.js';
import type { DirectHub } from './direct-hub.js';
import { dayStamp, receiveUpload, safeFileName, type UploadDestination } from './upload.js';

/** Codes of this surface beyond the common table: what placing an upload in an agent's files can answer. */
export const DIRECT_STATUSES: StatusTable = {
  /** A command's data failed its schema where it is handled. */
  'invalid-command': 400,
  'invalid-agent-name': 400,
  /** The caller's allowed_agents does not list the agent. */
  'agent-not-allowed': 403,
  'unknown-agent': 404,
  /** A file of that name is already in the chosen folder; it is never replaced. */
  'file-exists': 409,
};

/** Room for the multipart envelope and a caption around the file itself. */
const UPLOAD_ENVELOPE_BYTES = 128 * 1024;

/** SPEC.md "Direct API": `/files` and `/upload` take `Authorization: Bearer <api.token>`. */
const DIRECT_AUTH: RouteAuth = { accepts: ['direct-token'] };

/**
 * WIRE.md §2 Files: `/upload` also takes the admin panel's session (bearer JWT, or the cookie with
 * its CSRF header), for the least role that may upload at all. Credentials no surface on the server
 * checks are skipped, so without the admin API this is the direct token alone.
 */
const UPLOAD_AUTH: RouteAuth = { accepts: ['direct-token', 'admin-jwt', 'admin-cookie', 'admin-static-token'], role: ADMIN_ACCESS['files.upload'] };

/**
 * `?agent=&relative_path=`: the upload goes into that folder of the agent's files, as the file
 * manager would put it there, so it needs what the file manager's writes need (the role here, the
 * agent's access and the folder where the command is handled), and the bytes go through the same
 * containment helper, which checks again at the write.
 */
async function placedDestination(hub: DirectHub, principal: Principal, agent: string, relativePath: string): Promise<UploadDestination> {
  if (!roleSatisfies(principal.role, ADMIN_ACCESS['files.write'])) {
    throw new SvcError('forbidden', `placing an upload in an agent's files needs the ${ADMIN_ACCESS['files.write']} role or above; this caller has ${principal.role ?? 'no role'}`);
  }
  const placed = await hub.deps.bus.send(USER_FILES_COMMANDS.placeUpload, { principal, agent, path: relativePath });
  return userFilesDestination(hub.deps.paths, placed.agent, placed.relative_path);
}

function userFilesDestination(paths: HomePaths, agent: string, dir: string): UploadDestination {
  return {
    open: async (clientName) => {
      const name = safeFileName(clientName);
      const file = await createUserFile(paths, agent, dir === '' ? name : `${dir}/${name}`);
      return { handle: file.handle, final: file.realPath, commit: file.commit, discard: file.discard };
    },
  };
}

const FilesQuerySchema = v.object({
  path: v.pipe(
    v.string('query parameter path is required (a file path)'),
    v.check((p) => p.trim() !== '', 'query parameter path is required (a file path)'),
  ),
});

/** `/files`, `/upload` (and `/ws` without an upgrade) as pure handlers over the hub's deps. */
export function directRoutes(hub: DirectHub): Route[] {
  const { deps } = hub;
  return [
    {
      // uWS hands `/ws` requests without upgrade headers on to the HTTP routes.
      method: 'GET',
      pattern: '/ws',
      auth: 'public',
      summary: 'The end-to-end encrypted WebSocket (an HTTP request without Upgrade is answered 426)',
      handler: () =>
        json(426, { error: '/ws is a WebSocket endpoint: send Upgrade: websocket with Sec-WebSocket-Key and Sec-WebSocket-Version: 13', code: 'upgrade-required' }, { upgrade: 'websocket', connection: 'Upgrade' }),
    },
    {
      method: 'GET',
      pattern: '/files',
      auth: DIRECT_AUTH,
      summary: 'Download a file, as file_access allows',
      ...withQuery(FilesQuerySchema, async ({ path: requested }) => {
        const mode = fileAccessMode(deps.config().file_access);
        const file = await openRequestedFile(requested, mode, deps.paths);
        // Named by what was opened, so a link is served under its target's name and type.
        const name = basename(file.realPath);
        return {
          status: 200,
          headers: fileHeaders(name, { disposition: 'inline', cacheControl: 'private, no-store' }),
          file: { handle: file.handle, size: file.size },
        };
      }),
    },
    {
      method: 'POST',
      pattern: '/upload',
      streamBody: true,
      maxBodyBytes: hub.limits.maxUploadBytes + UPLOAD_ENVELOPE_BYTES,
      auth: UPLOAD_AUTH,
      summary: "Upload a file (stored under workspace/api_files/YYYY-MM-DD/, or with agent/relative_path in that folder of the agent's files)",
      bodyType: 'multipart/form-data',
      ...withQuery(UploadPlacementQuerySchema, async (q, req, principal: Principal) => {
        const maxFileBytes = hub.limits.maxUploadBytes;
        if (q.agent === undefined && q.relative_path === undefined) {
          // The dated folder is in main's workspace: a caller restricted by allowed_agents needs
          // main, which is decided where placing an upload is handled (403 agent-not-allowed).
          if (principal.allowed_agents.length > 0 && !principal.allowed_agents.includes('*')) {
            await deps.bus.send(USER_FILES_COMMANDS.placeUpload, { principal, agent: MAIN_AGENT, path: '' });
          }
          const cfg = deps.config();
          const result = await receiveUpload(req.bodyStream!, req.headers['content-type'], {
            baseDir: join(deps.paths.workspace, 'api_files'),
            day: dayStamp(deps.bus.now(), cfg.user_timezone),
            maxFileBytes,
          });
          return json(200, result);
        }
        const destination = await placedDestination(hub, principal, q.agent ?? MAIN_AGENT, q.relative_path ?? '');
        return json(200, await receiveUpload(req.bodyStream!, req.headers['content-type'], { destination, maxFileBytes }));
      }),
    },
  ];
}
