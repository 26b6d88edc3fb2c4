import * as tf from '@tensorflow/tfjs';
import { describe, expect, it } from 'vitest';
import { Rng } from '../src/core/rng.ts';
import { RewardModel, type RewardExample } from '../src/experience/reward-model.ts';

const COLOURS = ['red', 'blue', 'green', 'black', 'white', 'yellow', 'pink', 'gray'];
const THINGS = ['shirt', 'lamp', 'mug', 'sofa', 'kettle', 'chair'];

/** Reward 1 only for buying, and only when the item on screen has the colour the instruction asks for. */
function examples(n: number, seed: number): RewardExample[] {
  const rng = new Rng(seed);
  return Array.from({ length: n }, () => {
    const want = rng.pick(COLOURS);
    const shown = rng.chance(0.5) ? want : rng.pick(COLOURS);
    const thing = rng.pick(THINGS);
    const buy = rng.chance(0.5);
    return {
      instruction: `i need a ${want} ${thing}`,
      state: `item page: ${shown} ${thing}, price 10 dollars`,
      action: buy ? 'click[buy now]' : 'click[description]',
      reward: buy && shown === want ? 1 : 0,
    };
  });
}

describe('RewardModel', () => {
  it('learns an outcome rule that depends on instruction-state overlap and the action', async () => {
    const before = tf.memory().numTensors;
    const model = await RewardModel.train(examples(600, 1), { epochs: 40, seed: 3 });
    const test = examples(200, 2);
    const predicted = await model.predict(test);
    const accuracy = predicted.filter((p, i) => (p >= 0.5 ? 1 : 0) === test[i]?.reward).length / test.length;
    expect(accuracy).toBeGreaterThanOrEqual(0.9);
    expect(predicted.every((p) => p >= 0 && p <= 1)).toBe(true);
    expect(model.report.examples).toBe(600);
    expect(model.report.finalLoss).toBeLessThan(0.3);
    model.dispose();
    expect(tf.memory().numTensors).toBe(before);
  });

  it('is deterministic for a seed', async () => {
    const data = examples(100, 5);
    const a = await RewardModel.train(data, { epochs: 3, seed: 9 });
    const b = await RewardModel.train(data, { epochs: 3, seed: 9 });
    expect(await a.predict(data.slice(0, 5))).toEqual(await b.predict(data.slice(0, 5)));
    a.dispose();
    b.dispose();
  });

  it('rejects empty data and rewards outside [0, 1]', async () => {
    await expect(RewardModel.train([])).rejects.toThrow(/at least one example, got 0/);
    await expect(RewardModel.train([{ instruction: 'a', state: 'b', action: 'c', reward: 2 }])).rejects.toThrow(/got 2/);
  });
});
