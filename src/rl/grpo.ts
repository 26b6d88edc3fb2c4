/**
 * GRPO (Shao et al. 2024, DeepSeekMath) for multi-turn agents, with the Dr. GRPO and DAPO
 * variants, in one file: configuration, advantages, aggregation weights and the loss.
 *
 * A batch holds groups of G trajectories of the same task, in order (trajectories
 * [g*G, (g+1)*G) form group g). Each trajectory's outcome reward r_i becomes an advantage
 *
 *   A_i = (r_i - mean_group(r)) / (std + 1e-4)   scaleRewards 'group': std of the group
 *                                                 scaleRewards 'batch': std of the whole batch
 *   A_i =  r_i - mean_group(r)                    scaleRewards 'none' (Dr. GRPO)
 *
 * (std is the population standard deviation, as in DreamGym's reward variance), and every step
 * of trajectory i gets A_i. A step is one decision: its "token" is the chosen candidate. Per step,
 * with ratio rho = exp(logp - logp_old),
 *
 *   l = -min(rho A, clip(rho, 1 - epsLow, 1 + epsHigh) A)  + beta * KL_k3  - entropyCoef * H
 *   KL_k3 = exp(logp_ref - logp) - (logp_ref - logp) - 1        (Schulman's k3 estimator)
 *
 * and the batch loss aggregates l over steps according to `lossType`:
 *   'grpo'    mean over each trajectory's steps, then mean over trajectories
 *   'dapo'    mean over all steps of the batch (token-level mean)
 *   'dr_grpo' sum over all steps / (trajectories * maxTurns), a constant normaliser
 * Zero-variance groups (all rewards equal) carry no signal; `dropZeroVarianceGroups` removes them
 * from the batch (DAPO's dynamic sampling) so they do not dilute the normalisers.
 *
 * Presets: {@link grpoPreset}('dapo') = clip-higher (0.2 / 0.28), token mean, drop zero-variance
 * groups; ('dr_grpo') = no std scaling, constant normaliser.
 */
import * as tf from '@tensorflow/tfjs';
import { z } from 'zod';
import { policyLogProbs, rowEntropy, takenLogProbs, type PolicyHeadConfig } from '../policy/head.ts';
import { packDecisions, type Decision } from '../policy/input.ts';
import type { LossFn, PreparedBatch } from './update.ts';

import { GRPO_LOSS_TYPES, SCALE_REWARDS, type GrpoLossType, type ScaleRewards } from './grpo-variants.ts';

export { GRPO_LOSS_TYPES, SCALE_REWARDS, type GrpoLossType, type ScaleRewards } from './grpo-variants.ts';

/** GRPO settings. Parse with `GrpoConfigSchema.parse` to fill the defaults. */
export const GrpoConfigSchema = z
  .object({
    /** Aggregation of step losses. */
    lossType: z.enum(GRPO_LOSS_TYPES).default('grpo'),
    /** Advantage scaling. */
    scaleRewards: z.enum(SCALE_REWARDS).default('group'),
    /** Lower clip range: rho >= 1 - epsLow. */
    epsLow: z.number().min(0).max(1).default(0.2),
    /** Upper clip range: rho <= 1 + epsHigh (DAPO's clip-higher uses 0.28). */
    epsHigh: z.number().min(0).default(0.2),
    /** KL coefficient (k3 estimator, to the frozen reference policy). 0 turns the term off. */
    beta: z.number().min(0).default(0.01),
    /** Entropy bonus coefficient. */
    entropyCoef: z.number().min(0).default(0),
    /** Drop groups whose rewards are all equal before the update. */
    dropZeroVarianceGroups: z.boolean().default(false),
    /** The 'dr_grpo' normaliser: the maximum number of steps of a trajectory. */
    maxTurns: z.number().int().min(1).default(15),
  })
  .strict();
export type GrpoConfig = z.output<typeof GrpoConfigSchema>;
export type GrpoConfigInput = z.input<typeof GrpoConfigSchema>;

/** Settings of the published variants: 'grpo' (defaults), 'dr_grpo' and 'dapo'. */
export function grpoPreset(variant: GrpoLossType): GrpoConfigInput {
  switch (variant) {
    case 'grpo':
      return { lossType: 'grpo', scaleRewards: 'group' };
    case 'dr_grpo':
      return { lossType: 'dr_grpo', scaleRewards: 'none' };
    case 'dapo':
      return { lossType: 'dapo', scaleRewards: 'group', epsLow: 0.2, epsHigh: 0.28, dropZeroVarianceGroups: true };
    default:
      throw new RangeError(`Unknown GRPO variant ${JSON.stringify(variant)}: use one of ${GRPO_LOSS_TYPES.join(', ')}`);
  }
}

/** Added to the standard deviation before dividing (as TRL does). */
export const ADVANTAGE_EPSILON = 1e-4;

