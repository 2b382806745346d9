import { useEffect, useRef } from 'preact/hooks';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';

/*
 * A time-series chart (uPlot: small, canvas, no inline styles it cannot set through the CSSOM).
 * `x` is epoch seconds; each series is one line. It follows its container's width.
 */
export interface ChartSeries {
  label: string;
  values: (number | null)[];
  color: string;
}

export function Chart({ x, series, height = 220, label }: { x: number[]; series: ChartSeries[]; height?: number; label: string }) {
  const box = useRef<HTMLDivElement>(null);
  useEffect(() => {
    const el = box.current;
    if (!el) return;
    const text = getComputedStyle(document.documentElement).getPropertyValue('--muted').trim() || '#888';
    const grid = getComputedStyle(document.documentElement).getPropertyValue('--line').trim() || '#ddd';
    const axis = { stroke: text, grid: { stroke: grid, width: 1 }, ticks: { stroke: grid, width: 1 } };
    const plot = new uPlot(
      {
        width: Math.max(240, el.clientWidth),
        height,
        series: [{}, ...series.map((s) => ({ label: s.label, stroke: s.color, width: 2, points: { show: x.length < 60 } }))],
        axes: [axis, axis],
        legend: { show: true },
        cursor: { drag: { x: false, y: false } },
      },
      [x, ...series.map((s) => s.values)] as uPlot.AlignedData,
      el,
    );
    const resize = new ResizeObserver(() => plot.setSize({ width: Math.max(240, el.clientWidth), height }));
    resize.observe(el);
    return () => {
      resize.disconnect();
      plot.destroy();
    };
  }, [x, series, height]);
  return <div class="chart" ref={box} role="img" aria-label={label} />;
}
