/**
 * A contextual bandit built from a real environment's expert episodes: each state is a context,
 * its admissible actions are the arms, and the expert's action is the one arm that pays 1.
 * It checks that GRPO (one-step rollouts, groups of samples per state) and behaviour cloning
 * learn the policy head end to end, and gives the benchmark realistic batches.
 */
import { Rng } from '../core/rng.ts';
import type { Observation } from '../core/types.ts';
import { expertPolicy, runEpisode } from '../envs/episode.ts';
import type { AnyEnvSpec, Split } from '../envs/spec.ts';
import type { StateContext } from '../policy/features.ts';
import type { Decision } from '../policy/input.ts';
import type { GrpoTrajectory } from './grpo.ts';
import type { SftExample } from './sft.ts';
import type { Trainer, UpdateMetrics } from './trainer.ts';

/** One state of an expert episode and the index of the expert's action among its candidates. */
export interface ExpertState {
  context: StateContext;
  expert: number;
  taskId: string;
}

/** Options of {@link expertStates}. */
export interface ExpertStatesOptions {
  /** Number of tasks (one expert episode each). */
  tasks: number;
  split?: Split;
  seed: number;
  /** Keep at most this many states (taken in episode order). */
  maxStates?: number;
}

/** The states of expert episodes on seed tasks, with the expert's choice. Deterministic for the options. */
export function expertStates(spec: AnyEnvSpec, options: ExpertStatesOptions): ExpertState[] {
  const tasks = spec.tasks({ split: options.split ?? 'train', count: options.tasks, seed: options.seed });
  const env = spec.create();
  const rng = new Rng(options.seed);
  const out: ExpertState[] = [];
  for (const task of tasks) {
    const trajectory = runEpisode(env, task, expertPolicy, { rng });
    const history: { action: string; observation: Observation }[] = [];
    for (const step of trajectory.steps) {
      const expert = step.observation.actions.indexOf(step.action);
      if (expert >= 0) out.push({ context: { instruction: task.instruction, history: [...history], observation: step.observation }, expert, taskId: task.id });
      history.push({ action: step.action, observation: step.observation });
      if (options.maxStates !== undefined && out.length >= options.maxStates) return out;
    }
  }
  return out;
}

/** Share of decisions whose greedy choice is the expert's. */
export async function greedyAccuracy(trainer: Trainer, decisions: readonly Decision[], expert: readonly number[]): Promise<number> {
  if (decisions.length !== expert.length) throw new RangeError(`${decisions.length} decisions but ${expert.length} expert actions`);
  const { actions } = await trainer.act(decisions, { greedy: true });
  let correct = 0;
  actions.forEach((a, i) => {
    if (a === expert[i]) correct++;
  });
  return correct / decisions.length;
}

/** Options of {@link trainBanditGrpo}. */
export interface BanditGrpoOptions {
  /** GRPO updates. */
  iterations: number;
  /** States per update. */
  statesPerIteration: number;
  /** Samples per state (the group size G). */
  groupSize: number;
  seed: number;
  /** Evaluate greedy accuracy every this many iterations (and at the end). */
  evalEvery?: number;
  /** Stop early once greedy accuracy reaches this. */
  targetAccuracy?: number;
}

/** The learning curve of a bandit run. */
export interface BanditResult {
  initialAccuracy: number;
  finalAccuracy: number;
  /** Updates done (fewer than `iterations` when the target was reached). */
  iterations: number;
  curve: { iteration: number; accuracy: number }[];
  last: UpdateMetrics | null;
}

/**
 * GRPO on the bandit: each update samples `statesPerIteration` states, draws `groupSize` arms
 * from the current policy for each (reward 1 for the expert's arm, else 0), and takes one GRPO step.
 */
export async function trainBanditGrpo(
  trainer: Trainer,
  decisions: readonly Decision[],
  expert: readonly number[],
  options: BanditGrpoOptions,
): Promise<BanditResult> {
  const rng = new Rng(options.seed);
  const evalEvery = options.evalEvery ?? 10;
  const initialAccuracy = await greedyAccuracy(trainer, decisions, expert);
  const curve = [{ iteration: 0, accuracy: initialAccuracy }];
  let last: UpdateMetrics | null = null;
  let accuracy = initialAccuracy;
  let it = 0;
  while (it < options.iterations) {
    const picked = rng.sample(
      decisions.map((_, i) => i),
      Math.min(options.statesPerIteration, decisions.length),
    );
    const rows = picked.flatMap((i) => Array.from({ length: options.groupSize }, () => i));
    const batchDecisions = rows.map((i) => decisions[i] as Decision);
    const acted = await trainer.act(batchDecisions, { rng });
    const trajectories: GrpoTrajectory[] = rows.map((i, r) => {
      const action = acted.actions[r] as number;
      return {
        reward: action === expert[i] ? 1 : 0,
        steps: [{ ...(decisions[i] as Decision), action, logProb: acted.logProbs[r] as number }],
      };
    });
    last = await trainer.grpoUpdate({ groupSize: options.groupSize, trajectories });
    it++;
    if (it % evalEvery === 0 || it === options.iterations) {
      accuracy = await greedyAccuracy(trainer, decisions, expert);
      curve.push({ iteration: it, accuracy });
      if (options.targetAccuracy !== undefined && accuracy >= options.targetAccuracy) break;
    }
  }
  return { initialAccuracy, finalAccuracy: accuracy, iterations: it, curve, last };
}

/** Behaviour-cloning examples from decisions and expert choices. */
export function sftExamples(decisions: readonly Decision[], expert: readonly number[]): SftExample[] {
  return decisions.map((d, i) => ({ ...d, action: expert[i] as number }));
}
