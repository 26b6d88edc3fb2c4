/**
 * Model selection that does not trust the simulator alone. A policy trained inside a simulator
 * can learn what the simulator made up; its success there then says little about its real
 * success. Recorded successful episodes that neither the simulator nor behaviour cloning saw say
 * more: where the policy's greedy choice is the recorded action at every step, a deterministic
 * environment repeats the recorded success, so the share of such episodes is a real success the
 * data certifies. This module measures that share, how far the policy follows each recorded
 * success before it leaves it, and its per-step agreement; scores validation points by them; and
 * gives the rank correlation a criterion has with real success.
 */
import type { Observation, Task, Trajectory } from '../core/types.ts';
import { bootstrapInterval, type EvalActor, type EvalContext, type Interval } from './evaluate.ts';
import type { ExperimentResult } from './experiment.ts';
import { keptValidation } from './validation.ts';

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
  /**
   * Each episode's own figure, in order: the mean of the share of its steps followed before the
   * first departure and the share of its steps agreed on. Their paired differences between two
   * policies say whether the recorded figures can tell the two apart (see {@link replacesKept}).
   */
  perEpisode: number[];
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
    const history: { action: string; observation: Observation }[] = [];
    for (const s of e.steps) {
      if (!s.observation.actions.includes(s.action)) throw new SelectionError(`recordedAgreement: episode ${JSON.stringify(e.taskId)} records action ${JSON.stringify(s.action)}, which its state did not offer`);
      contexts.push({ instruction: e.instruction, history: history.slice(), observation: s.observation });
      owners.push(i);
      wanted.push(s.action);
      history.push({ action: s.action, observation: s.observation });
    }
  });
  const chosen: string[] = [];
  for (let i = 0; i < contexts.length; i += CHUNK) chosen.push(...(await actor.choose(contexts.slice(i, i + CHUNK))));
  const whole = episodes.map(() => 1);
  const followed = episodes.map(() => 0);
  const agreedIn = episodes.map(() => 0);
  let agreed = 0;
  chosen.forEach((a, k) => {
    const owner = owners[k] as number;
    if (a === wanted[k]) {
      agreed++;
      agreedIn[owner] = (agreedIn[owner] as number) + 1;
      if (whole[owner] === 1) followed[owner] = (followed[owner] as number) + 1;
    } else whole[owner] = 0;
  });
  const replayedInterval = bootstrapInterval(whole);
  const prefix = episodes.reduce((sum, e, i) => sum + (followed[i] as number) / e.steps.length, 0) / episodes.length;
  const perEpisode = episodes.map((e, i) => ((followed[i] as number) + (agreedIn[i] as number)) / (2 * e.steps.length));
  return { episodes: episodes.length, replayed: replayedInterval.mean, replayedInterval, agreement: contexts.length === 0 ? 0 : agreed / contexts.length, prefix, perEpisode };
}

/**
 * What decides which policy a synthetic phase keeps: `recorded`, how well the greedy policy
 * follows held-out recorded successes (see {@link selectionScore}); `simulator` (the default),
 * greedy success inside the simulator (what a simulator that invents rewards can mislead).
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
  /** Each held-out recorded success's own figure (see {@link RecordedAgreement.perEpisode}). */
  perEpisode?: readonly number[];
}

/**
 * How many standard errors of the paired difference a policy's `recorded` figure must beat the
 * kept policy's by before it is called better (or fall below it before it is called worse).
 */
export const RECORDED_DECISIVE_SE = 2;

/**
 * Whether `candidate` replaces `kept` as the policy a synthetic phase keeps under `criterion`.
 * `simulator`: a higher success inside the simulator. `recorded`: where both carry per-episode
 * figures on the same held-out successes, their mean paired difference decides when it is beyond
 * {@link RECORDED_DECISIVE_SE} standard errors; closer than that the held-out episodes cannot tell
 * the two apart and the simulator's success decides, by as many standard errors of the two
 * successes over `simulatorTasks` validation episodes where that count is given, so that noise in
 * a few episodes of either figure does not swap a policy for a worse one (one validation task more
 * inside tickets' simulator swapped a cloned start at 60% real for a policy at 50%). Without
 * per-episode figures, a higher recorded figure.
 */
