/**
 * The policy's input: a batch of decisions, each a state and its variable number of candidate
 * actions, packed into flat arrays: the candidates' features back to back (no padding: a
 * household batch has 26 candidates per decision on average and up to 46, at 600+ floats each),
 * and a padded [count, K] candidate mask and prior. Plain data (typed arrays), so it crosses the
 * worker boundary by structured clone and builds tensors on any backend.
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

/** A batch of decisions. Row `i` has `candidateCounts[i]` candidates; in the [count, K] arrays the rest are padding. */
export interface PolicyInput {
  /** Number of decisions (rows). */
  count: number;
  /** Padded candidate count K. */
  maxCandidates: number;
  stateDim: number;
  actionDim: number;
  /** [count, stateDim], row-major. */
  states: Float32Array;
  /** [C, actionDim]: every row's candidates in order, row after row, C = the sum of `candidateCounts` (no padding). */
  candidates: Float32Array;
  /** [count, K]: 1 for a real candidate, 0 for padding. */
  mask: Float32Array;
  /** [count, K]: prior logits; 0 for padding. */
  prior: Float32Array;
  /** Real candidates per row. */
  candidateCounts: Int32Array;
}

/**
 * Candidate rows as a deduplicated leading block and the rest: row c is
 * [leads[leadOf[c]] | rest[c]].
 */
export interface SplitRows {
  /** [U, leadDim]: the distinct leading blocks. */
  leads: tf.Tensor2D;
  /** [C]: each row's leading block, an index into `leads`. */
  leadOf: tf.Tensor1D;
  /** [C, width - leadDim]: the rest of each row. */
  rest: tf.Tensor2D;
}

/**
 * The tensors built from a {@link PolicyInput}. The caller owns (and disposes) them.
 *
 * Candidates are uploaded as they are packed, real ones only, so that the head's large products
 * skip the padding (a household batch pads 26 candidates on average up to 46): `candidateRow` names each
 * candidate's decision, and `slots` maps each padded position [n, K] to its candidate's index
 * (padding: C, one past the last). Each candidate is split into a leading block of `leadDim`
 * features, uploaded once per distinct value, and the rest (see {@link TensorLayout}).
 */
export interface InputTensors {
  states: tf.Tensor2D;
  /** [C]: the decision (row) of each candidate (C = sum of candidateCounts). */
  candidateRow: tf.Tensor1D;
  /** [n * K]: index into the C candidates of each padded position; C for padding. */
  slots: tf.Tensor1D;
  /** The candidates psi. */
  candidates: SplitRows;
  /**
   * psi * (the state's first actionDim features), the head's `product` interaction (data, so it
   * is multiplied here, once per distinct pair of leading blocks); present when asked for.
   */
  products: SplitRows | null;
  mask: tf.Tensor2D;
  prior: tf.Tensor2D;
}

/**
 * How {@link inputTensors} lays the candidates out. `leadDim` (default 0): the width of the
 * leading block stored once per distinct value. With the featurizer's layout that block is the
 * embedded action text, which a household minibatch of 14,000 candidates repeats down to about
 * 380 values; in gradient passes it replaces the largest transposed products, and when acting
 * (a step of 48 rollouts at once) it saves more than its gather costs, now that the wasm
 * backend's gather copies rows (`wasm-gather.ts`; with tfjs-wasm's own gather it did not).
 * `products` (default false): also build the `product` interaction's rows.
 */
export interface TensorLayout {
  leadDim?: number;
  products?: boolean;
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
  let total = 0;
  for (const d of decisions) total += d.candidates.length;
  const states = new Float32Array(n * stateDim);
  const candidates = new Float32Array(total * actionDim);
  const mask = new Float32Array(n * k);
  const prior = new Float32Array(n * k);
  const candidateCounts = new Int32Array(n);
  let at = 0;
  for (let i = 0; i < n; i++) {
    const d = decisions[i] as Decision;
    states.set(d.state, i * stateDim);
    const c = d.candidates.length;
    candidateCounts[i] = c;
    for (let j = 0; j < c; j++) {
      candidates.set(d.candidates[j] as Float32Array, at * actionDim);
      at++;
      mask[i * k + j] = 1;
      const p = d.prior?.[j] ?? 0;
      if (!Number.isFinite(p)) throw new PolicyInputError(`decision ${i}: prior[${j}] is ${p}, not finite`);
      prior[i * k + j] = p;
    }
  }
  return { count: n, maxCandidates: k, stateDim, actionDim, states, candidates, mask, prior, candidateCounts };
}

