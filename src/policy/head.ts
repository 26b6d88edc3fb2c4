/**
 * The trainable policy head: scores the candidate actions of a state.
 *
 *   logits(a|s) = prior(a|s) + head(phi(s), psi(a))
 *   u = P_s phi,  v = P_a psi                                   (projections to hiddenDim)
 *   head(phi, psi) = u . v  +  w_out . tanh(u + v [+ P_x (phi_q * psi)] + b)
 *
 * `phi` are state features (task, history, observation), `psi` action features. The bilinear
 * term u . v = phi^T P_s^T P_a psi scores how well an action fits a state directly; the tanh
 * layer adds non-linear state-action interactions. With `interaction: 'product'` the projected
 * elementwise product of psi and the first `actionDim` state features phi_q (a learned
 * word-overlap term when both come from one embedder) enters the tanh layer too. Each
 * projection P is a full matrix, or, with `loraRank: r > 0`, a frozen random base plus a
 * trainable low-rank update A B scaled by alpha / r (LoRA). Candidates are scored compacted (real
 * ones only, each repeated leading block projected once in gradient passes) and scattered back to
 * padded [n, K] logits with a mask. An optional value head V(s) = w_v . tanh(W_v phi + b_v) + c
 * serves PPO. A frozen reference copy of the weights gives the KL term.
 *
 * The forward functions take the parameters as a plain record, so the losses and the
 * finite-difference tests can differentiate them; {@link PolicyHead} owns the tf.Variables.
 */
import * as tf from '@tensorflow/tfjs';
import { z } from 'zod';
import { Rng } from '../core/rng.ts';
import { CheckpointError, type TensorRecord } from './checkpoint.ts';
import { inputTensors, validateInput, type InputTensors, type PolicyInput, type SplitRows, type TensorLayout } from './input.ts';

/** Settings of the policy head. Parse with {@link parsePolicyHeadConfig} to fill the defaults. */
export const PolicyHeadConfigSchema = z
  .object({
    /** Length of the state features phi. */
    stateDim: z.number().int().min(1),
    /** Length of the action features psi. */
    actionDim: z.number().int().min(1),
    /** Width of the hidden layer. */
    hiddenDim: z.number().int().min(1).default(64),
    /**
     * `product`: also feed the projected elementwise product of psi and the first `actionDim`
     * state features (a learned word-overlap term when both come from one embedder).
     */
    interaction: z.enum(['product', 'none']).default('none'),
    /** 0: full-rank projections. r > 0: frozen random base + trainable rank-r update (LoRA). */
    loraRank: z.number().int().min(0).default(0),
    /** LoRA scale numerator: the update is multiplied by loraAlpha / loraRank. Default: loraRank. */
    loraAlpha: z.number().positive().optional(),
    /**
     * Width of the candidates' leading block that repeats across candidates (the featurizer's
     * embedded action text): in gradient passes each distinct value is projected once (and, for
     * `product`, each distinct pair with the states' leading block). Speed only: every width
     * gives the same scores. 0: off.
     */
    leadDim: z.number().int().min(0).default(0),
    /** Add a value head V(s) (PPO). */
    valueHead: z.boolean().default(false),
    /** Width of the value head's hidden layer. */
    valueHiddenDim: z.number().int().min(1).default(64),
    /** Seed of the weight initialisation (the same seed gives the same weights on every backend). */
    seed: z.number().int().default(0),
    /**
     * Multiplies the initial `policy.out.w` and `policy.state.w` (full-rank state projection):
     * both paths of the head's score (the MLP and the bilinear term) then start near 0, so the
     * untrained policy is its prior, while every weight still gets a gradient. 1: the usual scales.
     */
    initScale: z.number().min(0).max(1).default(1),
  })
  .strict()
  .refine((c) => c.interaction === 'none' || c.stateDim >= c.actionDim, {
    message: "interaction 'product' needs stateDim >= actionDim",
    path: ['interaction'],
  })
  .refine((c) => c.leadDim <= Math.min(c.stateDim, c.actionDim), {
    message: 'leadDim must be at most stateDim and actionDim',
    path: ['leadDim'],
  });
export type PolicyHeadConfig = z.output<typeof PolicyHeadConfigSchema>;
export type PolicyHeadConfigInput = z.input<typeof PolicyHeadConfigSchema>;

/** Thrown for an invalid configuration; the message names each bad field and its value. */
export class ConfigError extends RangeError {
  override name = 'ConfigError';
}

