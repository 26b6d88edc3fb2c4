/**
 * One live line chart (uPlot) of a metric over completed iterations. uPlot owns its canvas; this
 * component creates it once and hands it new data as iterations end, through the shared
 * {@link chartRedraws} queue: one chart per task, and only while the chart is on screen, so the
 * charts never block a frame together. The wrapper's `data-points` says how many points the
 * chart holds (for tests and assistive summaries), and its canvas host's `data-drawn-points` how
 * many the canvas shows so far (a chart off screen catches up when it comes into view).
 */
import { useEffect, useRef } from 'preact/hooks';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import type { IterationMetrics } from '../../train/loop.ts';
import { chartRedraws } from './redraw-queue.ts';

/** A metric to chart: its title and how to read it from an iteration's figures. */
export interface ChartSpec {
  id: string;
  title: string;
  /** The figure of an iteration; null where the iteration has none (a gap in the line). */
  value: (m: IterationMetrics) => number | null;
  /** What the caption says for an iteration without the figure. */
  missing?: string;
  /** Axis range hint, e.g. [0, 1] for rates. */
  range?: [number, number];
  /** Further lines on the same axes (e.g. the max next to the mean), with a legend. */
  more?: readonly { label: string; value: (m: IterationMetrics) => number; stroke: string }[];
  /** Label of the main line in the legend (default the title). */
  label?: string;
  /**
   * The y axis: `linear` (default), or `asinh` for a figure that spans orders of magnitude and
   * may be 0 or negative (linear within {@link ASINH_LINEAR_BAND} of 0, logarithmic beyond). From
   * scratch the first update's KL reaches 5-40 and later ones 0.2-2 (`quick` runs), which a linear axis draws
   * as one spike and a flat line on 0.
   */
  scale?: 'linear' | 'asinh';
}

/** Half-width of the band around 0 where an `asinh` axis is close to linear. */
export const ASINH_LINEAR_BAND = 0.01;

/**
 * Ticks of an `asinh` axis: 0 and the powers of ten within [min, max] (either sign) down to a
 * hundredth of the largest magnitude, so that the axis reads 0, 1, 10 rather than uPlot's nine
 * grid lines per decade, and small ticks do not crowd around 0.
 */
export function asinhSplits(min: number, max: number): number[] {
  const largest = Math.max(Math.abs(min), Math.abs(max));
  const out: number[] = min <= 0 && max >= 0 ? [0] : [];
  for (let k = -6; k <= 9; k++) {
    const p = 10 ** k;
    if (p < largest / 100) continue;
    if (p >= min && p <= max) out.push(p);
    if (-p >= min && -p <= max) out.push(-p);
  }
  return out.sort((a, b) => a - b);
}

/**
 * An `asinh` axis's extent: the data's with 0 in it, half as far again beyond the data (a little
 * room on a log-like axis, so the end points are not cut by the frame); [0, 1] when all are 0.
 */
export function asinhRange(min: number, max: number): uPlot.Range.MinMax {
  const low = 1.5 * Math.min(0, min);
  const high = 1.5 * Math.max(0, max);
  return high > low ? [low, high] : [low, low + 1];
}

/** uPlot's y axis for a chart spec. */
export function yAxis(spec: ChartSpec): uPlot.Axis {
  if (spec.scale !== 'asinh') return { size: 48 };
  // uPlot's filter labels only some ticks of a log-like axis: keep and label every one of these.
  return { size: 48, splits: (_u, _axis, min, max) => asinhSplits(min, max), filter: (_u, splits) => splits, values: (_u, splits) => splits.map((x) => (x === null ? '' : String(x))) };
}

/** uPlot's y scale for a chart spec. */
export function yScale(spec: ChartSpec): uPlot.Scale {
  const range = spec.range;
  return {
    // No padding on an asinh axis: it would reach below 0 for a figure that never does (KL).
    ...(spec.scale === 'asinh' ? { distr: 4, asinh: ASINH_LINEAR_BAND, range: (_u: uPlot, min: number, max: number) => asinhRange(min, max) } : {}),
    ...(range ? { range: (_u: uPlot, min: number, max: number): uPlot.Range.MinMax => [Math.min(range[0], min), Math.max(range[1], max)] } : {}),
  };
}

