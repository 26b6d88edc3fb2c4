/**
 * The retrieval experience model's learned reward: a small tfjs classifier that predicts the
 * reward of taking `action` in `state` for a task's `instruction`, trained on offline real
 * transitions. Its inputs are hashed-embedding features; the elementwise products
 * instruction×state and instruction×action carry the word overlap between what is asked and
 * what is on screen, which is most of what decides an outcome reward in these environments.
 */
import * as tf from '@tensorflow/tfjs';
import type { Embedder } from '../core/embedding.ts';
import { Rng } from '../core/rng.ts';
import { HashedEmbedder } from '../policy/hashed-embedder.ts';

/** One training example: the reward observed after `action` in `state`. */
export interface RewardExample {
  instruction: string;
  state: string;
  action: string;
  /** In [0, 1]. */
  reward: number;
}

/** Training settings; plain data with documented defaults. */
export interface RewardModelConfig {
  /** Dimension of the hashed embeddings the features are built from (4 × this inputs). Default 128. */
  featureDim: number;
  /** Hidden units of the one hidden layer. Default 32. */
  hidden: number;
  /** Passes over the training set. Default 20. */
  epochs: number;
  /** Minibatch size. Default 128. */
  batchSize: number;
  /** Adam learning rate. Default 5e-3. */
  learningRate: number;
  /** Seed for initial weights and minibatch order. Default 0. */
  seed: number;
}

export const DEFAULT_REWARD_MODEL_CONFIG: RewardModelConfig = {
  featureDim: 128,
  hidden: 32,
  epochs: 20,
  batchSize: 128,
  learningRate: 5e-3,
  seed: 0,
};

/** Training summary. */
export interface RewardModelReport {
  examples: number;
  /** Mean binary cross-entropy on the training set after training. */
  finalLoss: number;
  ms: number;
}

/** A trained reward predictor. Call `dispose()` when done to free its tensors. */
export class RewardModel {
  private constructor(
    private readonly embedder: Embedder,
    private readonly model: tf.Sequential,
    readonly report: RewardModelReport,
  ) {}

  /** Trains on `examples` (at least one), deterministically for `config.seed`. */
  static async train(examples: readonly RewardExample[], config: Partial<RewardModelConfig> = {}): Promise<RewardModel> {
    const cfg = { ...DEFAULT_REWARD_MODEL_CONFIG, ...config };
    const embedder = new HashedEmbedder({ dim: cfg.featureDim });
    if (examples.length === 0) throw new RangeError('RewardModel.train needs at least one example, got 0');
    for (const [i, e] of examples.entries()) {
      if (!(e.reward >= 0 && e.reward <= 1)) throw new RangeError(`reward of example ${i} must be in [0, 1], got ${e.reward}`);
    }
    const started = performance.now();
    const features = await featurise(embedder, examples);
    const inputDim = features[0]?.length ?? 0;
    const model = tf.sequential({
      layers: [
        tf.layers.dense({ inputShape: [inputDim], units: cfg.hidden, activation: 'relu', kernelInitializer: tf.initializers.glorotUniform({ seed: cfg.seed }) }),
        tf.layers.dense({ units: 1, activation: 'sigmoid', kernelInitializer: tf.initializers.glorotUniform({ seed: cfg.seed + 1 }) }),
      ],
    });
    const optimizer = tf.train.adam(cfg.learningRate, 0.9, 0.999, 1e-7);
    model.compile({ optimizer, loss: 'binaryCrossentropy' });
    // Shuffle once with our seeded generator: tfjs's own shuffle uses Math.random.
    const order = new Rng(cfg.seed).shuffle(examples.map((_, i) => i));
    const xData = new Float32Array(order.length * inputDim);
    const yData = new Float32Array(order.length);
    order.forEach((src, row) => {
      xData.set(features[src] as Float32Array, row * inputDim);
      yData[row] = (examples[src] as RewardExample).reward;
    });
    const x = tf.tensor2d(xData, [order.length, inputDim]);
    const y = tf.tensor2d(yData, [order.length, 1]);
    let finalLoss = Number.NaN;
    try {
      const history = await model.fit(x, y, { epochs: cfg.epochs, batchSize: cfg.batchSize, shuffle: false, verbose: 0 });
      const losses = history.history.loss as number[];
      finalLoss = losses[losses.length - 1] ?? Number.NaN;
    } catch (err) {
      model.dispose();
      throw err;
    } finally {
      x.dispose();
      y.dispose();
      // The model is never trained again: free Adam's moment estimates now.
      optimizer.dispose();
    }
    return new RewardModel(embedder, model, { examples: examples.length, finalLoss, ms: performance.now() - started });
  }

  /** Predicted rewards in [0, 1], one per input. */
  async predict(inputs: readonly Omit<RewardExample, 'reward'>[]): Promise<number[]> {
    if (inputs.length === 0) return [];
    const features = await featurise(this.embedder, inputs);
    const dim = features[0]?.length ?? 0;
    const flat = new Float32Array(features.length * dim);
    features.forEach((f, i) => flat.set(f, i * dim));
    const out = tf.tidy(() => this.model.predict(tf.tensor2d(flat, [features.length, dim])) as tf.Tensor);
    try {
      return Array.from(await out.data());
    } finally {
      out.dispose();
    }
  }

  /** Frees the model's weights. */
  dispose(): void {
    this.model.dispose();
  }
}

/** [instruction⊙state · dim, instruction⊙action · dim, state, action] per example. */
async function featurise(embedder: Embedder, items: readonly Omit<RewardExample, 'reward'>[]): Promise<Float32Array[]> {
  const texts: string[] = [];
  for (const it of items) texts.push(it.instruction, it.state, it.action);
  const vectors = await embedder.embed(texts);
  const d = embedder.dim;
  return items.map((_, i) => {
    const ins = vectors[3 * i] as Float32Array;
    const st = vectors[3 * i + 1] as Float32Array;
    const ac = vectors[3 * i + 2] as Float32Array;
    const f = new Float32Array(4 * d);
    // Products of unit vectors are O(1/d) per coordinate; scale them to the same range as the rest.
    for (let j = 0; j < d; j++) {
      f[j] = (ins[j] as number) * (st[j] as number) * d;
      f[d + j] = (ins[j] as number) * (ac[j] as number) * d;
    }
    f.set(st, 2 * d);
    f.set(ac, 3 * d);
    return f;
  });
}
