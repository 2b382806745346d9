import { basename, join } from 'node:path';
import * as v from 'valibot';
import { contentDisposition, contentTypeFor, fileAccessMode, json, openRequestedFile, withQuery, type RouteAuth, type Route, type StatusTable } from '../http/index.js';
import type { DirectHub } from './direct-hub.js';
import { dayStamp, receiveUpload } from './upload.js';

/** Codes of this surface beyond the common table. */
export const DIRECT_STATUSES: StatusTable = {};

/** Room for the multipart envelope and a caption around the file itself. */
const UPLOAD_ENVELOPE_BYTES = 128 * 1024;

/** SPEC.md "Direct API": `/files` and `/upload` take `Authorization: Bearer <api.token>`. */
const DIRECT_AUTH: RouteAuth = { accepts: ['direct-token'] };

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
          headers: {
            'content-type': contentTypeFor(name),
            'content-disposition': contentDisposition('inline', name),
            // A served HTML or SVG file must not run as a page of this origin.
            'content-security-policy': "default-src 'none'; sandbox",
            'x-content-type-options': 'nosniff',
          },
          file: { handle: file.handle, size: file.size },
        };
      }),
    },
    {
      method: 'POST',
      pattern: '/upload',
      streamBody: true,
      maxBodyBytes: hub.limits.maxUploadBytes + UPLOAD_ENVELOPE_BYTES,
      auth: DIRECT_AUTH,
      summary: 'Upload a file (stored under workspace/api_files/YYYY-MM-DD/)',
      bodyType: 'multipart/form-data',
      handler: async (req) => {
        const cfg = deps.config();
        const result = await receiveUpload(req.bodyStream!, req.headers['content-type'], {
          baseDir: join(deps.paths.workspace, 'api_files'),
          day: dayStamp(deps.bus.now(), cfg.user_timezone),
          maxFileBytes: hub.limits.maxUploadBytes,
        });
        return json(200, result);
      },
    },
  ];
}
