/**
 * Adam with an explicit epsilon, keyed by parameter name, plus global-norm gradient clipping.
 *
 * Why not `tf.train.adam`: its slots are matched to variables by position in each gradient map
 * and named after engine-global variable names, so a gradient map that lacks one variable (the
 * value head in a GRPO step) shifts the slots, and a checkpoint cannot be restored into a fresh
 * model. Here every slot is named after the parameter, created up front (so the tensor count
 * does not change after the first update) and saved in checkpoints.
 *
 * Update (Kingma & Ba, as in PyTorch and tfjs):
 *   m = b1 m + (1 - b1) g;  v = b2 v + (1 - b2) g^2
 *   p = p - lr * (m / (1 - b1^t)) / (sqrt(v / (1 - b2^t)) + eps)
 */
import * as tf from '@tensorflow/tfjs';
import type { OptimizerState, TensorRecord } from '../policy/checkpoint.ts';
import { CheckpointError } from '../policy/checkpoint.ts';

/** Adam hyper-parameters. */
export interface AdamConfig {
  learningRate: number;
  beta1: number;
  beta2: number;
  /** Added to sqrt(v-hat); pass it explicitly (tfjs backends differ in their defaults). */
  epsilon: number;
}

function zerosVariable(shape: number[]): tf.Variable {
  const zeros = tf.zeros(shape, 'float32');
  const v = tf.variable(zeros, false);
  zeros.dispose();
  return v;
}

/** Adam over a fixed set of named variables. */
export class Adam {
  private readonly m = new Map<string, tf.Variable>();
  private readonly v = new Map<string, tf.Variable>();
  private t = 0;

  constructor(
    private readonly params: ReadonlyMap<string, tf.Variable>,
    readonly config: AdamConfig,
  ) {
    const { learningRate, beta1, beta2, epsilon } = config;
    if (!(learningRate > 0 && Number.isFinite(learningRate))) throw new RangeError(`Adam learningRate must be > 0, got ${learningRate}`);
    if (!(beta1 >= 0 && beta1 < 1)) throw new RangeError(`Adam beta1 must be in [0, 1), got ${beta1}`);
    if (!(beta2 >= 0 && beta2 < 1)) throw new RangeError(`Adam beta2 must be in [0, 1), got ${beta2}`);
    if (!(epsilon > 0 && Number.isFinite(epsilon))) throw new RangeError(`Adam epsilon must be > 0, got ${epsilon}`);
    for (const [name, p] of params) {
      this.m.set(name, zerosVariable(p.shape));
      this.v.set(name, zerosVariable(p.shape));
    }
  }

  /** Number of updates applied. */
  get step(): number {
    return this.t;
  }

  /**
   * Applies one update from gradients by parameter name. A parameter without a gradient is left
   * unchanged (its moments too). Unknown names throw.
   */
  apply(grads: ReadonlyMap<string, tf.Tensor>, learningRate = this.config.learningRate): void {
    for (const name of grads.keys()) if (!this.params.has(name)) throw new RangeError(`Adam: gradient for unknown parameter ${JSON.stringify(name)}`);
    this.t += 1;
    const { beta1, beta2, epsilon } = this.config;
    const c1 = 1 - beta1 ** this.t;
    const c2 = 1 - beta2 ** this.t;
    tf.tidy(() => {
      for (const [name, g] of grads) {
        const p = this.params.get(name) as tf.Variable;
        const m = this.m.get(name) as tf.Variable;
        const v = this.v.get(name) as tf.Variable;
        const m1 = tf.add(tf.mul(m, beta1), tf.mul(g, 1 - beta1));
        const v1 = tf.add(tf.mul(v, beta2), tf.mul(tf.square(g), 1 - beta2));
        m.assign(m1);
        v.assign(v1);
        const update = tf.div(tf.div(m1, c1), tf.add(tf.sqrt(tf.div(v1, c2)), epsilon));
        p.assign(tf.sub(p, tf.mul(update, learningRate)));
      }
    });
  }

