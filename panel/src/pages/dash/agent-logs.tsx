import { useEffect, useRef, useState } from 'preact/hooks';
import { get, query } from '../../api/client';
import { useT } from '../../i18n';
import { Badge, Button, Card, Empty, ErrorBanner, Loading } from '../../ui/components';
import { detailTexts } from './agent-texts';

/*
 * The agent's log: the last 100 lines, then a live tail polled every few seconds while the page is
 * open and visible. The first poll (`after=0`) answers the same recent lines with the cursor the
 * next polls continue from; the poll stops when the page closes.
 */

const POLL_MS = 3000;
const KEEP = 1000;

export function AgentLogs({ name }: { name: string }) {
  const t = useT(detailTexts);
  const [lines, setLines] = useState<string[] | null>(null);
  const [error, setError] = useState<Error | null>(null);
  const [live, setLive] = useState(true);
  const box = useRef<HTMLPreElement>(null);
  const cursor = useRef(0);

  useEffect(() => {
    let stopped = false;
    let timer: ReturnType<typeof setTimeout> | null = null;
    cursor.current = 0;
    setLines(null);
    const schedule = () => {
      if (!stopped) timer = setTimeout(() => void poll(), POLL_MS);
    };
    const poll = async () => {
      timer = null;
      if (stopped) return;
      if (!live || document.hidden) return schedule();
      try {
        const r = await get<{ lines: string[]; timestamp: number }>(`/api/logs/poll${query({ agent: name, after: cursor.current })}`);
        if (stopped) return;
        const first = cursor.current === 0;
        cursor.current = r.timestamp;
        if (first) setLines(r.lines.slice(-KEEP));
        else if (r.lines.length > 0) setLines((old) => [...(old ?? []), ...r.lines].slice(-KEEP));
        setError(null);
      } catch (e) {
        if (!stopped) setError(e instanceof Error ? e : new Error(String(e)));
      }
      schedule();
    };
    void (async () => {
      try {
        const r = await get<{ lines: string[] }>(`/api/logs${query({ lines: 100, agent: name })}`);
        if (!stopped) setLines(r.lines);
      } catch (e) {
        if (!stopped) setError(e instanceof Error ? e : new Error(String(e)));
      }
      schedule();
    })();
    return () => {
      stopped = true;
      if (timer) clearTimeout(timer);
    };
  }, [name, live]);

  // Follow the end, as a terminal does.
  useEffect(() => {
    const el = box.current;
    if (el) el.scrollTop = el.scrollHeight;
  }, [lines]);

  return (
    <Card
      title={t('logs')}
      actions={
        <div class="row">
          <Badge tone={live ? 'ok' : 'neutral'}>{live ? t('live') : t('paused')}</Badge>
          <Button variant="ghost" onClick={() => setLive(!live)}>
            {live ? t('pause') : t('resume')}
          </Button>
        </div>
      }
    >
      <ErrorBanner error={error} />
      {lines === null ? (
        error ? null : <Loading />
      ) : lines.length === 0 ? (
        <Empty>{t('noLogs')}</Empty>
      ) : (
        <pre class="log" ref={box} tabIndex={0} aria-label={t('logsLabel', { name })}>
          {lines.join('\n')}
        </pre>
      )}
    </Card>
  );
}
