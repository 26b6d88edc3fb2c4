/**
 * Builds what a run needs from its configuration, with no download: offline seed data from the
 * built-in environment's rule-based policies, the retrieval experience model grounded on it, the
 * hashed-embedding featurizer, the prior and the recombination task generator. The page builds
 * the same from IndexedDB and WebLLM instead.
 */
import type { Task, Trajectory } from '../core/types.ts';
import { RecombinationTaskGenerator } from '../curriculum/generator.ts';
import { generateOfflineData } from '../envs/offline.ts';
import { getEnvSpec } from '../envs/registry.ts';
import type { EnvSpec } from '../envs/spec.ts';
import { RetrievalExperienceModel } from '../experience/retrieval.ts';
import { LexicalPrior } from '../llm/prior.ts';
import { Featurizer } from '../policy/features.ts';
import { HashedEmbedder } from '../policy/hashed-embedder.ts';
import type { TrainingConfig } from './config.ts';
import { TrainingSetupError, type OfflineData, type TrainingDeps } from './loop.ts';

/** The held-out tasks every run of an environment is evaluated on (the same for all seeds and modes, so comparisons are paired). */
export function evaluationTasks(spec: EnvSpec, count: number): Task[] {
  return spec.tasks({ split: 'test', count, seed: 1 });
}

/**
 * Offline seed data on train tasks: `expertEpisodes` expert episodes (the behaviour-cloning
 * data) and `noisyEpisodes` noisy ones, half `noisy:0.3` and half random, so that the
 * simulator's reward model has seen failures. Deterministic for the seed.
 */
export function offlineSeedData(spec: EnvSpec, config: Pick<TrainingConfig, 'seed' | 'offline'>): OfflineData {
  const tasks: Task[] = [];
  const trajectories: Trajectory[] = [];
  const expertIds = new Set<string>();
  const add = (episodes: number, policy: string, salt: number, expert: boolean): void => {
    if (episodes <= 0) return;
    for (const { task, trajectory } of generateOfflineData(spec, { episodes, seed: config.seed * 7919 + salt, policy, split: 'train' })) {
      // Task ids derive from the generator's seed; keep them unique across the three sets.
      if (tasks.some((t) => t.id === task.id)) continue;
      tasks.push(task);
      trajectories.push(trajectory);
      if (expert) expertIds.add(trajectory.id);
    }
  };
  add(config.offline.expertEpisodes, 'expert', 0, true);
  const half = Math.floor(config.offline.noisyEpisodes / 2);
  add(config.offline.noisyEpisodes - half, 'noisy:0.3', 1, false);
  add(half, 'noisy:1', 2, false);
  const extraTasks = config.offline.extraTasks > 0 ? spec.tasks({ split: 'train', count: config.offline.extraTasks, seed: config.seed * 7919 + 3 }) : [];
  const known = new Set(tasks.map((t) => t.id));
  return { tasks, trajectories, expertIds, extraTasks: extraTasks.filter((t) => !known.has(t.id)) };
}

/** A run's dependencies, and how to free them. */
export interface PreparedRun {
  deps: TrainingDeps;
  evalTasks: Task[];
  experience: RetrievalExperienceModel | null;
  dispose(): void;
}

/** Builds the dependencies of `config` (Node and page alike; no LLM: `sim: 'llm'` and `prior: 'llm'` need the page). */
export async function prepareRun(config: TrainingConfig): Promise<PreparedRun> {
  if (config.sim === 'llm') throw new TrainingSetupError('the LLM experience model needs WebLLM on WebGPU: use --sim retrieval here, or the page');
  if (config.prior === 'llm') throw new TrainingSetupError('the LLM prior needs WebLLM on WebGPU: use --prior uniform or lexical here, or the page');
  const spec = getEnvSpec(config.env);
  const offline = offlineSeedData(spec, config);
  const synthetic = config.mode === 'dreamgym' || config.mode === 's2r';
  const experience = synthetic ? await RetrievalExperienceModel.fromTrajectories(offline.tasks, offline.trajectories, new HashedEmbedder({ dim: 256 })) : null;
  const deps: TrainingDeps = {
    spec,
    featurizer: new Featurizer(new HashedEmbedder({ dim: config.policy.embeddingDim }), { embeddingScale: config.policy.embeddingScale }),
    offline,
    experience,
    prior: config.prior === 'lexical' ? new LexicalPrior() : null,
    generator: config.curriculum.enabled ? new RecombinationTaskGenerator({ seed: config.seed }) : null,
  };
  return { deps, evalTasks: evaluationTasks(spec, config.evalEpisodes), experience, dispose: () => experience?.dispose() };
}
