/**
 * Evaluation in the real environment (DESIGN.md §4): a policy acts greedily on held-out tasks,
 * one episode per task, and we report the success rate and mean reward with percentile-bootstrap
 * 95% intervals over tasks, and, across seeds, over seeds and tasks (a two-stage bootstrap).
 *
 * Evaluation knows nothing about the trainer: it acts through {@link EvalActor}, which sees only
 * what an agent may see (the instruction, its own earlier actions, the current observation) and
 * never a task's goal. Every `env.step` call is counted in `realSteps`.
 */
import { Rng } from '../core/rng.ts';
import type { Observation, RealEnvironment, Task } from '../core/types.ts';
import type { AnyEnvSpec } from '../envs/spec.ts';

/** A point estimate with its bootstrap interval. */
export interface Interval {
  mean: number;
  low: number;
  high: number;
}

/** Options of the bootstrap. */
export interface BootstrapOptions {
  /** Number of bootstrap resamples (a positive integer); default 2000. */
  resamples?: number;
  /** Coverage of the interval, strictly between 0 and 1; default 0.95. */
  level?: number;
  /** Seed of the resampling stream (a safe integer); default 0. The same seed gives the same interval. */
  seed?: number;
}

/** What an agent sees at one decision: never the task's goal. */
export interface EvalContext {
  instruction: string;
  /** Earlier actions of this episode, oldest first, with the observation each was taken on. */
  history: readonly { action: string; observation?: Observation }[];
  observation: Observation;
}

/**
 * Anything that can act: given the contexts of all running episodes, returns one action per
 * context, in order (greedy: for evaluation an actor should pick its most likely admissible
 * action). An action the environment does not admit is not an error: the step is counted and
 * marked invalid by the environment, and the episode goes on.
 */
export interface EvalActor {
  choose(contexts: readonly EvalContext[]): Promise<string[]>;
}

/** The outcome of one evaluated episode. */
export interface EpisodeOutcome {
  taskId: string;
  success: boolean;
  /** The episode's reward (sum of step rewards; 0 when cut off at `maxSteps` without `done`). */
  reward: number;
  /** Number of `env.step` calls in this episode. */
  steps: number;
}

/** The result of {@link evaluate}. */
export interface EvalResult {
  /** Number of episodes (one per task). */
  episodes: number;
  successRate: number;
  meanReward: number;
  /** Success rate with its bootstrap interval over tasks. */
  success: Interval;
  /** Mean reward with its bootstrap interval over tasks. */
  reward: Interval;
  /** One entry per task, in the order of `tasks`. */
  perTask: EpisodeOutcome[];
  /** Real environment steps taken (every `env.step` call). */
  realSteps: number;
}

export interface EvaluateOptions {
  /** Episodes run in parallel (one `choose` call per step acts for all of them); default 32. */
  batch?: number;
  /** Step limit per episode; default `spec.maxSteps`. An episode cut off here is a failure with reward 0. */
  maxSteps?: number;
  /** Checked before every step of the batch; on abort, `evaluate` rejects with the signal's reason. */
  signal?: AbortSignal;
  /** Called each time an episode ends, with the number of finished episodes and the total. */
  onProgress?: (done: number, total: number) => void;
  /** Options of the bootstrap intervals (95% and 2000 resamples by default). */
  bootstrap?: BootstrapOptions;
}

/** The result of {@link aggregateEvaluations}. */
export interface AggregateResult {
  /** Number of evaluations (seeds) aggregated. */
  seeds: number;
  /** Episodes over all seeds. */
  episodes: number;
  /** Mean over seeds of each seed's success rate. */
  successRate: number;
  /** Mean over seeds of each seed's mean reward. */
  meanReward: number;
  /** Two-stage bootstrap interval (seeds, then tasks within each seed); see {@link bootstrapIntervalGrouped}. */
  success: Interval;
  reward: Interval;
  /** Real environment steps over all seeds. */
  realSteps: number;
  /** Each seed's figures, in the order given. */
  perSeed: { successRate: number; meanReward: number; episodes: number }[];
}

