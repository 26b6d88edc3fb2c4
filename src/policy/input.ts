/**
 * The policy's input: a batch of decisions, each a state and its variable number of candidate
 * actions, packed into padded arrays with a candidate mask. Plain data (typed arrays), so it
 * crosses the worker boundary by structured clone and builds tensors on any backend.
 */
import * as tf from '@tensorflow/tfjs';

/** One decision: the state's features, one feature vector per candidate action, and the prior. */
export interface Decision {
  /** phi(task, history, observation), length `stateDim`. */
  state: Float32Array;
  /** psi(a) for each candidate, each of length `actionDim`; at least one. */
  candidates: readonly Float32Array[];
  /** prior(a|s) per candidate (e.g. the frozen LLM's log-probabilities); zeros when absent. */
  prior?: Float32Array | readonly number[];
}

/** A padded batch of decisions. Row `i` has `candidateCounts[i]` real candidates; the rest are padding. */
export interface PolicyInput {
  /** Number of decisions (rows). */
  count: number;
  /** Padded candidate count K. */
  maxCandidates: number;
  stateDim: number;
  actionDim: number;
  /** [count, stateDim], row-major. */
  states: Float32Array;
  /** [count, K, actionDim]; padding rows are zero. */
  candidates: Float32Array;
  /** [count, K]: 1 for a real candidate, 0 for padding. */
  mask: Float32Array;
  /** [count, K]: prior logits; 0 for padding. */
  prior: Float32Array;
  /** Real candidates per row. */
  candidateCounts: Int32Array;
}

/** The tensors built from a {@link PolicyInput}. The caller owns (and disposes) them. */
export interface InputTensors {
  states: tf.Tensor2D;
  candidates: tf.Tensor3D;
  mask: tf.Tensor2D;
  prior: tf.Tensor2D;
}

/** Thrown for malformed decisions or inputs; the message names the offending row and value. */
export class PolicyInputError extends RangeError {
  override name = 'PolicyInputError';
}

/**
 * Packs decisions into one padded batch. `maxCandidates` pads to a fixed K (it must be at least
 * the largest candidate count); by default K is the largest count in the batch.
 */
export function packDecisions(decisions: readonly Decision[], dims?: { stateDim: number; actionDim: number }, maxCandidates?: number): PolicyInput {
  if (decisions.length === 0) throw new PolicyInputError('packDecisions needs at least one decision, got 0');
  const first = decisions[0] as Decision;
  const stateDim = dims?.stateDim ?? first.state.length;
  const actionDim = dims?.actionDim ?? first.candidates[0]?.length ?? 0;
  let k = 0;
  decisions.forEach((d, i) => {
    if (!(d.state instanceof Float32Array)) throw new PolicyInputError(`decision ${i}: state must be a Float32Array, got ${typeof d.state}`);
    if (d.state.length !== stateDim) throw new PolicyInputError(`decision ${i}: state has length ${d.state.length}, expected ${stateDim}`);
    if (d.candidates.length === 0) throw new PolicyInputError(`decision ${i}: no candidate actions (need at least 1)`);
    d.candidates.forEach((c, j) => {
      if (c.length !== actionDim) throw new PolicyInputError(`decision ${i}, candidate ${j}: length ${c.length}, expected ${actionDim}`);
    });
    if (d.prior !== undefined && d.prior.length !== d.candidates.length) {
      throw new PolicyInputError(`decision ${i}: prior has ${d.prior.length} entries for ${d.candidates.length} candidates`);
    }
    k = Math.max(k, d.candidates.length);
  });
  if (maxCandidates !== undefined) {
    if (!Number.isInteger(maxCandidates) || maxCandidates < k) {
      throw new PolicyInputError(`maxCandidates must be an integer >= the largest candidate count ${k}, got ${maxCandidates}`);
    }
    k = maxCandidates;
  }
  const n = decisions.length;
  const states = new Float32Array(n * stateDim);
  const candidates = new Float32Array(n * k * actionDim);
  const mask = new Float32Array(n * k);
  const prior = new Float32Array(n * k);
  const candidateCounts = new Int32Array(n);
  decisions.forEach((d, i) => {
    states.set(d.state, i * stateDim);
    candidateCounts[i] = d.candidates.length;
    d.candidates.forEach((c, j) => {
      candidates.set(c, (i * k + j) * actionDim);
      mask[i * k + j] = 1;
      const p = d.prior?.[j] ?? 0;
      if (!Number.isFinite(p)) throw new PolicyInputError(`decision ${i}: prior[${j}] is ${p}, not finite`);
      prior[i * k + j] = p;
    });
  });
  return { count: n, maxCandidates: k, stateDim, actionDim, states, candidates, mask, prior, candidateCounts };
}

