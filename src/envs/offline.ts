import { Rng, hashString } from '../core/rng.ts';
import type { Task, Trajectory } from '../core/types.ts';
import { parsePolicy, runEpisode, type Policy } from './episode.ts';
import type { AnyEnvSpec, Split } from './spec.ts';

/** The policy name of an environment's demonstrator (see `EnvSpec.demonstrator`). */
export const DEMONSTRATOR = 'demonstrator';

/** Options for generating offline (real-environment) trajectories. */
export interface OfflineDataOptions {
  episodes: number;
  seed: number;
  /**
   * `expert`, `noisy:EPS`, `demonstrator` (the environment's `EnvSpec.demonstrator`, a fresh one
   * per episode) or `demonstrator:EPS` (that demonstrator, a random admissible action with
   * probability EPS).
   */
  policy: string;
  split: Split;
}

/** Summary of a generated dataset. */
export interface OfflineDataSummary {
  episodes: number;
  successRate: number;
  meanSteps: number;
  meanReward: number;
}

/**
 * Runs one episode per seed task with a rule-based policy in the real environment and yields
 * `{task, trajectory}` pairs one at a time, so callers can stream them to disk or a store and
 * report progress. Deterministic for the options.
 */
export function* generateOfflineData(
  spec: AnyEnvSpec,
  options: OfflineDataOptions,
): Generator<{ task: Task; trajectory: Trajectory }> {
  if (!(Number.isInteger(options.episodes) && options.episodes > 0)) {
    throw new RangeError(`episodes must be a positive integer, got ${options.episodes}`);
  }
  if (!Number.isInteger(options.seed)) throw new RangeError(`seed must be an integer, got ${options.seed}`);
  const episodePolicy = policyPerEpisode(spec, options.policy);
  const taskOptions = { split: options.split, count: options.episodes, seed: options.seed };
  // Lazily when the environment can: a long run starts writing at once and never holds every task.
  const tasks = spec.iterateTasks ? spec.iterateTasks(taskOptions) : spec.tasks(taskOptions);
  const rng = new Rng(options.seed ^ hashString(`policy:${options.policy}`));
  const env = spec.create();
  for (const task of tasks) {
    const trajectory = runEpisode(env, task, episodePolicy(), {
      rng,
      source: 'offline',
      trajectoryId: `${task.id}:${options.policy}`,
    });
    yield { task, trajectory };
  }
}

/** The policy of each episode: the environment's demonstrator is a fresh one per episode (it remembers its episode), the others are one rule. */
function policyPerEpisode(spec: AnyEnvSpec, name: string): () => Policy {
  const noisy = /^demonstrator:(\d*\.?\d+)$/.exec(name);
  if (name !== DEMONSTRATOR && !noisy) {
    const policy = parsePolicy(name);
    return () => policy;
  }
  const demonstrator = spec.demonstrator;
  if (!demonstrator) throw new RangeError(`environment ${spec.name} has no demonstrator: use "expert" or "noisy:EPS"`);
  const eps = noisy ? Number(noisy[1]) : 0;
  if (!(eps >= 0 && eps <= 1)) throw new RangeError(`demonstrator noise must be in [0, 1], got ${eps}`);
  return () => {
    const policy = demonstrator.call(spec);
    return eps === 0 ? policy : (env, observation, rng) => (observation.actions.length > 0 && rng.chance(eps) ? rng.pick(observation.actions) : policy(env, observation, rng));
  };
}

/** Success rate, mean steps and mean reward of a set of trajectories. */
export function summarise(trajectories: Iterable<Trajectory>): OfflineDataSummary {
  const tally = new SummaryTally();
  for (const t of trajectories) tally.add(t);
  return tally.summary();
}

/** {@link summarise} one trajectory at a time, in constant memory (a stream keeps no trajectory). */
export class SummaryTally {
  private n = 0;
  private successes = 0;
  private steps = 0;
  private reward = 0;

  /** Counts one trajectory. */
  add(t: Trajectory): void {
    this.n++;
    if (t.success) this.successes++;
    this.steps += t.steps.length;
    this.reward += t.reward;
  }

  /** The summary of what was added so far. */
  summary(): OfflineDataSummary {
    const n = this.n;
    if (n === 0) return { episodes: 0, successRate: 0, meanSteps: 0, meanReward: 0 };
    return { episodes: n, successRate: this.successes / n, meanSteps: this.steps / n, meanReward: this.reward / n };
  }
}
