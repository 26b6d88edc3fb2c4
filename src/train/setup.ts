/**
 * Builds what a run needs from its configuration, with no download: offline seed data from the
 * built-in environment's rule-based policies, the retrieval experience model grounded on it, the
 * hashed-embedding featurizer, the prior and the recombination task generator. Given an LLM
 * (`options.llm`: the Node CLI passes an OpenAI-compatible server through `HttpChatEngine`, the
 * page's training worker the page's WebLLM through the LLM bridge), it also builds the LLM
 * experience model (grounded by demonstrations retrieved from the offline data), the LLM prior
 * (label logits when the LLM offers them, else logprobs) and the LLM task generator; given an
 * embedder (`options.embedder`, e.g. WebLLM's embedding model), the policy's features come from it.
 */
import type { Task, Trajectory } from '../core/types.ts';
import { LLMTaskGenerator, RecombinationTaskGenerator } from '../curriculum/generator.ts';
import { InstructionVariantGenerator } from '../curriculum/variants.ts';
import { DEMONSTRATOR, generateOfflineData } from '../envs/offline.ts';
import { getEnvSpec } from '../envs/registry.ts';
import type { AnyEnvSpec } from '../envs/spec.ts';
import { DemonstrationIndex } from '../experience/demos.ts';
import { LLMExperienceModel } from '../experience/llm.ts';
import { RetrievalExperienceModel } from '../experience/retrieval/model.ts';
import type { Embedder } from '../core/embedding.ts';
import type { ChatEngine } from '../llm/engine.ts';
import type { LabelLogitSource } from '../llm/logits.ts';
import { LexicalPrior, LLMPrior } from '../llm/prior.ts';
import { Featurizer } from '../policy/features.ts';
import { HashedEmbedder } from '../policy/hashed-embedder.ts';
import { hashString } from '../core/rng.ts';
import { AUTO_GROUNDING_RIGHT, MIN_RECORDED_SELECTION, type GroundingMode, type SimulatorGrounding, type TrainingConfig } from './config.ts';
import { TrainingSetupError, validationTasks, type OfflineData, type TrainingDeps } from './loop.ts';

/** The held-out tasks every run of an environment is evaluated on (the same for all seeds and modes, so comparisons are paired). */
export function evaluationTasks(spec: AnyEnvSpec, count: number): Task[] {
  return spec.tasks({ split: 'test', count, seed: 1 });
}

/**
 * Offline seed data on train tasks: `expertEpisodes` demonstrations (the behaviour-cloning data:
 * the environment's goal-blind demonstrator where it has one, else its expert) and
 * `noisyEpisodes` noisy ones, half `noisy:0.3` and half random, so that the simulator's reward
 * model has seen failures. Deterministic for the seed. The `noisy:0.3` half is the demonstrator's
 * where there is one (`offline.noisySource`), else the expert's; with neither, random episodes
 * throughout (no demonstrations).
 */
export function offlineSeedData(spec: AnyEnvSpec, config: Pick<TrainingConfig, 'seed' | 'offline'> & Partial<Pick<TrainingConfig, 'mode' | 'validation'>>, options: { selection?: boolean } = {}): OfflineData {
  if (config.offline.recorded > 0) return recordedSeedData(spec, config);
  const tasks: Task[] = [];
  const trajectories: Trajectory[] = [];
  const expertIds = new Set<string>();
  const taskIds = new Set<string>();
  const add = (episodes: number, policy: string, salt: number, expert: boolean): void => {
    if (episodes <= 0) return;
    for (const { task, trajectory } of generateOfflineData(spec, { episodes, seed: config.seed * 7919 + salt, policy, split: 'train' })) {
      // Task ids derive from the generator's seed; keep them unique across the three sets.
      if (taskIds.has(task.id)) continue;
      taskIds.add(task.id);
      tasks.push(task);
      trajectories.push(trajectory);
      if (expert) expertIds.add(trajectory.id);
    }
  };
  const expert = spec.hasExpert !== false;
  const demonstrations = spec.demonstrator ? DEMONSTRATOR : expert ? 'expert' : null;
  add(config.offline.expertEpisodes, demonstrations ?? 'noisy:1', 0, demonstrations !== null);
  const half = Math.floor(config.offline.noisyEpisodes / 2);
  const informed = expert && (config.offline.noisySource === 'expert' || !spec.demonstrator);
  add(config.offline.noisyEpisodes - half, informed ? 'noisy:0.3' : spec.demonstrator ? `${DEMONSTRATOR}:0.3` : 'noisy:1', 1, false);
  add(half, 'noisy:1', 2, false);
  const extraTasks = config.offline.extraTasks > 0 ? spec.tasks({ split: 'train', count: config.offline.extraTasks, seed: config.seed * 7919 + 3 }) : [];
  const known = new Set(tasks.map((t) => t.id));
  const extra = extraTasks.filter((t) => !known.has(t.id));
  // Only the first `poolDemonstrations` demonstrated tasks join RL's pool (see the config).
  const demonstrated = new Set(trajectories.filter((t) => expertIds.has(t.id)).map((t) => t.taskId));
  let pooled = 0;
  const poolTasks = [...tasks.filter((t) => !demonstrated.has(t.id) || pooled++ < config.offline.poolDemonstrations), ...extra];
  // Held-out demonstrations for model selection: recorded like the others, on train tasks none of the sets above holds.
  // Only where something reads them (the `recorded` criterion, or `options.selection`): scoring them costs every validation.
  const synthetic = config.mode === 'dreamgym' || config.mode === 's2r';
  const wanted = config.validation?.criterion === 'recorded' || options.selection === true;
  const heldOut = synthetic && wanted && demonstrations !== null && config.validation !== undefined && config.validation.tasks > 0 ? config.validation.recorded : 0;
  let selection: OfflineData['selection'];
  if (heldOut > 0 && demonstrations !== null) {
    const used = new Set([...taskIds, ...extra.map((t) => t.id)]);
    selection = { tasks: [], trajectories: [] };
    for (const { task, trajectory } of generateOfflineData(spec, { episodes: heldOut, seed: config.seed * 7919 + 4, policy: demonstrations, split: 'train' })) {
      if (used.has(task.id)) continue;
      used.add(task.id);
      selection.tasks.push(task);
      selection.trajectories.push(trajectory);
    }
  }
  return { tasks, trajectories, expertIds, extraTasks: extra, poolTasks, ...(selection ? { selection } : {}) };
}

