/**
 * Benchmark entry points for the CLI (Node only): the replay benchmark over fake-indexeddb, and
 * the same benchmark in headless Chromium over its real IndexedDB (a fixture page served by
 * Vite's dev server, driven by playwright-core with a persistent on-disk profile).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { ReplayBenchOptions, ReplayBenchRow } from './bench.ts';
import { benchReplay } from './bench.ts';
import { createMemoryIndexedDB } from './node.ts';
import { CHROMIUM_ARGS, chromiumExecutable } from '../cli/chromium.ts';

/** Options both variants accept (sizes default to the issue's: 100k inserts, 384 dims, retrieval at 10k and 100k). */
export type ReplayBenchSizes = Omit<ReplayBenchOptions, 'indexedDB' | 'label' | 'log'>;

const log = (line: string): void => void process.stderr.write(`  ${line}\n`);

/** The replay benchmark in Node over fake-indexeddb (in memory: not a browser figure). */
export async function benchReplayNode(sizes: ReplayBenchSizes = {}): Promise<ReplayBenchRow[]> {
  return benchReplay({ ...sizes, indexedDB: createMemoryIndexedDB(), label: 'node/fake-indexeddb', log });
}


/**
 * The replay benchmark in headless Chromium: real IndexedDB in a persistent (on-disk) profile,
 * so inserts pay for LevelDB/disk as a user's browser does.
 */
export async function benchReplayBrowser(sizes: ReplayBenchSizes = {}): Promise<ReplayBenchRow[]> {
  const [{ createServer }, { chromium }] = await Promise.all([import('vite'), import('playwright-core')]);
  const root = fileURLToPath(new URL('../..', import.meta.url));
  const tmp = await mkdtemp(join(tmpdir(), 'dreamgym-replay-bench-'));
  const server = await createServer({
    root,
    configFile: false,
    logLevel: 'silent',
    cacheDir: join(tmp, 'vite-cache'),
    server: { host: '127.0.0.1', port: 0, strictPort: false, hmr: false, watch: null },
    optimizeDeps: { noDiscovery: true, include: [] },
  });
  let context: Awaited<ReturnType<typeof chromium.launchPersistentContext>> | null = null;
  try {
    await server.listen();
    const address = server.httpServer?.address() as AddressInfo | null;
    if (!address) throw new Error('vite dev server has no address');
    context = await chromium.launchPersistentContext(join(tmp, 'profile'), {
      executablePath: chromiumExecutable(),
      args: [...CHROMIUM_ARGS],
    });
    const page = context.pages()[0] ?? (await context.newPage());
    page.on('console', (msg) => log(`[chromium] ${msg.text()}`));
    await page.goto(`http://127.0.0.1:${address.port}/src/replay/bench-page.html`);
    await page.waitForFunction(() => (window as unknown as { replayBench?: unknown }).replayBench !== undefined, undefined, { timeout: 60_000 });
    const version = context.browser()?.version() ?? 'unknown version';
    const rows = await page.evaluate(
      (opts) => (window as unknown as { replayBench: (o: typeof opts) => Promise<ReplayBenchRow[]> }).replayBench(opts),
      sizes,
    );
    return rows.map((r) => ({ ...r, note: r.note ? `${r.note}; Chromium ${version}` : `Chromium ${version}` }));
  } finally {
    await context?.close();
    await server.close();
    await rm(tmp, { recursive: true, force: true });
  }
}
