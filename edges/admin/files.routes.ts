import { basename } from 'node:path';
import {
  FilesDeleteBodySchema,
  FilesDownloadQuerySchema,
  FilesListQuerySchema,
  FilesMkdirBodySchema,
  FilesSignUrlBodySchema,
  MAIN_AGENT,
  MAX_SIGNED_URL_TTL_SECONDS,
  SignedDownloadQuerySchema,
  SvcError,
  USER_FILES_COMMANDS,
  type Principal,
} from '../../schemas/index.js';
import { openUserFile, type ContainedFile } from '../../store/index.js';
import { fileHeaders, json, withBody, withQuery, type HttpReply, type Route } from '../http/index.js';
import { adminAuth } from './admin-auth.js';
import type { AdminDeps } from './admin-deps.js';
import { SIGNED_DOWNLOAD_PATH, signedDownloadUrl, urlSigner } from './signed-url.js';

/*
 * WIRE.md §2 Files: an agent's user-files area, its workspace (store/user-files.ts says why), main
 * by default. Every path is relative to it and goes through store/contained-file.ts. Downloads are
 * located by the files actor (allowed_agents, containment, a regular file) and then opened here
 * through the same helper, which checks the opened descriptor, as `/files` does.
 */

const BODY_LIMIT = 16 * 1024;

/** The one path field of a request (WIRE.md names it `relative_path` or another way); two that could disagree are refused. */
function onePath(fields: Readonly<Record<string, unknown>>, names: readonly string[], where: 'query' | 'body'): string {
  const given = names.filter((n) => fields[n] !== undefined);
  if (given.length !== 1) throw new SvcError(where === 'query' ? 'invalid-query' : 'invalid-body', `${where}: send the path as exactly one of ${names.join(', ')}`);
  return fields[given[0]!] as string;
}

/** A file as a download: named by what was opened, never run as a page of this origin. */
function download(file: ContainedFile): HttpReply {
  const name = basename(file.realPath);
  return {
    status: 200,
    headers: fileHeaders(name, { disposition: 'attachment', cacheControl: 'private, no-store' }),
    file: { handle: file.handle, size: file.size },
  };
}

export function filesRoutes(deps: AdminDeps): Route[] {
  const { bus, paths } = deps;
  const signer = urlSigner();
  const nowS = () => Math.floor(deps.clock() / 1000);

  return [
    {
      method: 'GET',
      pattern: '/api/files/list',
      summary: "List a folder of an agent's files",
      auth: adminAuth('files.read'),
      ...withQuery(FilesListQuerySchema, async (q, _req, principal: Principal) => {
        return json(200, await bus.send(USER_FILES_COMMANDS.list, { principal, agent: q.agent ?? MAIN_AGENT, path: q.path }));
      }),
    },
    {
      method: 'GET',
      pattern: '/api/files/download',
      summary: "Download one of an agent's files",
      auth: adminAuth('files.read'),
      ...withQuery(FilesDownloadQuerySchema, async (q, _req, principal: Principal) => {
        const located = await bus.send(USER_FILES_COMMANDS.locate, { principal, agent: q.agent ?? MAIN_AGENT, path: onePath(q, ['relative_path', 'path'], 'query') });
        return download(await openUserFile(paths, located.agent, located.relative_path));
      }),
    },
    {
      method: 'POST',
      pattern: '/api/files/mkdir',
      maxBodyBytes: BODY_LIMIT,
      auth: adminAuth('files.write'),
      summary: "Create a folder in an agent's files",
      ...withBody(FilesMkdirBodySchema, async (body, _req, principal: Principal) => {
        return json(201, await bus.send(USER_FILES_COMMANDS.mkdir, { principal, agent: body.agent ?? MAIN_AGENT, path: onePath(body, ['relative_path', 'name'], 'body') }));
      }),
    },
    {
      method: 'DELETE',
      pattern: '/api/files',
      maxBodyBytes: BODY_LIMIT,
      auth: adminAuth('files.write'),
      summary: "Delete a file or folder in an agent's files",
      ...withBody(FilesDeleteBodySchema, async (body, _req, principal: Principal) => {
        return json(200, await bus.send(USER_FILES_COMMANDS.delete, { principal, agent: body.agent ?? MAIN_AGENT, path: onePath(body, ['relative_path', 'path'], 'body') }));
      }),
    },
    {
      method: 'POST',
      pattern: '/api/files/sign-url',
      maxBodyBytes: BODY_LIMIT,
      auth: adminAuth('files.read'),
      summary: 'A short-lived signed download link',
      ...withBody(FilesSignUrlBodySchema, async (body, _req, principal: Principal) => {
        const located = await bus.send(USER_FILES_COMMANDS.locate, { principal, agent: body.agent ?? MAIN_AGENT, path: onePath(body, ['relative_path', 'path'], 'body') });
        const target = { agent: located.agent, path: located.relative_path, exp: nowS() + body.ttl };
        return json(200, { url: signedDownloadUrl(target, signer.sign(target)), expires_at: target.exp });
      }),
    },
    {
      // The signature is the credential: it stands for the access decision made when it was issued.
      method: 'GET',
      pattern: SIGNED_DOWNLOAD_PATH,
      summary: 'Download by a signed link (the signature is the credential)',
      auth: 'public',
      ...withQuery(SignedDownloadQuerySchema, async (q, _req) => {
        const target = { agent: q.agent, path: q.path, exp: Number(q.exp) };
        signer.verify(target, q.sig, nowS(), MAX_SIGNED_URL_TTL_SECONDS);
        return download(await openUserFile(paths, target.agent, target.path));
      }),
    },
  ];
}