/** The policy that records `offline.recorded` episodes: the demonstrator with the configured noise. */
export function recordedPolicy(config: Pick<TrainingConfig, 'offline'>): string {
  return `${DEMONSTRATOR}:${config.offline.recordedNoise}`;
}

/**
 * Seed data of a user's kind (`offline.recorded` > 0): N episodes of the environment's goal-blind
 * demonstrator with noise on N train tasks, kept whatever their outcome, and nothing else. Every
 * episode is a demonstration candidate (behaviour cloning picks by `sft.cloning`), the simulator
 * is grounded on them alone and RL's pool is their tasks. Nothing here asks the expert. Throws a
 * {@link TrainingSetupError} for an environment without a demonstrator.
 */
export function recordedSeedData(spec: AnyEnvSpec, config: Pick<TrainingConfig, 'seed' | 'offline'>): OfflineData {
  const n = config.offline.recorded;
  if (!(Number.isInteger(n) && n > 0)) throw new TrainingSetupError(`recorded episodes must be a positive integer, got ${n}`);
  if (!spec.demonstrator) {
    throw new TrainingSetupError(`recorded episodes (${n}) come from the environment's goal-blind demonstrator: ${spec.name} has none (a module needs demonstratorAction()); drop --recorded, or add one`);
  }
  const tasks: Task[] = [];
  const trajectories: Trajectory[] = [];
  const taskIds = new Set<string>();
  for (const { task, trajectory } of generateOfflineData(spec, { episodes: n, seed: config.seed * 7919 + 5, policy: recordedPolicy(config), split: 'train' })) {
    if (taskIds.has(task.id)) continue;
    taskIds.add(task.id);
    tasks.push(task);
    trajectories.push(trajectory);
  }
  // Successes set aside for model selection leave the cloning data, the simulator's grounding and RL's pool alike.
  const aside = recordedSelectionTasks(tasks, trajectories, config.offline.recordedSelection, config.seed);
  if (aside.size === 0) return { tasks, trajectories, expertIds: new Set(trajectories.map((t) => t.id)), extraTasks: [], poolTasks: tasks.slice() };
  const kept = tasks.filter((t) => !aside.has(t.id));
  const keptTrajectories = trajectories.filter((t) => !aside.has(t.taskId));
  const selection = { tasks: tasks.filter((t) => aside.has(t.id)), trajectories: trajectories.filter((t) => aside.has(t.taskId)) };
  return { tasks: kept, trajectories: keptTrajectories, expertIds: new Set(keptTrajectories.map((t) => t.id)), extraTasks: [], poolTasks: kept.slice(), selection };
}

/**
 * The tasks whose recorded successes are set aside for model selection: `share` of the successful
 * ones (at least {@link MIN_RECORDED_SELECTION}), ordered by a hash of (seed, task id), taken only
 * where as many successes remain for cloning.
 */
