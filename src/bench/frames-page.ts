/**
 * The page side of `dreamgym bench frames` (src/bench/frames.ts): mounts the training page as the
 * app does, starts a run through its controller (the page's default setup: shop, dreamgym warm
 * started from behaviour cloning, quick preset, wasm), waits until it trains (seed data made, its
 * first iteration under way) and then, for a fixed window, records the gaps between animation
 * frames and the long tasks the browser reports. With `hogs > 0`, that many workers keep CPU
 * cores busy through the window. Returns plain data (`window.framesBench`).
 */
import '../ui/style.css';
import { parseTrainingConfig, type PresetName } from '../train/config.ts';
import { isActive } from '../ui/state/training-state.ts';
import { mountTrainingPage } from '../ui/TrainingPage.tsx';

/** What the driver asks for. */
export interface FramesBenchOptions {
  /** How long to watch the run once it trains, seconds. */
  seconds: number;
  /** How long the run may take to start training (load its worker, make its seed data), seconds (default 600). */
  warmupSeconds?: number;
  /** Workers that each keep a CPU core busy while the run trains. */
  hogs: number;
  preset?: PresetName;
}

/** What the page measured. */
export interface FramesBenchResult {
  /** Milliseconds between consecutive animation frames. */
  frameGapsMs: number[];
  /** Durations of the long tasks (over 50 ms) the browser reported, ms. */
  longTasksMs: number[];
  /** How long the window lasted, ms. */
  windowMs: number;
  /** Iterations the run completed in the window, and its status at the end. */
  iterations: number;
  /** How long the run took to start training, ms. */
  warmupMs: number;
  status: string;
}

declare global {
  interface Window {
    framesBench?: (options: FramesBenchOptions) => Promise<FramesBenchResult>;
  }
}

window.framesBench = async ({ seconds, hogs, warmupSeconds = 600, preset = 'quick' }) => {
  const root = document.getElementById('app') as HTMLElement;
  const tag = `${Date.now()}-${Math.floor(Math.random() * 1e9)}`;
  const storage = { replay: `frames-replay-${tag}`, index: `frames-runs-${tag}` };
  const page = mountTrainingPage(root, { storage, backend: 'wasm' });
  await page.ready;
  // The charts on screen, as a person watching the run has them (hidden charts are not redrawn).
  document.querySelector('[data-testid="charts-panel"]')?.scrollIntoView();
  const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
  const settled = (): boolean => {
    const status = page.store.state.value.status;
    return !isActive(status) && status !== 'idle';
  };

  const begun = performance.now();
  await page.controller.start(parseTrainingConfig({ env: 'shop', mode: 'dreamgym', warmStart: 'sft' }, preset));
  while (page.store.state.value.status !== 'running' && !settled()) {
    if (performance.now() - begun > warmupSeconds * 1000) throw new Error(`the run did not start training within ${warmupSeconds} s (status ${page.store.state.value.status})`);
    await sleep(100);
  }
  const warmupMs = performance.now() - begun;
  const firstIteration = page.store.state.value.iteration;

  const workers = Array.from({ length: hogs }, () => new Worker(new URL('./frames-hog.ts', import.meta.url), { type: 'module' }));
  const longTasksMs: number[] = [];
  const observer = new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) longTasksMs.push(entry.duration);
  });
  observer.observe({ type: 'longtask', buffered: false });
  const frameGapsMs: number[] = [];
  let watching = true;
  let last: number | null = null;
  const frame = (t: number): void => {
    if (last !== null) frameGapsMs.push(t - last);
    last = t;
    if (watching) requestAnimationFrame(frame);
  };
  requestAnimationFrame(frame);
  performance.mark('frames:start');
  const started = performance.now();
  while (performance.now() < started + seconds * 1000 && !settled()) await sleep(250);
  const windowMs = performance.now() - started;
  performance.mark('frames:end');
  watching = false;
  observer.disconnect();
  for (const w of workers) w.terminate();
  const state = page.store.state.value;
  page.destroy();
  for (const name of [storage.replay, storage.index]) indexedDB.deleteDatabase(name);
  return { frameGapsMs, longTasksMs, windowMs, warmupMs, iterations: state.iteration - firstIteration, status: state.status };
};
