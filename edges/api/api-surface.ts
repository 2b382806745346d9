import type { Surface } from '../http/index.js';
import { avatarRoutes, type AvatarRoutesDeps } from './avatar.routes.js';
import { chatSessionRoutes, type ChatSessionRoutesDeps } from './chat-sessions.routes.js';
import { API_STATUSES } from './errors.js';
import { notificationRoutes, type NotificationRoutesDeps } from './notifications.routes.js';
import { transcribeRoutes, type TranscribeRoutesDeps } from './transcribe.routes.js';

export interface ApiSurfaceDeps extends NotificationRoutesDeps, ChatSessionRoutesDeps, TranscribeRoutesDeps, AvatarRoutesDeps {}

/**
 * The `/api/*` routes the direct API and the admin panel share (notifications, chat sessions,
 * transcription, avatars). Not a reason to run the API server by itself: it rides on whichever
 * surface does.
 */
export function apiSurface(deps: ApiSurfaceDeps): Surface {
  return {
    name: 'api',
    // English, as before: existing direct-API clients read these errors too (WIRE.md localises the admin API).
    statuses: API_STATUSES,
    routes: [...notificationRoutes(deps), ...chatSessionRoutes(deps), ...transcribeRoutes(deps), ...avatarRoutes(deps)],
  };
}
