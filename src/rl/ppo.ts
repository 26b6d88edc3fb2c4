/**
 * PPO (Schulman et al. 2017) over the candidate-scoring policy, CleanRL-style, in one file.
 *
 * Rollouts carry a reward per step. The value head V(s) is evaluated on every step before the
 * update; generalised advantage estimation (GAE) gives, per trajectory,
 *
 *   delta_t = r_t + gamma V(s_{t+1}) - V(s_t)        (V after the last step: bootstrapValue, 0 if terminal)
 *   A_t = delta_t + gamma lambda A_{t+1},   R_t = A_t + V(s_t)
 *
 * Advantages are normalised over the batch (optional). The loss per step, with
 * rho = exp(logp - logp_old), is
 *
 *   pg = max(-A rho, -A clip(rho, 1 - clipCoef, 1 + clipCoef))
 *   vf = 0.5 max((V - R)^2, (V_old + clip(V - V_old, -clipCoef, clipCoef) - R)^2)   (clipValueLoss)
 *      = 0.5 (V - R)^2                                                             (otherwise)
 *   l  = pg + valueCoef vf - entropyCoef H
 *
 * averaged over steps. The policy and value heads are trained together.
 */
import * as tf from '@tensorflow/tfjs';
import { z } from 'zod';
import { policyLogProbs, rowEntropy, stateValues, takenLogProbs, type PolicyHeadConfig } from '../policy/head.ts';
import { packDecisions, type Decision, type PolicyInput } from '../policy/input.ts';
import type { LossFn, PreparedBatch } from './update.ts';

/** PPO settings. */
export const PpoConfigSchema = z
  .object({
    /** Discount. */
    gamma: z.number().min(0).max(1).default(0.99),
    /** GAE lambda. */
    gaeLambda: z.number().min(0).max(1).default(0.95),
    /** Clip range of the ratio (and of the value change when clipValueLoss). */
    clipCoef: z.number().positive().default(0.2),
    /** Clip the value loss as CleanRL does. */
    clipValueLoss: z.boolean().default(true),
    /** Value loss coefficient. */
    valueCoef: z.number().min(0).default(0.5),
    /** Entropy bonus coefficient. */
    entropyCoef: z.number().min(0).default(0.01),
    /** Normalise advantages to mean 0 / std 1 over the batch. */
    normalizeAdvantages: z.boolean().default(true),
  })
  .strict();
export type PpoConfig = z.output<typeof PpoConfigSchema>;

/**
 * Generalised advantage estimates and returns of one trajectory (see the module comment).
 * `bootstrapValue` is V of the state after the last step: 0 when the episode terminated.
 */
export function gae(
  rewards: readonly number[],
  values: readonly number[],
  gamma: number,
  lambda: number,
  bootstrapValue = 0,
): { advantages: number[]; returns: number[] } {
  if (rewards.length !== values.length) throw new RangeError(`gae: ${rewards.length} rewards but ${values.length} values`);
  if (!(gamma >= 0 && gamma <= 1)) throw new RangeError(`gae: gamma must be in [0, 1], got ${gamma}`);
  if (!(lambda >= 0 && lambda <= 1)) throw new RangeError(`gae: lambda must be in [0, 1], got ${lambda}`);
  const n = rewards.length;
  const advantages = new Array<number>(n).fill(0);
  let next = 0;
  for (let t = n - 1; t >= 0; t--) {
    const nextValue = t === n - 1 ? bootstrapValue : (values[t + 1] as number);
    const delta = (rewards[t] as number) + gamma * nextValue - (values[t] as number);
    next = delta + gamma * lambda * next;
    advantages[t] = next;
  }
  return { advantages, returns: advantages.map((a, t) => a + (values[t] as number)) };
}

/** One PPO step: a decision, the chosen candidate, its behaviour log-prob and the reward that followed. */
export interface PpoStep extends Decision {
  action: number;
  logProb: number;
  reward: number;
}

/** One rollout. */
export interface PpoTrajectory {
  steps: PpoStep[];
  /** V of the state after the last step when the episode was cut off; omit (0) when it terminated. */
  bootstrapValue?: number;
}

export interface PpoBatch {
  trajectories: PpoTrajectory[];
}

/** The decisions of a batch as one input (to evaluate V before {@link preparePpoBatch}). */
export function ppoInput(batch: PpoBatch, dims: { stateDim: number; actionDim: number }): PolicyInput {
  const steps = batch.trajectories.flatMap((t) => t.steps);
  if (steps.length === 0) throw new RangeError('PPO batch has no steps');
  return packDecisions(steps, dims);
}

