/**
 * The CLI suite `replay-browser`: the replay benchmark (src/bench/replay.ts) in headless Chromium
 * over its real IndexedDB, on src/bench/replay-page.html served by Vite's dev server and driven by
 * playwright-core, in a persistent (on-disk) profile so that inserts pay for LevelDB and the disk
 * as a user's browser does. Node only.
 */
import { BENCH_PAGES, withBenchPage } from './browser.ts';
import type { ReplayBenchRow, ReplayBenchSizes } from './replay.ts';

const log = (line: string): void => void process.stderr.write(`  ${line}\n`);

/** The replay benchmark in headless Chromium (see the module comment). */
export async function benchReplayBrowser(sizes: ReplayBenchSizes = {}): Promise<ReplayBenchRow[]> {
  return withBenchPage(
    { page: BENCH_PAGES.replay, ready: 'replayBench', persistentProfile: true, noDependencyDiscovery: true, readyTimeoutMs: 60_000, log },
    async (page, version) => {
      const rows = await page.evaluate(
        (opts) => (window as unknown as { replayBench: (o: typeof opts) => Promise<ReplayBenchRow[]> }).replayBench(opts),
        sizes,
      );
      return rows.map((r) => ({ ...r, note: r.note ? `${r.note}; Chromium ${version}` : `Chromium ${version}` }));
    },
  );
}