function checkGroups(n: number, groupSize: number): void {
  if (!(Number.isInteger(groupSize) && groupSize >= 1)) throw new RangeError(`groupSize must be an integer >= 1, got ${groupSize}`);
  if (n % groupSize !== 0) throw new RangeError(`${n} rewards do not split into groups of ${groupSize}`);
}

/**
 * Group-relative advantages of outcome rewards. `rewards` holds consecutive groups of
 * `groupSize`; see the module comment for the formulas.
 */
export function groupAdvantages(rewards: number[], groupSize: number, scaleRewards: ScaleRewards): number[] {
  checkGroups(rewards.length, groupSize);
  rewards.forEach((r, i) => {
    if (!Number.isFinite(r)) throw new RangeError(`rewards[${i}] is ${r}, not a finite number`);
  });
  if (!(SCALE_REWARDS as readonly string[]).includes(scaleRewards)) {
    throw new RangeError(`Unknown scaleRewards ${JSON.stringify(scaleRewards)}: use one of ${SCALE_REWARDS.join(', ')}`);
  }
  const std = (xs: number[]): number => {
    const m = xs.reduce((a, b) => a + b, 0) / xs.length;
    return Math.sqrt(xs.reduce((a, b) => a + (b - m) ** 2, 0) / xs.length);
  };
  const batchStd = std(rewards);
  const out: number[] = [];
  for (let g = 0; g < rewards.length; g += groupSize) {
    const group = rewards.slice(g, g + groupSize);
    const mean = group.reduce((a, b) => a + b, 0) / groupSize;
    const scale = scaleRewards === 'group' ? std(group) + ADVANTAGE_EPSILON : scaleRewards === 'batch' ? batchStd + ADVANTAGE_EPSILON : 1;
    for (const r of group) out.push((r - mean) / scale);
  }
  return out;
}

/** Indices of the groups whose rewards are all equal. */
export function zeroVarianceGroups(rewards: number[], groupSize: number): number[] {
  checkGroups(rewards.length, groupSize);
  const out: number[] = [];
  for (let g = 0; g * groupSize < rewards.length; g++) {
    const group = rewards.slice(g * groupSize, (g + 1) * groupSize);
    if (group.every((r) => r === group[0])) out.push(g);
  }
  return out;
}

/** Per-step aggregation weights for trajectories of the given lengths (flattened in order). */
export function grpoStepWeights(lengths: readonly number[], lossType: GrpoLossType, maxTurns: number): Float32Array {
  const trajectories = lengths.length;
  const steps = lengths.reduce((a, b) => a + b, 0);
  const out = new Float32Array(steps);
  let at = 0;
  for (const len of lengths) {
    if (!(Number.isInteger(len) && len >= 1)) throw new RangeError(`trajectory lengths must be integers >= 1, got ${len}`);
    if (lossType === 'dr_grpo' && len > maxTurns) throw new RangeError(`a trajectory has ${len} steps, more than maxTurns ${maxTurns}`);
    const w = lossType === 'grpo' ? 1 / (trajectories * len) : lossType === 'dapo' ? 1 / steps : 1 / (trajectories * maxTurns);
    out.fill(w, at, at + len);
    at += len;
  }
  return out;
}

/** Per-step inputs of the GRPO loss (tensors of shape [steps]). */
export interface GrpoStepTerms {
  logProbs: tf.Tensor1D;
  oldLogProbs: tf.Tensor1D;
  /** Reference log-probs; null when beta is 0. */
  refLogProbs: tf.Tensor1D | null;
  advantages: tf.Tensor1D;
  entropy: tf.Tensor1D;
}

/**
 * The weighted GRPO objective sum_i w_i l_i and its parts (see the module comment).
 * `clipFraction` is the share of steps where the clipped term is the active one.
 */
export function grpoObjective(
  terms: GrpoStepTerms,
  weights: tf.Tensor1D,
  config: Pick<GrpoConfig, 'epsLow' | 'epsHigh' | 'beta' | 'entropyCoef'>,
): { loss: tf.Scalar; metrics: { policyLoss: tf.Scalar; kl: tf.Scalar; entropy: tf.Scalar; clipFraction: tf.Scalar } } {
  const { epsLow, epsHigh, beta, entropyCoef } = config;
  const ratio = tf.exp(tf.sub(terms.logProbs, terms.oldLogProbs));
  const unclipped = tf.mul(ratio, terms.advantages);
  const clipped = tf.mul(tf.clipByValue(ratio, 1 - epsLow, 1 + epsHigh), terms.advantages);
  const policy = tf.neg(tf.minimum(unclipped, clipped));
  let kl: tf.Tensor = tf.zerosLike(policy);
  if (terms.refLogProbs) {
    const d = tf.sub(terms.refLogProbs, terms.logProbs);
    kl = tf.sub(tf.sub(tf.exp(d), d), 1);
  }
  const perStep = tf.sub(tf.add(policy, tf.mul(kl, beta)), tf.mul(terms.entropy, entropyCoef));
  const weighted = (x: tf.Tensor): tf.Scalar => tf.sum<tf.Scalar>(tf.mul(x, weights));
  const low = tf.logicalAnd(tf.less(ratio, 1 - epsLow), tf.less(terms.advantages, 0));
  const high = tf.logicalAnd(tf.greater(ratio, 1 + epsHigh), tf.greater(terms.advantages, 0));
  return {
    loss: weighted(perStep),
    metrics: {
      policyLoss: weighted(policy),
      kl: weighted(kl),
      entropy: weighted(terms.entropy),
      clipFraction: tf.mean<tf.Scalar>(tf.cast(tf.logicalOr(low, high), 'float32')),
    },
  };
}

