import * as tf from '@tensorflow/tfjs';
import '@tensorflow/tfjs-backend-wasm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chooseBackend } from '../src/policy/backend.ts';
import { headScores, PolicyHead, tensorLayout } from '../src/policy/head.ts';
import { inputTensors, packDecisions } from '../src/policy/input.ts';
import { syntheticDecisions } from '../src/rl/synthetic.ts';
import { installRowCopyGather, rowCopyGather, uninstallRowCopyGather } from '../src/policy/wasm-gather.ts';

/** `f` run with the wasm backend's own gather, then with the row-copy one. */
function both<T>(f: () => T): { original: T; rowCopy: T } {
  uninstallRowCopyGather();
  const original = f();
  installRowCopyGather();
  const rowCopy = f();
  return { original, rowCopy };
}

function values(t: tf.Tensor): number[] {
  return Array.from(t.dataSync());
}

/** Where two arrays differ: how many entries and the first (a deep diff of large arrays is slow to print). */
function mismatch(a: readonly number[], b: readonly number[]): string {
  if (a.length !== b.length) return `lengths ${a.length} and ${b.length}`;
  let count = 0;
  let first = -1;
  for (let i = 0; i < a.length; i++) {
    if (!Object.is(a[i], b[i])) {
      count++;
      if (first < 0) first = i;
    }
  }
  return count === 0 ? 'none' : `${count} entries, first at ${first}: ${a[first]} vs ${b[first]}`;
}

function pseudoRandomIndices(count: number, rows: number, salt: number): number[] {
  return Array.from({ length: count }, (_, i) => (i * 7919 + salt * 104729) % rows);
}

