import * as tf from '@tensorflow/tfjs';
import { describe, expect, it } from 'vitest';
import { Rng } from '../src/core/rng.ts';
import { RewardModel, type RewardExample } from '../src/experience/retrieval/reward-model.ts';

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

  it('expects a partial reward from the steps that did not complete the task, not from the successes beside them', async () => {
    // One screen, two outcomes the model cannot tell apart: 80% of purchases complete the task
    // (reward 1), the rest earn 0.5 (an option wrong). The reward a non-completing purchase earns
    // is 0.5; learned from all of them, it read 0.9, and a simulator paid about that for every
    // wrong purchase, so a success and a near miss looked alike to a policy learning there.
    const rng = new Rng(4);
    const data: RewardExample[] = Array.from({ length: 500 }, () => {
      const buy = rng.chance(0.5);
      const success = buy && rng.chance(0.8);
      return { instruction: 'i need a red lamp', state: 'item page: red lamp, price 10 dollars', action: buy ? 'click[buy now]' : 'click[description]', reward: buy ? (success ? 1 : 0.5) : 0, success };
    });
    const model = await RewardModel.train(data, { epochs: 60, seed: 2 });
    const [buy, look] = await model.predictOutcomes([
      { instruction: 'i need a red lamp', state: 'item page: red lamp, price 10 dollars', action: 'click[buy now]' },
      { instruction: 'i need a red lamp', state: 'item page: red lamp, price 10 dollars', action: 'click[description]' },
    ]);
    expect(buy?.success).toBeGreaterThan(0.7);
    expect(buy?.success).toBeLessThan(0.9);
    expect(buy?.partialReward).toBeGreaterThan(0.4);
    expect(buy?.partialReward).toBeLessThan(0.6);
    // The expected reward is success plus the partial reward of the rest.
    expect(buy?.reward).toBeCloseTo((buy?.success ?? 0) + (1 - (buy?.success ?? 0)) * (buy?.partialReward ?? 0), 6);
    expect(look?.success).toBeLessThan(0.1);
    expect(look?.partialReward).toBeLessThan(0.1);
    model.dispose();
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