const DEFAULT_RESAMPLES = 2000;
const DEFAULT_LEVEL = 0.95;
const DEFAULT_BATCH = 32;

interface ResolvedBootstrap {
  resamples: number;
  level: number;
  seed: number;
}

function resolveBootstrap(options: BootstrapOptions | undefined, what: string): ResolvedBootstrap {
  const resamples = options?.resamples ?? DEFAULT_RESAMPLES;
  const level = options?.level ?? DEFAULT_LEVEL;
  const seed = options?.seed ?? 0;
  if (!Number.isInteger(resamples) || resamples < 1) {
    throw new RangeError(`${what}: resamples must be a positive integer, got ${String(resamples)}`);
  }
  if (typeof level !== 'number' || !(level > 0 && level < 1)) {
    throw new RangeError(`${what}: level must be a number strictly between 0 and 1, got ${String(level)}`);
  }
  if (!Number.isSafeInteger(seed)) throw new RangeError(`${what}: seed must be a safe integer, got ${String(seed)}`);
  return { resamples, level, seed };
}

/** `Array.isArray` without its narrowing of readonly arrays to `any[]`. */
function isArray(x: unknown): boolean {
  return Array.isArray(x);
}

function checkValues(values: readonly number[], what: string): void {
  if (!isArray(values)) throw new TypeError(`${what}: values must be an array of numbers`);
  values.forEach((v, i) => {
    if (typeof v !== 'number' || !Number.isFinite(v)) {
      throw new RangeError(`${what}: values[${i}] must be a finite number, got ${String(v)}`);
    }
  });
}

function mean(values: readonly number[]): number {
  let sum = 0;
  for (const v of values) sum += v;
  return sum / values.length;
}

/** Quantile `p` of ascending `sorted` by linear interpolation between order statistics (R's type 7). */
function quantile(sorted: Float64Array, p: number): number {
  const h = (sorted.length - 1) * p;
  const lo = Math.floor(h);
  const hi = Math.min(lo + 1, sorted.length - 1);
  const a = sorted[lo] as number;
  const b = sorted[hi] as number;
  return a + (h - lo) * (b - a);
}

/** The percentile interval of bootstrap statistics, clamped to [min, max] of what was resampled. */
function percentileInterval(stats: Float64Array, level: number, point: number, min: number, max: number): Interval {
  stats.sort();
  const alpha = (1 - level) / 2;
  const low = Math.min(Math.max(quantile(stats, alpha), min), max);
  const high = Math.max(Math.min(quantile(stats, 1 - alpha), max), min);
  return { mean: point, low, high };
}

/**
 * Percentile bootstrap interval of the mean of `values`: `resamples` times, draw `values.length`
 * values with replacement and take their mean; `low` and `high` are the (1 - level)/2 and
 * (1 + level)/2 quantiles of those means (linear interpolation), clamped to [min, max] of the
 * values, so that equal values give low = high = mean. Deterministic for a seed.
 *
 * Throws a RangeError on empty input (there is no mean to bound), on a non-finite value, and on
 * bad options; each message names the bad value.
 */
export function bootstrapInterval(values: readonly number[], options?: BootstrapOptions): Interval {
  const what = 'bootstrapInterval';
  checkValues(values, what);
  const { resamples, level, seed } = resolveBootstrap(options, what);
  const n = values.length;
  if (n === 0) throw new RangeError(`${what}: values is empty; the mean of no values has no interval`);
  const rng = new Rng(seed);
  const stats = new Float64Array(resamples);
  for (let r = 0; r < resamples; r++) {
    let sum = 0;
    for (let i = 0; i < n; i++) sum += values[Math.floor(rng.next() * n)] as number;
    stats[r] = sum / n;
  }
  let min = Number.POSITIVE_INFINITY;
  let max = Number.NEGATIVE_INFINITY;
  for (const v of values) [min, max] = [Math.min(min, v), Math.max(max, v)];
  return percentileInterval(stats, level, mean(values), min, max);
}

