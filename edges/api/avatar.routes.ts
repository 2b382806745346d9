import { basename } from 'node:path';
import { openAvatar, type HomePaths } from '../../store/index.js';
import { contentTypeFor, fileHeaders, json, type Route } from '../http/index.js';

/*
 * SPEC.md "Direct API server": `GET /api/agents/{name}/avatar`, public (an <img> tag cannot send a
 * bearer token). The name is checked before it becomes part of a path; store opens only a regular
 * file physically inside `avatars/`, following no symlink.
 */

export interface AvatarRoutesDeps {
  paths: HomePaths;
}

/** Browsers may keep an avatar briefly; a changed one shows within five minutes. */
const CACHE_CONTROL = 'public, max-age=300';

/**
 * Raster images only. SVG is refused, not sandboxed: served without a token from this origin it is
 * a script vector, and an avatar has no need for it.
 */
const IMAGE_TYPES: ReadonlySet<string> = new Set(['image/png', 'image/jpeg', 'image/gif', 'image/webp']);

export function avatarRoutes(deps: AvatarRoutesDeps): Route[] {
  return [
    {
      method: 'GET',
      pattern: '/api/agents/:name/avatar',
      summary: "An agent's avatar image (public, so an <img> can load it)",
      auth: 'public',
      handler: async (req) => {
        const name = req.params.name ?? '';
        const avatar = await openAvatar(deps.paths, name);
        const contentType = avatar && contentTypeFor(avatar.realPath);
        if (!avatar || !IMAGE_TYPES.has(contentType!)) {
          await avatar?.handle.close();
          return json(404, { error: `agent ${JSON.stringify(name)} has no avatar`, code: 'not-found' });
        }
        return {
          status: 200,
          headers: fileHeaders(basename(avatar.realPath), { disposition: 'inline', cacheControl: CACHE_CONTROL, contentType: contentType! }),
          file: { handle: avatar.handle, size: avatar.size },
        };
      },
    },
  ];
}
