/**
 * The CLI suite `frames`: how responsive the training page stays while a run trains in its
 * worker. Opens src/bench/frames-page.html (the real page and training worker) in headless
 * Chromium with the app's cross-origin isolation, starts the page's default run, and once it
 * trains, for a fixed window records the gaps between animation frames, the long tasks the browser reports, and
 * (from a Chromium trace) every task of the page's main thread with its wall and CPU time: the
 * page's own work. Twice: alone, and with workers keeping CPU cores busy beside it. Node only.
 */
import { writeFile } from 'node:fs/promises';
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
  args?: { name?: string; src_func?: string; data?: { functionName?: string; url?: string; lineNumber?: number } };
}

/** One of the longest main-thread tasks, with where its CPU time went. */
export interface TaskBreakdown extends MainThreadTask {
  /** When it started, ms after the window's start. */
  atMs: number;
  /** What posted it (Chromium's `src_func`, e.g. `ScheduledActionSendBeginMainFrame` for a rendering frame). */
  postedBy: string;
  /** The CPU time of the events inside it (layout, paint, a script's function, GC), each without its children's, largest first. */
  parts: { name: string; cpuMs: number }[];
}

/** The task-runner event Chromium records around every task of a thread (category `toplevel`). */
const TASK_EVENT = 'ThreadControllerImpl::RunTask';

/**
 * The tasks of the renderer's main thread that start after the page's `frames:start` mark and end
 * before its `frames:end` mark, from a Chromium JSON trace. Throws when the trace lacks the marks or the thread.
 */
export function mainThreadTasks(trace: { traceEvents: TraceEvent[] } | TraceEvent[]): MainThreadTask[] {
  const { events, pid, tid, from, to } = windowOf(trace);
  // Tasks wholly inside the window: those that set the marks also start the load and tear the page down.
  return events
    .filter((e) => e.name === TASK_EVENT && e.ph === 'X' && e.pid === pid && e.tid === tid && e.ts !== undefined && e.ts >= from && e.ts + (e.dur ?? 0) <= to)
    .map((e) => ({ wallMs: (e.dur ?? 0) / 1000, cpuMs: (e.tdur ?? e.dur ?? 0) / 1000 }));
}

/** The events of the window and the page's main thread, from a trace (see {@link mainThreadTasks}). */
function windowOf(trace: { traceEvents: TraceEvent[] } | TraceEvent[]): { events: TraceEvent[]; pid: number; tid: number; from: number; to: number } {
  const events = Array.isArray(trace) ? trace : trace.traceEvents;
  const mark = (name: string): TraceEvent | undefined => events.find((e) => e.name === name && e.ts !== undefined);
  const start = mark('frames:start');
  const end = mark('frames:end');
  if (!start?.ts || !end?.ts || start.pid === undefined) throw new Error('the trace has no frames:start / frames:end marks');
  const main = events.find((e) => e.ph === 'M' && e.name === 'thread_name' && e.pid === start.pid && e.args?.name === 'CrRendererMain');
  if (main?.tid === undefined) throw new Error(`the trace names no main thread for renderer ${start.pid}`);
  return { events, pid: start.pid, tid: main.tid, from: start.ts, to: end.ts };
}

