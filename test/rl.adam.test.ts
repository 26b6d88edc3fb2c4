import * as tf from '@tensorflow/tfjs';
import { beforeAll, describe, expect, it } from 'vitest';
import { chooseBackend } from '../src/policy/backend.ts';
import { CheckpointError } from '../src/policy/checkpoint.ts';
import { Adam, clipByGlobalNorm } from '../src/rl/adam.ts';

beforeAll(async () => {
  await chooseBackend({ prefer: 'cpu' });
});

const config = { learningRate: 0.1, beta1: 0.9, beta2: 0.999, epsilon: 1e-8 };

describe('Adam', () => {
  it('matches two hand-computed steps', async () => {
    const p = tf.variable(tf.tensor1d([1, 2]));
    const adam = new Adam(new Map([['p', p]]), config);
    const g1 = tf.tensor1d([0.5, -2]);
    adam.apply(new Map([['p', g1]]));
    // Step 1: m-hat = g, v-hat = g^2, so the step is lr * sign(g).
    expect(Array.from(await p.data())).toEqual([expect.closeTo(0.9, 6), expect.closeTo(2.1, 6)]);
    const g2 = tf.tensor1d([-1, -2]);
    adam.apply(new Map([['p', g2]]));
    // Step 2, first coordinate: m = 0.9*0.05 + 0.1*(-1) = -0.055, v = 0.999*0.00025 + 0.001*1 = 0.00124975,
    // m-hat = -0.055/0.19 = -0.289474, v-hat = 0.00124975/0.001999 = 0.625188, step = -0.1*(-0.289474/0.790688).
    expect((await p.data())[0]).toBeCloseTo(0.9 + 0.1 * (0.289474 / 0.790688), 5);
    expect(adam.step).toBe(2);
    tf.dispose([p, g1, g2]);
    adam.dispose();
  });

  it('leaves parameters without a gradient untouched and refuses unknown names', async () => {
    const a = tf.variable(tf.scalar(1));
    const b = tf.variable(tf.scalar(1));
    const adam = new Adam(
      new Map([
        ['a', a],
        ['b', b],
      ]),
      config,
    );
    const g = tf.scalar(1);
    adam.apply(new Map([['a', g]]));
    expect((await b.data())[0]).toBe(1);
    expect(() => adam.apply(new Map([['c', g]]))).toThrow(/unknown parameter "c"/);
    tf.dispose([a, b, g]);
    adam.dispose();
  });

  it('exports and restores its state; refuses a state that does not fit', async () => {
    const p = tf.variable(tf.tensor1d([1, 2, 3]));
    const adam = new Adam(new Map([['p', p]]), config);
    const g = tf.tensor1d([1, -1, 0.5]);
    adam.apply(new Map([['p', g]]));
    const state = await adam.exportState();
    expect(state.step).toBe(1);
    expect(state.slots.map((s) => s.name)).toEqual(['m/p', 'v/p']);
    const q = tf.variable(tf.tensor1d([1, 2, 3]));
    const restored = new Adam(new Map([['p', q]]), config);
    restored.importState(state);
    adam.apply(new Map([['p', g]]));
    restored.apply(new Map([['p', g]]));
    expect(Array.from((await restored.exportState()).slots[1]?.data as Float32Array)).toEqual(Array.from((await adam.exportState()).slots[1]?.data as Float32Array));
    const wrong = { ...state, slots: [{ ...state.slots[0]!, shape: [2], data: new Float32Array(2) }, state.slots[1]!] };
    expect(() => restored.importState(wrong)).toThrow(CheckpointError);
    expect(() => restored.importState({ ...state, slots: [] })).toThrow(/m\/p is missing/);
    // A refused state changes nothing, not even the slots that did fit.
    const mBefore = Array.from((await restored.exportState()).slots[0]?.data as Float32Array);
    const shortV = { ...state, step: 99, slots: [state.slots[0]!, { ...state.slots[1]!, data: new Float32Array(2) }] };
    expect(() => restored.checkState(shortV)).toThrow(/v\/p has 2 values for 3/);
    expect(() => restored.importState({ ...state, slots: [{ ...state.slots[0]!, data: new Float32Array(3).fill(7) }, shortV.slots[1]!] })).toThrow(CheckpointError);
    expect(Array.from((await restored.exportState()).slots[0]?.data as Float32Array)).toEqual(mBefore);
    expect(restored.step).toBe(2);
    expect(() => restored.checkState({ ...state, step: -1 })).toThrow(/step .* got -1/);
    tf.dispose([p, q, g]);
    adam.dispose();
    restored.dispose();
  });

  it('checks its hyper-parameters', () => {
    const m = new Map<string, tf.Variable>();
    expect(() => new Adam(m, { ...config, epsilon: 0 })).toThrow(/epsilon must be > 0, got 0/);
    expect(() => new Adam(m, { ...config, beta1: 1 })).toThrow(/beta1 .* got 1/);
  });
});

describe('clipByGlobalNorm', () => {
  it('scales gradients to the threshold only when above it', async () => {
    const grads = new Map([
      ['a', tf.tensor1d([3, 0])],
      ['b', tf.tensor1d([4])],
    ]);
    const above = clipByGlobalNorm(grads, 1);
    expect((await above.norm.data())[0]).toBeCloseTo(5, 6);
    expect(Array.from(await (above.grads.get('a') as tf.Tensor).data())).toEqual([expect.closeTo(0.6, 6), 0]);
    const below = clipByGlobalNorm(grads, 10);
    expect(Array.from(await (below.grads.get('b') as tf.Tensor).data())).toEqual([4]);
    const off = clipByGlobalNorm(grads, Number.POSITIVE_INFINITY);
    expect(off.grads.get('a')).toBe(grads.get('a'));
    expect(() => clipByGlobalNorm(grads, 0)).toThrow(/got 0/);
  });
});