/** Formats zod issues as `path: message (got value)`. */
export function formatIssues(error: z.ZodError, input: unknown): string {
  return error.issues
    .map((issue) => {
      let value: unknown = input;
      for (const key of issue.path) value = value !== null && typeof value === 'object' ? (value as Record<PropertyKey, unknown>)[key as PropertyKey] : undefined;
      const path = issue.path.join('.') || '(root)';
      return `${path}: ${issue.message} (got ${JSON.stringify(value) ?? String(value)})`;
    })
    .join('; ');
}

/** Validates a head configuration and fills its defaults; throws {@link ConfigError}. */
export function parsePolicyHeadConfig(input: PolicyHeadConfigInput): PolicyHeadConfig {
  const result = PolicyHeadConfigSchema.safeParse(input);
  if (!result.success) throw new ConfigError(`Invalid policy head config: ${formatIssues(result.error, input)}`);
  return result.data;
}

/** Parameters by name (tf.Variables of a head, or any tensors of the same shapes). */
export type ParamTensors = Readonly<Record<string, tf.Tensor>>;

/** Name, shape, initialisation and trainability of one parameter. */
export interface ParamSpec {
  name: string;
  shape: number[];
  /** 'projection': U(-a, a) with a = sqrt(12 / columns), for unit-norm inputs; 'glorot': Glorot-uniform. */
  init: 'projection' | 'glorot' | 'zeros';
  trainable: boolean;
  group: 'policy' | 'value';
}

const PROJECTIONS = ['policy.state', 'policy.action', 'policy.interaction'] as const;

/** The parameters a configuration has, in a fixed order. */
export function paramSpecs(config: PolicyHeadConfig): ParamSpec[] {
  const h = config.hiddenDim;
  const specs: ParamSpec[] = [];
  const inputDims: Record<(typeof PROJECTIONS)[number], number> = {
    'policy.state': config.stateDim,
    'policy.action': config.actionDim,
    'policy.interaction': config.actionDim,
  };
  for (const name of PROJECTIONS) {
    if (name === 'policy.interaction' && config.interaction === 'none') continue;
    const d = inputDims[name];
    if (config.loraRank > 0) {
      specs.push({ name: `${name}.base`, shape: [d, h], init: 'projection', trainable: false, group: 'policy' });
      specs.push({ name: `${name}.loraA`, shape: [d, config.loraRank], init: 'projection', trainable: true, group: 'policy' });
      specs.push({ name: `${name}.loraB`, shape: [config.loraRank, h], init: 'zeros', trainable: true, group: 'policy' });
    } else {
      specs.push({ name: `${name}.w`, shape: [d, h], init: 'projection', trainable: true, group: 'policy' });
    }
  }
  specs.push({ name: 'policy.hidden.b', shape: [h], init: 'zeros', trainable: true, group: 'policy' });
  specs.push({ name: 'policy.out.w', shape: [h, 1], init: 'glorot', trainable: true, group: 'policy' });
  if (config.valueHead) {
    const hv = config.valueHiddenDim;
    specs.push({ name: 'value.hidden.w', shape: [config.stateDim, hv], init: 'projection', trainable: true, group: 'value' });
    specs.push({ name: 'value.hidden.b', shape: [hv], init: 'zeros', trainable: true, group: 'value' });
    specs.push({ name: 'value.out.w', shape: [hv, 1], init: 'glorot', trainable: true, group: 'value' });
    specs.push({ name: 'value.out.b', shape: [1], init: 'zeros', trainable: true, group: 'value' });
  }
  return specs;
}

/** Deterministic initial values from the seeded Rng (identical on every backend). */
export function initialValues(config: PolicyHeadConfig): Map<string, Float32Array> {
  const rng = new Rng(config.seed);
  const out = new Map<string, Float32Array>();
  for (const spec of paramSpecs(config)) {
    const size = spec.shape.reduce((a, b) => a * b, 1);
    const data = new Float32Array(size);
    if (spec.init !== 'zeros') {
      const fanIn = spec.shape[0] ?? 1;
      const fanOut = spec.shape[1] ?? 1;
      const scaled = spec.name === 'policy.out.w' || spec.name === 'policy.state.w' ? config.initScale : 1;
      const limit = scaled * (spec.init === 'projection' ? Math.sqrt(12 / fanOut) : Math.sqrt(6 / (fanIn + fanOut)));
      const r = rng.fork(spec.name);
      for (let i = 0; i < size; i++) data[i] = (2 * r.next() - 1) * limit;
    }
    out.set(spec.name, data);
  }
  return out;
}

