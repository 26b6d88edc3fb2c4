/**
 * Model selection that does not trust the simulator alone. A policy trained inside a simulator
 * can learn what the simulator made up; its success there then says little about its real
 * success. Recorded successful episodes that neither the simulator nor behaviour cloning saw say
 * more: where the policy's greedy choice is the recorded action at every step, a deterministic
 * environment repeats the recorded success, so the share of such episodes is a real success the
 * data certifies. This module measures that share (and the per-step agreement behind it), scores
 * validation points by it, and gives the rank correlation a criterion has with real success.
 */
import type { Observation, Task, Trajectory } from '../core/types.ts';
import { bootstrapInterval, type EvalActor, type EvalContext, type Interval } from './evaluate.ts';

/** A recorded successful episode as the policy would have seen it. */
export interface RecordedEpisode {
  taskId: string;
  instruction: string;
  steps: readonly { observation: Observation; action: string }[];
}

/** How a greedy policy fares on recorded successful episodes it was not trained on. */
export interface RecordedAgreement {
  episodes: number;
  /** Share of the episodes whose every recorded action is the policy's greedy choice. */
  replayed: number;
  /** {@link replayed} with its bootstrap 95% interval over episodes. */
  replayedInterval: Interval;
  /** Share of recorded steps whose action is the policy's greedy choice. */
  agreement: number;
  /**
   * Mean over episodes of the share of its steps the policy follows before it first leaves the
   * recorded route: how far it gets along a recorded success (a shortcut that leaves at the first
   * step scores 0 however many later steps it would agree on).
   */
  prefix: number;
}

/** Thrown when recorded episodes cannot be scored (none given, or a step whose action was not offered). */
export class SelectionError extends Error {
  override name = 'SelectionError';
}

/**
 * The recorded successful episodes among `trajectories` (real or offline ones, never a
 * simulator's), with their tasks' instructions; steps whose recorded action the state did not
 * offer make the episode unusable and it is left out.
 */
export function recordedEpisodes(tasks: readonly Task[], trajectories: readonly Trajectory[]): RecordedEpisode[] {
  const byId = new Map(tasks.map((t) => [t.id, t]));
  const out: RecordedEpisode[] = [];
  for (const t of trajectories) {
    const task = byId.get(t.taskId);
    if (!task || !t.success || t.source === 'synthetic' || t.steps.length === 0) continue;
    if (!t.steps.every((s) => s.observation.actions.includes(s.action))) continue;
    out.push({ taskId: t.taskId, instruction: task.instruction, steps: t.steps.map((s) => ({ observation: s.observation, action: s.action })) });
  }
  return out;
}

/** Contexts asked of the actor at once: a household episode's states carry many candidates each. */
const CHUNK = 256;

/**
 * Asks `actor` for its greedy choice at every recorded step (given the recorded history) and
 * scores the agreement. Throws a {@link SelectionError} for no episodes or a recorded action the
 * state did not offer.
 */
export async function recordedAgreement(actor: EvalActor, episodes: readonly RecordedEpisode[]): Promise<RecordedAgreement> {
  if (episodes.length === 0) throw new SelectionError('recordedAgreement: no recorded episodes to score the policy on');
  const contexts: EvalContext[] = [];
  const owners: number[] = [];
  const wanted: string[] = [];
  episodes.forEach((e, i) => {
    const history: { action: string }[] = [];
    for (const s of e.steps) {
      if (!s.observation.actions.includes(s.action)) throw new SelectionError(`recordedAgreement: episode ${JSON.stringify(e.taskId)} records action ${JSON.stringify(s.action)}, which its state did not offer`);
      contexts.push({ instruction: e.instruction, history: history.slice(), observation: s.observation });
      owners.push(i);
      wanted.push(s.action);
      history.push({ action: s.action });
    }
  });
  const chosen: string[] = [];
  for (let i = 0; i < contexts.length; i += CHUNK) chosen.push(...(await actor.choose(contexts.slice(i, i + CHUNK))));
  const whole = episodes.map(() => 1);
  const followed = episodes.map(() => 0);
  let agreed = 0;
  chosen.forEach((a, k) => {
    const owner = owners[k] as number;
    if (a === wanted[k]) {
      agreed++;
      if (whole[owner] === 1) followed[owner] = (followed[owner] as number) + 1;
    } else whole[owner] = 0;
  });
  const replayedInterval = bootstrapInterval(whole);
  const prefix = episodes.reduce((sum, e, i) => sum + (followed[i] as number) / e.steps.length, 0) / episodes.length;
  return { episodes: episodes.length, replayed: replayedInterval.mean, replayedInterval, agreement: contexts.length === 0 ? 0 : agreed / contexts.length, prefix };
}

