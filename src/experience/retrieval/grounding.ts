/**
 * How well recorded data supports one synthetic step, and the calibration that turns that into a
 * probability. A simulator built from a few hundred episodes cannot know what an unrecorded item
 * holds or what an untried action does; where it guesses, a policy trained inside it learns the
 * guess. As in pessimistic model-based offline RL (MOReL halts in unknown state-actions), a step
 * whose calibrated support is too low is unknown and ends its episode with a penalty.
 *
 * Everything here is fitted on held-out recorded episodes of the same data (cross-fitting: the
 * simulator is built on the other folds and predicts each held-out transition), so no threshold
 * is set by hand and nothing depends on what the domain is.
 */

import { hashString } from '../../core/rng.ts';

/**
 * The cross-fitting folds of recorded episodes, by their task keys (a generated task's root):
 * every episode of a task is held out together, so that a held-out step is never predicted from
 * its own task's other recordings; and tasks are dealt to folds in an order fixed by a hash of
 * their key, not the order the data was recorded in (tasks recorded in a cycle of kinds, dealt by
 * position, held out whole kinds and never granted their successes). With fewer than two tasks,
 * episodes are dealt one by one. Returns each episode's fold and how many folds there are.
 */
export function calibrationFolds(taskKeys: readonly string[], folds: number): { fold: number[]; folds: number } {
  if (!(Number.isInteger(folds) && folds >= 1)) throw new RangeError(`folds must be a positive integer, got ${folds}`);
  const distinct = [...new Set(taskKeys)];
  const keys = distinct.length >= 2 ? taskKeys : taskKeys.map((_, i) => `episode ${i}`);
  const units = distinct.length >= 2 ? distinct : keys.slice();
  const order = units.map((k) => ({ k, h: mix(hashString(k)) })).sort((a, b) => a.h - b.h || (a.k < b.k ? -1 : 1));
  const n = Math.min(folds, units.length);
  const foldOfKey = new Map(order.map((u, j) => [u.k, j % Math.max(1, n)]));
  return { fold: keys.map((k) => foldOfKey.get(k) ?? 0), folds: n };
}

/** A 32-bit finaliser: spreads every input bit over the output, so that near keys land far apart. */
function mix(h: number): number {
  let x = h >>> 0;
  x ^= x >>> 16;
  x = Math.imul(x, 0x85ebca6b);
  x ^= x >>> 13;
  x = Math.imul(x, 0xc2b2ae35);
  x ^= x >>> 16;
  return x >>> 0;
}

/** Where a predicted outcome came from, most trustworthy kinds first. */
export const EVIDENCE_SOURCES = ['recorded', 'memory', 'return', 'exact', 'own-task', 'same-action', 'item', 'neighbour', 'none', 'end'] as const;
export type EvidenceSource = (typeof EVIDENCE_SOURCES)[number];

/** The support features of one predicted step. */
export interface SupportFeatures {
  /** What the outcome was read from: this world's own recorded step, the episode's own memory, a recorded return, the same recorded (state, action), the task's own recorded step, ..., or the end-of-episode verdict. */
  source: EvidenceSource;
  /** Cosine similarity in [0, 1] of the evidence used to the query (1 for an exact or remembered one; for a verdict, how often the action kind ended episodes). */
  similarity: number;
  /** Share of the other candidate transitions that show the same outcome as the one used (for a verdict, the reward model's confidence). */
  agreement: number;
  /** Whether this exact action occurs in the data. */
  actionSeen: boolean;
  /** Whether the action's template (entities blanked) occurs in the data. */
  templateSeen: boolean;
}

/** One held-out recorded step: its support features and whether the prediction matched reality. */
export interface SupportExample {
  features: SupportFeatures;
  right: boolean;
}

/** The feature vector of the logistic map (without the intercept). */
export function supportVector(f: SupportFeatures): number[] {
  const oneHot = EVIDENCE_SOURCES.map((s) => (s === f.source ? 1 : 0));
  const sim = clamp01(f.similarity);
  const agree = clamp01(f.agreement);
  return [...oneHot, sim, agree, sim * agree, f.actionSeen ? 1 : 0, f.templateSeen ? 1 : 0];
}

const clamp01 = (x: number): number => (Number.isFinite(x) ? Math.min(1, Math.max(0, x)) : 0);
const sigmoid = (z: number): number => 1 / (1 + Math.exp(-z));

/** Settings of {@link SupportCalibrator.fit}. */
export interface CalibratorConfig {
  /** L2 penalty on the weights (not the intercept), per example. Default 1e-3. */
  l2: number;
  /** Gradient steps. Default 400. */
  iterations: number;
  /** Step size. Default 0.5. */
  learningRate: number;
}