describe('row-copy GatherV2 on the wasm backend', () => {
  beforeAll(async () => {
    const report = await chooseBackend({ prefer: 'wasm' });
    expect(report.backend).toBe('wasm');
  });
  afterAll(() => {
    installRowCopyGather();
  });

  it('is what chooseBackend installs, once, and uninstalling restores the original kernel', () => {
    const installed = tf.getKernel('GatherV2', 'wasm')?.kernelFunc;
    expect(installRowCopyGather()).toBe(true);
    expect(tf.getKernel('GatherV2', 'wasm')?.kernelFunc).toBe(installed);
    expect(uninstallRowCopyGather()).toBe(true);
    const original = tf.getKernel('GatherV2', 'wasm')?.kernelFunc;
    expect(original).not.toBe(installed);
    expect(uninstallRowCopyGather()).toBe(false);
    expect(installRowCopyGather()).toBe(true);
    expect(tf.getKernel('GatherV2', 'wasm')?.kernelFunc).not.toBe(original);
  });

  it('gives the original kernel bit for bit: rows, scalars, int32 and bool data, 3-d input, a negative axis, 2-d and empty indices', () => {
    const before = tf.memory().numTensors;
    const cases: [string, () => tf.Tensor][] = [
      ['float rows', () => tf.gather(tf.randomNormal([300, 64], 0, 1, 'float32', 1), tf.tensor1d(pseudoRandomIndices(5000, 300, 1), 'int32'))],
      ['scalars', () => tf.gather(tf.randomNormal([301], 0, 1, 'float32', 2), tf.tensor1d(pseudoRandomIndices(900, 301, 2), 'int32'))],
      ['short rows', () => tf.gather(tf.randomNormal([50, 3], 0, 1, 'float32', 3), tf.tensor1d(pseudoRandomIndices(77, 50, 3), 'int32'))],
      ['int32 data', () => tf.gather(tf.range(0, 400, 1, 'int32').reshape([100, 4]), tf.tensor1d(pseudoRandomIndices(60, 100, 4), 'int32'))],
      ['bool data', () => tf.gather(tf.greater(tf.randomNormal([40, 20], 0, 1, 'float32', 5), 0), tf.tensor1d(pseudoRandomIndices(33, 40, 5), 'int32'))],
      ['3-d input', () => tf.gather(tf.randomNormal([20, 5, 7], 0, 1, 'float32', 6), tf.tensor1d(pseudoRandomIndices(31, 20, 6), 'int32'))],
      ['axis -2 of a matrix', () => tf.gather(tf.randomNormal([30, 16], 0, 1, 'float32', 7), tf.tensor1d(pseudoRandomIndices(45, 30, 7), 'int32'), -2)],
      ['2-d indices', () => tf.gather(tf.randomNormal([30, 16], 0, 1, 'float32', 8), tf.tensor2d(pseudoRandomIndices(24, 30, 8), [6, 4], 'int32'))],
      ['empty indices', () => tf.gather(tf.randomNormal([30, 16], 0, 1, 'float32', 9), tf.tensor1d([], 'int32'))],
      ['axis 1 (handed to the original)', () => tf.gather(tf.randomNormal([30, 16], 0, 1, 'float32', 10), tf.tensor1d(pseudoRandomIndices(40, 16, 10), 'int32'), 1)],
      ['batch dims (handed to the original)', () => tf.gather(tf.randomNormal([4, 10, 3], 0, 1, 'float32', 11), tf.tensor2d(pseudoRandomIndices(20, 10, 11), [4, 5], 'int32'), 1, 1)],
    ];
    for (const [name, run] of cases) {
      const { original, rowCopy } = both(() => tf.tidy(() => {
        const out = run();
        return { shape: out.shape, dtype: out.dtype, data: values(out) };
      }));
      expect({ shape: rowCopy.shape, dtype: rowCopy.dtype }, name).toEqual({ shape: original.shape, dtype: original.dtype });
      expect(mismatch(rowCopy.data, original.data), name).toBe('none');
      expect(rowCopy.data.length, name).toBe(rowCopy.shape.reduce((a, b) => a * b, 1));
    }
    expect(tf.memory().numTensors).toBe(before);
  });

  it('an index out of range throws with the bad value and leaves no tensor or heap memory behind', () => {
    installRowCopyGather();
    const x = tf.randomNormal([10, 8]);
    const bad = tf.tensor1d([0, 3, 10, 2], 'int32');
    const negative = tf.tensor1d([1, -1], 'int32');
    const tensors = tf.memory().numTensors;
    const bytes = tf.memory().numBytes;
    expect(() => tf.gather(x, bad)).toThrow(/index value 10 is not in \[0, 9\]/);
    expect(() => tf.gather(x, negative)).toThrow(/index value -1 is not in \[0, 9\]/);
    expect(tf.memory().numTensors).toBe(tensors);
    expect(tf.memory().numBytes).toBe(bytes);
    tf.dispose([x, bad, negative]);
  });

  it("the policy head's scores and parameter gradients (split lead rows, product interaction) are unchanged", () => {
    const decisions = syntheticDecisions({ count: 40, stateDim: 24, actionDim: 16, minCandidates: 1, maxCandidates: 9, seed: 4 });
    const input = packDecisions(decisions);
    const head = new PolicyHead({ stateDim: 24, actionDim: 16, hiddenDim: 8, interaction: 'product', leadDim: 6, seed: 2 });
    const before = tf.memory().numTensors;
    const { original, rowCopy } = both(() =>
      tf.tidy(() => {
        const tensors = inputTensors(input, tensorLayout(head.config));
        const { value, grads } = tf.variableGrads(() => tf.sum(tf.mul(headScores(head.params(), tensors, head.config), tensors.mask)) as tf.Scalar);
        return { value: value.dataSync()[0], grads: Object.fromEntries(Object.entries(grads).map(([k, g]) => [k, values(g)])) };
      }),
    );
    expect(rowCopy.value).toBe(original.value);
    expect(Object.keys(rowCopy.grads)).toEqual(Object.keys(original.grads));
    for (const [name, g] of Object.entries(rowCopy.grads)) expect(mismatch(g, original.grads[name] as number[]), name).toBe('none');
    expect(Object.keys(rowCopy.grads).length).toBeGreaterThan(3);
    expect(Object.values(rowCopy.grads).flat().some((g) => g !== 0)).toBe(true);
    expect(tf.memory().numTensors).toBe(before);
    head.dispose();
  });

  it('copies rows itself for axis 0 and hands every other case to the original kernel', () => {
    uninstallRowCopyGather();
    const own = tf.getKernel('GatherV2', 'wasm') as tf.KernelConfig;
    let handedOver = 0;
    const counting = rowCopyGather((args) => {
      handedOver++;
      return own.kernelFunc(args);
    });
    tf.unregisterKernel('GatherV2', 'wasm');
    tf.registerKernel({ ...own, kernelFunc: counting });
    try {
      tf.tidy(() => {
        const x = tf.range(0, 40).reshape([10, 4]);
        expect(values(tf.gather(x, tf.tensor1d([2, 0], 'int32')))).toEqual([8, 9, 10, 11, 0, 1, 2, 3]);
        expect(handedOver).toBe(0);
        expect(values(tf.gather(x, tf.tensor1d([3, 0], 'int32'), 1))).toEqual([3, 0, 7, 4, 11, 8, 15, 12, 19, 16, 23, 20, 27, 24, 31, 28, 35, 32, 39, 36]);
        expect(handedOver).toBe(1);
      });
    } finally {
      tf.unregisterKernel('GatherV2', 'wasm');
      tf.registerKernel(own);
      installRowCopyGather();
    }
  });
});
