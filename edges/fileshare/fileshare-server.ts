import type { LogLevel } from '../../bus/index.js';
import { SvcError, describeError } from '../../schemas/index.js';
import { openContainedFile, serviceSecretRealPaths, type HomePaths } from '../../store/index.js';
import { HttpServer, fileHeaders, isLoopbackHost, publicBindWarning, type HttpRequest, type Route, type Surface } from '../http/index.js';

/*
 * The fileshare server (SPEC.md FileshareConfig): a listener of its own on `fileshare.host:port`
 * that serves, read-only, the files under one folder (`~/.svc/fileshare/`). An agent's tools drop a
 * file there and hand the user `$FILESHARE_URL/<name>`. Every request goes through
 * store/contained-file.ts, which opens first and then checks what was opened: no `..`, no link
 * leading out, no swap between check and open, none of the service's secrets (not even by a hard
 * link). Anything refused is answered as absent, so nothing outside the folder can be probed.
 * GET and HEAD only; no ranges (the whole file, with its length).
 */

export interface FileshareServerOptions {
  paths: HomePaths;
  host: string;
  /** 0 picks a free port (tests). */
  port: number;
  /** `fileshare.allow_public`: without it, an address beyond loopback is refused. */
  allowPublic: boolean;
  log: (level: LogLevel, msg: string, fields?: Record<string, unknown>) => void;
}

export interface FileshareServer {
  port: number;
  /** What agents' tools get as FILESHARE_URL: where a browser on this machine reaches the server. */
  url: string;
  /** What they get as FILESHARE_DOWNLOADS: the folder served. */
  dir: string;
  close(): void;
}

const notFound = (what: string) => new SvcError('not-found', `${what}: no such file`);

export function fileshareSurface(paths: HomePaths): Surface {
  const dir = paths.fileshareDir;
  const serve = async (req: HttpRequest) => {
    const requested = req.params['*'] ?? '';
    // Dotfiles are never shared: a `.env` dropped by mistake, or a file still being written under a temp name.
    if (requested.split('/').some((s) => s.startsWith('.') && s !== '..')) throw notFound(requested);
    let file;
    try {
      // refuseHidden: nor through a link in the folder (env.txt -> .env, g -> .git): the real path opened is checked too.
      file = await openContainedFile(requested, { base: dir, root: dir, rootLabel: 'the fileshare folder', refused: await serviceSecretRealPaths(paths), refuseHidden: true });
    } catch (e) {
      if (e instanceof SvcError && e.code === 'invalid-path' && requested.split(/[/\\]/).includes('..')) throw e;
      if (e instanceof SvcError) throw notFound(requested);
      throw e;
    }
    const name = requested.split('/').pop() ?? requested;
    return {
      status: 200,
      headers: fileHeaders(name, { disposition: 'inline', cacheControl: 'no-store' }),
      file: { handle: file.handle, size: file.size },
    };
  };
  const routes: Route[] = [{ method: 'GET', pattern: '/*', auth: 'public', summary: 'A file from the fileshare folder (HEAD too)', handler: serve }];
  return { name: 'fileshare', routes, statuses: {}, standalone: true };
}

/** Where a client reaches `host:port`: a wildcard address is reached on loopback. */
function urlFor(host: string, port: number): string {
  const h = host === '0.0.0.0' || host === '' ? '127.0.0.1' : host === '::' ? '[::1]' : host.includes(':') && !host.startsWith('[') ? `[${host}]` : host;
  return `http://${h}:${port}`;
}

/**
 * Fileshare answers anyone who reaches it, with no credentials at all: beyond loopback (a LAN is
 * an audience too) it runs only when `fileshare.allow_public` says that is meant, and even then
 * a public address is warned about as the API's is.
 */
export async function startFileshareServer(opts: FileshareServerOptions): Promise<FileshareServer> {
  const { log } = opts;
  if (!isLoopbackHost(opts.host) && !opts.allowPublic) {
    throw new SvcError(
      'public-bind-refused',
      `fileshare not started: fileshare.host ${opts.host} is reachable from other machines and fileshare has no authentication; set fileshare.host to 127.0.0.1, or fileshare.allow_public to true if anyone who reaches it may download what is shared`,
      { host: opts.host },
    );
  }
  const server = new HttpServer({
    onInternalError: (e, req) => log('error', `fileshare ${req.method} ${req.path} failed: ${describeError(e)}`),
  });
  try {
    server.mount(fileshareSurface(opts.paths));
    const port = await server.listen(opts.host, opts.port);
    // allow_public lets it start; it does not silence the API's warning, since nothing else guards the folder.
    const warning = publicBindWarning('fileshare', opts.host, null);
    if (warning) log('warn', `${warning}; anyone who reaches port ${port} can download what is shared, without credentials`, { host: opts.host });
    log('info', `fileshare serving ${opts.paths.fileshareDir} on ${opts.host}:${port}`);
    return { port, url: urlFor(opts.host, port), dir: opts.paths.fileshareDir, close: () => server.close() };
  } catch (e) {
    server.close();
    throw e;
  }
}
