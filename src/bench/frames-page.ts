/**
 * The page side of `dreamgym bench frames` (src/bench/frames.ts): mounts the training page as the
 * app does, starts a run through its controller (the page's default setup: shop, dreamgym warm
 * started from behaviour cloning, quick preset, wasm) and, while the run trains in its worker,
 * records the gaps between animation frames and the long tasks the browser reports. With
 * `hogs > 0`, that many workers keep CPU cores busy beside it. Returns plain data
 * (`window.framesBench`).
 */
import '../ui/style.css';
import { parseTrainingConfig, type PresetName } from '../train/config.ts';
import { isActive } from '../ui/state/training-state.ts';
import { mountTrainingPage } from '../ui/TrainingPage.tsx';

/** What the driver asks for. */
export interface FramesBenchOptions {
  /** How long to watch the run, seconds (it is stopped afterwards if still training). */
  seconds: number;
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
  status: string;
}

declare global {
  interface Window {
    framesBench?: (options: FramesBenchOptions) => Promise<FramesBenchResult>;
  }
}

window.framesBench = async ({ seconds, hogs, preset = 'quick' }) => {
  const root = document.getElementById('app') as HTMLElement;
  const tag = `${Date.now()}-${Math.floor(Math.random() * 1e9)}`;
  const storage = { replay: `frames-replay-${tag}`, index: `frames-runs-${tag}` };
  const page = mountTrainingPage(root, { storage, backend: 'wasm' });
  await page.ready;
  // The charts on screen, as a person watching the run has them (hidden charts are not redrawn).
  document.querySelector('[data-testid="charts-panel"]')?.scrollIntoView();
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
  const config = parseTrainingConfig({ env: 'shop', mode: 'dreamgym', warmStart: 'sft' }, preset);
  await page.controller.start(config);
  const deadline = started + seconds * 1000;
  while (performance.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 250));
    const status = page.store.state.value.status;
    if (!isActive(status) && status !== 'idle') break;
  }
  const windowMs = performance.now() - started;
  performance.mark('frames:end');
  watching = false;
  observer.disconnect();
  for (const w of workers) w.terminate();
  const state = page.store.state.value;
  page.destroy();
  for (const name of [storage.replay, storage.index]) indexedDB.deleteDatabase(name);
  return { frameGapsMs, longTasksMs, windowMs, iterations: state.iteration, status: state.status };
};
