import * as tf from '@tensorflow/tfjs';
import { beforeAll, describe, expect, it } from 'vitest';
import { Rng } from '../src/core/rng.ts';
import { chooseBackend } from '../src/policy/backend.ts';
import { PolicyHead } from '../src/policy/head.ts';
import { inputTensors } from '../src/policy/input.ts';
import { gae, ppoInput, ppoLoss, ppoObjective, PpoConfigSchema, preparePpoBatch, type PpoBatch } from '../src/rl/ppo.ts';
import { syntheticDecisions, syntheticPpoBatch } from '../src/rl/synthetic.ts';
import { Trainer } from '../src/rl/trainer.ts';
import type { LossContext } from '../src/rl/update.ts';
import { checkGradients } from './fixtures/gradient-check.ts';

beforeAll(async () => {
  await chooseBackend({ prefer: 'cpu' });
});

describe('gae', () => {
  it('matches hand-computed advantages and returns', () => {
    // delta = [0 + .9*.6 - .5, 0 + .9*.7 - .6, 1 + 0 - .7] = [.04, .03, .3]; A_t = delta_t + .72 A_{t+1}.
    const r = gae([0, 0, 1], [0.5, 0.6, 0.7], 0.9, 0.8);
    expect(r.advantages.map((x) => Number(x.toFixed(6)))).toEqual([0.21712, 0.246, 0.3]);
    expect(r.returns.map((x) => Number(x.toFixed(6)))).toEqual([0.71712, 0.846, 1]);
  });
  it('bootstraps a cut-off trajectory from V after the last step', () => {
    const r = gae([0, 0, 1], [0.5, 0.6, 0.7], 0.9, 0.8, 2);
    expect(r.advantages.map((x) => Number(x.toFixed(6)))).toEqual([1.15024, 1.542, 2.1]);
  });
  it('with gamma = lambda = 1 gives Monte-Carlo returns minus V', () => {
    expect(gae([0, 0, 1], [0.5, 0.6, 0.7], 1, 1).advantages.map((x) => Number(x.toFixed(6)))).toEqual([0.5, 0.4, 0.3]);
  });
  it('checks its arguments', () => {
    expect(() => gae([1], [1, 2], 0.9, 0.9)).toThrow(/1 rewards but 2 values/);
    expect(() => gae([1], [1], 1.5, 0.9)).toThrow(/gamma .* got 1.5/);
  });
});

describe('PPO objective by hand', () => {
  // ratio = [e^0.2 = 1.2214028, 1]; A = [2, -1]; clip 0.2.
  // policy: max(-A rho, -A clip(rho)) = [max(-2.4428, -2.4) = -2.4, 1].
  // value: V = [1, 0], V_old = [0.5, 0.1], R = [2, -0.5].
  //   clipped: 0.5 max((1-2)^2, (0.7-2)^2) = 0.845 and 0.5 max(0.25, 0.25) = 0.125; unclipped: 0.5 and 0.125.
  const terms = () => ({
    logProbs: tf.tensor1d([-0.5, -1.0]),
    oldLogProbs: tf.tensor1d([-0.7, -1.0]),
    advantages: tf.tensor1d([2, -1]),
    entropy: tf.tensor1d([1, 0.5]),
    values: tf.tensor1d([1, 0]),
    oldValues: tf.tensor1d([0.5, 0.1]),
    returns: tf.tensor1d([2, -0.5]),
  });
  const run = async (clipValueLoss: boolean) => {
    const t = terms();
    const w = tf.tensor1d([0.5, 0.5]);
    const out = ppoObjective(t, w, { clipCoef: 0.2, clipValueLoss, valueCoef: 0.5, entropyCoef: 0.01 });
    const read = async (x: tf.Scalar) => (await x.data())[0] as number;
    const r = { loss: await read(out.loss), vf: await read(out.metrics.valueLoss), kl: await read(out.metrics.kl), clip: await read(out.metrics.clipFraction) };
    tf.dispose([...Object.values(t), w, out.loss, ...Object.values(out.metrics)]);
    return r;
  };
  it('with value clipping: ((-2.4 + .5*.845 - .01) + (1 + .5*.125 - .005)) / 2 = -0.465', async () => {
    const r = await run(true);
    expect(r.loss).toBeCloseTo(-0.465, 5);
    expect(r.vf).toBeCloseTo((0.845 + 0.125) / 2, 5);
    expect(r.clip).toBe(0.5);
    expect(r.kl).toBeCloseTo((0.2214028 - 0.2) / 2, 5);
  });
  it('without value clipping: -0.55125', async () => {
    expect((await run(false)).loss).toBeCloseTo(-0.55125, 5);
  });
});