export const DEFAULT_CALIBRATOR_CONFIG: CalibratorConfig = { l2: 1e-3, iterations: 400, learningRate: 0.5 };

/**
 * A logistic map from support features to the probability that the predicted outcome is what the
 * real environment does, and the threshold under which a step is unknown: the one that best
 * separates right from wrong held-out predictions (for a calibrated probability, about one half:
 * a step is unknown when its prediction is more likely wrong than right).
 */
export class SupportCalibrator {
  private constructor(
    private readonly weights: readonly number[],
    private readonly bias: number,
    /** Calibrated support under which a step is unknown. */
    readonly threshold: number,
    /** Held-out steps it was fitted on. */
    readonly examples: number,
    /** Share of them whose prediction was right. */
    readonly rightShare: number,
  ) {}

  /** An uninformed map for data too small to hold out: support 0.5 everywhere, nothing unknown. */
  static uninformed(): SupportCalibrator {
    return new SupportCalibrator(new Array<number>(supportVector({ source: 'none', similarity: 0, agreement: 0, actionSeen: false, templateSeen: false }).length).fill(0), 0, 0, 0, Number.NaN);
  }

  /** Fits the map and its threshold on held-out examples; fewer than two, or all of one label, give a constant map. */
  static fit(examples: readonly SupportExample[], config: Partial<CalibratorConfig> = {}): SupportCalibrator {
    const cfg = { ...DEFAULT_CALIBRATOR_CONFIG, ...config };
    if (!(cfg.l2 >= 0) || !(Number.isInteger(cfg.iterations) && cfg.iterations > 0) || !(cfg.learningRate > 0)) {
      throw new RangeError(`calibrator config must have l2 >= 0, a positive integer iterations and learningRate > 0, got ${JSON.stringify(cfg)}`);
    }
    const n = examples.length;
    const dim = supportVector({ source: 'none', similarity: 0, agreement: 0, actionSeen: false, templateSeen: false }).length;
    const right = examples.filter((e) => e.right).length;
    if (n === 0) return SupportCalibrator.uninformed();
    // Laplace-smoothed base rate: the map's answer where the data says nothing more.
    const base = (right + 1) / (n + 2);
    const w = new Array<number>(dim).fill(0);
    let b = Math.log(base / (1 - base));
    if (right > 0 && right < n) {
      const xs = examples.map((e) => supportVector(e.features));
      const ys = examples.map((e) => (e.right ? 1 : 0));
      for (let it = 0; it < cfg.iterations; it++) {
        const gw = new Array<number>(dim).fill(0);
        let gb = 0;
        for (let i = 0; i < n; i++) {
          const x = xs[i] as number[];
          let z = b;
          for (let j = 0; j < dim; j++) z += (w[j] as number) * (x[j] as number);
          const err = sigmoid(z) - (ys[i] as number);
          gb += err;
          for (let j = 0; j < dim; j++) gw[j] = (gw[j] as number) + err * (x[j] as number);
        }
        b -= (cfg.learningRate * gb) / n;
        for (let j = 0; j < dim; j++) w[j] = (w[j] as number) - cfg.learningRate * ((gw[j] as number) / n + cfg.l2 * (w[j] as number));
      }
    }
    const provisional = new SupportCalibrator(w, b, 0, n, right / n);
    const scored = examples.map((e) => ({ p: provisional.predict(e.features), right: e.right }));
    return new SupportCalibrator(w, b, separatingThreshold(scored), n, right / n);
  }

  /** The calibrated support of one step, in (0, 1). */
  predict(f: SupportFeatures): number {
    const x = supportVector(f);
    let z = this.bias;
    for (let j = 0; j < x.length; j++) z += (this.weights[j] as number) * (x[j] as number);
    return sigmoid(z);
  }
}

/**
 * The threshold t (steps with support < t are unknown) that makes "known" agree most often with
 * "right" on held-out steps; ties go to the lowest (fewest halts). 0 when nothing is gained by
 * calling any step unknown.
 */
export function separatingThreshold(scored: readonly { p: number; right: boolean }[]): number {
  const sorted = [...scored].sort((a, b) => a.p - b.p);
  // Threshold 0: every step known, correct on the right ones.
  let correct = sorted.filter((s) => s.right).length;
  let best = correct;
  let bestT = 0;
  for (let i = 0; i < sorted.length; i++) {
    const s = sorted[i] as { p: number; right: boolean };
    correct += s.right ? -1 : 1;
    const next = sorted[i + 1];
    if (next !== undefined && next.p === s.p) continue;
    if (correct > best) {
      best = correct;
      bestT = next === undefined ? s.p + 1e-9 : (s.p + next.p) / 2;
    }
  }
  return bestT;
}