function param(params: ParamTensors, name: string): tf.Tensor {
  const p = params[name];
  if (!p) throw new RangeError(`policy head parameter ${JSON.stringify(name)} is missing`);
  return p;
}

/**
 * Matrix products with hand-written gradients that use only non-transposed matMuls of the big
 * operand. tfjs-wasm runs transposed matMuls (and large transposes) outside XNNPACK, about 10x
 * slower, and the built-in gradient of `matMul` uses them for the largest products of an update.
 */

type SaveFn = (tensors: tf.Tensor[]) => void;

/**
 * x W for a data input x: only W gets a gradient, dW = (dy^T x)^T. Use it only where x does not
 * depend on trainable parameters (features), or their gradient through x is silently dropped.
 */
function linearOfInput(x: tf.Tensor2D, w: tf.Tensor2D): tf.Tensor2D {
  const f = tf.customGrad((wv, save) => {
    (save as SaveFn)([x]);
    return {
      value: tf.matMul(x, wv as tf.Tensor2D),
      gradFunc: (dy, saved) => tf.transpose(tf.matMul(tf.transpose(dy as tf.Tensor2D), saved[0] as tf.Tensor2D)),
    };
  }) as (w: tf.Tensor2D) => tf.Tensor2D;
  return f(w);
}

/** x W with gradients for both: dx = dy W^T, dW = (dy^T x)^T (W is small). */
export const linear: (x: tf.Tensor2D, w: tf.Tensor2D) => tf.Tensor2D = tf.customGrad((x, w, save) => {
  (save as SaveFn)([x as tf.Tensor, w as tf.Tensor]);
  return {
    value: tf.matMul(x as tf.Tensor2D, w as tf.Tensor2D),
    gradFunc: (dy, saved) => {
      const [xs, ws] = saved as [tf.Tensor2D, tf.Tensor2D];
      const g = dy as tf.Tensor2D;
      return [tf.matMul(g, tf.transpose(ws)), tf.transpose(tf.matMul(tf.transpose(g), xs))];
    },
  };
}) as (x: tf.Tensor2D, w: tf.Tensor2D) => tf.Tensor2D;

/**
 * Rows `indices` of x (a gather) whose gradient scatters back with a sum: tfjs's own gather
 * gradient needs UnsortedSegmentSum, which the wasm backend lacks; ScatterNd sums duplicates
 * on every backend.
 */
function gatherRows<T extends tf.Tensor>(x: T, indices: tf.Tensor1D): T {
  const shape = x.shape;
  const f = tf.customGrad((xv, save) => {
    (save as SaveFn)([indices]); // kept for the backward pass, which may run after the caller's scope
    return {
      value: tf.gather(xv as tf.Tensor, indices),
      gradFunc: (dy, saved) => tf.scatterND(tf.expandDims(saved[0] as tf.Tensor1D, 1), dy as tf.Tensor, shape),
    };
  }) as (x: tf.Tensor) => tf.Tensor;
  return f(x) as T;
}

/** x W for data rows x (dense, or split: each distinct lead is multiplied once); only W gets a gradient. */
function dataTimes(x: tf.Tensor2D | SplitRows, w: tf.Tensor2D): tf.Tensor2D {
  if (x instanceof tf.Tensor) return linearOfInput(x, w);
  const lead = x.leads.shape[1];
  const [d, cols] = w.shape;
  const parts: tf.Tensor2D[] = [];
  if (lead > 0) parts.push(gatherRows(linearOfInput(x.leads, tf.slice(w, [0, 0], [lead, cols])), x.leadOf));
  if (d > lead) parts.push(linearOfInput(x.rest, tf.slice(w, [lead, 0], [d - lead, cols])));
  return parts.length === 1 ? (parts[0] as tf.Tensor2D) : tf.add(parts[0] as tf.Tensor2D, parts[1] as tf.Tensor2D);
}