export function replacesKept(candidate: ValidationFigures, kept: ValidationFigures, criterion: SelectionCriterion, simulatorTasks?: number): boolean {
  const a = candidate.perEpisode;
  const b = kept.perEpisode;
  if (criterion === 'recorded' && a !== undefined && b !== undefined && a.length === b.length && a.length > 1) {
    const diffs = a.map((x, i) => x - (b[i] as number));
    const mean = diffs.reduce((s, d) => s + d, 0) / diffs.length;
    const variance = diffs.reduce((s, d) => s + (d - mean) ** 2, 0) / (diffs.length - 1);
    const margin = RECORDED_DECISIVE_SE * Math.sqrt(variance / diffs.length);
    if (mean > margin) return true;
    if (mean < -margin) return false;
    const spread = (p: number): number => p * (1 - p);
    const simulatorMargin = simulatorTasks === undefined ? 0 : RECORDED_DECISIVE_SE * Math.sqrt((spread(candidate.success) + spread(kept.success)) / simulatorTasks);
    return candidate.success - kept.success > simulatorMargin;
  }
  return selectionScore(candidate, criterion) > selectionScore(kept, criterion);
}

/**
 * The criterion's figure for a validation point (higher is better). `recorded` is the mean of two
 * readings of the held-out recorded successes: how far the policy follows each before it first
 * leaves it (whole replays count 1), and on what share of their steps its greedy action is the
 * recorded one. The first keeps the credit of a policy that found its own route late in an
 * episode, where the share of whole replays drops it (shop from scratch: 16% replayed at 44% real,
 * 4% at 58%); the second refuses a broken policy that only matches first steps the prior gets
 * right anyway. Without recorded figures it falls back to the simulator's.
 */
