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


describe('weighted SFT rows (reward-weighted cloning)', () => {
  it("weights each row by its example's weight, normalised to sum 1; a weight of 0 leaves a row out of the loss", async () => {
    const decisions = syntheticDecisions({ count: 4, stateDim: 8, actionDim: 8, minCandidates: 2, maxCandidates: 4, seed: 5 });
    const examples = decisions.map((d, i) => ({ ...d, action: 0, weight: [1, 0.5, 0, 0.5][i] as number }));
    expect(Array.from(prepareSftBatch(examples, { stateDim: 8, actionDim: 8 }).weights)).toEqual([0.5, 0.25, 0, 0.25]);
    // Unweighted examples count alike, as before.
    expect(Array.from(prepareSftBatch(decisions.map((d) => ({ ...d, action: 0 })), { stateDim: 8, actionDim: 8 }).weights)).toEqual([0.25, 0.25, 0.25, 0.25]);
    expect(() => prepareSftBatch([{ ...examples[0]!, weight: -1 }], { stateDim: 8, actionDim: 8 })).toThrow(/SFT example 0 has weight -1/);
    expect(() => prepareSftBatch([{ ...examples[0]!, weight: Number.NaN }], { stateDim: 8, actionDim: 8 })).toThrow(/weight NaN/);
    expect(() => prepareSftBatch([{ ...examples[2]! }], { stateDim: 8, actionDim: 8 })).toThrow(/weighs 0 in all/);
    // A row of weight 0 does not move the policy: training on it alone with another is training on the other alone.
    const make = () => new Trainer({ policy: { stateDim: 8, actionDim: 8, hiddenDim: 8, seed: 4 }, optimizer: { learningRate: 0.05 }, minibatchSize: 8 });
    const [a, b] = [make(), make()];
    await a.sftUpdate([{ ...decisions[0]!, action: 1, weight: 1 }, { ...decisions[1]!, action: 1, weight: 0 }]);
    await b.sftUpdate([{ ...decisions[0]!, action: 1 }]);
    const weights = async (t: Trainer) => (await t.head.exportWeights(true)).map((w) => Array.from(w.data));
    const [wa, wb] = [await weights(a), await weights(b)];
    for (let i = 0; i < wa.length; i++) for (let j = 0; j < wa[i]!.length; j++) expect(wa[i]![j]).toBeCloseTo(wb[i]![j]!, 5);
    a.dispose();
    b.dispose();
  });
});
