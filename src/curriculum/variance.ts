/**
 * Reward-variance task selection (DreamGym's curriculum criterion): a task whose group of
 * rollouts gets mixed rewards, V_tau = (1/n) sum_i (r_i - mean)^2 > 0, is "feasible yet
 * challenging", and seeds new task variations.
 */
import type { Task } from '../core/types.ts';

/** Mean squared deviation of `rewards` from their mean (population variance). */
export function rewardVariance(rewards: readonly number[]): number {
  if (!Array.isArray(rewards) || rewards.length === 0) throw new RangeError(`rewardVariance needs at least one reward, got ${JSON.stringify(rewards)}`);
  let sum = 0;
  rewards.forEach((r, i) => {
    if (typeof r !== 'number' || !Number.isFinite(r)) throw new RangeError(`rewardVariance: reward ${i} is ${r}, not a finite number`);
    sum += r;
  });
  const mean = sum / rewards.length;
  let sq = 0;
  for (const r of rewards) sq += (r - mean) * (r - mean);
  return sq / rewards.length;
}

/** A task and the rewards of its group of rollouts. */
export interface TaskRewards {
  task: Task;
  rewards: readonly number[];
}

/** A task with its reward variance. */
export interface ScoredTask {
  task: Task;
  variance: number;
  meanReward: number;
}

/** Options of {@link selectHighVarianceTasks}. */
export interface VarianceSelectionOptions {
  /** Keep only tasks with variance above this (default 1e-12: any spread at all). */
  minVariance?: number;
}

/**
 * The `count` tasks with the highest reward variance (above `minVariance`), highest first; ties
 * broken by task id so the choice is deterministic.
 */
export function selectHighVarianceTasks(groups: readonly TaskRewards[], count: number, options: VarianceSelectionOptions = {}): ScoredTask[] {
  if (!(Number.isInteger(count) && count >= 0)) throw new RangeError(`count must be an integer >= 0, got ${count}`);
  const minVariance = options.minVariance ?? 1e-12;
  if (!Number.isFinite(minVariance)) throw new RangeError(`minVariance must be finite, got ${minVariance}`);
  const scored = groups.map((g) => {
    const variance = rewardVariance(g.rewards);
    const meanReward = g.rewards.reduce((a, b) => a + b, 0) / g.rewards.length;
    return { task: g.task, variance, meanReward };
  });
  return scored
    .filter((s) => s.variance > minVariance)
    .sort((a, b) => b.variance - a.variance || (a.task.id < b.task.id ? -1 : a.task.id > b.task.id ? 1 : 0))
    .slice(0, count);
}