/**
 * Two-stage (hierarchical) percentile bootstrap for results over several seeds, each a group of
 * per-task values. The statistic is the mean of the group means (every seed weighs the same,
 * whatever its number of tasks). Each resample draws `groups.length` groups with replacement,
 * then, within each drawn group, as many of its values with replacement, and takes the mean of
 * the resampled group means; the interval is the percentile interval of those, as in
 * {@link bootstrapInterval}. The interval thus reflects both the spread between seeds and the
 * sampling of tasks within a seed; with one group it is the within-group bootstrap.
 *
 * Throws a RangeError when there are no groups, when a group is empty, on a non-finite value, and
 * on bad options.
 */
export function bootstrapIntervalGrouped(groups: readonly (readonly number[])[], options?: BootstrapOptions): Interval {
  const what = 'bootstrapIntervalGrouped';
  if (!isArray(groups)) throw new TypeError(`${what}: groups must be an array of arrays of numbers`);
  const { resamples, level, seed } = resolveBootstrap(options, what);
  if (groups.length === 0) throw new RangeError(`${what}: groups is empty; there is no mean to bound`);
  groups.forEach((g, i) => {
    checkValues(g, `${what}: groups[${i}]`);
    if (g.length === 0) throw new RangeError(`${what}: groups[${i}] is empty; every seed needs at least one value`);
  });
  const k = groups.length;
  const rng = new Rng(seed);
  const stats = new Float64Array(resamples);
  for (let r = 0; r < resamples; r++) {
    let total = 0;
    for (let j = 0; j < k; j++) {
      const g = groups[Math.floor(rng.next() * k)] as readonly number[];
      const n = g.length;
      let sum = 0;
      for (let i = 0; i < n; i++) sum += g[Math.floor(rng.next() * n)] as number;
      total += sum / n;
    }
    stats[r] = total / k;
  }
  let min = Number.POSITIVE_INFINITY;
  let max = Number.NEGATIVE_INFINITY;
  for (const g of groups) for (const v of g) [min, max] = [Math.min(min, v), Math.max(max, v)];
  return percentileInterval(stats, level, mean(groups.map(mean)), min, max);
}

function abortError(signal: AbortSignal): unknown {
  return signal.reason ?? new DOMException('evaluation aborted', 'AbortError');
}

interface Slot {
  env: RealEnvironment;
  /** Index into `tasks` of the running episode, or -1 when idle. */
  index: number;
  observation: Observation;
  history: { action: string; observation: Observation }[];
  reward: number;
}

/**
 * Runs each task once in the real environment with `actor` and reports success and reward with
 * bootstrap intervals over tasks.
 *
 * Up to `batch` episodes run at once, each on its own `spec.create()` instance; at every step one
 * `actor.choose` call acts for all running episodes, and a finished slot starts the next task.
 * An episode ends when the environment says `done` (success as the environment reports it, reward
 * the sum of step rewards) or after `maxSteps` steps without `done` (a failure with reward 0).
 * `signal` is checked before each step and after each `choose`; on abort the promise rejects with
 * the signal's reason (an `AbortError` DOMException when it has none). Throws a RangeError for an
 * empty task list, a task of another environment, or bad options, and an Error when the actor
 * returns the wrong number of actions or a non-string.
 */
