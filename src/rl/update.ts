/**
 * The optimisation loop shared by GRPO, PPO and SFT: for each epoch shuffle the rows, and for
 * each minibatch upload its rows (padded to the minibatch's own largest candidate count),
 * compute the algorithm's loss and its gradients, clip them by global norm and take an Adam
 * step. Metrics stay on the device until the end and are read back once. Every tensor is
 * created in `tf.tidy` or disposed in `finally`.
 *
 * A batch is "prepared" by its algorithm into rows (one per decision) with per-row weights: the
 * full-batch loss is sum_i w_i l_i, so that each algorithm's aggregation (per-trajectory mean,
 * token mean, constant normaliser) is a choice of weights. A minibatch M estimates it with
 * (n / |M|) sum_{i in M} w_i l_i.
 */
import * as tf from '@tensorflow/tfjs';
import type { Rng } from '../core/rng.ts';
import type { ParamTensors } from '../policy/head.ts';
import { inputTensors, type InputTensors, type PolicyInput, type TensorLayout } from '../policy/input.ts';
import { clipByGlobalNorm, type Adam } from './adam.ts';

/** An algorithm's batch as rows: the decisions, the taken actions, weights and extra columns. */
export interface PreparedBatch {
  input: PolicyInput;
  /** Index of the taken (or expert) candidate per row. */
  actions: Int32Array;
  /** Aggregation weight of each row's loss; the batch loss is sum_i w_i l_i. */
  weights: Float32Array;
  /** Per-row numbers the loss needs (old log-probs, advantages, returns, ...). */
  columns: Record<string, Float32Array>;
}

/** What a loss function sees for one minibatch (all tensors; the loop owns them). */
export interface LossContext {
  params: ParamTensors;
  /** The frozen reference weights (for KL), when the loss asked for them. */
  reference: ParamTensors | null;
  input: InputTensors;
  actions: tf.Tensor1D;
  /** Row weights already scaled by n / |minibatch|. */
  weights: tf.Tensor1D;
  columns: Record<string, tf.Tensor1D>;
}

/** An algorithm's loss on a minibatch: the scalar to minimise and named scalar metrics. */
export type LossFn = (ctx: LossContext) => { loss: tf.Scalar; metrics: Record<string, tf.Scalar> };

/** Options of {@link runUpdate}. */
export interface UpdateLoopOptions {
  /** Passes over the batch. */
  epochs: number;
  /** Rows per minibatch (the last one of an epoch may be smaller). */
  minibatchSize: number;
  /** Global-norm gradient clipping threshold (Infinity: off). */
  maxGradNorm: number;
  /** Shuffles rows between epochs. */
  rng: Rng;
  /** The variables this loss trains, by parameter name. */
  variables: ReadonlyMap<string, tf.Variable>;
  params: ParamTensors;
  reference: ParamTensors | null;
  /** Learning rate of this update (default: the optimizer's). */
  learningRate?: number;
  /** How the minibatches' tensors are laid out (the head's {@link tensorLayout} for gradient passes). */
  layout?: TensorLayout;
}

/** Means over minibatches of the loss, the gradient norm (before clipping) and the loss's metrics. */
export interface LoopResult {
  loss: number;
  gradNorm: number;
  minibatches: number;
  metrics: Record<string, number>;
}

function checkBatch(batch: PreparedBatch): void {
  const n = batch.input.count;
  if (batch.actions.length !== n) throw new RangeError(`prepared batch: ${batch.actions.length} actions for ${n} rows`);
  if (batch.weights.length !== n) throw new RangeError(`prepared batch: ${batch.weights.length} weights for ${n} rows`);
  for (const [name, col] of Object.entries(batch.columns)) {
    if (col.length !== n) throw new RangeError(`prepared batch: column ${name} has ${col.length} values for ${n} rows`);
  }
  for (let i = 0; i < n; i++) {
    const a = batch.actions[i] as number;
    if (!(a >= 0 && a < (batch.input.candidateCounts[i] as number))) {
      throw new RangeError(`prepared batch: row ${i} takes candidate ${a}, but it has ${batch.input.candidateCounts[i]} candidates`);
    }
  }
}

