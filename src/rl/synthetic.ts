/**
 * Synthetic decisions and rollouts from a seed: sparse unit-norm feature vectors (like hashed
 * text embeddings) and varying candidate counts. For benchmarks, parity checks and tests.
 */
import { Rng } from '../core/rng.ts';
import type { Decision } from '../policy/input.ts';
import type { GrpoBatch } from './grpo.ts';
import type { PpoBatch } from './ppo.ts';

/** Options of {@link syntheticDecisions}. */
export interface SyntheticOptions {
  count: number;
  stateDim: number;
  actionDim: number;
  /** Candidates per decision, drawn uniformly from [min, max]. */
  minCandidates: number;
  maxCandidates: number;
  /** Non-zero entries per vector (default: a quarter of the dimension, at least 1). */
  nonZeros?: number;
  /** Give every decision a random prior in [-1, 1] (default: none). */
  withPrior?: boolean;
  seed: number;
}

function sparseUnit(rng: Rng, dim: number, nonZeros: number): Float32Array {
  const v = new Float32Array(dim);
  for (let i = 0; i < nonZeros; i++) v[rng.int(0, dim - 1)] = rng.next() * 2 - 1;
  let norm = 0;
  for (const x of v) norm += x * x;
  const inv = norm > 0 ? 1 / Math.sqrt(norm) : 0;
  for (let i = 0; i < dim; i++) v[i] = (v[i] as number) * inv;
  return v;
}

/** Random decisions (deterministic for the options). */
export function syntheticDecisions(options: SyntheticOptions): Decision[] {
  const { count, stateDim, actionDim, minCandidates, maxCandidates, seed } = options;
  if (!(Number.isInteger(count) && count >= 1)) throw new RangeError(`count must be an integer >= 1, got ${count}`);
  if (!(Number.isInteger(minCandidates) && minCandidates >= 1 && Number.isInteger(maxCandidates) && maxCandidates >= minCandidates)) {
    throw new RangeError(`need integers 1 <= minCandidates <= maxCandidates, got ${minCandidates}, ${maxCandidates}`);
  }
  const rng = new Rng(seed);
  const nz = (dim: number): number => options.nonZeros ?? Math.max(1, Math.floor(dim / 4));
  return Array.from({ length: count }, () => {
    const k = rng.int(minCandidates, maxCandidates);
    const d: Decision = {
      state: sparseUnit(rng, stateDim, nz(stateDim)),
      candidates: Array.from({ length: k }, () => sparseUnit(rng, actionDim, nz(actionDim))),
    };
    if (options.withPrior) d.prior = Float32Array.from({ length: k }, () => rng.next() * 2 - 1);
    return d;
  });
}

/**
 * A GRPO batch over synthetic decisions: `groups` groups of `groupSize` one- to `maxSteps`-step
 * rollouts with random actions, behaviour log-probs near uniform and 0/1 rewards.
 */
export function syntheticGrpoBatch(options: Omit<SyntheticOptions, 'count'> & { groups: number; groupSize: number; maxSteps: number }): GrpoBatch {
  const rng = new Rng(options.seed ^ 0x9e3779b9);
  const total = options.groups * options.groupSize;
  const lengths = Array.from({ length: total }, () => rng.int(1, options.maxSteps));
  const decisions = syntheticDecisions({ ...options, count: lengths.reduce((a, b) => a + b, 0) });
  let at = 0;
  return {
    groupSize: options.groupSize,
    trajectories: lengths.map((len) => {
      const steps = decisions.slice(at, at + len).map((d) => {
        const k = d.candidates.length;
        return { ...d, action: rng.int(0, k - 1), logProb: -Math.log(k) + (rng.next() - 0.5) * 0.2 };
      });
      at += len;
      return { steps, reward: rng.chance(0.4) ? 1 : 0 };
    }),
  };
}

/** A PPO batch over synthetic decisions, with rewards in [0, 1] on the last step. */
export function syntheticPpoBatch(options: Omit<SyntheticOptions, 'count'> & { trajectories: number; maxSteps: number }): PpoBatch {
  const rng = new Rng(options.seed ^ 0x85ebca6b);
  const lengths = Array.from({ length: options.trajectories }, () => rng.int(1, options.maxSteps));
  const decisions = syntheticDecisions({ ...options, count: lengths.reduce((a, b) => a + b, 0) });
  let at = 0;
  return {
    trajectories: lengths.map((len) => {
      const steps = decisions.slice(at, at + len).map((d, i) => {
        const k = d.candidates.length;
        return { ...d, action: rng.int(0, k - 1), logProb: -Math.log(k) + (rng.next() - 0.5) * 0.2, reward: i === len - 1 ? rng.next() : 0 };
      });
      at += len;
      return { steps };
    }),
  };
}