/**
 * Checks an input (e.g. one received from another thread): the array sizes, and that each row's
 * candidate count is an integer in [1, maxCandidates] (a larger count would make readers of the
 * padded [count, K] arrays run into the next row).
 */
export function validateInput(input: PolicyInput): void {
  const { count: n, maxCandidates: k, stateDim, actionDim } = input;
  if (input.candidateCounts.length !== n) throw new PolicyInputError(`PolicyInput.candidateCounts has ${input.candidateCounts.length} values, expected ${n}`);
  let total = 0;
  for (let i = 0; i < n; i++) {
    const c = input.candidateCounts[i];
    if (!(typeof c === 'number' && Number.isInteger(c) && c >= 1 && c <= k)) {
      throw new PolicyInputError(`PolicyInput.candidateCounts[${i}] is ${String(c)}, expected an integer in [1, ${k}] (maxCandidates ${k})`);
    }
    total += c;
  }
  const want: [string, number, number][] = [
    ['states', input.states.length, n * stateDim],
    ['candidates', input.candidates.length, total * actionDim],
    ['mask', input.mask.length, n * k],
    ['prior', input.prior.length, n * k],
  ];
  for (const [name, got, expected] of want) {
    if (got !== expected) throw new PolicyInputError(`PolicyInput.${name} has ${got} values, expected ${expected}`);
  }
}

/** Where each row's candidates start in `input.candidates`, in candidates (n + 1 entries: the last is C). */
function candidateStarts(input: PolicyInput): Int32Array {
  const starts = new Int32Array(input.count + 1);
  for (let i = 0; i < input.count; i++) starts[i + 1] = (starts[i] as number) + (input.candidateCounts[i] as number);
  return starts;
}

/**
 * Distinct blocks of `width` floats at `data[offsets[i] ...]`: the index of each block's value,
 * and the values. Blocks are compared bit for bit (a hash finds candidates, equality decides).
 */
function distinctBlocks(data: Float32Array, offsets: ArrayLike<number>, width: number): { of: Int32Array; values: Float32Array; count: number } {
  const bits = new Uint32Array(data.buffer, data.byteOffset, data.length);
  const of = new Int32Array(offsets.length);
  const firsts: number[] = []; // offset of each distinct value
  const byHash = new Map<number, number[]>(); // hash -> distinct indices
  for (let i = 0; i < offsets.length; i++) {
    const at = offsets[i] as number;
    let h = 0x811c9dc5;
    for (let x = at; x < at + width; x++) h = Math.imul(h ^ (bits[x] as number), 0x01000193);
    const bucket = byHash.get(h);
    let found = -1;
    if (bucket) {
      for (const u of bucket) {
        const other = firsts[u] as number;
        let same = true;
        for (let x = 0; x < width && same; x++) same = bits[at + x] === bits[other + x];
        if (same) {
          found = u;
          break;
        }
      }
    }
    if (found < 0) {
      found = firsts.length;
      firsts.push(at);
      if (bucket) bucket.push(found);
      else byHash.set(h, [found]);
    }
    of[i] = found;
  }
  const values = new Float32Array(firsts.length * width);
  firsts.forEach((at, u) => values.set(data.subarray(at, at + width), u * width));
  return { of, values, count: firsts.length };
}

/**
 * Which candidates (and which states) of a whole input have bit-identical leading blocks: a class
 * id per candidate and per row, found once per input and leading width. An update reads its
 * batch several times (the reference pass, then each epoch's minibatches), and hashing every
 * candidate's leading block each time cost more than the rest of building the minibatch. The
 * input must not change after its first use (it is plain data that the trainer builds and owns).
 */
