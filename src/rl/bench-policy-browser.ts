/**
 * The CLI suite `policy-browser`: the policy benchmark in headless Chromium (wasm, and WebGPU
 * when an adapter exists), on a page served by Vite's dev server with the app's cross-origin
 * isolation headers (so wasm runs multi-threaded, as in the app), driven by playwright-core.
 * Node only. On machines without a GPU the WebGPU adapter is SwiftShader, a CPU emulator: its
 * rows are labelled as such and are not GPU figures.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { policyBenchRows, type PolicyBenchMeasurement, type PolicyBenchOptions, type PolicyBenchRow } from './bench-policy.ts';
import { CHROMIUM_ARGS, chromiumExecutable } from '../cli/chromium.ts';


/** Options passed to the page (sizes, dims, reps; backends default to wasm and WebGPU). */
export type PolicyBrowserBenchOptions = Partial<Omit<PolicyBenchOptions, 'wasmPaths' | 'log'>>;

/** Runs the policy benchmark in headless Chromium and returns its table rows. */
export async function benchPolicyBrowser(options: PolicyBrowserBenchOptions = {}): Promise<PolicyBenchRow[]> {
  const [{ createServer }, { chromium }] = await Promise.all([import('vite'), import('playwright-core')]);
  const log = (line: string): void => void process.stderr.write(`  ${line}\n`);
  const root = fileURLToPath(new URL('../..', import.meta.url));
  const tmp = await mkdtemp(join(tmpdir(), 'dreamgym-policy-bench-'));
  const server = await createServer({
    root,
    configFile: false,
    logLevel: 'silent',
    cacheDir: join(tmp, 'vite-cache'),
    server: {
      host: '127.0.0.1',
      port: 0,
      strictPort: false,
      hmr: false,
      watch: null,
      headers: { 'Cross-Origin-Opener-Policy': 'same-origin', 'Cross-Origin-Embedder-Policy': 'require-corp' },
    },
    worker: { format: 'es' },
  });
  let browser: Awaited<ReturnType<typeof chromium.launch>> | null = null;
  try {
    await server.listen();
    const address = server.httpServer?.address() as AddressInfo | null;
    if (!address) throw new Error('vite dev server has no address');
    browser = await chromium.launch({ executablePath: chromiumExecutable(), args: [...CHROMIUM_ARGS] });
    const page = await browser.newPage();
    page.on('console', (msg) => log(`[chromium] ${msg.text()}`));
    await page.goto(`http://127.0.0.1:${address.port}/src/rl/bench-page.html`);
    await page.waitForFunction(() => (window as unknown as { policyBench?: unknown }).policyBench !== undefined, undefined, { timeout: 120_000 });
    const opts = { backends: ['wasm', 'webgpu'], ...options };
    const measurements = await page.evaluate(
      (o) => (window as unknown as { policyBench: (x: typeof o) => Promise<PolicyBenchMeasurement[]> }).policyBench(o),
      opts,
    );
    return policyBenchRows(measurements, 'Chromium', `Chromium ${browser.version()}`);
  } finally {
    await browser?.close();
    await server.close();
    await rm(tmp, { recursive: true, force: true });
  }
}