/** A projection of data features x through a named (full or LoRA) weight. */
function project(x: tf.Tensor2D | SplitRows, params: ParamTensors, name: string, config: PolicyHeadConfig): tf.Tensor2D {
  if (config.loraRank > 0) {
    const scale = (config.loraAlpha ?? config.loraRank) / config.loraRank;
    const base = dataTimes(x, param(params, `${name}.base`) as tf.Tensor2D);
    const low = linear(dataTimes(x, param(params, `${name}.loraA`) as tf.Tensor2D), param(params, `${name}.loraB`) as tf.Tensor2D);
    return tf.add(base, tf.mul(low, scale));
  }
  return dataTimes(x, param(params, `${name}.w`) as tf.Tensor2D);
}

/**
 * The input layout the head needs: the `product` interaction's rows, and the deduplicated
 * leading block (`leadDim`; see {@link TensorLayout}).
 */
export function tensorLayout(config: PolicyHeadConfig): TensorLayout {
  return { leadDim: config.leadDim, products: config.interaction === 'product' };
}

/** The head's raw scores head(phi, psi), [n, K] (no prior; padding positions score 0, mask them). */
export function headScores(params: ParamTensors, input: InputTensors, config: PolicyHeadConfig): tf.Tensor2D {
  const [n, k] = input.mask.shape;
  const u = project(input.states, params, 'policy.state', config); // [n, h]
  const v = project(input.candidates, params, 'policy.action', config); // [C, h], real candidates only
  const uOfCandidate = gatherRows(u, input.candidateRow); // [C, h]
  let z = tf.add(v, uOfCandidate);
  if (config.interaction === 'product') {
    if (!input.products) throw new RangeError("interaction 'product' needs the input's products (inputTensors(input, { products: true }))");
    z = tf.add(z, project(input.products, params, 'policy.interaction', config));
  }
  const hidden = tf.tanh(tf.add(z, param(params, 'policy.hidden.b'))) as tf.Tensor2D;
  const mlp = tf.reshape(tf.matMul(hidden, param(params, 'policy.out.w') as tf.Tensor2D), [-1]);
  const bilinear = tf.sum(tf.mul(v, uOfCandidate), 1); // (P_s phi) . (P_a psi)
  const scores = tf.concat([tf.add(mlp, bilinear), tf.zeros([1])]); // [C + 1]: the last one scores padding
  return tf.reshape(gatherRows(scores, input.slots), [n, k]);
}

/** Logit given to padding candidates (exp underflows to exactly 0 in float32). */
export const MASKED_LOGIT = -1e9;

/** (prior + head) / temperature, with padding candidates at {@link MASKED_LOGIT}; [n, K]. */
function policyLogits(params: ParamTensors, input: InputTensors, config: PolicyHeadConfig, temperature = 1): tf.Tensor2D {
  const raw = tf.div(tf.add(input.prior, headScores(params, input, config)), temperature);
  return tf.add(tf.mul(raw, input.mask), tf.mul(tf.sub(1, input.mask), MASKED_LOGIT));
}

/** Log-probabilities over candidates, [n, K] (padding: about -1e9). */
export function policyLogProbs(params: ParamTensors, input: InputTensors, config: PolicyHeadConfig, temperature = 1): tf.Tensor2D {
  return tf.logSoftmax(policyLogits(params, input, config, temperature));
}

/** Log-probability of the chosen candidate of each row, [n]. `actions` is int32 [n]. */
export function takenLogProbs(logProbs: tf.Tensor2D, actions: tf.Tensor1D): tf.Tensor1D {
  const k = logProbs.shape[1];
  // tf.oneHot refuses depth 1: rows with a single candidate (a chunk of forced steps) took it.
  if (k === 1) return tf.reshape(logProbs, [-1]);
  return tf.sum(tf.mul(logProbs, tf.oneHot(actions, k)), 1);
}

/** Entropy of each row's distribution over its real candidates, [n]. */
export function rowEntropy(logProbs: tf.Tensor2D, mask: tf.Tensor2D): tf.Tensor1D {
  return tf.neg(tf.sum(tf.mul(tf.mul(tf.exp(logProbs), logProbs), mask), 1));
}

/** The value head V(s), [n]. */
export function stateValues(params: ParamTensors, states: tf.Tensor2D): tf.Tensor1D {
  const hidden = tf.tanh(tf.add(linearOfInput(states, param(params, 'value.hidden.w') as tf.Tensor2D), param(params, 'value.hidden.b')));
  const v = tf.add(tf.matMul(hidden, param(params, 'value.out.w') as tf.Tensor2D), param(params, 'value.out.b'));
  return tf.reshape(v, [states.shape[0]]);
}

