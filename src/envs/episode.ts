import { Rng } from '../core/rng.ts';
import type { Observation, RealEnvironment, Step, Task, Trajectory, TrajectorySource } from '../core/types.ts';

/** Chooses an action for the current observation of a real environment. */
export type Policy = (env: RealEnvironment, observation: Observation, rng: Rng) => string;

/** The rule-based expert: the environment's own optimal next action. */
export const expertPolicy: Policy = (env) => env.expertAction();

/**
 * The expert with probability `1 - eps`, a uniformly random admissible action otherwise.
 * Gives varied trajectories, including failed ones, for offline data.
 */
export function noisyPolicy(eps: number): Policy {
  if (!(eps >= 0 && eps <= 1)) throw new RangeError(`noisy policy eps must be in [0, 1], got ${eps}`);
  return (env, observation, rng) => {
    if (observation.actions.length > 0 && rng.chance(eps)) return rng.pick(observation.actions);
    return env.expertAction();
  };
}

/** Policy names accepted by the CLI: `expert` or `noisy:EPS` (e.g. `noisy:0.3`). */
export function parsePolicy(spec: string): Policy {
  if (spec === 'expert') return expertPolicy;
  const m = /^noisy:(\d*\.?\d+)$/.exec(spec);
  if (m) return noisyPolicy(Number(m[1]));
  throw new RangeError(`Unknown policy ${JSON.stringify(spec)}: use "expert" or "noisy:EPS" with EPS in [0, 1]`);
}

export interface EpisodeOptions {
  /** Random stream for the policy's choices. */
  rng: Rng;
  source?: TrajectorySource;
  trajectoryId?: string;
}

/** Runs one episode of `policy` on `task` until the environment says done. */
export function runEpisode(env: RealEnvironment, task: Task, policy: Policy, options: EpisodeOptions): Trajectory {
  let observation = env.reset(task);
  const steps: Step[] = [];
  let success = false;
  let reward = 0;
  // The environment enforces its own step limit; this bound only guards against a broken env.
  for (let t = 0; t < env.maxSteps + 1; t++) {
    const action = policy(env, observation, options.rng);
    const result = env.step(action);
    steps.push({ observation, action, reward: result.reward, done: result.done, valid: result.info.valid });
    reward += result.reward;
    observation = result.observation;
    if (result.done) {
      success = result.info.success === true;
      break;
    }
  }
  return {
    id: options.trajectoryId ?? `${task.id}:traj`,
    taskId: task.id,
    env: env.name,
    source: options.source ?? 'offline',
    steps,
    reward,
    success,
  };
}