/** A trace event's name in a breakdown: a script's function with its file and line. */
function partName(e: TraceEvent): string {
  const data = e.args?.data;
  if (e.name !== 'FunctionCall' || !data?.url) return e.name ?? '?';
  const file = data.url.replace(/[?#].*$/, '').split('/').at(-1) ?? data.url;
  return `${data.functionName || '(anonymous)'} (${file}:${(data.lineNumber ?? 0) + 1})`;
}

/**
 * The `count` main-thread tasks of the window with the most CPU time, each with the events inside
 * it (needs a trace with the `devtools.timeline` category; without it a task has no parts).
 */
export function longestTasks(trace: { traceEvents: TraceEvent[] } | TraceEvent[], count: number): TaskBreakdown[] {
  const { events, pid, tid, from, to } = windowOf(trace);
  const thread = events
    .filter((e) => e.ph === 'X' && e.pid === pid && e.tid === tid && e.ts !== undefined)
    .sort((a, b) => (a.ts as number) - (b.ts as number) || (b.dur ?? 0) - (a.dur ?? 0));
  const cpu = (e: TraceEvent): number => e.tdur ?? e.dur ?? 0;
  const tasks = thread.filter((e) => e.name === TASK_EVENT && (e.ts as number) >= from && (e.ts as number) + (e.dur ?? 0) <= to);
  const top = [...tasks].sort((a, b) => cpu(b) - cpu(a)).slice(0, count);
  return top.map((task) => {
    const begin = task.ts as number;
    const end = begin + (task.dur ?? 0);
    const inside = thread.filter((e) => e !== task && e.name !== TASK_EVENT && (e.ts as number) >= begin && (e.ts as number) + (e.dur ?? 0) <= end);
    // Each event's own CPU time: its own less its direct children's (events nest, sorted by start).
    const own = new Map<string, number>();
    const stack: { event: TraceEvent; self: number }[] = [];
    const close = (): void => {
      const done = stack.pop();
      if (!done) return;
      own.set(partName(done.event), (own.get(partName(done.event)) ?? 0) + Math.max(0, done.self));
    };
    for (const e of inside) {
      while (stack.length > 0 && (e.ts as number) >= ((stack.at(-1)?.event.ts as number) + (stack.at(-1)?.event.dur ?? 0))) close();
      const parent = stack.at(-1);
      // A collection's phases count as the collection (MajorGC, MinorGC).
      if (parent && e.name?.startsWith('V8.GC') && /GC/.test(parent.event.name ?? '')) continue;
      if (parent) parent.self -= cpu(e);
      stack.push({ event: e, self: cpu(e) });
    }
    while (stack.length > 0) close();
    const parts = [...own].map(([name, us]) => ({ name, cpuMs: us / 1000 })).sort((a, b) => b.cpuMs - a.cpuMs);
    return { wallMs: (task.dur ?? 0) / 1000, cpuMs: cpu(task) / 1000, atMs: (begin - from) / 1000, postedBy: task.args?.src_func ?? '?', parts };
  });
}

/** One line per task of {@link longestTasks}: its times, what posted it, and its largest parts. */
export function describeTasks(tasks: readonly TaskBreakdown[], parts = 4): string[] {
  return tasks.map((t) => {
    const listed = t.parts.slice(0, parts).filter((p) => p.cpuMs >= 0.05);
    const rest = t.cpuMs - listed.reduce((sum, p) => sum + p.cpuMs, 0);
    const items = [...listed.map((p) => `${p.name} ${p.cpuMs.toFixed(1)}`), `other ${Math.max(0, rest).toFixed(1)}`];
    return `${t.cpuMs.toFixed(1)} ms CPU (${t.wallMs.toFixed(1)} wall) at ${(t.atMs / 1000).toFixed(1)} s, ${t.postedBy}: ${items.join(', ')}`;
  });
}

/** Whether collections (MajorGC, MinorGC and their phases) took over half of a task's CPU time. */
export function isMostlyGc(task: TaskBreakdown): boolean {
  const gc = task.parts.filter((p) => /GC/.test(p.name)).reduce((sum, p) => sum + p.cpuMs, 0);
  return gc > task.cpuMs / 2;
}

/** The `q` quantile (0-1) of `xs` by nearest rank; NaN when empty. */
export function quantile(xs: readonly number[], q: number): number {
  if (xs.length === 0) return Number.NaN;
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))] as number;
}

