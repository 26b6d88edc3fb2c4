/**
 * Supervised fine-tuning (behaviour cloning) of the policy head on offline expert decisions:
 * the cross-entropy -log pi(a* | s) of the expert's candidate a*, a weighted mean over decisions
 * (equal weights, or e.g. each episode's reward in reward-weighted cloning).
 */
import * as tf from '@tensorflow/tfjs';
import { policyLogProbs, rowEntropy, takenLogProbs, type PolicyHeadConfig } from '../policy/head.ts';
import { packDecisions, type Decision } from '../policy/input.ts';
import type { LossFn, PreparedBatch } from './update.ts';

/** One offline decision with the expert's choice. */
export interface SftExample extends Decision {
  /** Index of the expert's candidate. */
  action: number;
  /**
   * How much this decision counts against the others (default 1; e.g. its episode's reward in
   * reward-weighted cloning). A finite number >= 0; the batch's weights are normalised to sum 1.
   */
  weight?: number;
}

/** Rows for the update loop: one per example, weighted by `weight` (default 1), normalised to sum 1. */
export function prepareSftBatch(examples: readonly SftExample[], dims: { stateDim: number; actionDim: number }): PreparedBatch {
  if (examples.length === 0) throw new RangeError('SFT batch has no examples');
  const raw = examples.map((e, i) => {
    const w = e.weight ?? 1;
    if (!(Number.isFinite(w) && w >= 0)) throw new RangeError(`SFT example ${i} has weight ${w}: a weight is a finite number >= 0`);
    return w;
  });
  const total = raw.reduce((s, w) => s + w, 0);
  if (!(total > 0)) throw new RangeError(`SFT batch of ${examples.length} examples weighs ${total} in all: at least one weight must be > 0`);
  return {
    input: packDecisions(examples, dims),
    actions: Int32Array.from(examples.map((e) => e.action)),
    weights: Float32Array.from(raw, (w) => w / total),
    columns: {},
  };
}

/** Weighted cross-entropy, with accuracy (argmax = expert) and entropy as metrics. */
export function sftObjective(
  logProbs: tf.Tensor2D,
  actions: tf.Tensor1D,
  mask: tf.Tensor2D,
  weights: tf.Tensor1D,
): { loss: tf.Scalar; metrics: { policyLoss: tf.Scalar; accuracy: tf.Scalar; entropy: tf.Scalar } } {
  const nll = tf.neg(takenLogProbs(logProbs, actions));
  const loss = tf.sum<tf.Scalar>(tf.mul(nll, weights));
  const correct = tf.cast(tf.equal(tf.argMax(logProbs, 1), actions), 'float32');
  return {
    loss,
    metrics: { policyLoss: loss, accuracy: tf.mean<tf.Scalar>(correct), entropy: tf.sum<tf.Scalar>(tf.mul(rowEntropy(logProbs, mask), weights)) },
  };
}

/** The SFT loss over prepared rows (for the update loop). */
export function sftLoss(head: PolicyHeadConfig, temperature: number): LossFn {
  return (ctx) => {
    const out = sftObjective(policyLogProbs(ctx.params, ctx.input, head, temperature), ctx.actions, ctx.input.mask, ctx.weights);
    return { loss: out.loss, metrics: out.metrics };
  };
}
