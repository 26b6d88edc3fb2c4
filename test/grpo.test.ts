import * as tf from '@tensorflow/tfjs';
import { beforeAll, describe, expect, it } from 'vitest';
import { chooseBackend } from '../src/policy/backend.ts';
import { PolicyHead, policyLogProbs, takenLogProbs, tensorLayout } from '../src/policy/head.ts';
import { inputTensors, packDecisions, type Decision } from '../src/policy/input.ts';
import {
  ADVANTAGE_EPSILON,
  GrpoConfigSchema,
  groupAdvantages,
  grpoLoss,
  grpoObjective,
  grpoPreset,
  grpoStepWeights,
  prepareGrpoBatch,
  zeroVarianceGroups,
  type GrpoBatch,
} from '../src/rl/grpo.ts';
import { syntheticDecisions } from '../src/rl/synthetic.ts';
import type { LossContext } from '../src/rl/update.ts';
import { checkGradients } from './fixtures/gradient-check.ts';

beforeAll(async () => {
  await chooseBackend({ prefer: 'cpu' });
});

describe('groupAdvantages', () => {
  const rewards = [1, 0, 0, 0, 1, 1, 0, 0];
  it("'group': (r - group mean) / (group std + 1e-4), population std", () => {
    // Group 1: mean 0.25, std sqrt(0.1875) = 0.4330127. Group 2: mean 0.5, std 0.5.
    const a = groupAdvantages(rewards, 4, 'group');
    expect(a[0]).toBeCloseTo(0.75 / (0.4330127 + 1e-4), 6);
    expect(a[1]).toBeCloseTo(-0.25 / (0.4330127 + 1e-4), 6);
    expect(a[4]).toBeCloseTo(0.5 / 0.5001, 6);
    expect(a[7]).toBeCloseTo(-0.5 / 0.5001, 6);
    expect(ADVANTAGE_EPSILON).toBe(1e-4);
  });
  it("'batch': group mean, batch std (sqrt(0.234375) = 0.4841229)", () => {
    const a = groupAdvantages(rewards, 4, 'batch');
    expect(a[0]).toBeCloseTo(0.75 / 0.4842229, 6);
    expect(a[5]).toBeCloseTo(0.5 / 0.4842229, 6);
  });
  it("'none': r - group mean (Dr. GRPO)", () => {
    expect(groupAdvantages(rewards, 4, 'none')).toEqual([0.75, -0.25, -0.25, -0.25, 0.5, 0.5, -0.5, -0.5]);
  });
  it('gives zero advantages to zero-variance groups and finds them', () => {
    expect(groupAdvantages([1, 1, 0, 0, 0, 0], 2, 'group')).toEqual([0, 0, 0, 0, 0, 0]);
    expect(zeroVarianceGroups([1, 1, 0, 1, 0.5, 0.5], 2)).toEqual([0, 2]);
  });
  it('checks its arguments', () => {
    expect(() => groupAdvantages([1, 0, 1], 2, 'group')).toThrow(/3 rewards do not split into groups of 2/);
    expect(() => groupAdvantages([1, Number.NaN], 2, 'group')).toThrow(/rewards\[1\] is NaN/);
    expect(() => groupAdvantages([1, 0], 0, 'group')).toThrow(/groupSize .* got 0/);
    expect(() => groupAdvantages([1, 0], 2, 'std' as 'group')).toThrow(/Unknown scaleRewards "std"/);
  });
});

describe('aggregation weights', () => {
  it('grpo: per-trajectory mean then mean; dapo: token mean; dr_grpo: / (trajectories * maxTurns)', () => {
    expect(Array.from(grpoStepWeights([2, 1, 3], 'grpo', 4))).toEqual([1 / 6, 1 / 6, 1 / 3, 1 / 9, 1 / 9, 1 / 9].map(Math.fround));
    expect(Array.from(grpoStepWeights([2, 1, 3], 'dapo', 4))).toEqual(new Array(6).fill(Math.fround(1 / 6)));
    expect(Array.from(grpoStepWeights([2, 1, 3], 'dr_grpo', 4))).toEqual(new Array(6).fill(Math.fround(1 / 12)));
    expect(() => grpoStepWeights([5], 'dr_grpo', 4)).toThrow(/5 steps, more than maxTurns 4/);
  });
});