/** The table rows of one scenario. */
export function framesRows(scenario: string, result: FramesBenchResult, tasks: readonly MainThreadTask[], loadAverage?: number, longest?: readonly TaskBreakdown[]): BenchRow[] {
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
    // A major collection of the page's heap runs as a task of its own; where one is the long task, the table says so.
    ...(longest ? [{ name: `${scenario}: of these, tasks spent mostly in V8's garbage collection`, value: longest.filter((t) => t.cpuMs > 10 && isMostlyGc(t)).length, unit: 'tasks' }] : []),
    { name: `${scenario}: longest main-thread task, CPU time`, value: max(cpu), unit: 'ms' },
    { name: `${scenario}: longest main-thread task, wall time`, value: max(wall), unit: 'ms' },
    { name: `${scenario}: main-thread task CPU time p99`, value: quantile(cpu, 0.99), unit: 'ms' },
  ];
}

/** Runs one scenario on a fresh page, tracing the renderer's main thread. */
async function scenario(options: FramesBenchOptions, log: (line: string) => void, tracing: TraceOptions): Promise<{ result: FramesBenchResult; tasks: MainThreadTask[]; longest: TaskBreakdown[] }> {
  return withBenchPage({ page: BENCH_PAGES.frames, ready: 'framesBench', crossOriginIsolated: true, app: true, log }, async (page) => {
    const browser = page.context().browser() as Browser;
    // `devtools.timeline` (what DevTools' performance panel records) names what runs inside each task.
    await browser.startTracing(page, { categories: ['toplevel', 'blink.user_timing', '__metadata', 'devtools.timeline', ...tracing.categories] });
    const run = page.evaluate((o) => (window.framesBench as (x: typeof o) => Promise<FramesBenchResult>)(o), options);
    // The trace ends either way, so that a failed run does not leave Chromium tracing.
    const [outcome, trace] = await Promise.allSettled([run]).then(async ([r]) => [r, await browser.stopTracing()] as const);
    if (tracing.file) {
      await writeFile(tracing.file, trace);
      log(`frames: trace written to ${tracing.file} (open it in DevTools' performance panel or https://ui.perfetto.dev)`);
    }
    if (outcome.status === 'rejected') throw outcome.reason;
    const parsed = JSON.parse(trace.toString('utf8')) as { traceEvents: TraceEvent[] };
    log('frames: the main-thread tasks with the most CPU time (every one over 10 ms), ms:');
    const tasks = mainThreadTasks(parsed);
    // Every task over 10 ms, and at least three, broken down.
    const longest = longestTasks(parsed, Math.max(3, tasks.filter((t) => t.cpuMs > 10).length));
    for (const line of describeTasks(longest)) log(`  ${line}`);
    return { result: outcome.value, tasks, longest };
  });
}

/** Extra trace categories, and where to keep the raw trace (the environment's `DREAMGYM_FRAMES_TRACE` prefix, see {@link benchFrames}). */
interface TraceOptions {
  categories: string[];
  file?: string;
}

/**
 * The frame benchmark: the page alone, then beside `hogs` busy workers (see the module comment).
 * Logs each scenario's three longest main-thread tasks with their parts. `DREAMGYM_FRAMES_TRACE=PREFIX`
 * keeps each scenario's raw trace (PREFIX-alone.json, PREFIX-busy2.json); `DREAMGYM_FRAMES_CATEGORIES`
 * adds trace categories to it (comma-separated, e.g. `disabled-by-default-devtools.timeline`).
 */
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
    const prefix = process.env['DREAMGYM_FRAMES_TRACE'];
    const tracing: TraceOptions = {
      categories: (process.env['DREAMGYM_FRAMES_CATEGORIES'] ?? '').split(',').filter((c) => c !== ''),
      ...(prefix ? { file: `${prefix}-${load === 0 ? 'alone' : `busy${load}`}.json` } : {}),
    };
    const { result, tasks, longest } = await scenario({ seconds, hogs: load }, log, tracing);
    options.onResult?.(name, result, tasks);
    rows.push(...framesRows(name, result, tasks, loadAverage, longest));
  }
  return rows;
}