export async function evaluate(actor: EvalActor, spec: AnyEnvSpec, tasks: readonly Task[], options: EvaluateOptions = {}): Promise<EvalResult> {
  const batch = options.batch ?? DEFAULT_BATCH;
  const maxSteps = options.maxSteps ?? spec.maxSteps;
  if (!Number.isInteger(batch) || batch < 1) throw new RangeError(`evaluate: batch must be a positive integer, got ${String(batch)}`);
  if (!Number.isInteger(maxSteps) || maxSteps < 1) throw new RangeError(`evaluate: maxSteps must be a positive integer, got ${String(maxSteps)}`);
  if (tasks.length === 0) throw new RangeError('evaluate: no tasks to evaluate');
  tasks.forEach((t, i) => {
    if (t.env !== spec.name) throw new RangeError(`evaluate: tasks[${i}] (${JSON.stringify(t.id)}) is a ${t.env} task, not ${spec.name}`);
  });
  const bootstrap = resolveBootstrap(options.bootstrap, 'evaluate');
  const { signal, onProgress } = options;
  const total = tasks.length;
  const outcomes: (EpisodeOutcome | undefined)[] = new Array(total).fill(undefined);
  let next = 0;
  let finished = 0;
  let realSteps = 0;

  const start = (slot: Slot): void => {
    if (next >= total) {
      slot.index = -1;
      return;
    }
    slot.index = next++;
    slot.observation = slot.env.reset(tasks[slot.index] as Task);
    slot.history = [];
    slot.reward = 0;
  };
  const finish = (slot: Slot, success: boolean, reward: number): void => {
    const task = tasks[slot.index] as Task;
    outcomes[slot.index] = { taskId: task.id, success, reward, steps: slot.history.length };
    finished++;
    onProgress?.(finished, total);
    start(slot);
  };

  if (signal?.aborted) throw abortError(signal);
  const slots: Slot[] = [];
  for (let i = 0; i < Math.min(batch, total); i++) {
    const slot: Slot = { env: spec.create(), index: -1, observation: { text: '', actions: [] }, history: [], reward: 0 };
    start(slot);
    slots.push(slot);
  }

  for (;;) {
    const running = slots.filter((s) => s.index >= 0);
    if (running.length === 0) break;
    if (signal?.aborted) throw abortError(signal);
    const contexts: EvalContext[] = running.map((s) => ({
      instruction: (tasks[s.index] as Task).instruction,
      history: s.history.slice(),
      observation: s.observation,
    }));
    const actions = await actor.choose(contexts);
    if (signal?.aborted) throw abortError(signal);
    if (!Array.isArray(actions) || actions.length !== running.length) {
      throw new Error(`evaluate: the actor returned ${Array.isArray(actions) ? actions.length : typeof actions} actions for ${running.length} contexts`);
    }
    running.forEach((slot, i) => {
      const action = actions[i];
      if (typeof action !== 'string') throw new Error(`evaluate: the actor's action ${i} is ${typeof action}, not a string`);
      const result = slot.env.step(action);
      realSteps++;
      slot.history.push({ action, observation: slot.observation });
      slot.reward += result.reward;
      slot.observation = result.observation;
      if (result.done) finish(slot, result.info.success === true, slot.reward);
      else if (slot.history.length >= maxSteps) finish(slot, false, 0);
    });
  }

  const perTask = outcomes as EpisodeOutcome[];
  const successes = perTask.map((o) => (o.success ? 1 : 0));
  const rewards = perTask.map((o) => o.reward);
  const success = bootstrapInterval(successes, bootstrap);
  const reward = bootstrapInterval(rewards, bootstrap);
  return { episodes: total, successRate: success.mean, meanReward: reward.mean, success, reward, perTask, realSteps };
}

/**
 * Aggregates evaluations of several seeds (e.g. the same mode trained with different seeds):
 * the mean over seeds of the success rate and mean reward, with two-stage bootstrap intervals
 * (seeds, then tasks within a seed; see {@link bootstrapIntervalGrouped}). Throws a RangeError
 * for an empty list.
 */
export function aggregateEvaluations(results: readonly EvalResult[], options?: BootstrapOptions): AggregateResult {
  if (!isArray(results) || results.length === 0) throw new RangeError('aggregateEvaluations: no evaluations to aggregate');
  const successGroups = results.map((r) => r.perTask.map((o) => (o.success ? 1 : 0)));
  const rewardGroups = results.map((r) => r.perTask.map((o) => o.reward));
  const success = bootstrapIntervalGrouped(successGroups, options);
  const reward = bootstrapIntervalGrouped(rewardGroups, options);
  return {
    seeds: results.length,
    episodes: results.reduce((n, r) => n + r.episodes, 0),
    successRate: success.mean,
    meanReward: reward.mean,
    success,
    reward,
    realSteps: results.reduce((n, r) => n + r.realSteps, 0),
    perSeed: results.map((r) => ({ successRate: r.successRate, meanReward: r.meanReward, episodes: r.episodes })),
  };
}
