/**
 * The CLI suite `policy-dawn`: the policy benchmark in Node with WebGPU from Dawn, the WebGPU
 * implementation inside Chromium, built for Node by the `webgpu` npm package; wasm runs beside
 * it, interleaved as in the other policy suites. It exists to measure tfjs's WebGPU kernels on a
 * real GPU where no browser is installed (a GPU server): same kernels, same driver path (Dawn
 * over Vulkan), but without Chromium's GPU process, whose IPC adds a little to every submit and
 * read-back, so it is an upper bound for the page's speed on that GPU.
 *
 * `webgpu` is not a dependency: its tarball is 51 MB of prebuilt binaries for five platforms that
 * only this measurement needs. Install it next to the project first:
 * `npm install --no-save webgpu@0.6.2`. Dawn toggles can be passed in `DREAMGYM_DAWN_FLAGS`
 * (space-separated, e.g. `backend=vulkan`).
 */
import * as tf from '@tensorflow/tfjs';
import { probeAdapter } from '../policy/backend.ts';
import { backendLabel, measureBackendAgreement, policyBenchRows, measureGrpoThroughput, type PolicyBenchOptions, type PolicyBenchRow } from './policy.ts';

/** The Dawn build this suite was measured with. */
export const DAWN_PACKAGE = 'webgpu@0.6.2';

/** What this suite uses of the `webgpu` package. */
export interface DawnModule {
  create(flags: string[]): unknown;
  globals: Record<string, unknown>;
}

/** Thrown when Dawn for Node is not installed or exposes no adapter. */
export class DawnUnavailableError extends Error {
  override readonly name = 'DawnUnavailableError';
}

/** Imports the `webgpu` package (a variable specifier, so type checking and bundling do not require it). */
const importDawn = (): Promise<DawnModule> => {
  const specifier = 'webgpu';
  return import(specifier) as Promise<DawnModule>;
};

/**
 * Loads Dawn and exposes it as `navigator.gpu` with the WebGPU globals (`GPUBufferUsage`, ...),
 * which tfjs-backend-webgpu reads when it is first imported. `flags` are Dawn toggles, e.g.
 * `backend=vulkan`. Call before any import of the WebGPU backend. `load` is for tests.
 */
export async function installDawn(flags: string[] = [], load: () => Promise<DawnModule> = importDawn): Promise<void> {
  let dawn: DawnModule;
  try {
    dawn = await load();
  } catch (err) {
    throw new DawnUnavailableError(
      `bench policy-dawn needs Dawn for Node, which is not a dependency: run \`npm install --no-save ${DAWN_PACKAGE}\` (${(err as Error).message})`,
    );
  }
  Object.assign(globalThis, dawn.globals);
  const gpu = dawn.create(flags);
  // Node 20 has no navigator; Node 21+ has one without `gpu`.
  const nav = (globalThis as { navigator?: object }).navigator;
  if (nav) Object.defineProperty(nav, 'gpu', { value: gpu, configurable: true });
  else Object.defineProperty(globalThis, 'navigator', { value: { gpu }, configurable: true });
}

/** Runs the policy benchmark on wasm and Dawn's WebGPU in Node and returns its table rows. */
export async function benchPolicyDawn(options: Partial<PolicyBenchOptions> = {}): Promise<PolicyBenchRow[]> {
  tf.env().set('PROD', true);
  const flags = (process.env.DREAMGYM_DAWN_FLAGS ?? '').split(/\s+/).filter((f) => f);
  await installDawn(flags);
  const adapter = await probeAdapter();
  if (!adapter) throw new DawnUnavailableError('Dawn is installed but gives no WebGPU adapter (no Vulkan driver? see the lines above)');
  const log = options.log ?? ((line: string) => void process.stderr.write(`  ${line}\n`));
  // 2048 decisions beside the other suites' sizes: a GPU's advantage grows with the batch.
  const measurements = await measureGrpoThroughput({ sizes: [32, 128, 512, 2048], ...options, backends: options.backends ?? ['wasm', 'webgpu'], log });
  const where = `Node, Dawn ${DAWN_PACKAGE}`;
  const rows = policyBenchRows(measurements, where);
  const webgpu = measurements.find((m) => m.backend === 'webgpu');
  if (webgpu) {
    const agreement = await measureBackendAgreement('webgpu');
    const label = backendLabel(webgpu, where);
    const note = `${agreement.updates} GRPO updates of 128 decisions from the same seed`;
    rows.push(
      { name: `${label} vs wasm: largest loss difference`, value: agreement.maxLossDifference, unit: 'abs', note },
      { name: `${label} vs wasm: largest weight difference after the updates`, value: agreement.maxWeightDifference, unit: 'abs', note: `${note}; largest weight ${agreement.maxWeight.toPrecision(3)}` },
    );
  }
  return rows;
}