interface BlockClasses {
  /** [C]: class of each candidate's leading block. */
  candidates: Int32Array;
  /** [count]: class of each row's state leading block. */
  states: Int32Array;
}

const blockClassCache = new WeakMap<PolicyInput, Map<number, BlockClasses>>();

function blockClasses(input: PolicyInput, leadDim: number): BlockClasses {
  let byWidth = blockClassCache.get(input);
  if (!byWidth) blockClassCache.set(input, (byWidth = new Map()));
  let classes = byWidth.get(leadDim);
  if (!classes) {
    const total = input.candidates.length / input.actionDim;
    classes = {
      candidates: distinctBlocks(input.candidates, Int32Array.from({ length: total }, (_, c) => c * input.actionDim), leadDim).of,
      states: distinctBlocks(input.states, Int32Array.from({ length: input.count }, (_, i) => i * input.stateDim), leadDim).of,
    };
    byWidth.set(leadDim, classes);
  }
  return classes;
}

/**
 * What {@link distinctBlocks} returns for the blocks at `offsets` (item `i` of class
 * `classOf[i]`), from classes found before: ids in order of first occurrence, and the values.
 */
function blocksOfClasses(data: Float32Array, offsets: Int32Array, classOf: ArrayLike<number>, width: number): { of: Int32Array; values: Float32Array; count: number } {
  const local = new Map<number, number>();
  const firsts: number[] = [];
  const of = new Int32Array(offsets.length);
  for (let i = 0; i < offsets.length; i++) {
    const cls = classOf[i] as number;
    let u = local.get(cls);
    if (u === undefined) {
      u = firsts.length;
      local.set(cls, u);
      firsts.push(offsets[i] as number);
    }
    of[i] = u;
  }
  const values = new Float32Array(firsts.length * width);
  firsts.forEach((at, u) => values.set(data.subarray(at, at + width), u * width));
  return { of, values, count: firsts.length };
}

/**
 * Builds the input tensors (call inside `tf.tidy`, or dispose them); see {@link TensorLayout}.
 * With `rows`, of those rows only, in that order, padded to their own largest candidate count
 * (as the tensors of a batch packed from those decisions alone; the candidates are copied once,
 * straight from the batch: a household minibatch's are 30 MB and more).
 */
