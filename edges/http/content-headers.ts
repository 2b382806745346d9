import { basename } from 'node:path';
import { contentType } from 'mime-types';

/*
 * What a served file says about itself: its media type from the extension (the maintained
 * mime-types table, with a charset for text) and a Content-Disposition browsers of every age read
 * the same way (RFC 6266 with an RFC 5987 `filename*`).
 */

/** By the extension of `path`'s last component; unknown is application/octet-stream. */
export function contentTypeFor(path: string): string {
  // contentType() takes anything with a slash for a media type already, so only the name goes in.
  return contentType(basename(path)) || 'application/octet-stream';
}

/**
 * `inline; filename="<ASCII fallback>"; filename*=UTF-8''<percent-encoded>`. The fallback, for
 * clients that ignore `filename*`, replaces what a quoted-string cannot carry or old browsers
 * misread (non-ASCII, controls, `"`, `\`, and `%`, which some percent-decode) with `_`.
 */
export function contentDisposition(type: 'inline' | 'attachment', name: string): string {
  // A lone surrogate (encodeURIComponent throws on it) becomes U+FFFD on the way through UTF-8.
  const wellFormed = Buffer.from(name, 'utf8').toString('utf8');
  const fallback = wellFormed.replace(/[^\x20-\x7e]|["\\%]/gu, '_');
  // encodeURIComponent leaves ' ( ) * as they are; RFC 5987's attr-char does not allow them.
  const encoded = encodeURIComponent(wellFormed).replace(/['()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
  return `${type}; filename="${fallback}"; filename*=UTF-8''${encoded}`;
}


export interface FileHeaderOptions {
  /** `attachment` for a download the browser saves; `inline` for one it may show (an image, a shared page). */
  disposition: 'inline' | 'attachment';
  cacheControl: string;
  /** The media type when the caller has already checked it; otherwise from `name`'s extension. */
  contentType?: string;
}

/**
 * The headers of every file this origin serves from disk (admin files, direct-API downloads,
 * avatars, the fileshare): its type and name, never sniffed into another type, and sandboxed, so
 * an HTML or SVG file cannot run as a page of this origin whatever route served it.
 */
export function fileHeaders(name: string, opts: FileHeaderOptions): Record<string, string> {
  return {
    'content-type': opts.contentType ?? contentTypeFor(name),
    'content-disposition': contentDisposition(opts.disposition, name),
    'content-security-policy': FILE_CSP,
    'x-content-type-options': 'nosniff',
    'cache-control': opts.cacheControl,
  };
}

/**
 * No scripts, forms, plugins or same-origin access (`sandbox`) and nothing fetched from elsewhere;
 * images, media and styles from this origin stay allowed, so a shared HTML report still shows its
 * own pictures.
 */
export const FILE_CSP = "default-src 'none'; img-src 'self' data:; media-src 'self'; style-src 'self' 'unsafe-inline'; sandbox";
