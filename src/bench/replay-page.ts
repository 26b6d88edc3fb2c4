/**
 * The page side of `dreamgym bench replay-browser` (src/bench/replay-browser.ts): runs the replay
 * benchmark on this origin's real IndexedDB and hands the rows back to the driver
 * (`window.replayBench`).
 */
import { benchReplay, type ReplayBenchRow, type ReplayBenchSizes } from './replay.ts';

(window as unknown as { replayBench: (sizes: ReplayBenchSizes) => Promise<ReplayBenchRow[]> }).replayBench = (sizes) =>
  benchReplay({ ...sizes, indexedDB: indexedDB, label: 'chromium/IndexedDB', log: (line) => console.log(line) });