export function inputTensors(input: PolicyInput, layout: TensorLayout = {}, rows?: readonly number[]): InputTensors {
  const { stateDim, actionDim } = input;
  const leadDim = layout.leadDim ?? 0;
  if (!(Number.isInteger(leadDim) && leadDim >= 0 && leadDim <= actionDim)) throw new PolicyInputError(`leadDim must be an integer in [0, ${actionDim}], got ${leadDim}`);
  if (layout.products && stateDim < actionDim) throw new PolicyInputError(`products need stateDim >= actionDim, got ${stateDim} < ${actionDim}`);
  const n = rows ? rows.length : input.count;
  const rowAt = rows ? (i: number) => rows[i] as number : (i: number) => i;
  let k = rows ? 1 : input.maxCandidates;
  let total = 0;
  for (let i = 0; i < n; i++) {
    const r = rowAt(i);
    if (rows && !(Number.isInteger(r) && r >= 0 && r < input.count)) throw new PolicyInputError(`inputTensors: row ${r} is outside [0, ${input.count})`);
    const c = input.candidateCounts[r] as number;
    total += c;
    if (rows) k = Math.max(k, c);
  }
  let states = input.states;
  let mask = input.mask;
  let prior = input.prior;
  const starts = candidateStarts(input);
  if (rows) {
    const kIn = input.maxCandidates;
    states = new Float32Array(n * stateDim);
    mask = new Float32Array(n * k);
    prior = new Float32Array(n * k);
    for (let i = 0; i < n; i++) {
      const r = rowAt(i);
      const c = input.candidateCounts[r] as number;
      states.set(input.states.subarray(r * stateDim, (r + 1) * stateDim), i * stateDim);
      mask.set(input.mask.subarray(r * kIn, r * kIn + c), i * k);
      prior.set(input.prior.subarray(r * kIn, r * kIn + c), i * k);
    }
  }
  const restDim = actionDim - leadDim;
  const classes = leadDim > 0 ? blockClasses(input, leadDim) : null;
  const offsets = new Int32Array(total); // where each candidate starts in input.candidates
  const candidateRow = new Int32Array(total);
  const leadClass = classes ? new Int32Array(total) : null; // each candidate's class of leading block
  const slots = new Int32Array(n * k).fill(total);
  let at = 0;
  for (let i = 0; i < n; i++) {
    const r = rowAt(i);
    const c = input.candidateCounts[r] as number;
    const from = starts[r] as number;
    for (let j = 0; j < c; j++) {
      offsets[at] = (from + j) * actionDim;
      if (leadClass) leadClass[at] = classes?.candidates[from + j] as number;
      candidateRow[at] = i;
      slots[i * k + j] = at;
      at++;
    }
  }
  const leads = leadClass ? blocksOfClasses(input.candidates, offsets, leadClass, leadDim) : distinctBlocks(input.candidates, offsets, leadDim);
  // All rows without a leading block: the packed candidates are the rest as they are.
  let rest = input.candidates;
  if (rows || leadDim > 0) {
    rest = new Float32Array(total * restDim);
    for (let c = 0; c < total; c++) {
      const o = offsets[c] as number;
      rest.set(input.candidates.subarray(o + leadDim, o + actionDim), c * restDim);
    }
  }
  const upload = (values: Float32Array, count: number, width: number, of: Int32Array, restValues: Float32Array): SplitRows => ({
    leads: tf.tensor2d(values, [count, width]),
    leadOf: tf.tensor1d(of, 'int32'),
    rest: tf.tensor2d(restValues, [of.length, actionDim - width]),
  });
  let products: SplitRows | null = null;
  if (layout.products) {
    // Leading blocks: one product per distinct (candidate lead, state lead) pair.
    const stateOffsets = Int32Array.from({ length: n }, (_, i) => i * stateDim);
    const queries = classes ? blocksOfClasses(states, stateOffsets, Int32Array.from({ length: n }, (_, i) => classes.states[rowAt(i)] as number), leadDim) : distinctBlocks(states, stateOffsets, leadDim);
    const pairIndex = new Map<number, number>();
    const pairValues: number[] = []; // offsets into leads.values and queries.values, two per pair
    const pairOf = new Int32Array(total);
    for (let c = 0; c < total; c++) {
      const l = leads.of[c] as number;
      const q = queries.of[candidateRow[c] as number] as number;
      const key = l * queries.count + q;
      let p = pairIndex.get(key);
      if (p === undefined) {
        p = pairValues.length / 2;
        pairIndex.set(key, p);
        pairValues.push(l * leadDim, q * leadDim);
      }
      pairOf[c] = p;
    }
    const pairs = pairValues.length / 2;
    const productLeads = new Float32Array(pairs * leadDim);
    for (let p = 0; p < pairs; p++) {
      const a = pairValues[2 * p] as number;
      const b = pairValues[2 * p + 1] as number;
      for (let x = 0; x < leadDim; x++) productLeads[p * leadDim + x] = (leads.values[a + x] as number) * (queries.values[b + x] as number);
    }
    // Hashed action features are mostly zeros: skip them (the array starts at zero).
    const productRest = new Float32Array(total * restDim);
    for (let c = 0; c < total; c++) {
      const row = c * restDim;
      const s = (candidateRow[c] as number) * stateDim + leadDim;
      for (let x = 0; x < restDim; x++) {
        const a = rest[row + x] as number;
        if (a !== 0) productRest[row + x] = a * (states[s + x] as number);
      }
    }
    products = upload(productLeads, pairs, leadDim, pairOf, productRest);
  }
  return {
    states: tf.tensor2d(states, [n, stateDim]),
    candidateRow: tf.tensor1d(candidateRow, 'int32'),
    slots: tf.tensor1d(slots, 'int32'),
    candidates: upload(leads.values, leads.count, leadDim, leads.of, rest),
    products,
    mask: tf.tensor2d(mask, [n, k]),
    prior: tf.tensor2d(prior, [n, k]),
  };
}
