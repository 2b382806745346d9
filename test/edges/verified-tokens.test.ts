import t from 'tap';
import { VerifiedAccessTokens } from '../../edges/index.js';
import type { AdminTokenClaims } from '../../schemas/index.js';

const claims = (sub: string, exp: number): AdminTokenClaims => ({ typ: 'access', sub, tv: 0, jti: `j-${sub}`, exp });

await t.test('a verified token is served until its exp, under its own secret only', async (t) => {
  const cache = new VerifiedAccessTokens();
  cache.add('secret-1', 'tok-a', claims('a', 100));
  t.same(cache.get('secret-1', 'tok-a', 99_999), claims('a', 100));
  t.equal(cache.get('secret-1', 'tok-b', 0), undefined, 'another token is not served');
  t.equal(cache.get('secret-2', 'tok-a', 0), undefined, 'nor the same token under another secret');
  t.equal(cache.get('secret-1', 'tok-a', 100_000), undefined, 'expired at exp, as jose says');
  t.equal(cache.size, 0, 'and dropped then');
  cache.add('secret-1', 'tok-a', claims('a', 100));
  cache.add('secret-2', 'tok-c', claims('c', 100));
  t.equal(cache.get('secret-1', 'tok-a', 0), undefined, 'a new secret empties what the old one verified');
  t.equal(cache.size, 1);
});

await t.test('the cache is bounded: the oldest entries go first', async (t) => {
  const cache = new VerifiedAccessTokens(2);
  for (const k of ['x', 'y', 'z']) cache.add('s', k, claims(k, 100));
  t.equal(cache.size, 2);
  t.equal(cache.get('s', 'x', 0), undefined);
  t.ok(cache.get('s', 'y', 0));
  t.ok(cache.get('s', 'z', 0));
});