/** Options of {@link PolicyHead.act}. */
export interface ActOptions {
  /** Sampling temperature (> 0). Default 1. */
  temperature?: number;
  /** Take the most likely candidate instead of sampling. */
  greedy?: boolean;
  /** Random stream for sampling (required unless greedy). */
  rng?: Rng;
}

/** The chosen candidates of a batch. */
export interface ActResult {
  /** Index of the chosen candidate per row. */
  actions: Int32Array;
  /** log pi(action | state) at the given temperature, per row (the behaviour log-prob for GRPO/PPO). */
  logProbs: Float32Array;
  /** Probabilities, [n, K] row-major (0 for padding). */
  probs: Float32Array;
}

let nextHeadId = 0;

/** Frees a copy of the weights (best effort: a lost GPU device may refuse). */
function disposeCopy(copy: Map<string, tf.Tensor> | null): void {
  if (!copy) return;
  for (const t of copy.values()) {
    try {
      t.dispose();
    } catch {
      // The backend that held it may be gone (lost GPU device).
    }
  }
}

/** A fresh copy of `vars`, freeing `old`. */
function replaceCopies(old: Map<string, tf.Tensor> | null, vars: ReadonlyMap<string, tf.Variable>): Map<string, tf.Tensor> {
  disposeCopy(old);
  return new Map([...vars].map(([name, v]) => [name, tf.clone(v)]));
}

/** The head's tf.Variables, a frozen reference copy for KL, acting and weight export/import. */
export class PolicyHead {
  readonly config: PolicyHeadConfig;
  readonly specs: readonly ParamSpec[];
  private readonly vars = new Map<string, tf.Variable>();
  private reference: Map<string, tf.Tensor> | null = null;
  /** A copy of the weights kept to be put back later (see {@link keepWeights}). */
  private kept: Map<string, tf.Tensor> | null = null;
  private disposed = false;

  constructor(config: PolicyHeadConfigInput) {
    this.config = parsePolicyHeadConfig(config);
    this.specs = paramSpecs(this.config);
    const id = nextHeadId++;
    const init = initialValues(this.config);
    for (const spec of this.specs) {
      const t = tf.tensor(init.get(spec.name) as Float32Array, spec.shape, 'float32');
      this.vars.set(spec.name, tf.variable(t, spec.trainable, `dreamgym-head${id}/${spec.name}`));
      t.dispose();
    }
  }

  /** All parameters (trainable and frozen) by name. */
  params(): ParamTensors {
    this.assertLive();
    return Object.fromEntries(this.vars);
  }

  /** The trainable variables of a group ('all': policy and value), by name. */
  trainable(group: 'policy' | 'value' | 'all' = 'all'): Map<string, tf.Variable> {
    this.assertLive();
    const out = new Map<string, tf.Variable>();
    for (const spec of this.specs) {
      if (spec.trainable && (group === 'all' || spec.group === group)) out.set(spec.name, this.vars.get(spec.name) as tf.Variable);
    }
    return out;
  }

  /** Number of trainable scalars. */
  get trainableSize(): number {
    let n = 0;
    for (const v of this.trainable('all').values()) n += v.size;
    return n;
  }

  /** Freezes a copy of the current weights as the KL reference (replacing an earlier one). */
  resetReference(): void {
    this.assertLive();
    this.reference = replaceCopies(this.reference, this.vars);
  }

  /**
   * Puts the reference weights back as the current ones (the policy where the reference was last
   * frozen); the reference stays. False, changing nothing, when there is no reference yet.
   */
  restoreReference(): boolean {
    return this.assignCopy(this.reference);
  }

  /** Keeps a copy of the current weights (replacing an earlier one) for {@link restoreKept}. */
  keepWeights(): void {
    this.assertLive();
    this.kept = replaceCopies(this.kept, this.vars);
  }

  /**
   * Puts the weights last kept with {@link keepWeights} back as the current ones; the copy stays.
   * False, changing nothing, when none was kept.
   */
  restoreKept(): boolean {
    return this.assignCopy(this.kept);
  }

  /** Frees the kept copy of the weights, if any. */
  dropKept(): void {
    disposeCopy(this.kept);
    this.kept = null;
  }

  /** The frozen reference weights; created from the current weights on first use. */
  referenceParams(): ParamTensors {
    if (!this.reference) this.resetReference();
    return Object.fromEntries(this.reference as Map<string, tf.Tensor>);
  }