describe('the three loss variants, by hand', () => {
  // Two trajectories of 3 and 1 steps. Per step: ratio = exp(logp - old) = [1, e^0.3, e^-0.5, e^0.4].
  const terms = () => ({
    logProbs: tf.tensor1d([-1.0, -0.5, -2.0, -0.2]),
    oldLogProbs: tf.tensor1d([-1.0, -0.8, -1.5, -0.6]),
    refLogProbs: tf.tensor1d([-1.2, -0.5, -1.0, -0.2]),
    advantages: tf.tensor1d([1, 1, -1, -1]),
    entropy: tf.tensor1d([0.5, 0.4, 0.3, 0.2]),
  });
  // With eps 0.2/0.2: policy terms -min(rho A, clip(rho) A) = [-1, -1.2 (clipped), 0.8 (clipped), e^0.4 = 1.4918247].
  // k3 KL = e^d - d - 1 with d = ref - logp = [-0.2, 0, 1, 0]: [0.0187308, 0, 0.7182818, 0].
  // Per step with beta 0.1, entropy 0.01: [-1.0031269, -1.204, 0.8688282, 1.4898247].
  const run = async (variant: 'grpo' | 'dapo' | 'dr_grpo', epsHigh: number) => {
    const t = terms();
    const w = tf.tensor1d(grpoStepWeights([3, 1], variant, 4));
    const out = grpoObjective(t, w, { epsLow: 0.2, epsHigh, beta: 0.1, entropyCoef: 0.01 });
    const values = {
      loss: (await out.loss.data())[0] as number,
      kl: (await out.metrics.kl.data())[0] as number,
      clip: (await out.metrics.clipFraction.data())[0] as number,
    };
    tf.dispose([...Object.values(t), w, out.loss, ...Object.values(out.metrics)]);
    return values;
  };

  it("'grpo': (l0 + l1 + l2) / 6 + l3 / 2 = 0.5218626", async () => {
    const r = await run('grpo', 0.2);
    expect(r.loss).toBeCloseTo(0.5218626, 5);
    expect(r.kl).toBeCloseTo((0.0187308 + 0.7182818) / 6, 5);
    expect(r.clip).toBe(0.5);
  });
  it("'dapo' with clip-higher 0.28: step 1 clips at 1.28, loss (sum) / 4 = 0.0178815", async () => {
    const r = await run('dapo', 0.28);
    expect(r.loss).toBeCloseTo((-1.0031269 - 1.284 + 0.8688282 + 1.4898247) / 4, 5);
    expect(r.clip).toBe(0.5);
  });
  it("'dr_grpo': (sum) / (2 trajectories * 4 turns) = 0.0189408", async () => {
    const r = await run('dr_grpo', 0.2);
    expect(r.loss).toBeCloseTo(0.151526 / 8, 5);
  });
});

describe('prepareGrpoBatch', () => {
  const decisions = syntheticDecisions({ count: 6, stateDim: 4, actionDim: 4, minCandidates: 2, maxCandidates: 3, seed: 1 });
  const step = (i: number) => ({ ...decisions[i]!, action: 1, logProb: -0.7 });
  const batch: GrpoBatch = {
    groupSize: 2,
    trajectories: [
      { reward: 1, steps: [step(0), step(1)] },
      { reward: 0, steps: [step(2)] },
      { reward: 1, steps: [step(3)] },
      { reward: 1, steps: [step(4), step(5)] },
    ],
  };
  it('gives every step its trajectory advantage and aggregation weight', () => {
    const { prepared, stats } = prepareGrpoBatch(batch, GrpoConfigSchema.parse({ scaleRewards: 'none' }), { stateDim: 4, actionDim: 4 });
    expect(Array.from(prepared?.columns['advantage'] ?? [])).toEqual([0.5, 0.5, -0.5, 0, 0, 0]);
    expect(Array.from(prepared?.weights ?? [])).toEqual([1 / 8, 1 / 8, 1 / 4, 1 / 4, 1 / 8, 1 / 8].map(Math.fround));
    expect(Array.from(prepared?.columns['oldLogProb'] ?? [])).toEqual(new Array(6).fill(Math.fround(-0.7)));
    expect(stats).toMatchObject({ groups: 2, droppedGroups: 0, trajectories: 4, steps: 6, meanReward: 0.75 });
  });
  it('drops zero-variance groups when asked (DAPO), and reports an all-dropped batch', () => {
    const dapo = GrpoConfigSchema.parse(grpoPreset('dapo'));
    const { prepared, stats } = prepareGrpoBatch(batch, dapo, { stateDim: 4, actionDim: 4 });
    expect(prepared?.input.count).toBe(3);
    expect(stats.droppedGroups).toBe(1);
    const flat = { groupSize: 2, trajectories: [batch.trajectories[2]!, batch.trajectories[3]!] };
    expect(prepareGrpoBatch(flat, dapo, { stateDim: 4, actionDim: 4 }).prepared).toBeNull();
  });
  it('presets set the published variants', () => {
    expect(GrpoConfigSchema.parse(grpoPreset('dapo'))).toMatchObject({ lossType: 'dapo', epsLow: 0.2, epsHigh: 0.28, dropZeroVarianceGroups: true });
    expect(GrpoConfigSchema.parse(grpoPreset('dr_grpo'))).toMatchObject({ lossType: 'dr_grpo', scaleRewards: 'none' });
    expect(() => GrpoConfigSchema.parse({ lossType: 'ppo' })).toThrow();
  });
});

