/**
 * The CLI suite `frames`: how responsive the training page stays while a run trains in its
 * worker. Opens src/bench/frames-page.html (the real page and training worker) in headless
 * Chromium with the app's cross-origin isolation, starts the page's default run, and once it
 * trains, for a fixed window records the gaps between animation frames, the long tasks the browser reports, and
 * (from a Chromium trace) every task of the page's main thread with its wall and CPU time: the
 * page's own work. Twice: alone, and with workers keeping CPU cores busy beside it. Node only.
 */
import { loadavg } from 'node:os';
import type { Browser } from 'playwright-core';
import { BENCH_PAGES, withBenchPage } from './browser.ts';
import type { FramesBenchOptions, FramesBenchResult } from './frames-page.ts';
import type { BenchRow } from './types.ts';

/** One main-thread task of the trace: wall time and the thread's CPU time, ms. */
export interface MainThreadTask {
  wallMs: number;
  cpuMs: number;
}

/** Options of {@link benchFrames}. */
export interface FramesOptions {
  /** Seconds each scenario watches the run (default 40). */
  seconds?: number;
  /** CPU-hogging workers in the loaded scenario (default 2: every core of a 2-core machine). */
  hogs?: number;
  /** Where the raw figures go besides the rows (tests read them). */
  onResult?: (scenario: string, result: FramesBenchResult, tasks: MainThreadTask[]) => void;
}

interface TraceEvent {
  name?: string;
  ph?: string;
  pid?: number;
  tid?: number;
  ts?: number;
  dur?: number;
  tdur?: number;
  args?: { name?: string };
}

/** The task-runner event Chromium records around every task of a thread (category `toplevel`). */
const TASK_EVENT = 'ThreadControllerImpl::RunTask';

/**
 * The tasks of the renderer's main thread that start after the page's `frames:start` mark and end
 * before its `frames:end` mark, from a Chromium JSON trace. Throws when the trace lacks the marks or the thread.
 */
export function mainThreadTasks(trace: { traceEvents: TraceEvent[] } | TraceEvent[]): MainThreadTask[] {
  const events = Array.isArray(trace) ? trace : trace.traceEvents;
  const mark = (name: string): TraceEvent | undefined => events.find((e) => e.name === name && e.ts !== undefined);
  const start = mark('frames:start');
  const end = mark('frames:end');
  if (!start?.ts || !end?.ts || start.pid === undefined) throw new Error('the trace has no frames:start / frames:end marks');
  const main = events.find((e) => e.ph === 'M' && e.name === 'thread_name' && e.pid === start.pid && e.args?.name === 'CrRendererMain');
  if (main?.tid === undefined) throw new Error(`the trace names no main thread for renderer ${start.pid}`);
  const from = start.ts;
  const to = end.ts;
  // Tasks wholly inside the window: those that set the marks also start the load and tear the page down.
  return events
    .filter((e) => e.name === TASK_EVENT && e.ph === 'X' && e.pid === start.pid && e.tid === main.tid && e.ts !== undefined && e.ts >= from && e.ts + (e.dur ?? 0) <= to)
    .map((e) => ({ wallMs: (e.dur ?? 0) / 1000, cpuMs: (e.tdur ?? e.dur ?? 0) / 1000 }));
}

/** The `q` quantile (0-1) of `xs` by nearest rank; NaN when empty. */
export function quantile(xs: readonly number[], q: number): number {
  if (xs.length === 0) return Number.NaN;
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))] as number;
}

/** The table rows of one scenario. */
export function framesRows(scenario: string, result: FramesBenchResult, tasks: readonly MainThreadTask[], loadAverage?: number): BenchRow[] {
  const gaps = result.frameGapsMs;
  const seconds = result.windowMs / 1000;
  const load = loadAverage === undefined ? '' : `; machine load average ${loadAverage.toFixed(1)} before it`;
  const note = `${seconds.toFixed(0)} s of a quick shop run once training, ${result.iterations} iterations ended in it${load}`;
  const over = (xs: readonly number[], ms: number): number => xs.filter((x) => x > ms).length;
  const cpu = tasks.map((t) => t.cpuMs);
  const wall = tasks.map((t) => t.wallMs);
  const max = (xs: readonly number[]): number => (xs.length === 0 ? 0 : Math.max(...xs));
  return [
    { name: `${scenario}: longest frame gap`, value: max(gaps), unit: 'ms', note },
    { name: `${scenario}: frame gap p99`, value: quantile(gaps, 0.99), unit: 'ms' },
    { name: `${scenario}: frame gaps over 50 ms`, value: over(gaps, 50), unit: `of ${gaps.length} frames` },
    { name: `${scenario}: long tasks (over 50 ms) on the main thread`, value: result.longTasksMs.length, unit: 'tasks' },
    { name: `${scenario}: main-thread tasks over 10 ms of CPU time (the page's own work)`, value: over(cpu, 10), unit: `of ${tasks.length} tasks` },
    { name: `${scenario}: longest main-thread task, CPU time`, value: max(cpu), unit: 'ms' },
    { name: `${scenario}: longest main-thread task, wall time`, value: max(wall), unit: 'ms' },
    { name: `${scenario}: main-thread task CPU time p99`, value: quantile(cpu, 0.99), unit: 'ms' },
  ];
}

/** Runs one scenario on a fresh page, tracing the renderer's main thread. */
async function scenario(options: FramesBenchOptions, log: (line: string) => void): Promise<{ result: FramesBenchResult; tasks: MainThreadTask[] }> {
  return withBenchPage({ page: BENCH_PAGES.frames, ready: 'framesBench', crossOriginIsolated: true, app: true, log }, async (page) => {
    const browser = page.context().browser() as Browser;
    await browser.startTracing(page, { categories: ['toplevel', 'blink.user_timing', '__metadata'] });
    const run = page.evaluate((o) => (window.framesBench as (x: typeof o) => Promise<FramesBenchResult>)(o), options);
    // The trace ends either way, so that a failed run does not leave Chromium tracing.
    const [outcome, trace] = await Promise.allSettled([run]).then(async ([r]) => [r, await browser.stopTracing()] as const);
    if (outcome.status === 'rejected') throw outcome.reason;
    return { result: outcome.value, tasks: mainThreadTasks(JSON.parse(trace.toString('utf8')) as { traceEvents: TraceEvent[] }) };
  });
}

/** The frame benchmark: the page alone, then beside `hogs` busy workers (see the module comment). */
export async function benchFrames(options: FramesOptions = {}): Promise<BenchRow[]> {
  const log = (line: string): void => void process.stderr.write(`  ${line}\n`);
  const seconds = options.seconds ?? 40;
  const hogs = options.hogs ?? 2;
  const rows: BenchRow[] = [];
  for (const [name, load] of [
    ['alone', 0],
    [`beside ${hogs} busy worker${hogs === 1 ? '' : 's'}`, hogs],
  ] as const) {
    log(`frames: ${name}, ${seconds} s`);
    // The machine's own load (other processes) changes the gaps as much as the page does: it is reported.
    const [loadAverage] = loadavg();
    const { result, tasks } = await scenario({ seconds, hogs: load }, log);
    options.onResult?.(name, result, tasks);
    rows.push(...framesRows(name, result, tasks, loadAverage));
  }
  return rows;
}