/**
 * What decides which policy a synthetic phase keeps: `recorded` (default), the share of held-out
 * recorded successes the policy replays (see {@link selectionScore} for ties); `simulator`, greedy
 * success inside the simulator (what a simulator that invents rewards can mislead).
 */
export const SELECTION_CRITERIA = ['recorded', 'simulator'] as const;
export type SelectionCriterion = (typeof SELECTION_CRITERIA)[number];

/** The figures of one validation point that a criterion can read. */
export interface ValidationFigures {
  /** Greedy success inside the simulator. */
  success: number;
  replayed?: number;
  agreement?: number;
  prefix?: number;
}

/**
 * The criterion's figure for a validation point (higher is better). `recorded` reads the replayed
 * share and, below its resolution, how far the policy follows the recorded successes, then its
 * per-step agreement (a tie on whole episodes goes to the policy that gets further along them);
 * without recorded figures it falls back to the simulator's.
 */
export function selectionScore(figures: ValidationFigures, criterion: SelectionCriterion): number {
  if (criterion === 'recorded' && figures.replayed !== undefined) return figures.replayed + 1e-3 * (figures.prefix ?? 0) + 1e-6 * (figures.agreement ?? 0);
  return figures.success;
}

/** Ranks with ties given their mean rank (1-based). */
function ranks(xs: readonly number[]): number[] {
  const order = xs.map((x, i) => [x, i] as const).sort((a, b) => a[0] - b[0]);
  const out = new Array<number>(xs.length).fill(0);
  for (let i = 0; i < order.length; ) {
    let j = i;
    while (j + 1 < order.length && (order[j + 1] as readonly [number, number])[0] === (order[i] as readonly [number, number])[0]) j++;
    const rank = (i + j) / 2 + 1;
    for (let k = i; k <= j; k++) out[(order[k] as readonly [number, number])[1]] = rank;
    i = j + 1;
  }
  return out;
}

/**
 * Spearman's rank correlation of paired values (ties at their mean rank): NaN for fewer than
 * three pairs or when either side is constant. Throws a RangeError for unequal lengths or a
 * non-finite value.
 */
export function spearman(xs: readonly number[], ys: readonly number[]): number {
  if (xs.length !== ys.length) throw new RangeError(`spearman: ${xs.length} values against ${ys.length}`);
  [...xs, ...ys].forEach((v) => {
    if (!Number.isFinite(v)) throw new RangeError(`spearman: values must be finite, got ${String(v)}`);
  });
  if (xs.length < 3) return Number.NaN;
  const rx = ranks(xs);
  const ry = ranks(ys);
  const mx = rx.reduce((s, x) => s + x, 0) / rx.length;
  const my = ry.reduce((s, x) => s + x, 0) / ry.length;
  let sxy = 0;
  let sxx = 0;
  let syy = 0;
  for (let i = 0; i < rx.length; i++) {
    const dx = (rx[i] as number) - mx;
    const dy = (ry[i] as number) - my;
    sxy += dx * dy;
    sxx += dx * dx;
    syy += dy * dy;
  }
  return sxx === 0 || syy === 0 ? Number.NaN : sxy / Math.sqrt(sxx * syy);
}