export function recordedSelectionTasks(tasks: readonly Task[], trajectories: readonly Trajectory[], share: number, seed: number): Set<string> {
  if (share <= 0) return new Set();
  const succeeded = new Set(trajectories.filter((t) => t.success).map((t) => t.taskId));
  const order = tasks.filter((t) => succeeded.has(t.id)).sort((a, b) => hashString(`${seed}:${a.id}`) - hashString(`${seed}:${b.id}`) || (a.id < b.id ? -1 : 1));
  const n = Math.max(MIN_RECORDED_SELECTION, Math.round(share * order.length));
  return order.length - n >= n ? new Set(order.slice(0, n).map((t) => t.id)) : new Set();
}

/** A run's dependencies, and how to free them. */
export interface PreparedRun {
  deps: TrainingDeps;
  evalTasks: Task[];
  /** The retrieval experience model, when the run uses it. */
  experience: RetrievalExperienceModel | null;
  /** What `grounding: 'auto'` decided for it; null for another mode or no retrieval model. */
  autoGrounding: AutoGrounding | null;
  dispose(): void;
}

/**
 * `offline` with `count` instruction variants of its pool's tasks (see `curriculum.variants`),
 * from a stream of their own so that the other seed data does not change with them.
 */
export function withVariants(offline: OfflineData, count: number, seed: number): OfflineData {
  const parents = offline.poolTasks ?? [...offline.tasks, ...(offline.extraTasks ?? [])];
  const variantTasks = new InstructionVariantGenerator({ seed: seed * 7919 + 11 }).variants(parents, count).tasks;
  return { ...offline, variantTasks };
}

/** An LLM for a run's LLM parts: `sim: 'llm'`, `prior: 'llm'` and the curriculum's task generator. */
export interface RunLLM {
  engine: ChatEngine;
  /** Model name sent with every request (omitted when undefined). */
  model?: string;
  /**
   * Label logits through WebLLM's logit processor (one pass scores every candidate). Without it
   * the LLM prior reads `logprobs` (at most 5 candidates per pass).
   */
  labelLogits?: LabelLogitSource | null;
  /** The chat model's context window, tokens, when known: the experience model sizes its prompts to it. */
  contextWindowSize?: number | null;
}

/** Options of {@link prepareRun}. */
export interface PrepareRunOptions {
  /**
   * The LLM, if there is one. Without it, `sim: 'llm'` and `prior: 'llm'` are refused (WebLLM needs
   * the page); with it, they run through `engine`, and the curriculum uses the LLM task generator.
   */
  llm?: RunLLM | null;
  /**
   * Seed data instead of the environment's generated offline data, with the environment (for a
   * data-only run: `dataOnlySpec`, which has none) and the tasks evaluated on.
   */
  data?: { spec: AnyEnvSpec; offline: OfflineData; evalTasks: Task[] } | null;
  /**
   * The embedder of the policy's features (e.g. WebLLM's embedding model through
   * `WebLLMEmbedder`). Default: the hashed n-gram embedder of width `config.policy.embeddingDim`,
   * which needs no download. A given embedder sets the width itself, so a checkpoint trained with
   * one only loads with the same embedder.
   */
  embedder?: Embedder | null;
  /**
   * Record the held-out demonstrations of model selection even where the run's criterion does
   * not read them (`--probe-validation` compares both criteria); see {@link offlineSeedData}.
   */
  selection?: boolean;
}

/** What `grounding: 'auto'` decided, and on what. */
export interface AutoGrounding {
  /** Whether the simulator is grounded. */
  grounded: boolean;
  /** Share of held-out recorded steps the cross-fitted simulator predicted right (NaN when none could be held out). */
  heldOutRight: number;
}

/**
 * The retrieval simulator of a run: grounded with `calibrated`; with `auto`, calibrated and kept
 * grounded only when it predicts fewer than {@link AUTO_GROUNDING_RIGHT} of its held-out recorded
 * steps right (or could hold none out), else with its grounding dropped.
 */
export async function retrievalSimulator(offline: Pick<OfflineData, 'tasks' | 'trajectories'>, spec: Pick<AnyEnvSpec, 'freeTextActions'>, mode: GroundingMode): Promise<{ model: RetrievalExperienceModel; auto: AutoGrounding | null }> {
  const model = await RetrievalExperienceModel.fromTrajectories(offline.tasks, offline.trajectories, new HashedEmbedder({ dim: 256 }), { grounding: mode !== 'off', freeTextActions: spec.freeTextActions ?? [] });
  if (mode !== 'auto') return { model, auto: null };
  const heldOutRight = model.grounding?.heldOutRight ?? Number.NaN;
  const grounded = !(heldOutRight >= AUTO_GROUNDING_RIGHT);
  if (!grounded) model.dropGrounding();
  return { model, auto: { grounded, heldOutRight } };
}

