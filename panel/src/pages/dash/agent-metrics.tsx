import { useMemo, useState } from 'preact/hooks';
import type { AgentMetrics, MetricsBucket, MetricsPeriod } from '../../../../schemas/index.js';
import { get, query, seg } from '../../api/client';
import { formatTime, useT } from '../../i18n';
import { useAsync } from '../../ui/async';
import { Chart, type ChartSeries } from '../../ui/chart';
import { Card, Empty, ErrorBanner, Loading, Tabs } from '../../ui/components';
import { detailTexts } from './agent-texts';

/** The colours of the theme, read when a chart is drawn (the canvas cannot take CSS variables). */
function themeColour(name: string, fallback: string): string {
  return getComputedStyle(document.documentElement).getPropertyValue(name).trim() || fallback;
}

export function AgentMetricsCard({ name }: { name: string }) {
  const t = useT(detailTexts);
  const [period, setPeriod] = useState<MetricsPeriod>('24h');
  const metrics = useAsync(() => get<AgentMetrics>(`/api/agents/${seg(name)}/metrics${query({ period })}`), [name, period]);
  const history = useAsync(() => get<MetricsBucket[]>(`/api/agents/${seg(name)}/metrics/history${query({ period })}`), [name, period]);
  const m = metrics.data;

  const charts = useMemo(() => {
    const h = history.data;
    if (!h) return null;
    const x = h.map((b) => Math.round(Date.parse(b.timestamp) / 1000));
    const counts: ChartSeries[] = [
      { label: t('executions'), values: h.map((b) => b.executions), color: themeColour('--primary', '#1d4ed8') },
      { label: t('errors'), values: h.map((b) => b.errors), color: themeColour('--danger', '#b42318') },
    ];
    const duration: ChartSeries[] = [{ label: t('avgDurationS'), values: h.map((b) => (b.executions > 0 ? b.avg_duration : null)), color: themeColour('--ok-fg', '#14532d') }];
    return { x, counts, duration, any: h.some((b) => b.executions > 0) };
    // Only new history changes the series; the texts and theme colours read here are fixed for the page.
  }, [history.data]);

  return (
    <Card
      title={t('metrics')}
      actions={
        <Tabs
          label={t('period')}
          value={period}
          onChange={setPeriod}
          options={[
            { key: '24h', label: t('p24h') },
            { key: '7d', label: t('p7d') },
          ]}
        />
      }
    >
      <ErrorBanner error={metrics.error ?? history.error} onRetry={() => void Promise.all([metrics.reload(), history.reload()])} />
      {m ? (
        <dl class="agent-metrics">
          <div>
            <dt class="muted">{t('executions')}</dt>
            <dd class="stat">{m.total_executions}</dd>
          </div>
          <div>
            <dt class="muted">{t('errors')}</dt>
            <dd class="stat">{m.error_count}</dd>
          </div>
          <div>
            <dt class="muted">{t('successRate')}</dt>
            <dd class="stat">{Math.round(m.success_rate)}%</dd>
          </div>
          <div>
            <dt class="muted">{t('avgDuration')}</dt>
            <dd class="stat">{t('seconds', { n: m.avg_duration_seconds.toFixed(1) })}</dd>
          </div>
          <div>
            <dt class="muted">{t('tokens')}</dt>
            <dd class="stat">{m.tokens_used}</dd>
          </div>
          <div>
            <dt class="muted">{t('lastActive')}</dt>
            <dd>{formatTime(m.last_active)}</dd>
          </div>
        </dl>
      ) : metrics.loading ? (
        <Loading />
      ) : null}
      <h3>{t('history')}</h3>
      {charts === null ? (
        history.loading ? <Loading /> : null
      ) : !charts.any ? (
        <Empty>{t('noHistory')}</Empty>
      ) : (
        <div class="stack">
          <Chart x={charts.x} series={charts.counts} label={t('countsChart')} height={200} />
          <Chart x={charts.x} series={charts.duration} label={t('durationChart')} height={160} />
        </div>
      )}
    </Card>
  );
}
