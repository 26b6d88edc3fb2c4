/**
 * The page side of `dreamgym bench replay-browser`: runs the replay benchmark on this origin's
 * real IndexedDB and hands the rows back to the driver (`window.replayBench`).
 */
import { benchReplay, type ReplayBenchOptions, type ReplayBenchRow } from './bench.ts';

type Sizes = Omit<ReplayBenchOptions, 'indexedDB' | 'label' | 'log'>;

(window as unknown as { replayBench: (sizes: Sizes) => Promise<ReplayBenchRow[]> }).replayBench = (sizes) =>
  benchReplay({ ...sizes, indexedDB: indexedDB, label: 'chromium/IndexedDB', log: (line) => console.log(line) });
