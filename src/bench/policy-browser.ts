/**
 * The CLI suite `policy-browser`: the policy benchmark in headless Chromium (wasm, and WebGPU
 * when an adapter exists), on src/bench/policy-page.html served by Vite's dev server with the
 * app's cross-origin isolation headers (so wasm can run multi-threaded, as in the app), driven by
 * playwright-core. Node only. On machines without a GPU the WebGPU adapter is SwiftShader, a CPU
 * emulator: its rows are labelled as such and are not GPU figures.
 */
import { BENCH_PAGES, withBenchPage } from './browser.ts';
import { policyBenchRows, type PolicyBenchMeasurement, type PolicyBenchOptions, type PolicyBenchRow } from './policy.ts';

/** Options passed to the page (sizes, dims, reps; backends default to wasm and WebGPU). */
export type PolicyBrowserBenchOptions = Partial<Omit<PolicyBenchOptions, 'wasmPaths' | 'log'>>;

/** Runs the policy benchmark in headless Chromium and returns its table rows. */
export async function benchPolicyBrowser(options: PolicyBrowserBenchOptions = {}): Promise<PolicyBenchRow[]> {
  const log = (line: string): void => void process.stderr.write(`  ${line}\n`);
  return withBenchPage({ page: BENCH_PAGES.policy, ready: 'policyBench', crossOriginIsolated: true, log }, async (page, version) => {
    const opts = { backends: ['wasm', 'webgpu'], ...options };
    const measurements = await page.evaluate(
      (o) => (window as unknown as { policyBench: (x: typeof o) => Promise<PolicyBenchMeasurement[]> }).policyBench(o),
      opts,
    );
    return policyBenchRows(measurements, 'Chromium', `Chromium ${version}`);
  });
}