/** Props of {@link MetricChart}. */
export interface MetricChartProps {
  spec: ChartSpec;
  metrics: readonly IterationMetrics[];
  width?: number;
  height?: number;
}

/**
 * The x axis of every chart: iterations, ticked at whole iterations only (uPlot's default steps
 * put ticks at 1.25 and 1.5 while a run has two points).
 */
export const ITERATION_AXIS: Readonly<uPlot.Axis> = { label: 'iteration', size: 36, incrs: [1, 2, 5, 10, 20, 25, 50, 100, 200, 250, 500, 1000, 2000, 5000, 10000] };

/** x: the iteration number (1-based, as completed), y: the metric, then the further lines. */
export function chartData(spec: ChartSpec, metrics: readonly IterationMetrics[]): (number | null)[][] {
  return [metrics.map((m) => m.iteration + 1), metrics.map((m) => spec.value(m)), ...(spec.more ?? []).map((line) => metrics.map((m) => line.value(m)))];
}

/** A uPlot line chart of one metric. */
export function MetricChart({ spec, metrics, width = 320, height = 160 }: MetricChartProps) {
  const host = useRef<HTMLDivElement>(null);
  const plot = useRef<uPlot | null>(null);
  // Whether the chart is on screen (true until an IntersectionObserver says otherwise).
  const visible = useRef(true);
  const latest = useRef(metrics);
  latest.current = metrics;

  useEffect(() => {
    const target = host.current;
    if (!target) return;
    plot.current = new uPlot(
      {
        width,
        height,
        // Not live: without a cursor a live legend has no value to show and reads "--".
        legend: { show: (spec.more?.length ?? 0) > 0, live: false },
        cursor: { show: false },
        scales: { x: { time: false }, y: yScale(spec) },
        axes: [{ ...ITERATION_AXIS }, yAxis(spec)],
        series: [
          {},
          { label: spec.label ?? spec.title, stroke: '#2f6fdf', width: 2, points: { show: true, size: 5 } },
          ...(spec.more ?? []).map((line) => ({ label: line.label, stroke: line.stroke, width: 2, dash: [6, 3], points: { show: true, size: 4 } })),
        ],
      },
      chartData(spec, latest.current) as uPlot.AlignedData,
      target,
    );
    target.dataset['drawnPoints'] = String(latest.current.length);
    // The legend is a picture of the lines' colours; the figure's title already names them.
    target.querySelector('.u-legend')?.setAttribute('aria-hidden', 'true');
    const key = plot.current;
    const Observer = (globalThis as { IntersectionObserver?: typeof IntersectionObserver }).IntersectionObserver;
    const observer = Observer
      ? new Observer((entries) => {
          visible.current = entries.some((e) => e.isIntersecting);
          // A chart that comes into view draws what it missed.
          if (visible.current) chartRedraws.wake();
        })
      : null;
    observer?.observe(target);
    return () => {
      observer?.disconnect();
      chartRedraws.cancel(key);
      plot.current?.destroy();
      plot.current = null;
    };
  }, [spec.id]);

  useEffect(() => {
    const current = plot.current;
    if (!current) return;
    chartRedraws.schedule(
      current,
      () => {
        if (plot.current !== current) return;
        current.setData(chartData(spec, latest.current) as uPlot.AlignedData);
        if (host.current) host.current.dataset['drawnPoints'] = String(latest.current.length);
      },
      () => visible.current,
    );
  }, [metrics]);

  const last = metrics.at(-1);
  return (
    <figure class="chart" data-testid={`chart-${spec.id}`} data-points={metrics.length}>
      <figcaption>
        {spec.title}
        {last ? <span class="chart-last">: {formatValue(spec.value(last), spec.missing)}</span> : null}
      </figcaption>
      <div ref={host} role="img" aria-label={`${spec.title} per iteration, ${metrics.length} point${metrics.length === 1 ? '' : 's'}`} />
    </figure>
  );
}

function formatValue(x: number | null, missing = 'none'): string {
  if (x === null) return missing;
  if (!Number.isFinite(x)) return String(x);
  if (Math.abs(x) >= 100) return x.toFixed(0);
  return String(Math.round(x * 1000) / 1000);
}
