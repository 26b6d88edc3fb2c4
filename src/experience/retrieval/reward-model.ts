/**
 * The retrieval experience model's learned reward: a small tfjs classifier that predicts the
 * reward of taking `action` in `state` for a task's `instruction`, given the actions taken so
 * far, trained on real transitions. It judges from evidence that the goal holds, read from
 * agent-visible text only: how much of the instruction the state, the action and the history
 * cover (`evidence.ts`), plus hashed n-grams of the same texts with the instruction's words,
 * numbers and opaque ids abstracted away (so "holding the object asked for" is one feature
 * across tasks, and no item id can be memorised), plus the instruction's own words (the
 * kind of task).
 */
import * as tf from '@tensorflow/tfjs';
import type { Embedder } from '../../core/embedding.ts';
import { Rng } from '../../core/rng.ts';
import { HashedEmbedder } from '../../policy/hashed-embedder.ts';
import { abstractText, evidenceFeatures, EVIDENCE_DIM, instructionWords, withoutInstruction } from './evidence.ts';

/** One training example: the reward observed after `action` in `state`. */
export interface RewardExample {
  instruction: string;
  state: string;
  action: string;
  /** Actions taken earlier in the episode, oldest first. Default none. */
  history?: readonly string[];
  /** The actions taken on the current page (see `actionsOnPage`). Default none. */
  pageActions?: readonly string[];
  /** The state's admissible actions. Default none. */
  offered?: readonly string[];
  /** Where the item last opened stood in its list (`openedRank`). Default 0. */
  rank?: number;
  /** In [0, 1]. */
  reward: number;
  /** Whether the step completed the task. Default: `reward >= 1`. */
  success?: boolean;
}

/** What the model predicts for one input. */
export interface PredictedOutcome {
  /** Expected reward in [0, 1]: `success` + (1 - `success`) * `partialReward`. */
  reward: number;
  /** Probability that the step completes the task. */
  success: number;
  /**
   * Expected reward in [0, 1] if the step does not complete the task (a near miss may earn part
   * of the reward for real). Learned from the examples that did not complete it only: learned from
   * all of them (expert successes dominate the data), a near miss paid about what a success did.
   */
  partialReward: number;
}

/** Training settings; plain data with documented defaults. */
export interface RewardModelConfig {
  /** Dimension of each hashed embedding the features are built from (4 × this inputs, plus the dense evidence). Default 128. */
  featureDim: number;
  /** Hidden units of the one hidden layer. Default 48. */
  hidden: number;
  /** Passes over the training set. Default 30. */
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
  hidden: 48,
  epochs: 30,
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
        // Two outputs: the reward of a step that does not complete the task, and whether it completes it.
        tf.layers.dense({ units: 2, activation: 'sigmoid', kernelInitializer: tf.initializers.glorotUniform({ seed: cfg.seed + 1 }) }),
      ],
    });
    const optimizer = tf.train.adam(cfg.learningRate, 0.9, 0.999, 1e-7);
    model.compile({ optimizer, loss: partialAndSuccessLoss });
    // Shuffle once with our seeded generator: tfjs's own shuffle uses Math.random.
    const order = new Rng(cfg.seed).shuffle(examples.map((_, i) => i));
    const xData = new Float32Array(order.length * inputDim);
    const yData = new Float32Array(order.length * 2);
    order.forEach((src, row) => {
      const e = examples[src] as RewardExample;
      xData.set(features[src] as Float32Array, row * inputDim);
      yData[2 * row] = e.reward;
      yData[2 * row + 1] = (e.success ?? e.reward >= 1) ? 1 : 0;
    });
    const x = tf.tensor2d(xData, [order.length, inputDim]);
    const y = tf.tensor2d(yData, [order.length, 2]);
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
  async predict(inputs: readonly Omit<RewardExample, 'reward' | 'success'>[]): Promise<number[]> {
    return (await this.predictOutcomes(inputs)).map((o) => o.reward);
  }

  /** Predicted reward and probability of success, one per input. */
  async predictOutcomes(inputs: readonly Omit<RewardExample, 'reward' | 'success'>[]): Promise<PredictedOutcome[]> {
    if (inputs.length === 0) return [];
    const features = await featurise(this.embedder, inputs);
    const dim = features[0]?.length ?? 0;
    const flat = new Float32Array(features.length * dim);
    features.forEach((f, i) => flat.set(f, i * dim));
    const out = tf.tidy(() => this.model.predict(tf.tensor2d(flat, [features.length, dim])) as tf.Tensor);
    try {
      const values = await out.data();
      return inputs.map((_, i) => {
        const partialReward = values[2 * i] as number;
        const success = values[2 * i + 1] as number;
        return { reward: success + (1 - success) * partialReward, success, partialReward };
      });
    } finally {
      out.dispose();
    }
  }

  /** Frees the model's weights. */
  dispose(): void {
    this.model.dispose();
  }
}

/**
 * Binary cross-entropy of the success output, plus that of the partial-reward output on the
 * examples that did not complete the task (targets: [reward, success] per row).
 */
function partialAndSuccessLoss(yTrue: tf.Tensor, yPred: tf.Tensor): tf.Scalar {
  return tf.tidy(() => {
    const eps = 1e-7;
    const p = yPred.clipByValue(eps, 1 - eps);
    const bce = yTrue.mul(p.log()).add(tf.scalar(1).sub(yTrue).mul(tf.scalar(1).sub(p).log())).neg();
    const [partial, success] = tf.split(bce, 2, 1) as [tf.Tensor, tf.Tensor];
    const failed = tf.scalar(1).sub(tf.split(yTrue, 2, 1)[1] as tf.Tensor);
    return success.add(partial.mul(failed)).mean() as tf.Scalar;
  });
}

/**
 * [dense evidence, abstracted state, abstracted action, abstracted history, instruction] per
 * example; the state loses its instruction line so that the instruction's words are not counted
 * as seen on screen.
 */
async function featurise(embedder: Embedder, items: readonly Omit<RewardExample, 'reward' | 'success'>[]): Promise<Float32Array[]> {
  const texts: string[] = [];
  for (const it of items) {
    const words = instructionWords(it.instruction);
    const history = it.history ?? [];
    texts.push(
      abstractText(withoutInstruction(it.state, it.instruction), words),
      abstractText(it.action, words),
      history.map((a) => abstractText(a, words)).join(' | '),
      it.instruction,
    );
  }
  const vectors = await embedder.embed(texts);
  const d = embedder.dim;
  return items.map((it, i) => {
    const f = new Float32Array(EVIDENCE_DIM + 4 * d);
    f.set(evidenceFeatures(it.instruction, it.state, it.action, it.history ?? [], it.pageActions ?? [], it.offered ?? [], it.rank ?? 0), 0);
    for (let k = 0; k < 4; k++) f.set(vectors[4 * i + k] as Float32Array, EVIDENCE_DIM + k * d);
    return f;
  });
}