  /** Masked logits (prior + head) / temperature for each row, [n, K] row-major. */
  async logits(input: PolicyInput, temperature = 1): Promise<Float32Array> {
    this.checkInput(input);
    const t = tf.tidy(() => policyLogits(this.params(), inputTensors(input, tensorLayout(this.config)), this.config, temperature));
    try {
      return (await t.data()) as Float32Array;
    } finally {
      t.dispose();
    }
  }

  /**
   * log pi(action | state) of each row's `actions[i]` under the frozen reference weights (the
   * KL term's, which stay fixed through an update, so it is computed once instead of in every
   * minibatch of every epoch), in chunks of `chunkRows` rows.
   */
  async referenceTakenLogProbs(input: PolicyInput, actions: Int32Array, temperature = 1, chunkRows = 512): Promise<Float32Array> {
    this.checkInput(input);
    if (actions.length !== input.count) throw new RangeError(`referenceTakenLogProbs: ${actions.length} actions for ${input.count} rows`);
    const reference = this.referenceParams();
    const out = new Float32Array(input.count);
    for (let start = 0; start < input.count; start += chunkRows) {
      const rows = Array.from({ length: Math.min(chunkRows, input.count - start) }, (_, i) => start + i);
      const t = tf.tidy(() => takenLogProbs(policyLogProbs(reference, inputTensors(input, tensorLayout(this.config), rows), this.config, temperature), tf.tensor1d(actions.subarray(start, start + rows.length), 'int32')));
      try {
        out.set((await t.data()) as Float32Array, start);
      } finally {
        t.dispose();
      }
    }
    return out;
  }

  /** V(s) per row (needs `valueHead: true`). */
  async values(input: PolicyInput): Promise<Float32Array> {
    this.checkInput(input);
    if (!this.config.valueHead) throw new RangeError('this policy head has no value head (valueHead: false)');
    const t = tf.tidy(() => stateValues(this.params(), tf.tensor2d(input.states, [input.count, input.stateDim])));
    try {
      return (await t.data()) as Float32Array;
    } finally {
      t.dispose();
    }
  }

  /** Samples (or, greedy, picks the best of) each row's candidates; returns choices and log-probs. */
  async act(input: PolicyInput, options: ActOptions = {}): Promise<ActResult> {
    this.checkInput(input);
    const temperature = options.temperature ?? 1;
    if (!(temperature > 0 && Number.isFinite(temperature))) throw new RangeError(`temperature must be a finite number > 0, got ${temperature}`);
    if (!options.greedy && !options.rng) throw new RangeError('act: sampling needs options.rng (or greedy: true)');
    const t = tf.tidy(() => policyLogProbs(this.params(), inputTensors(input, tensorLayout(this.config)), this.config, temperature));
    let logp: Float32Array;
    try {
      logp = (await t.data()) as Float32Array;
    } finally {
      t.dispose();
    }
    return chooseFromLogProbs(logp, input, options);
  }

  /**
   * The weights as plain records; with `includeCopies`, also the reference copy (under
   * `reference/`) and the kept copy (under `kept/`), as a checkpoint needs them.
   */
  async exportWeights(includeCopies = false): Promise<TensorRecord[]> {
    this.assertLive();
    const records: TensorRecord[] = [];
    for (const spec of this.specs) {
      const v = this.vars.get(spec.name) as tf.Variable;
      records.push({ name: spec.name, shape: [...spec.shape], dtype: 'float32', data: (await v.data()) as Float32Array });
    }
    for (const [prefix, copy] of [['reference/', this.reference], ['kept/', this.kept]] as const) {
      if (!includeCopies || !copy) continue;
      for (const spec of this.specs) {
        const r = copy.get(spec.name) as tf.Tensor;
        records.push({ name: `${prefix}${spec.name}`, shape: [...spec.shape], dtype: 'float32', data: (await r.data()) as Float32Array });
      }
    }
    return records;
  }