/** One held-out step the simulator's verdict called a success, with its support by recorded successes. */
export interface SuccessExample {
  /** Cosine similarity of the step (state and action, the instruction's words abstracted) to the nearest recorded success of the same kind of action; 0 when none. */
  similarity: number;
  /** Whether the recorded step really completed its episode. */
  real: boolean;
}

/** The evidence-bound reward's calibration and its measured quality on held-out recorded episodes. */
export interface SuccessGate {
  /** A success is granted only when its similarity to recorded successes reaches this; `Infinity` (null in JSON) when none is (see {@link calibrateSuccessGate}). */
  threshold: number;
  /** Of the held-out steps the simulator granted success (after the gate), the share that really succeeded; NaN when it granted none. */
  precision: number;
  /** Of the held-out recorded successes, the share the simulator granted. NaN when there were none. */
  recall: number;
  /** Held-out steps granted success after the gate. */
  granted: number;
  /** Held-out recorded successes. */
  successes: number;
}

/**
 * Least precision the evidence-bound reward must reach on held-out recorded episodes: a synthetic
 * success is then a real one at least this often where the recordings can tell.
 */
export const MIN_SUCCESS_PRECISION = 0.9;

/**
 * The similarity threshold that maximises F1 of granted successes against the held-out recorded
 * successes (`successes`: how many there were, granted or not) among the thresholds whose granted
 * successes are real at least {@link MIN_SUCCESS_PRECISION} of the time, ties to the lowest. Where
 * no threshold is that precise (the recordings do not show what makes a success, as when it hangs
 * on facts the agent never sees) the gate grants nothing: threshold `Infinity`.
 */
export function calibrateSuccessGate(verdicts: readonly SuccessExample[], successes: number): SuccessGate {
  if (!(Number.isInteger(successes) && successes >= 0)) throw new RangeError(`successes must be a non-negative integer, got ${successes}`);
  const candidates = [0, ...new Set(verdicts.map((v) => v.similarity))].sort((a, b) => a - b);
  let best: SuccessGate | undefined;
  let bestF1 = -1;
  for (const t of candidates) {
    const granted = verdicts.filter((v) => v.similarity >= t);
    const tp = granted.filter((v) => v.real).length;
    const precision = granted.length === 0 ? Number.NaN : tp / granted.length;
    const recall = successes === 0 ? Number.NaN : tp / successes;
    if (granted.length > 0 && !(precision >= MIN_SUCCESS_PRECISION)) continue;
    const f1 = tp === 0 ? 0 : (2 * precision * recall) / (precision + recall);
    if (f1 > bestF1) {
      bestF1 = f1;
      best = { threshold: t, precision, recall, granted: granted.length, successes };
    }
  }
  if (best !== undefined) return best;
  return verdicts.length === 0
    ? { threshold: 0, precision: Number.NaN, recall: Number.NaN, granted: 0, successes }
    : { threshold: Number.POSITIVE_INFINITY, precision: Number.NaN, recall: successes === 0 ? Number.NaN : 0, granted: 0, successes };
}

/**
 * Share of the unknown threshold under which a doubtful step halts (see {@link groundedStep}): a
 * prediction there is at least twice as likely wrong as one at the threshold.
 */
export const HALT_SHARE = 0.5;

/** What grounding does with one predicted step. */
export type GroundedStep = { kind: 'known' } | { kind: 'doubtful'; penalty: number } | { kind: 'unknown' };

/**
 * What a step of calibrated `support` becomes under the unknown `threshold`. At or above it the
 * step is known. Far below it (under {@link HALT_SHARE} of it) the step is unknown and halts its
 * episode, as MOReL halts. In between the prediction is often enough right, and halting
 * there left whole GRPO groups with the same halting reward and nothing to learn from: the episode
 * goes on, and the step pays a share of the halting penalty that grows as the support falls (a
 * MOPO-like reward penalty), reaching half of it where halting begins. With `soft` false every
 * step under the threshold halts.
 */
export function groundedStep(support: number, threshold: number, haltReward: number, soft = true): GroundedStep {
  if (!(support >= threshold)) {
    if (!soft || !(threshold > 0) || support < HALT_SHARE * threshold) return { kind: 'unknown' };
    return { kind: 'doubtful', penalty: haltReward < 0 ? haltReward * (1 - support / threshold) : 0 };
  }
  return { kind: 'known' };
}

/**
 * The reward of a halted episode: minus the mean return of the recorded episodes, so that walking
 * into what the data does not know costs what an average recorded attempt earns, and a policy
 * prefers an honest failure on known ground. 0 when the data earned nothing.
 */
export function haltPenalty(episodeReturns: readonly number[]): number {
  if (episodeReturns.length === 0) return 0;
  const m = episodeReturns.reduce((s, x) => s + Math.min(1, Math.max(0, x)), 0) / episodeReturns.length;
  return m === 0 ? 0 : -m;
}
