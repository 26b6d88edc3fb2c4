/**
 * Backends in Chromium: the automatic choice next to a SwiftShader (fallback) WebGPU adapter,
 * WebGPU-vs-wasm agreement of the same update, and recovery from a destroyed GPU device.
 * SwiftShader is a CPU emulator: these tests are about correctness, never speed.
 */
import * as tf from '@tensorflow/tfjs';
import { describe, expect, it } from 'vitest';
import { chooseBackend, currentGpuDevice } from '../src/policy/backend.ts';
import type { TensorRecord } from '../src/policy/checkpoint.ts';
import { TFJS_WASM_PATHS } from '../src/policy/wasm-urls.ts';
import { TrainingSession } from '../src/rl/session.ts';
import { syntheticGrpoBatch } from '../src/rl/synthetic.ts';
import { Trainer, type TrainerConfigInput } from '../src/rl/trainer.ts';

const dims = { stateDim: 16, actionDim: 16 };
const config: TrainerConfigInput = {
  policy: { ...dims, hiddenDim: 8, seed: 5 },
  optimizer: { learningRate: 3e-3, epsilon: 1e-8 },
  grpo: { beta: 0.04, entropyCoef: 0.01 },
  minibatchSize: 64,
};
const batch = syntheticGrpoBatch({ groups: 2, groupSize: 4, maxSteps: 2, ...dims, minCandidates: 2, maxCandidates: 6, withPrior: true, seed: 6 });

function maxAbsDiff(a: readonly TensorRecord[], b: readonly TensorRecord[]): number {
  let m = 0;
  a.forEach((r, i) => r.data.forEach((x, j) => (m = Math.max(m, Math.abs(x - (b[i]?.data[j] as number))))));
  return m;
}

describe('backend choice in Chromium', () => {
  it('auto prefers wasm to a fallback (SwiftShader) adapter and reports the adapter', async () => {
    const report = await chooseBackend({ wasmPaths: TFJS_WASM_PATHS });
    console.info(`[backend] ${JSON.stringify(report)}`);
    expect(report.adapter).not.toBeNull();
    expect(report.adapter?.isFallbackAdapter).toBe(true);
    expect(report.backend).toBe('wasm');
    expect(report.reason).toMatch(/fallback/);
  });
});

describe('WebGPU (SwiftShader) vs wasm', () => {
  it('the same GRPO updates give parameters that agree within 1e-3', async () => {
    const run = async (backend: 'webgpu' | 'wasm') => {
      const report = await chooseBackend({ prefer: backend, wasmPaths: TFJS_WASM_PATHS });
      expect(report.backend).toBe(backend);
      const t = new Trainer(config);
      // Three updates: Adam's first step is lr * sign(g) whatever the gradient's size, later ones are not.
      await t.grpoUpdate(batch);
      await t.grpoUpdate(batch);
      const m = await t.grpoUpdate(batch);
      const weights = await t.head.exportWeights();
      t.dispose();
      return { weights, m };
    };
    const wasm = await run('wasm');
    const gpu = await run('webgpu');
    const diff = maxAbsDiff(wasm.weights, gpu.weights);
    console.info(`[parity] WebGPU (SwiftShader) vs wasm after three GRPO updates: max |diff| = ${diff.toExponential(2)}; loss ${wasm.m.loss} vs ${gpu.m.loss}`);
    expect(Number.isFinite(gpu.m.loss)).toBe(true);
    expect(diff).toBeLessThan(1e-3);
  });
});

describe('lost GPU device', () => {
  it('recreates the backend, reloads the last checkpoint and the next update works', async () => {
    const session = await TrainingSession.start({ config, backend: 'webgpu', wasmPaths: TFJS_WASM_PATHS, checkpointEvery: 1 });
    expect(session.info().backend.backend).toBe('webgpu');
    await session.grpo(batch); // checkpoint at iteration 1
    const device = currentGpuDevice();
    expect(device).not.toBeNull();
    device?.destroy();
    const lost = await device?.lost;
    expect(lost?.reason).toBe('destroyed');
    const m = await session.grpo(batch);
    const info = session.info();
    console.info(`[device-loss] recoveries ${JSON.stringify(info.recoveries)}; backend now ${info.backend.backend}`);
    expect(info.recoveries).toHaveLength(1);
    expect(info.recoveries[0]).toMatchObject({ from: 'webgpu', iteration: 1, fresh: false });
    expect(['webgpu', 'wasm']).toContain(info.recoveries[0]?.to);
    expect(m.iteration).toBe(2);
    expect(Number.isFinite(m.loss)).toBe(true);
    expect(tf.getBackend()).toBe(info.backend.backend);
    session.dispose();
  });
});