/**
 * Checks an input (e.g. one received from another thread): the array sizes, and that each row's
 * candidate count is an integer in [1, maxCandidates] (a larger count would make readers of the
 * padded [count, K] arrays run into the next row).
 */
export function validateInput(input: PolicyInput): void {
  const { count: n, maxCandidates: k, stateDim, actionDim } = input;
  const want: [string, number, number][] = [
    ['states', input.states.length, n * stateDim],
    ['candidates', input.candidates.length, n * k * actionDim],
    ['mask', input.mask.length, n * k],
    ['prior', input.prior.length, n * k],
    ['candidateCounts', input.candidateCounts.length, n],
  ];
  for (const [name, got, expected] of want) {
    if (got !== expected) throw new PolicyInputError(`PolicyInput.${name} has ${got} values, expected ${expected}`);
  }
  for (let i = 0; i < n; i++) {
    const c = input.candidateCounts[i];
    if (!(typeof c === 'number' && Number.isInteger(c) && c >= 1 && c <= k)) {
      throw new PolicyInputError(`PolicyInput.candidateCounts[${i}] is ${String(c)}, expected an integer in [1, ${k}] (maxCandidates ${k})`);
    }
  }
}

/**
 * The rows `rows` of an input, as a new input padded to their own largest candidate count
 * (cheaper than gathering on the device, and less padding for small minibatches).
 */
export function selectRows(input: PolicyInput, rows: readonly number[]): PolicyInput {
  const { stateDim, actionDim, maxCandidates: kIn } = input;
  let k = 1;
  for (const r of rows) {
    if (!(Number.isInteger(r) && r >= 0 && r < input.count)) throw new PolicyInputError(`selectRows: row ${r} is outside [0, ${input.count})`);
    k = Math.max(k, input.candidateCounts[r] as number);
  }
  const n = rows.length;
  const states = new Float32Array(n * stateDim);
  const candidates = new Float32Array(n * k * actionDim);
  const mask = new Float32Array(n * k);
  const prior = new Float32Array(n * k);
  const candidateCounts = new Int32Array(n);
  rows.forEach((r, i) => {
    const c = input.candidateCounts[r] as number;
    candidateCounts[i] = c;
    states.set(input.states.subarray(r * stateDim, (r + 1) * stateDim), i * stateDim);
    candidates.set(input.candidates.subarray(r * kIn * actionDim, (r * kIn + c) * actionDim), i * k * actionDim);
    mask.set(input.mask.subarray(r * kIn, r * kIn + c), i * k);
    prior.set(input.prior.subarray(r * kIn, r * kIn + c), i * k);
  });
  return { count: n, maxCandidates: k, stateDim, actionDim, states, candidates, mask, prior, candidateCounts };
}

/** Builds the input tensors (call inside `tf.tidy`, or dispose them). */
export function inputTensors(input: PolicyInput): InputTensors {
  const { count: n, maxCandidates: k, stateDim, actionDim } = input;
  return {
    states: tf.tensor2d(input.states, [n, stateDim]),
    candidates: tf.tensor3d(input.candidates, [n, k, actionDim]),
    mask: tf.tensor2d(input.mask, [n, k]),
    prior: tf.tensor2d(input.prior, [n, k]),
  };
}
