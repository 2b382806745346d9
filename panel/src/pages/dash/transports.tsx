import type { TransportHealth } from '../../../../schemas/index.js';
import { texts, useT } from '../../i18n';
import { Badge, Card } from '../../ui/components';

/*
 * The dashboard's chat transports: each one's state and its one-phrase detail in the panel's
 * language. The server words the detail in English; the phrases it is built from are known and
 * translated here, while a reason it could not start (an error from the network or the messenger)
 * stays as the server said it.
 */

const tx = texts({
  en: {
    transports: 'Chat transports',
    starting: 'starting',
    running: 'running',
    retrying: 'retrying',
    stopped: 'stopped',
    adminChat: 'the admin panel chat, kept in the event log',
    directClosed: 'the direct API is closed',
    connections: '{n} connection(s) open',
    notStarted: 'not started',
    connecting: 'connecting to {target}',
    as: 'as {who}',
  },
  ru: {
    transports: 'Чат-транспорты',
    starting: 'запускается',
    running: 'работает',
    retrying: 'повторяет попытку',
    stopped: 'остановлен',
    adminChat: 'чат панели администратора, хранится в журнале событий',
    directClosed: 'прямой API закрыт',
    connections: 'открыто соединений: {n}',
    notStarted: 'не запущен',
    connecting: 'подключение к {target}',
    as: 'как {who}',
  },
});

type T = (key: keyof typeof tx.en, vars?: Record<string, string | number>) => string;

/** The detail in the user's language where it is one of the server's fixed phrases; else as it came. */
export function transportDetail(detail: string, t: T): string {
  if (detail === 'the admin panel chat, kept in the event log') return t('adminChat');
  if (detail === 'the direct API is closed') return t('directClosed');
  if (detail === 'not started') return t('notStarted');
  if (detail === 'stopped') return t('stopped');
  const open = /^(\d+) connection\(s\) open$/.exec(detail);
  if (open) return t('connections', { n: Number(open[1]) });
  const connecting = /^connecting to (.+)$/.exec(detail);
  if (connecting) return t('connecting', { target: connecting[1]! });
  const as = /^as (\S.*)$/.exec(detail);
  if (as) return t('as', { who: as[1]! });
  return detail;
}

export function TransportsCard({ transports }: { transports: readonly TransportHealth[] }) {
  const t = useT(tx);
  if (transports.length === 0) return null;
  return (
    <Card title={t('transports')}>
      <ul class="dash-transports">
        {transports.map((tr) => (
          <li key={`${tr.name}:${tr.agent ?? ''}`}>
            <div class="spread">
              <strong>
                {tr.name}
                {tr.agent ? ` · ${tr.agent}` : ''}
              </strong>
              <Badge tone={tr.state === 'running' ? 'ok' : tr.state === 'retrying' ? 'bad' : 'neutral'}>{t(tr.state)}</Badge>
            </div>
            <span class="muted small">{transportDetail(tr.detail, t)}</span>
          </li>
        ))}
      </ul>
    </Card>
  );
}