describe('preparePpoBatch', () => {
  it('normalises advantages over the batch and keeps returns raw', () => {
    const batch = syntheticPpoBatch({ trajectories: 5, maxSteps: 4, stateDim: 4, actionDim: 4, minCandidates: 2, maxCandidates: 3, seed: 2 });
    const input = ppoInput(batch, { stateDim: 4, actionDim: 4 });
    const values = new Float32Array(input.count).fill(0.25);
    const p = preparePpoBatch(batch, input, values, PpoConfigSchema.parse({}));
    const adv = Array.from(p.columns['advantage'] ?? []);
    const mean = adv.reduce((a, b) => a + b, 0) / adv.length;
    const std = Math.sqrt(adv.reduce((a, b) => a + (b - mean) ** 2, 0) / (adv.length - 1));
    expect(mean).toBeCloseTo(0, 5);
    expect(std).toBeCloseTo(1, 4);
    expect(Array.from(p.columns['oldValue'] ?? [])).toEqual(new Array(input.count).fill(0.25));
    expect(() => preparePpoBatch(batch, input, new Float32Array(1), PpoConfigSchema.parse({}))).toThrow(/1 values for/);
    // Rows of another batch: the step count must match, or rows would silently stay zero.
    const shorter = { trajectories: batch.trajectories.slice(1) };
    expect(() => preparePpoBatch(shorter, input, values, PpoConfigSchema.parse({}))).toThrow(/the batch has \d+ steps but the input \d+ rows/);
    const cut = { trajectories: batch.trajectories.map((t, i) => (i === 0 ? { ...t, bootstrapValue: Number.NaN } : t)) };
    expect(() => preparePpoBatch(cut, input, values, PpoConfigSchema.parse({}))).toThrow(/bootstrapValue is NaN/);
  });
});

describe('PPO loss gradient', () => {
  it.each([false, true])('matches central finite differences on a small head with a value head (clipValueLoss %s)', async (clipValueLoss) => {
    const head = new PolicyHead({ stateDim: 6, actionDim: 6, hiddenDim: 4, valueHead: true, valueHiddenDim: 3, seed: 8 });
    const decisions = syntheticDecisions({ count: 6, stateDim: 6, actionDim: 6, minCandidates: 2, maxCandidates: 4, seed: 9 });
    const offsets = [0, 0.5, -0.5, 0.06, -0.07, 0.6];
    const input = ppoInputOf(decisions);
    const current = await head.act(input, { greedy: true });
    const batch: PpoBatch = {
      trajectories: [
        { steps: decisions.slice(0, 3).map((d, i) => ({ ...d, action: current.actions[i] as number, logProb: (current.logProbs[i] as number) - (offsets[i] as number), reward: i === 2 ? 1 : 0 })) },
        { steps: decisions.slice(3).map((d, i) => ({ ...d, action: current.actions[i + 3] as number, logProb: (current.logProbs[i + 3] as number) - (offsets[i + 3] as number), reward: 0.3 })), bootstrapValue: 0.5 },
      ],
    };
    const config = PpoConfigSchema.parse({ clipCoef: 0.2, valueCoef: 0.5, entropyCoef: 0.05, clipValueLoss });
    const values = await head.values(input);
    const prepared = preparePpoBatch(batch, input, values.map((v, i) => v + (i % 2 === 0 ? 0.3 : -0.3)), config);
    const loss = ppoLoss(config, head.config, 1);
    const ctx = () =>
      ({
        params: head.params(),
        reference: null,
        input: inputTensors(prepared.input),
        actions: tf.tensor1d(prepared.actions, 'int32'),
        weights: tf.tensor1d(prepared.weights),
        columns: Object.fromEntries(Object.entries(prepared.columns).map(([k, v]) => [k, tf.tensor1d(v)])),
      }) as LossContext;
    await checkGradients(
      head,
      () => tf.tidy(() => loss(ctx()).loss.dataSync()[0] as number),
      () => loss(ctx()).loss,
    );
    head.dispose();
  });
});

function ppoInputOf(decisions: ReturnType<typeof syntheticDecisions>) {
  return ppoInput({ trajectories: [{ steps: decisions.map((d) => ({ ...d, action: 0, logProb: 0, reward: 0 })) }] }, { stateDim: 6, actionDim: 6 });
}

describe('PPO update', () => {
  it('raises the probability of the rewarded candidate and fits the value', async () => {
    const [d] = syntheticDecisions({ count: 1, stateDim: 8, actionDim: 8, minCandidates: 4, maxCandidates: 4, seed: 12 });
    const trainer = new Trainer({ policy: { stateDim: 8, actionDim: 8, hiddenDim: 8, valueHead: true, valueHiddenDim: 8 }, optimizer: { learningRate: 0.03 }, epochs: 2 });
    const rng = new Rng(5);
    const before = (await trainer.act([d!], { greedy: true })).probs[0] as number;
    for (let it = 0; it < 30; it++) {
      const rows = Array.from({ length: 16 }, () => d!);
      const acted = await trainer.act(rows, { rng });
      await trainer.ppoUpdate({ trajectories: rows.map((x, i) => ({ steps: [{ ...x, action: acted.actions[i] as number, logProb: acted.logProbs[i] as number, reward: acted.actions[i] === 0 ? 1 : 0 }] })) });
    }
    const after = (await trainer.act([d!], { greedy: true })).probs[0] as number;
    expect(before).toBeLessThan(0.5);
    expect(after).toBeGreaterThan(0.9);
    trainer.dispose();
  });
});
