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