export function selectionScore(figures: ValidationFigures, criterion: SelectionCriterion): number {
  if (criterion === 'recorded' && figures.prefix !== undefined && figures.agreement !== undefined) return (figures.prefix + figures.agreement) / 2;
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

/** An experiment and the domain it ran on (a suite's domain, or one `experiment` run). */
export interface ExperimentOfDomain {
  name: string;
  experiment: ExperimentResult;
}

const pct = (x: number): string => (Number.isFinite(x) ? (100 * x).toFixed(1) : 'n/a');

/** A policy a synthetic phase validated: both criteria's figures and its real held-out success. */
export interface SelectionPoint {
  domain: string;
  arm: string;
  seed: number;
  iteration: number;
  /** Greedy success inside the simulator (the old criterion). */
  simulator: number;
  /** The `recorded` criterion's figure (null where the run held no recorded success out). */
  recorded: number | null;
  real: number;
  /** What the validation measured, for the recorded criterion's decision (see {@link replacesKept}). */
  figures: ValidationFigures;
  /** Validation episodes inside the simulator behind `simulator`. */
  tasks?: number;
}

/** Spearman rank correlations of the two criteria with real success, over the suite's validated policies. */
export interface SelectionCorrelation {
  /**
   * `validation points`: every policy a synthetic phase validated, with its real success measured
   * there; `kept policies` (a suite that measured no validation point): the simulator's figure for
   * each kept policy against the run's final held-out success (`s2r` left out: a real phase
   * follows its choice).
   */
  basis: 'validation points' | 'kept policies';
  policies: number;
  simulator: number;
  /** NaN where no policy has the recorded figure. */
  recorded: number;
  perDomain: { domain: string; policies: number; simulator: number; recorded: number }[];
  /** Mean real success of the policy each criterion keeps (the earliest best, as the loop keeps it) and of the best one, over `runs` runs. */
  keptReal: { runs: number; simulator: number; recorded: number; best: number } | null;
}

/** The suite's validated policies, or (no measured validation points) its kept policies. */
export function selectionPoints(domains: readonly ExperimentOfDomain[]): { basis: SelectionCorrelation['basis']; points: SelectionPoint[]; runs: SelectionPoint[][] } {
  const runs: SelectionPoint[][] = [];
  const kept: SelectionPoint[] = [];
  for (const d of domains) {
    for (const a of d.experiment.arms) {
      for (const s of a.seeds) {
        if (s.probes && s.probes.length > 0) {
          runs.push(s.probes.map((p) => ({ domain: d.name, arm: a.name, seed: s.seed, iteration: p.iteration, simulator: p.success, recorded: p.prefix === undefined || p.agreement === undefined ? null : selectionScore(p, 'recorded'), real: p.real, figures: p, ...(s.validation ? { tasks: s.validation.tasks } : {}) })));
        } else if (s.validation?.end !== undefined && a.config?.mode !== 's2r') {
          const simulator = keptValidation(s.validation);
          kept.push({ domain: d.name, arm: a.name, seed: s.seed, iteration: -1, simulator, recorded: null, real: s.heldOut.successRate, figures: { success: simulator } });
        }
      }
    }
  }
  return runs.length > 0 ? { basis: 'validation points', points: runs.flat(), runs } : { basis: 'kept policies', points: kept, runs: [] };
}

/** What a run of validation points keeps when `replaces` decides, as the loop keeps it: the first point no later one replaces. */
function keptBy(run: readonly SelectionPoint[], replaces: (candidate: SelectionPoint, kept: SelectionPoint) => boolean): SelectionPoint {
  let best = run[0] as SelectionPoint;
  for (const p of run.slice(1)) if (replaces(p, best)) best = p;
  return best;
}

/** The two criteria's rank correlations with real success over the suite's validated policies (see {@link SelectionCorrelation}). */
export function selectionCorrelation(domains: readonly ExperimentOfDomain[]): SelectionCorrelation {
  const { basis, points, runs } = selectionPoints(domains);
  const corr = (ps: readonly SelectionPoint[]): { simulator: number; recorded: number } => {
    const withRecorded = ps.filter((p) => p.recorded !== null);
    return {
      simulator: spearman(ps.map((p) => p.simulator), ps.map((p) => p.real)),
      recorded: spearman(withRecorded.map((p) => p.recorded as number), withRecorded.map((p) => p.real)),
    };
  };
  const perDomain = domains.map((d) => {
    const mine = points.filter((p) => p.domain === d.name);
    return { domain: d.name, policies: mine.length, ...corr(mine) };
  });
  const scored = runs.filter((r) => r.every((p) => p.recorded !== null));
  const meanReal = (f: (r: readonly SelectionPoint[]) => SelectionPoint): number => scored.reduce((s, r) => s + f(r).real, 0) / scored.length;
  return {
    basis,
    policies: points.length,
    ...corr(points),
    perDomain,
    keptReal:
      scored.length === 0
        ? null
        : {
            runs: scored.length,
            simulator: meanReal((r) => keptBy(r, (p, k) => p.simulator > k.simulator)),
            recorded: meanReal((r) => keptBy(r, (p, k) => replacesKept(p.figures, k.figures, 'recorded', p.tasks))),
            best: meanReal((r) => keptBy(r, (p, k) => p.real > k.real)),
          },
  };
}

const rho = (x: number): string => (Number.isFinite(x) ? x.toFixed(2) : 'n/a');

/** The selection criteria's correlations with real success, as suite.md tells them. */
export function selectionLines(c: SelectionCorrelation): string[] {
  if (c.policies === 0) return [];
  const what =
    c.basis === 'validation points'
      ? `every policy a synthetic phase validated (arms x seeds x validation points: ${c.policies}), its real held-out success measured where it was validated`
      : `the policy each synthetic phase kept (${c.policies}), against the run's final held-out success (no validation point was measured in the real environment)`;
  const lines = [
    '',
    `Model selection: Spearman rank correlation with real success over ${what}. "simulator": greedy success inside the simulator on recorded tasks; "recorded": the mean of how far the greedy policy follows held-out recorded successes before it first leaves them and the share of their steps on which it takes the recorded action. By default the recorded figure picks a cloned start's kept policy (the simulator's deciding where the held-out successes cannot tell two policies apart) and the simulator's picks it from scratch; "keeps" below applies each criterion to every phase.`,
    '',
    '| domain | policies | simulator | recorded |',
    '| --- | ---: | ---: | ---: |',
    ...c.perDomain.filter((d) => d.policies > 0).map((d) => `| ${d.domain} | ${d.policies} | ${rho(d.simulator)} | ${rho(d.recorded)} |`),
    `| all | ${c.policies} | ${rho(c.simulator)} | ${rho(c.recorded)} |`,
  ];
  if (c.keptReal) {
    lines.push('', `Real held-out success of the policy each criterion keeps, mean over ${c.keptReal.runs} synthetic phases: simulator ${pct(c.keptReal.simulator)}%, recorded ${pct(c.keptReal.recorded)}%, the best validated policy ${pct(c.keptReal.best)}%.`);
  }
  return lines;
}