/** Rows for the update loop: GAE advantages and returns from `values` (V of every step, in order). */
export function preparePpoBatch(batch: PpoBatch, input: PolicyInput, values: Float32Array, config: PpoConfig): PreparedBatch {
  const n = input.count;
  const steps = batch.trajectories.reduce((sum, t) => sum + t.steps.length, 0);
  if (steps !== n) throw new RangeError(`preparePpoBatch: the batch has ${steps} steps but the input ${n} rows`);
  if (values.length !== n) throw new RangeError(`preparePpoBatch: ${values.length} values for ${n} steps`);
  const actions = new Int32Array(n);
  const oldLogProb = new Float32Array(n);
  const advantage = new Float32Array(n);
  const returns = new Float32Array(n);
  const oldValue = Float32Array.from(values);
  let row = 0;
  for (const t of batch.trajectories) {
    const start = row;
    const rewards = t.steps.map((s, i) => {
      if (!Number.isFinite(s.reward)) throw new RangeError(`PPO step ${start + i}: reward is ${s.reward}, not finite`);
      return s.reward;
    });
    const v = Array.from(values.subarray(start, start + t.steps.length));
    const bootstrap = t.bootstrapValue ?? 0;
    if (!Number.isFinite(bootstrap)) throw new RangeError(`PPO trajectory at step ${start}: bootstrapValue is ${bootstrap}, not finite`);
    const est = gae(rewards, v, config.gamma, config.gaeLambda, bootstrap);
    t.steps.forEach((s, i) => {
      if (!Number.isFinite(s.logProb)) throw new RangeError(`PPO step ${start + i}: logProb is ${s.logProb}, not finite`);
      actions[row] = s.action;
      oldLogProb[row] = s.logProb;
      advantage[row] = est.advantages[i] as number;
      returns[row] = est.returns[i] as number;
      row++;
    });
  }
  if (config.normalizeAdvantages && n > 1) {
    const mean = advantage.reduce((a, b) => a + b, 0) / n;
    const std = Math.sqrt(advantage.reduce((a, b) => a + (b - mean) ** 2, 0) / (n - 1));
    for (let i = 0; i < n; i++) advantage[i] = ((advantage[i] as number) - mean) / (std + 1e-8);
  }
  return { input, actions, weights: new Float32Array(n).fill(1 / n), columns: { oldLogProb, advantage, returns, oldValue } };
}

/** Per-step inputs of the PPO loss (tensors of shape [steps]). */
export interface PpoStepTerms {
  logProbs: tf.Tensor1D;
  oldLogProbs: tf.Tensor1D;
  advantages: tf.Tensor1D;
  entropy: tf.Tensor1D;
  values: tf.Tensor1D;
  oldValues: tf.Tensor1D;
  returns: tf.Tensor1D;
}

/** The weighted PPO objective and its parts. `kl` is the k3 estimate of KL(old || new). */
export function ppoObjective(
  terms: PpoStepTerms,
  weights: tf.Tensor1D,
  config: Pick<PpoConfig, 'clipCoef' | 'clipValueLoss' | 'valueCoef' | 'entropyCoef'>,
): { loss: tf.Scalar; metrics: { policyLoss: tf.Scalar; valueLoss: tf.Scalar; kl: tf.Scalar; entropy: tf.Scalar; clipFraction: tf.Scalar } } {
  const c = config.clipCoef;
  const logRatio = tf.sub(terms.logProbs, terms.oldLogProbs);
  const ratio = tf.exp(logRatio);
  const pg = tf.maximum(tf.mul(tf.neg(terms.advantages), ratio), tf.mul(tf.neg(terms.advantages), tf.clipByValue(ratio, 1 - c, 1 + c)));
  const unclippedV = tf.square(tf.sub(terms.values, terms.returns));
  const vf = config.clipValueLoss
    ? tf.mul(0.5, tf.maximum(unclippedV, tf.square(tf.sub(tf.add(terms.oldValues, tf.clipByValue(tf.sub(terms.values, terms.oldValues), -c, c)), terms.returns))))
    : tf.mul(0.5, unclippedV);
  const perStep = tf.sub(tf.add(pg, tf.mul(vf, config.valueCoef)), tf.mul(terms.entropy, config.entropyCoef));
  const weighted = (x: tf.Tensor): tf.Scalar => tf.sum<tf.Scalar>(tf.mul(x, weights));
  return {
    loss: weighted(perStep),
    metrics: {
      policyLoss: weighted(pg),
      valueLoss: weighted(vf),
      kl: weighted(tf.sub(tf.sub(ratio, 1), logRatio)),
      entropy: weighted(terms.entropy),
      clipFraction: tf.mean<tf.Scalar>(tf.cast(tf.greater(tf.abs(tf.sub(ratio, 1)), c), 'float32')),
    },
  };
}

/** The PPO loss over prepared rows (for the update loop). */
export function ppoLoss(config: PpoConfig, head: PolicyHeadConfig, temperature: number): LossFn {
  if (!head.valueHead) throw new RangeError('PPO needs a policy head with valueHead: true');
  return (ctx) => {
    const logp = policyLogProbs(ctx.params, ctx.input, head, temperature);
    const terms: PpoStepTerms = {
      logProbs: takenLogProbs(logp, ctx.actions),
      oldLogProbs: ctx.columns['oldLogProb'] as tf.Tensor1D,
      advantages: ctx.columns['advantage'] as tf.Tensor1D,
      entropy: rowEntropy(logp, ctx.input.mask),
      values: stateValues(ctx.params, ctx.input.states),
      oldValues: ctx.columns['oldValue'] as tf.Tensor1D,
      returns: ctx.columns['returns'] as tf.Tensor1D,
    };
    const out = ppoObjective(terms, ctx.weights, config);
    return { loss: out.loss, metrics: out.metrics };
  };
}
