import t from 'tap';
import { deliveryRoute, transportStatuses } from '../../machines/index.js';
import { defaultConfig } from '../../schemas/index.js';

const cfg = (over: Record<string, unknown>) => ({ ...defaultConfig(), ...over }) as ReturnType<typeof defaultConfig>;

t.test('a transport this build does not include is off for that reason alone, with nothing to fix', async (t) => {
  t.same(transportStatuses(cfg({ telegram_token: '123:abc' })), [
    { name: 'telegram', on: false, why: 'not included in this version of svc yet', fix: null },
    { name: 'matrix', on: false, why: 'not included in this version of svc yet', fix: null },
  ]);
});

t.test('once built: on with credentials, otherwise off naming what is missing and how to fix it', async (t) => {
  const both = ['telegram', 'matrix'] as const;
  const [tg, mx] = transportStatuses(cfg({}), both);
  t.match(tg, { name: 'telegram', on: false, why: 'no telegram_token in config.json', fix: /@BotFather/ });
  t.match(mx, { name: 'matrix', on: false, why: 'not listed in transports', fix: 'add "matrix" to transports in config.json' });
  t.match(transportStatuses(cfg({ telegram_token: '123:abc' }), both)[0], { on: true, fix: null });
  const matrix = (m: Record<string, string>) =>
    transportStatuses(cfg({ transports: ['matrix'], matrix: { ...defaultConfig().matrix, ...m } }), both)[1]!;
  t.match(matrix({}), { on: false, why: 'no matrix.homeserver, matrix.user_id, matrix.password or matrix.access_token in config.json' });
  t.match(matrix({ homeserver: 'https://m.example', user_id: '@bot:m.example', access_token: 'x' }), { on: true, why: 'as @bot:m.example on https://m.example' });
  t.match(transportStatuses(cfg({ transports: ['matrix'], telegram_token: 'x' }), both)[0], { on: false, why: 'not listed in transports' }, 'transports, when set, decides');
});

t.test('deliveryRoute: a running transport gets its chat; otherwise the admin chat, with why', async (t) => {
  t.same(deliveryRoute('api', true), { kind: 'origin' });
  t.same(deliveryRoute('telegram', true), { kind: 'origin' }, 'once a registry says telegram runs, its chats get their messages');
  t.same(deliveryRoute('telegram', false), { kind: 'admin-chat', reason: 'transport telegram is not included in this version of svc yet' });
  t.same(deliveryRoute('matrix', false), { kind: 'admin-chat', reason: 'transport matrix is not included in this version of svc yet' });
  t.same(deliveryRoute('internal', false), { kind: 'admin-chat', reason: 'transport internal has no chat delivery in svc' });
  t.same(deliveryRoute('api', true, false), { kind: 'admin-chat', reason: 'no api connection of that chat is open' }, 'the direct API keeps no history');
  t.same(deliveryRoute('api', true, true), { kind: 'origin' });
});