/** One decision of a GRPO rollout: the decision, the chosen candidate and its behaviour log-prob. */
export interface GrpoStep extends Decision {
  action: number;
  /** log pi_old(action | state), from `act` at rollout time. */
  logProb: number;
}

/** One rollout: its steps and its outcome reward. */
export interface GrpoTrajectory {
  steps: GrpoStep[];
  reward: number;
}

/** Consecutive groups of `groupSize` rollouts of the same task. */
export interface GrpoBatch {
  groupSize: number;
  trajectories: GrpoTrajectory[];
}

/** What preparing a batch found. */
export interface GrpoBatchStats {
  groups: number;
  droppedGroups: number;
  trajectories: number;
  steps: number;
  meanReward: number;
}

/**
 * Turns rollouts into rows: advantages broadcast to steps, aggregation weights and the columns
 * the loss reads. Returns `prepared: null` when every group was dropped.
 */
export function prepareGrpoBatch(
  batch: GrpoBatch,
  config: GrpoConfig,
  dims: { stateDim: number; actionDim: number },
): { prepared: PreparedBatch | null; stats: GrpoBatchStats } {
  const { groupSize, trajectories } = batch;
  if (trajectories.length === 0) throw new RangeError('GRPO batch has no trajectories');
  const rewards = trajectories.map((t) => t.reward);
  const advantages = groupAdvantages(rewards, groupSize, config.scaleRewards);
  const dropped = new Set(config.dropZeroVarianceGroups ? zeroVarianceGroups(rewards, groupSize) : []);
  const kept = trajectories.map((t, i) => ({ t, a: advantages[i] as number, g: Math.floor(i / groupSize) })).filter((x) => !dropped.has(x.g));
  const steps = kept.reduce((s, x) => s + x.t.steps.length, 0);
  const stats: GrpoBatchStats = {
    groups: trajectories.length / groupSize,
    droppedGroups: dropped.size,
    trajectories: trajectories.length,
    steps,
    meanReward: rewards.reduce((a, b) => a + b, 0) / rewards.length,
  };
  if (kept.length === 0) return { prepared: null, stats };
  kept.forEach(({ t }, i) => {
    if (t.steps.length === 0) throw new RangeError(`GRPO trajectory ${i} has no steps`);
  });
  const decisions = kept.flatMap((x) => x.t.steps);
  const actions = new Int32Array(steps);
  const oldLogProb = new Float32Array(steps);
  const advantage = new Float32Array(steps);
  let row = 0;
  for (const { t, a } of kept) {
    for (const s of t.steps) {
      if (!Number.isFinite(s.logProb)) throw new RangeError(`GRPO step ${row}: logProb is ${s.logProb}, not finite`);
      actions[row] = s.action;
      oldLogProb[row] = s.logProb;
      advantage[row] = a;
      row++;
    }
  }
  return {
    prepared: {
      input: packDecisions(decisions, dims),
      actions,
      weights: grpoStepWeights(
        kept.map((x) => x.t.steps.length),
        config.lossType,
        config.maxTurns,
      ),
      columns: { oldLogProb, advantage },
    },
    stats,
  };
}

/** The GRPO loss over prepared rows (for the update loop). */
export function grpoLoss(config: GrpoConfig, head: PolicyHeadConfig, temperature: number): LossFn {
  return (ctx) => {
    const logp = policyLogProbs(ctx.params, ctx.input, head, temperature);
    // The reference's log-probs: a precomputed column (the trainer's way), or a forward pass.
    let refLogProbs: tf.Tensor1D | null = null;
    if (config.beta > 0) {
      const column = ctx.columns['refLogProb'];
      if (column) refLogProbs = column;
      else if (ctx.reference) refLogProbs = takenLogProbs(policyLogProbs(ctx.reference, ctx.input, head, temperature), ctx.actions);
      else throw new RangeError('GRPO with beta > 0 needs the reference weights or a refLogProb column');
    }
    const terms: GrpoStepTerms = {
      logProbs: takenLogProbs(logp, ctx.actions),
      oldLogProbs: ctx.columns['oldLogProb'] as tf.Tensor1D,
      refLogProbs,
      advantages: ctx.columns['advantage'] as tf.Tensor1D,
      entropy: rowEntropy(logp, ctx.input.mask),
    };
    const out = grpoObjective(terms, ctx.weights, config);
    return { loss: out.loss, metrics: out.metrics };
  };
}
