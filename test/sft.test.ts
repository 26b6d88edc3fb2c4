import * as tf from '@tensorflow/tfjs';
import { beforeAll, describe, expect, it } from 'vitest';
import { chooseBackend } from '../src/policy/backend.ts';
import { prepareSftBatch, sftObjective } from '../src/rl/sft.ts';
import { syntheticDecisions } from '../src/rl/synthetic.ts';
import { Trainer } from '../src/rl/trainer.ts';

beforeAll(async () => {
  await chooseBackend({ prefer: 'cpu' });
});

describe('SFT objective by hand', () => {
  it('is the mean cross-entropy of the expert candidates; accuracy counts argmax hits', async () => {
    // Row 0: p = [0.7, 0.2, 0.1], expert 0. Row 1: p = [0.5, 0.5, pad], expert 1 (argmax is 0: a miss).
    const logp = tf.tensor2d([Math.log(0.7), Math.log(0.2), Math.log(0.1), Math.log(0.5), Math.log(0.5001), -1e9], [2, 3]);
    const out = sftObjective(logp, tf.tensor1d([0, 1], 'int32'), tf.tensor2d([1, 1, 1, 1, 1, 0], [2, 3]), tf.tensor1d([0.5, 0.5]));
    expect((await out.loss.data())[0]).toBeCloseTo((-Math.log(0.7) - Math.log(0.5001)) / 2, 5);
    expect((await out.metrics.accuracy.data())[0]).toBe(1);
    const entropy = -(0.7 * Math.log(0.7) + 0.2 * Math.log(0.2) + 0.1 * Math.log(0.1)) - (0.5 * Math.log(0.5) + 0.5001 * Math.log(0.5001));
    expect((await out.metrics.entropy.data())[0]).toBeCloseTo(entropy / 2, 4);
  });
});

describe('SFT update', () => {
  it('fits expert choices on synthetic decisions', async () => {
    const decisions = syntheticDecisions({ count: 40, stateDim: 16, actionDim: 16, minCandidates: 2, maxCandidates: 6, seed: 21 });
    const examples = decisions.map((d, i) => ({ ...d, action: i % d.candidates.length }));
    expect(prepareSftBatch(examples, { stateDim: 16, actionDim: 16 }).weights[0]).toBeCloseTo(1 / 40, 8);
    const trainer = new Trainer({ policy: { stateDim: 16, actionDim: 16, hiddenDim: 16 }, optimizer: { learningRate: 0.02 }, minibatchSize: 20 });
    const first = await trainer.sftUpdate(examples);
    let last = first;
    for (let i = 0; i < 60; i++) last = await trainer.sftUpdate(examples);
    expect(first.minibatches).toBe(2);
    expect(last.loss).toBeLessThan(first.loss / 4);
    expect(last.accuracy).toBe(1);
    expect(() => prepareSftBatch([], { stateDim: 16, actionDim: 16 })).toThrow(/no examples/);
    await expect(trainer.sftUpdate([{ ...examples[0]!, action: 9 }])).rejects.toThrow(/row 0 takes candidate 9/);
    trainer.dispose();
  });
});

describe('SFT rows across epochs', () => {
  it('the same examples array is packed once and trains as fresh copies would; a longer array is packed again', async () => {
    const decisions = syntheticDecisions({ count: 30, stateDim: 16, actionDim: 16, minCandidates: 2, maxCandidates: 6, seed: 22 });
    const examples = decisions.map((d, i) => ({ ...d, action: i % d.candidates.length }));
    const make = () => new Trainer({ policy: { stateDim: 16, actionDim: 16, hiddenDim: 16, seed: 3 }, optimizer: { learningRate: 0.02 }, minibatchSize: 8 });
    const reused = make();
    const fresh = make();
    for (let epoch = 0; epoch < 3; epoch++) {
      const a = await reused.sftUpdate(examples);
      const b = await fresh.sftUpdate(examples.slice());
      expect(a.loss).toBe(b.loss);
      expect(a.accuracy).toBe(b.accuracy);
    }
    const weights = async (t: Trainer) => (await t.head.exportWeights(true)).map((w) => Array.from(w.data));
    expect(await weights(reused)).toEqual(await weights(fresh));
    // The array grows (the same object): its rows are prepared again, with the new example in them.
    examples.push({ ...(decisions[0] as (typeof decisions)[number]), action: 0 });
    expect((await reused.sftUpdate(examples)).rows).toBe(31);
    reused.dispose();
    fresh.dispose();
  });
});

