/**
 * The Node side of the browser benchmarks: serves the repository with Vite's dev server, opens one
 * of the benchmark pages (src/bench/*-page.html) in headless system Chromium through
 * playwright-core, waits until the page has installed its entry point on `window`, and hands the
 * page to the caller. Node only.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Page } from 'playwright-core';
import { CHROMIUM_ARGS, chromiumExecutable } from './chromium.ts';

/** The benchmark pages, relative to the repository root. */
export const BENCH_PAGES = {
  replay: 'src/bench/replay-page.html',
  policy: 'src/bench/policy-page.html',
  frames: 'src/bench/frames-page.html',
} as const;

/** The app's dependencies that Vite pre-bundles up front (as vite.config.ts lists them), so the page never reloads mid-run. */
const APP_DEPENDENCIES = ['zod', 'minisearch', 'idb', 'comlink', 'preact', 'preact/hooks', 'preact/compat', 'preact/jsx-runtime', '@preact/signals', 'uplot'] as const;

/** The repository root (Vite serves it, so the pages' `/src/...` paths resolve). */
export const REPO_ROOT = fileURLToPath(new URL('../..', import.meta.url));

export interface BenchPageOptions {
  /** The page, relative to the repository root (one of {@link BENCH_PAGES}). */
  page: string;
  /** The `window` property the page sets once its benchmark can be called. */
  ready: string;
  /** A persistent on-disk profile (IndexedDB on disk, as in a user's browser) instead of a throwaway one. */
  persistentProfile?: boolean;
  /** Serve with the app's cross-origin isolation headers (SharedArrayBuffer, threaded wasm). */
  crossOriginIsolated?: boolean;
  /** Skip Vite's dependency discovery (pages that import no pre-bundled dependency). */
  noDependencyDiscovery?: boolean;
  /** The page mounts the app's Preact components: compile their JSX and pre-bundle its dependencies as vite.config.ts does. */
  app?: boolean;
  /** How long the page may take to become ready (default 120 s). */
  readyTimeoutMs?: number;
  /** Progress lines (the page's console is forwarded here). */
  log: (line: string) => void;
}

/** Runs `fn` on a benchmark page in headless Chromium; closes the browser and server afterwards. */
export async function withBenchPage<T>(options: BenchPageOptions, fn: (page: Page, chromiumVersion: string) => Promise<T>): Promise<T> {
  const [{ createServer }, { chromium }] = await Promise.all([import('vite'), import('playwright-core')]);
  const tmp = await mkdtemp(join(tmpdir(), 'dreamgym-bench-'));
  const server = await createServer({
    root: REPO_ROOT,
    configFile: false,
    logLevel: 'silent',
    cacheDir: join(tmp, 'vite-cache'),
    server: {
      host: '127.0.0.1',
      port: 0,
      strictPort: false,
      hmr: false,
      watch: null,
      ...(options.crossOriginIsolated
        ? { headers: { 'Cross-Origin-Opener-Policy': 'same-origin', 'Cross-Origin-Embedder-Policy': 'require-corp' } }
        : {}),
    },
    worker: { format: 'es' },
    ...(options.noDependencyDiscovery ? { optimizeDeps: { noDiscovery: true, include: [] } } : {}),
    ...(options.app ? { oxc: { jsx: { runtime: 'automatic' as const, importSource: 'preact' } }, optimizeDeps: { include: [...APP_DEPENDENCIES] } } : {}),
  });
  const launch = { executablePath: chromiumExecutable(), args: [...CHROMIUM_ARGS] };
  let close: (() => Promise<void>) | null = null;
  try {
    await server.listen();
    const address = server.httpServer?.address() as AddressInfo | null;
    if (!address) throw new Error('vite dev server has no address');
    let page: Page;
    let version: string;
    if (options.persistentProfile) {
      const context = await chromium.launchPersistentContext(join(tmp, 'profile'), launch);
      close = () => context.close();
      page = context.pages()[0] ?? (await context.newPage());
      version = context.browser()?.version() ?? 'unknown version';
    } else {
      const browser = await chromium.launch(launch);
      close = () => browser.close();
      page = await browser.newPage();
      version = browser.version();
    }
    page.on('console', (msg) => options.log(`[chromium] ${msg.text()}`));
    await page.goto(`http://127.0.0.1:${address.port}/${options.page}`, { timeout: options.readyTimeoutMs ?? 120_000 });
    await page.waitForFunction((name) => (window as unknown as Record<string, unknown>)[name] !== undefined, options.ready, {
      timeout: options.readyTimeoutMs ?? 120_000,
    });
    return await fn(page, version);
  } finally {
    await close?.();
    await server.close();
    await rm(tmp, { recursive: true, force: true });
  }
}