  /**
   * Loads weights by name, all or (on error) none. Every parameter of this head must be present
   * with its shape. `reference/` records restore the reference copy; they must then cover every
   * parameter. Without them the loaded weights become the reference (an earlier reference
   * belongs to other weights). `kept/` records likewise restore the kept copy; without them none
   * is kept. Throws {@link CheckpointError} otherwise ('corrupt' for data of
   * the wrong size, else 'incompatible').
   */
  importWeights(records: readonly TensorRecord[]): void {
    this.assertLive();
    const byName = new Map(records.map((r) => [r.name, r]));
    const load = (name: string, spec: ParamSpec): Float32Array => {
      const r = byName.get(name);
      if (!r) throw new CheckpointError('incompatible', `weights: parameter ${JSON.stringify(name)} is missing`);
      if (r.shape.length !== spec.shape.length || r.shape.some((d, i) => d !== spec.shape[i])) {
        throw new CheckpointError('incompatible', `weights: ${name} has shape [${r.shape.join(', ')}], expected [${spec.shape.join(', ')}]`);
      }
      const size = spec.shape.reduce((a, b) => a * b, 1);
      if (!(r.data instanceof Float32Array) || r.data.length !== size) throw new CheckpointError('corrupt', `weights: ${name} does not hold ${size} float32 values`);
      return r.data;
    };
    const values = this.specs.map((spec) => load(spec.name, spec));
    const hasReference = records.some((r) => r.name.startsWith('reference/'));
    const refValues = hasReference ? this.specs.map((spec) => load(`reference/${spec.name}`, spec)) : null;
    const keptValues = records.some((r) => r.name.startsWith('kept/')) ? this.specs.map((spec) => load(`kept/${spec.name}`, spec)) : null;
    this.specs.forEach((spec, i) => {
      const t = tf.tensor(values[i] as Float32Array, spec.shape, 'float32');
      (this.vars.get(spec.name) as tf.Variable).assign(t);
      t.dispose();
    });
    if (refValues) {
      this.disposeReference();
      this.reference = new Map(this.specs.map((spec, i) => [spec.name, tf.tensor(refValues[i] as Float32Array, spec.shape, 'float32')]));
    } else {
      this.resetReference();
    }
    disposeCopy(this.kept);
    this.kept = keptValues ? new Map(this.specs.map((spec, i) => [spec.name, tf.tensor(keptValues[i] as Float32Array, spec.shape, 'float32')])) : null;
  }

  /** Frees every tensor (best effort: a lost GPU device may refuse). */
  dispose(): void {
    if (this.disposed) return;
    this.disposed = true;
    this.disposeReference();
    this.dropKept();
    for (const v of this.vars.values()) {
      try {
        v.dispose();
      } catch {
        // The backend that held it may be gone (lost GPU device).
      }
    }
    this.vars.clear();
  }

  /** Assigns a copy's weights to the variables; false, changing nothing, without a copy. */
  private assignCopy(copy: Map<string, tf.Tensor> | null): boolean {
    this.assertLive();
    if (!copy) return false;
    for (const [name, v] of this.vars) v.assign(copy.get(name) as tf.Tensor);
    return true;
  }

  private disposeReference(): void {
    disposeCopy(this.reference);
    this.reference = null;
  }

  private assertLive(): void {
    if (this.disposed) throw new Error('PolicyHead used after dispose()');
  }

  private checkInput(input: PolicyInput): void {
    validateInput(input);
    if (input.stateDim !== this.config.stateDim || input.actionDim !== this.config.actionDim) {
      throw new RangeError(
        `input has stateDim ${input.stateDim} / actionDim ${input.actionDim}, the head expects ${this.config.stateDim} / ${this.config.actionDim}`,
      );
    }
  }
}

/** Picks per row from log-probabilities [n, K] (greedy argmax, or sampling with `rng`). */
export function chooseFromLogProbs(logp: Float32Array, input: PolicyInput, options: ActOptions): ActResult {
  const n = input.count;
  const k = input.maxCandidates;
  const actions = new Int32Array(n);
  const logProbs = new Float32Array(n);
  const probs = new Float32Array(n * k);
  for (let i = 0; i < n; i++) {
    const count = input.candidateCounts[i] as number;
    let best = 0;
    for (let j = 0; j < count; j++) {
      probs[i * k + j] = Math.exp(logp[i * k + j] as number);
      if ((logp[i * k + j] as number) > (logp[i * k + best] as number)) best = j;
    }
    let chosen = best;
    if (!options.greedy) {
      const u = (options.rng as Rng).next();
      let acc = 0;
      chosen = count - 1;
      for (let j = 0; j < count; j++) {
        acc += probs[i * k + j] as number;
        if (u < acc) {
          chosen = j;
          break;
        }
      }
    }
    actions[i] = chosen;
    logProbs[i] = logp[i * k + chosen] as number;
  }
  return { actions, logProbs, probs };
}