/** Runs epochs x minibatches of Adam steps on `loss`; see the module comment. */
export async function runUpdate(batch: PreparedBatch, loss: LossFn, adam: Adam, options: UpdateLoopOptions): Promise<LoopResult> {
  checkBatch(batch);
  const { epochs, minibatchSize, maxGradNorm, rng, variables } = options;
  if (!(Number.isInteger(epochs) && epochs >= 1)) throw new RangeError(`epochs must be an integer >= 1, got ${epochs}`);
  if (!(Number.isInteger(minibatchSize) && minibatchSize >= 1)) throw new RangeError(`minibatchSize must be an integer >= 1, got ${minibatchSize}`);
  const n = batch.input.count;
  const nameOf = new Map([...variables].map(([name, v]) => [v.name, name]));
  const varList = [...variables.values()];
  const columnNames = Object.keys(batch.columns);

  const pending: { loss: tf.Scalar; norm: tf.Scalar; metrics: Record<string, tf.Scalar> }[] = [];
  try {
    for (let epoch = 0; epoch < epochs; epoch++) {
      const order = rng.shuffle(Array.from({ length: n }, (_, i) => i));
      for (let start = 0; start < n; start += minibatchSize) {
        const chunk = order.slice(start, start + minibatchSize);
        const scale = n / chunk.length;
        const step = tf.tidy(() => {
          const ctx: LossContext = {
            params: options.params,
            reference: options.reference,
            input: inputTensors(batch.input, options.layout ?? {}, chunk),
            actions: tf.tensor1d(chunk.map((r) => batch.actions[r] as number), 'int32'),
            weights: tf.tensor1d(chunk.map((r) => (batch.weights[r] as number) * scale), 'float32'),
            columns: Object.fromEntries(columnNames.map((c) => [c, tf.tensor1d(chunk.map((r) => (batch.columns[c] as Float32Array)[r] as number), 'float32')])),
          };
          let metrics: Record<string, tf.Scalar> = {};
          const { value, grads } = tf.variableGrads(() => {
            const out = loss(ctx);
            metrics = out.metrics;
            for (const m of Object.values(metrics)) tf.keep(m);
            return out.loss;
          }, varList);
          const named = new Map(Object.entries(grads).map(([engineName, g]) => [nameOf.get(engineName) ?? engineName, g]));
          const clipped = clipByGlobalNorm(named, maxGradNorm);
          adam.apply(clipped.grads, options.learningRate);
          return { loss: value, norm: clipped.norm, metrics };
        });
        pending.push(step);
      }
    }
    // One read-back for every scalar of every minibatch (each read is a GPU round trip on WebGPU).
    const keys = Object.keys(pending[0]?.metrics ?? {});
    const stacked = tf.tidy(() => tf.stack(pending.flatMap((p) => [p.loss, p.norm, ...keys.map((k) => p.metrics[k] as tf.Scalar)])));
    let values: Float32Array;
    try {
      values = (await stacked.data()) as Float32Array;
    } finally {
      stacked.dispose();
    }
    const width = 2 + keys.length;
    const sums: Record<string, number> = {};
    let lossSum = 0;
    let normSum = 0;
    pending.forEach((_, i) => {
      lossSum += values[i * width] as number;
      normSum += values[i * width + 1] as number;
      keys.forEach((k, j) => (sums[k] = (sums[k] ?? 0) + (values[i * width + 2 + j] as number)));
    });
    const count = pending.length;
    return {
      loss: lossSum / count,
      gradNorm: normSum / count,
      minibatches: count,
      metrics: Object.fromEntries(Object.entries(sums).map(([k, v]) => [k, v / count])),
    };
  } finally {
    for (const p of pending) tf.dispose([p.loss, p.norm, ...Object.values(p.metrics)]);
  }
}