  /** The state as plain records (`m/NAME`, `v/NAME`). */
  async exportState(): Promise<OptimizerState> {
    const slots: TensorRecord[] = [];
    for (const [prefix, map] of [
      ['m', this.m],
      ['v', this.v],
    ] as const) {
      for (const [name, t] of map) slots.push({ name: `${prefix}/${name}`, shape: [...t.shape], dtype: 'float32', data: (await t.data()) as Float32Array });
    }
    return { kind: 'adam', step: this.t, slots };
  }

  /**
   * Checks that a state saved by {@link exportState} fits this optimizer (kind, step, every slot
   * with its shape and size) without changing anything; throws {@link CheckpointError}.
   */
  checkState(state: OptimizerState): void {
    this.slotsOf(state);
  }

  /** Restores a state saved by {@link exportState}; all of it, or (on {@link CheckpointError}) none. */
  importState(state: OptimizerState): void {
    for (const [t, r] of this.slotsOf(state)) {
      const value = tf.tensor(r.data, r.shape, 'float32');
      t.assign(value);
      value.dispose();
    }
    this.t = state.step;
  }

  private slotsOf(state: OptimizerState): [tf.Variable, TensorRecord][] {
    if (state.kind !== 'adam') throw new CheckpointError('incompatible', `optimizer kind ${JSON.stringify(state.kind)} is not adam`);
    if (!(Number.isInteger(state.step) && state.step >= 0)) throw new CheckpointError('corrupt', `optimizer step must be an integer >= 0, got ${state.step}`);
    const byName = new Map(state.slots.map((s) => [s.name, s]));
    const pending: [tf.Variable, TensorRecord][] = [];
    for (const [prefix, map] of [
      ['m', this.m],
      ['v', this.v],
    ] as const) {
      for (const [name, t] of map) {
        const r = byName.get(`${prefix}/${name}`);
        if (!r) throw new CheckpointError('incompatible', `optimizer: slot ${prefix}/${name} is missing`);
        if (r.shape.length !== t.shape.length || r.shape.some((d, i) => d !== t.shape[i])) {
          throw new CheckpointError('incompatible', `optimizer: ${prefix}/${name} has shape [${r.shape.join(', ')}], expected [${t.shape.join(', ')}]`);
        }
        if (r.data.length !== t.size) throw new CheckpointError('corrupt', `optimizer: ${prefix}/${name} has ${r.data.length} values for ${t.size}`);
        pending.push([t, r]);
      }
    }
    return pending;
  }

  /** Frees the slot tensors. */
  dispose(): void {
    for (const t of [...this.m.values(), ...this.v.values()]) {
      try {
        t.dispose();
      } catch {
        // A lost GPU device may refuse; the tensors are gone with it.
      }
    }
    this.m.clear();
    this.v.clear();
  }
}

/**
 * Scales gradients so that their global L2 norm is at most `maxNorm` (no-op when below).
 * Returns the clipped gradients and the norm before clipping (a scalar tensor). Call in tf.tidy.
 */
export function clipByGlobalNorm(grads: ReadonlyMap<string, tf.Tensor>, maxNorm: number): { grads: Map<string, tf.Tensor>; norm: tf.Scalar } {
  if (!(maxNorm > 0)) throw new RangeError(`maxNorm must be > 0 (use Infinity to disable), got ${maxNorm}`);
  const squares = [...grads.values()].map((g) => tf.sum(tf.square(g)));
  const norm = tf.sqrt(squares.length > 0 ? tf.addN(squares) : tf.scalar(0)) as tf.Scalar;
  if (!Number.isFinite(maxNorm)) return { grads: new Map(grads), norm };
  const scale = tf.div(maxNorm, tf.maximum(norm, maxNorm));
  return { grads: new Map([...grads].map(([name, g]) => [name, tf.mul(g, scale)])), norm };
}