/** What the run's retrieval simulator does where its data is thin; null for a run without one. */
export function simulatorGrounding(config: Pick<TrainingConfig, 'grounding'>, prepared: Pick<PreparedRun, 'experience' | 'autoGrounding'>): SimulatorGrounding | null {
  if (prepared.experience === null) return null;
  const auto = prepared.autoGrounding;
  return { mode: config.grounding, grounded: prepared.experience.grounding !== null, ...(auto ? { heldOutRight: auto.heldOutRight } : {}) };
}

/** Builds the dependencies of `config` (Node and page alike; `sim: 'llm'` and `prior: 'llm'` need `options.llm`). */
export async function prepareRun(config: TrainingConfig, options: PrepareRunOptions = {}): Promise<PreparedRun> {
  const llm = options.llm ?? null;
  if (config.sim === 'llm' && !llm) throw new TrainingSetupError('the LLM experience model needs an LLM: WebLLM on WebGPU (the page) or an OpenAI-compatible server (--llm-url); or use --sim retrieval');
  if (config.prior === 'llm' && !llm) throw new TrainingSetupError('the LLM prior needs an LLM: WebLLM on WebGPU (the page) or an OpenAI-compatible server with logprobs (--llm-url); or use --prior uniform or lexical');
  const data = options.data ?? null;
  const spec = data?.spec ?? getEnvSpec(config.env);
  const cloning = config.mode === 'sft' || (config.warmStart === 'sft' && config.mode !== 'zero-shot');
  if (cloning && data === null && !spec.demonstrator && spec.hasExpert === false) {
    throw new TrainingSetupError(`behaviour cloning (mode sft, --warm-start sft) needs demonstrations: the environment ${spec.name} has neither demonstratorAction() nor expertAction(); add one, or use zero-shot, real or dreamgym from scratch`);
  }
  const seeded = data?.offline ?? offlineSeedData(spec, config, { selection: options.selection === true });
  const synthetic = config.mode === 'dreamgym' || config.mode === 's2r';
  const offline = synthetic && config.curriculum.variants > 0 ? withVariants(seeded, config.curriculum.variants, config.seed) : seeded;
  const model = llm?.model !== undefined ? { model: llm.model } : {};
  const simulator = synthetic && config.sim === 'retrieval' ? await retrievalSimulator(offline, spec, config.grounding) : null;
  const experience = simulator?.model ?? null;
  const grounded = experience?.grounding != null;
  // The LLM experience model is grounded by the offline data's real transitions, retrieved per step.
  const demoIndex = synthetic && config.sim === 'llm' ? await DemonstrationIndex.fromTrajectories(offline.trajectories, new HashedEmbedder({ dim: 256 })) : null;
  // The grounded simulator replays a recorded task's own episode as fact: validated on those
  // tasks, a cloned policy reads 100% whatever it does elsewhere. Its validation runs in the same
  // simulator without the validation tasks' episodes.
  const validating = experience && grounded ? validationTasks(offline, config.validation.tasks) : [];
  const validationExperience = experience && validating.length > 0 ? await experience.withholding(new Set(validating.map((t) => t.id))) : null;
  const deps: TrainingDeps = {
    spec,
    featurizer: new Featurizer(options.embedder ?? new HashedEmbedder({ dim: config.policy.embeddingDim }), { embeddingScale: config.policy.embeddingScale }),
    offline,
    experience: experience ?? (synthetic && llm ? new LLMExperienceModel(llm.engine, { ...model, reasoning: config.reasoning, contextWindowTokens: llm.contextWindowSize ?? null, environmentDescription: spec.description, freeTextActions: spec.freeTextActions ?? [] }) : null),
    prior:
      config.prior === 'lexical'
        ? new LexicalPrior({ repeatPenalty: config.repeatPenalty })
        : config.prior === 'llm' && llm
          ? // With label logits: one pass per state, falling back to logprobs if a read fails.
            new LLMPrior(llm.engine, llm.labelLogits ?? null, { readout: llm.labelLogits ? 'auto' : 'logprobs', ...model })
          : null,
    generator: !config.curriculum.enabled ? null : llm ? new LLMTaskGenerator(llm.engine, model) : new RecombinationTaskGenerator({ seed: config.seed }),
    ...(demoIndex ? { demos: (observation, action, k) => demoIndex.top(observation, action, k) } : {}),
    ...(validationExperience ? { validationExperience } : {}),
  };
  return {
    deps,
    evalTasks: data?.evalTasks ?? evaluationTasks(spec, config.evalEpisodes),
    experience,
    autoGrounding: simulator?.auto ?? null,
    dispose: () => {
      experience?.dispose();
      validationExperience?.dispose();
    },
  };
}
