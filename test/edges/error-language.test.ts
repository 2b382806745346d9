// WIRE.md §2: admin API errors speak the client's Accept-Language (ru by default, en; uk as ru);
// the English specifics stay in `detail`. Real uWS server, real HTTP.
import t from 'tap';
import { json, type Route } from '../../edges/index.js';
import { SvcError, pickLanguage } from '../../schemas/index.js';
import { serveSurfaces, testBearer } from '../fixtures/http-server.js';

await t.test('the language is the best-ranked one we speak, else Russian', async (t) => {
  const cases: [string | undefined, string][] = [
    [undefined, 'ru'],
    ['', 'ru'],
    ['en', 'en'],
    ['en-US,en;q=0.9', 'en'],
    ['uk', 'ru'],
    ['uk-UA', 'ru'],
    ['de,fr;q=0.8', 'ru'],
    ['de,en;q=0.5', 'en'],
    ['ru;q=0.4,en;q=0.8', 'en'],
    ['en;q=0,ru', 'ru'],
    ['*', 'ru'],
    ['en;q=abc', 'ru'],
    [',,;;,', 'ru'],
    ['x'.repeat(10_000), 'ru'],
  ];
  for (const [header, want] of cases) t.equal(pickLanguage(header), want, String(header).slice(0, 40));
});

await t.test('a localised surface answers errors in Russian by default and in English when asked; others stay English', async (t) => {
  const boom: Route = { method: 'POST', pattern: '/api/thing', auth: { accepts: ['direct-token'] }, maxBodyBytes: 16, handler: () => { throw new SvcError('invalid-body', 'body.name: expected a string'); } };
  const plain: Route = { method: 'GET', pattern: '/plain', auth: { accepts: ['direct-token'] }, handler: () => json(200, {}) };
  const { port } = await serveSurfaces(t, [
    { name: 'admin', routes: [boom], statuses: {}, localisedErrors: true, authenticators: [testBearer('tok')] },
    { name: 'direct', routes: [plain], statuses: {} },
  ]);
  const call = async (method: string, path: string, headers: Record<string, string> = {}, body?: string) => {
    const r = await fetch(`http://127.0.0.1:${port}${path}`, { method, headers: { connection: 'close', authorization: 'Bearer tok', ...headers }, ...(body !== undefined ? { body } : {}) });
    return { status: r.status, body: (await r.json()) as { error: string; code: string; detail?: string } };
  };
  t.same(await call('POST', '/api/thing', {}, '{}'), { status: 400, body: { error: 'Некорректные данные в теле запроса', code: 'invalid-body', detail: 'body.name: expected a string' } });
  t.same(await call('POST', '/api/thing', { 'accept-language': 'en-GB,en;q=0.9' }, '{}'), { status: 400, body: { error: 'body.name: expected a string', code: 'invalid-body' } });
  t.match(await call('POST', '/api/thing', { 'accept-language': 'uk' }, '{}'), { body: { error: 'Некорректные данные в теле запроса' } });
  t.match(await call('POST', '/api/thing', { authorization: 'Bearer nope' }, '{}'), { status: 401, body: { error: 'Требуется вход в систему', code: 'unauthorized' } }, 'authentication errors too');
  t.match(await call('POST', '/api/thing', {}, 'x'.repeat(100)), { status: 413, body: { error: 'Тело запроса слишком большое', code: 'body-too-large' } }, 'and the body cap');
  t.match(await call('GET', '/api/nothing-here'), { status: 404, body: { error: 'Не найдено', code: 'not-found', detail: /no such endpoint/ } }, 'an unknown /api/ path');
  t.match(await call('GET', '/api/thing'), { status: 405, body: { error: 'Метод не поддерживается для этого адреса' } });
  t.match(await call('GET', '/plain', { authorization: 'Bearer nope' }), { status: 401, body: { error: /missing or wrong/ } }, 'a surface that is not localised keeps English');
  t.match(await call('GET', '/nowhere'), { status: 404, body: { error: /no such endpoint/ } }, 'as does an unknown path outside /api/');
});
