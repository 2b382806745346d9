import { findAvatar, type HomePaths } from '../../store/index.js';
import { json, type Route, type StatusTable } from '../http/index.js';

/*
 * SPEC.md "Direct API server": `GET /api/agents/{name}/avatar`, public (an <img> tag cannot send a
 * bearer token). The name is checked before it becomes part of a path.
 */

export interface AvatarRoutesDeps {
  paths: HomePaths;
}

/** Codes these routes answer with beyond COMMON_STATUSES; merge into the server's table. */
export const AVATAR_STATUSES: StatusTable = {
  'invalid-agent-name': 400,
};

/** Browsers may keep an avatar briefly; a changed one shows within five minutes. */
const CACHE_CONTROL = 'public, max-age=300';

export function avatarRoutes(deps: AvatarRoutesDeps): Route[] {
  return [
    {
      method: 'GET',
      pattern: '/api/agents/:name/avatar',
      handler: (req) => {
        const name = req.params.name ?? '';
        const avatar = findAvatar(deps.paths, name);
        if (!avatar) return json(404, { error: `agent ${JSON.stringify(name)} has no avatar`, code: 'not-found' });
        return {
          status: 200,
          headers: {
            'content-type': avatar.contentType,
            'cache-control': CACHE_CONTROL,
            'x-content-type-options': 'nosniff',
          },
          file: { path: avatar.path, size: avatar.size },
        };
      },
    },
  ];
}
