/**
 * The page of the `policy-browser` benchmark (src/bench/policy-browser.ts): exposes
 * `window.policyBench(options)`, which times GRPO updates in this page with the wasm binaries
 * served by Vite, and returns the measurements as plain data.
 */
import { TFJS_WASM_PATHS } from '../policy/wasm-urls.ts';
import { measureGrpoThroughput, type PolicyBenchMeasurement, type PolicyBenchOptions } from './policy.ts';

declare global {
  interface Window {
    policyBench?: (options: Omit<PolicyBenchOptions, 'wasmPaths' | 'log'>) => Promise<PolicyBenchMeasurement[]>;
  }
}

window.policyBench = (options) => measureGrpoThroughput({ ...options, wasmPaths: TFJS_WASM_PATHS, log: (line) => console.log(line) });
const status = document.getElementById('status');
if (status) status.textContent = 'ready';
console.log(`policy bench page: crossOriginIsolated=${String(globalThis.crossOriginIsolated)}, hardwareConcurrency=${navigator.hardwareConcurrency}`);