describe('GRPO loss gradient', () => {
  it('matches central finite differences on a small head (clipping, KL and entropy all active)', async () => {
    for (const [loraRank, leadDim] of [[0, 0], [2, 0], [0, 3], [2, 3]] as const) {
      const head = new PolicyHead({ stateDim: 6, actionDim: 6, hiddenDim: 4, interaction: 'product', loraRank, leadDim, seed: 3 });
      head.resetReference();
      // Move the weights away from the reference so the KL term has a gradient.
      for (const v of head.trainable('all').values()) v.assign(tf.tidy(() => tf.add(v, tf.mul(tf.randomUniform(v.shape, -0.3, 0.3, 'float32', 5), 1))));
      const decisions = syntheticDecisions({ count: 8, stateDim: 6, actionDim: 6, minCandidates: 2, maxCandidates: 4, withPrior: true, seed: 4 });
      // Repeated leading blocks (candidates' and states' first 3 features), as the featurizer's embedded action texts repeat.
      decisions.forEach((d, i) => {
        d.candidates.forEach((c, j) => c.set((decisions[0] as Decision).candidates[j % 2]!.subarray(0, 3)));
        if (i % 2 === 0) d.state.set((decisions[0] as Decision).state.subarray(0, 3));
      });
      const input = packDecisions(decisions);
      const actions = decisions.map((d, i) => i % d.candidates.length);
      const current = tf.tidy(() => takenLogProbs(policyLogProbs(head.params(), inputTensors(input, tensorLayout(head.config)), head.config), tf.tensor1d(actions, 'int32')));
      const logp = await current.data();
      current.dispose();
      // Old log-probs so that ratios fall inside and well outside the clip range (away from its kinks).
      const offsets = [0, 0.5, -0.5, 0.08, -0.6, 0.45, -0.07, 0];
      const batch: GrpoBatch = {
        groupSize: 4,
        trajectories: decisions.map((d, i) => ({ reward: [1, 0, 0, 1, 0, 1, 1, 1][i] as number, steps: [{ ...d, action: actions[i] as number, logProb: (logp[i] as number) - (offsets[i] as number) }] })),
      };
      const config = GrpoConfigSchema.parse({ beta: 0.5, entropyCoef: 0.1 });
      const { prepared } = prepareGrpoBatch(batch, config, { stateDim: 6, actionDim: 6 });
      if (!prepared) throw new Error('no rows');
      const loss = grpoLoss(config, head.config, 1);
      const ctxTensors = (dedup = true) => ({
        input: inputTensors(prepared.input, dedup ? tensorLayout(head.config) : { ...tensorLayout(head.config), leadDim: 0 }),
        actions: tf.tensor1d(prepared.actions, 'int32'),
        weights: tf.tensor1d(prepared.weights),
        columns: { oldLogProb: tf.tensor1d(prepared.columns['oldLogProb']!), advantage: tf.tensor1d(prepared.columns['advantage']!) },
      });
      const lossValue = (): number =>
        tf.tidy(() => loss({ params: head.params(), reference: head.referenceParams(), ...ctxTensors() } as LossContext).loss.dataSync()[0] as number);
      await checkGradients(head, lossValue, () => {
        const ctx = { params: head.params(), reference: head.referenceParams(), ...ctxTensors() } as LossContext;
        return loss(ctx).loss;
      });
      // The trainer's way: the reference's log-probs computed once as a column (chunks of 3 rows) give the same loss.
      const refLogProb = await head.referenceTakenLogProbs(prepared.input, prepared.actions, 1, 3);
      const withColumn = tf.tidy(() => {
        const t = ctxTensors();
        return loss({ params: head.params(), reference: null, ...t, columns: { ...t.columns, refLogProb: tf.tensor1d(refLogProb) } } as LossContext).loss.dataSync()[0] as number;
      });
      expect(withColumn).toBeCloseTo(lossValue(), 5);
      // The deduplicated layout (the head's) and the plain one give the same loss.
      const plain = tf.tidy(() => loss({ params: head.params(), reference: head.referenceParams(), ...ctxTensors(false) } as LossContext).loss.dataSync()[0] as number);
      expect(plain).toBeCloseTo(lossValue(), 5);
      expect(() => tf.tidy(() => loss({ params: head.params(), reference: null, ...ctxTensors() } as LossContext))).toThrow(/reference weights or a refLogProb column/);
      head.dispose();
    }
  });
});
