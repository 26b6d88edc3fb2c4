/**
 * The DreamGym training loop, shared by the CLI and the page. Read top to bottom:
 *
 *   warm start (sft) -> for each iteration: choose tasks (seed + generated, lambda mix) ->
 *   G rollouts per task with the current policy, in the real environment or the experience
 *   model -> GRPO (or PPO) update -> store the rollouts -> curriculum (reward variance per task group,
 *   new tasks from the informative ones) -> log and checkpoint. A synthetic phase is validated
 *   inside the simulator on recorded tasks when it starts, every few iterations and when it
 *   ends, and ends with the policy that validated best (see `validation` in the config).
 *
 * Honesty rules (DESIGN.md §4): a synthetic rollout starts from the task's recorded first
 * observation (or the experience model's `reset` for a generated task), the experience model
 * sees `agentView(task)` only, and synthetic phases never create a real environment: every real
 * `reset`/`step` goes through a counter and is reported as `realTransitions`. Randomness is drawn
 * from streams derived from (seed, iteration), and the task generator's own stream is saved in
 * the snapshot, so a run resumed from its last snapshot continues exactly as an uninterrupted one.
 */
import { hashString, Rng } from '../core/rng.ts';
import { agentView, type JsonValue, type Observation, type RealEnvironment, type Step, type Task, type Trajectory } from '../core/types.ts';
import type { AnyEnvSpec } from '../envs/spec.ts';
import type { Demonstration, ExperienceModel, HistoryStep } from '../experience/types.ts';
import { addTasks, capGenerated, chooseTasks, groupVariances, informativeTasks, type TaskSeen } from '../curriculum/pool.ts';
import type { TaskGenerator } from '../curriculum/generator.ts';
import type { ActionPrior } from '../llm/prior.ts';
import type { Featurizer } from '../policy/features.ts';
import type { Checkpoint } from '../policy/checkpoint.ts';
import { grpoPreset, type GrpoTrajectory } from '../rl/grpo.ts';
import type { SftExample } from '../rl/sft.ts';
import { Trainer, type UpdateMetrics } from '../rl/trainer.ts';
import { PolicyAgent, type AgentChoice, type AgentContext } from './agent.ts';
import { evaluateSynthetic } from './seed-data.ts';
import { recordedAgreement, recordedEpisodes, replacesKept, type RecordedEpisode, type SelectionCriterion } from './selection.ts';
import type { SyntheticValidation, ValidationCheck } from './validation.ts';
import type { CloningMode, TrainingConfig } from './config.ts';

/** Offline seed data: train-split tasks and their real trajectories. */
export interface OfflineData {
  tasks: Task[];
  trajectories: Trajectory[];
  /** Ids of the trajectories that are expert demonstrations (the behaviour-cloning data). */
  expertIds: ReadonlySet<string>;
  /** Further seed tasks without a recorded episode (RL trains on them too). */
  extraTasks?: Task[];
  /** RL's first task pool, when it is not all of `tasks` and `extraTasks` (see `offline.poolDemonstrations`). */
  poolTasks?: Task[];
  /**
   * Tasks without a goal that only a synthetic phase trains on (see `curriculum.variants`): they
   * join a synthetic run's pool, and a real phase never chooses them.
   */
  variantTasks?: Task[];
  /**
   * Recorded episodes held out for model selection (see `validation.recorded`): on tasks of their
   * own, seen neither by behaviour cloning nor by the simulator.
   */
  selection?: { tasks: Task[]; trajectories: Trajectory[] };
}

/** What the loop runs on. Everything environment-specific comes in here. */
export interface TrainingDeps {
  /** The real environment (training rollouts in `real`/`s2r`; never created in synthetic phases). */
  spec: AnyEnvSpec;
  featurizer: Featurizer;
  offline: OfflineData;
  /** The experience model of synthetic phases. */
  experience?: ExperienceModel | null;
  /**
   * The experience model the synthetic phase's validation runs in (default `experience`): one
   * that does not hold the validation tasks' own recorded episodes, where replaying them as facts
   * would score any policy that follows its recordings as a success.
   */
  validationExperience?: ExperienceModel | null;
  prior?: ActionPrior | null;
  /** The curriculum's task generator (none: the `--no-curriculum` ablation). */
  generator?: TaskGenerator | null;
  /** Top-k real transitions for (observation, action), given to the experience model. */
  demos?: ((observation: Observation, action: string, k: number) => Promise<Demonstration[]>) | null;
  /** Stores each iteration's rollouts (the run's buffer). */
  storeRollouts?: ((trajectories: readonly Trajectory[], tasks: readonly Task[]) => Promise<void>) | null;
  /** Saves a snapshot after every iteration (resume point). */
  persist?: ((snapshot: RunSnapshot) => Promise<void>) | null;
}

/** Figures of one iteration. */
export interface IterationMetrics {
  iteration: number;
  phase: 'sft' | 'synthetic' | 'real';
  /** Rollout success rate and mean reward (in the phase's environment; sft: expert-choice accuracy). */
  successRate: number;
  meanReward: number;
  loss: number;
  kl: number;
  clipFraction: number;
  entropy: number;
  /** Reward variance per task group: mean, share of groups with V > 0, max. */
  vTauMean: number;
  vTauPositiveShare: number;
  vTauMax: number;
  poolSize: number;
  generatedTasks: number;
  /** Share of this iteration's tasks that were generated. */
  generatedShare: number;
  steps: number;
  syntheticSteps: number;
  /** Synthetic steps per second of the rollout phase. */
  syntheticStepsPerSec: number;
  /** Experience-model calls this iteration. */
  simCalls: number;
  realTransitions: number;
  offlineTransitions: number;
  updateMs: number;
  rolloutMs: number;
  wallMs: number;
}

/** Everything needed to resume a run. */
export interface RunSnapshot {
  format: 'dreamgym-run';
  version: 1;
  config: TrainingConfig;
  /** Completed iterations (sft epochs count as iterations). */
  iteration: number;
  pool: Task[];
  /** When each generated task was last in an iteration, and its reward variance then. */
  lastSeen: Record<string, { iteration: number; vTau: number }>;
  metrics: IterationMetrics[];
  realTransitions: number;
  realResets: number;
  syntheticSteps: number;
  checkpoint: Checkpoint;
  wallMs: number;
  /**
   * The task generator's own state ({@link TaskGenerator.saveState}), when it has one: a resumed
   * run restores it, so that its generated tasks are the uninterrupted run's. A snapshot without
   * it (written before it was kept) resumes with the generator's stream from its seed.
   */
  generatorState?: JsonValue;
  /** The synthetic phase's validation so far, once it started. */
  validation?: SyntheticValidation;
}

/**
 * Progress reports: an iteration starts (no `metrics`, no `validating`), an iteration ended
 * (`metrics`), or the synthetic phase's validation inside the simulator advanced (`validating`:
 * validation episodes finished of all; a household validation takes seconds, so a page or a
 * terminal would otherwise look stuck).
 */
export interface TrainingProgress {
  /** Completed iterations. */
  iteration: number;
  totalIterations: number;
  phase: IterationMetrics['phase'];
  metrics?: IterationMetrics;
  validating?: { done: number; total: number };
}

export interface TrainingOptions {
  signal?: AbortSignal;
  onProgress?: (p: TrainingProgress) => void;
  /** Continue from this snapshot instead of starting afresh. */
  resume?: RunSnapshot;
  /**
   * Called with each validation point of the synthetic phase and the policy validated there
   * (before the phase decides what to keep): a measurement hook, e.g. the experiment's real
   * held-out success of every validated policy. Nothing it does feeds back into the run.
   */
  onValidation?: (check: ValidationCheck, agent: PolicyAgent) => Promise<void>;
}

/** What a run produced (evaluation is separate: see `evaluate.ts`). */
export interface TrainingResult {
  config: TrainingConfig;
  metrics: IterationMetrics[];
  realTransitions: number;
  realResets: number;
  offlineTransitions: number;
  syntheticSteps: number;
  /** Whether a budget (real transitions, wall time) stopped the run early. */
  stoppedBy: 'done' | 'real-budget' | 'wall-budget';
  /** The synthetic phase's validation; null without one (no synthetic phase, no validation tasks). */
  validation: SyntheticValidation | null;
  trainer: Trainer;
  agent: PolicyAgent;
  snapshot: RunSnapshot;
}

/** Thrown when a run is stopped through its AbortSignal; the last snapshot is the resume point. */
export class TrainingAbortedError extends Error {
  override name = 'AbortError';
}

/** Thrown when the dependencies do not fit the configuration (e.g. a synthetic mode without an experience model). */
export class TrainingSetupError extends Error {
  override name = 'TrainingSetupError';
}

/** Counts of a real environment's use. */
export interface RealCounter {
  resets: number;
  steps: number;
}

/** Wraps a real environment so that every reset and step is counted. */
function countedEnvironment(env: RealEnvironment, counter: RealCounter): RealEnvironment {
  return {
    get name() {
      return env.name;
    },
    get maxSteps() {
      return env.maxSteps;
    },
    reset(task) {
      counter.resets++;
      return env.reset(task);
    },
    step(action) {
      counter.steps++;
      return env.step(action);
    },
    expertAction() {
      return env.expertAction();
    },
  };
}

/** A stream of randomness for one purpose in one iteration: the same on a resumed run. */
function streamOf(seed: number, iteration: number, purpose: string): Rng {
  return new Rng((seed ^ hashString(`${purpose}:${iteration}`)) >>> 0);
}

const mean = (xs: readonly number[]): number => (xs.length === 0 ? 0 : xs.reduce((s, x) => s + x, 0) / xs.length);

/**
 * The synthetic phase's validation tasks: up to `count` tasks with a successful demonstration,
 * those outside RL's first pool first (in recorded order), then pool ones.
 */
export function validationTasks(offline: OfflineData, count: number): Task[] {
  if (count <= 0) return [];
  const demonstrated = new Set(offline.trajectories.filter((t) => t.success && offline.expertIds.has(t.id)).map((t) => t.taskId));
  const pooled = new Set((offline.poolTasks ?? offline.tasks).map((t) => t.id));
  const recorded = offline.tasks.filter((t) => demonstrated.has(t.id));
  return [...recorded.filter((t) => !pooled.has(t.id)), ...recorded.filter((t) => pooled.has(t.id))].slice(0, count);
}

/** The number of iterations a configuration runs (sft epochs + RL iterations; the s2r real phase runs until its budget). */
export function plannedIterations(config: TrainingConfig): number {
  const sft = config.mode === 'sft' || (config.warmStart === 'sft' && config.mode !== 'zero-shot') ? config.sft.epochs : 0;
  const rl = config.mode === 'real' || config.mode === 'dreamgym' || config.mode === 's2r' ? config.iterations : 0;
  const s2r = config.mode === 's2r' ? config.iterations : 0;
  return sft + rl + s2r;
}

/** A trainer for the configuration and the featurizer's dimensions. */
function createTrainer(config: TrainingConfig, featurizer: Featurizer): Trainer {
  const dims = featurizer as unknown as { stateDim?: number; actionDim?: number; dim: number };
  return new Trainer({
    policy: {
      stateDim: dims.stateDim ?? dims.dim,
      actionDim: dims.actionDim ?? dims.dim,
      hiddenDim: config.policy.hiddenDim,
      interaction: 'product',
      // The candidate's embedded action text: a household minibatch repeats it about 37 times over.
      leadDim: dims.dim,
      seed: config.seed,
      initScale: config.policy.initScale,
      valueHead: config.rl.algorithm === 'ppo',
    },
    optimizer: { learningRate: config.sft.learningRate },
    epochs: config.rl.epochs,
    minibatchSize: 512,
    temperature: config.rl.temperature,
    grpo: {
      ...grpoPreset(config.rl.lossType),
      scaleRewards: config.rl.scaleRewards,
      beta: config.rl.beta,
      entropyCoef: config.rl.entropyCoef,
      dropZeroVarianceGroups: config.rl.dropZeroVarianceGroups,
    },
    ppo: { entropyCoef: config.rl.entropyCoef },
    seed: config.seed,
  });
}

/** One running episode of a rollout batch. */
interface Episode {
  task: Task;
  env: RealEnvironment | null;
  observation: Observation;
  history: HistoryStep[];
  steps: Step[];
  grpo: GrpoTrajectory;
  done: boolean;
  success: boolean;
  /** The real budget ran out while this episode was still going: its outcome is unknown, not a failure. */
  cut: boolean;
}

/**
 * The RL update on whole groups of episodes: GRPO on each episode's return, or PPO on each
 * step's reward (an episode the step limit ended counts as ended: no value is bootstrapped).
 */
function updatePolicy(trainer: Trainer, config: TrainingConfig, episodes: readonly Episode[]): Promise<UpdateMetrics> {
  if (config.rl.algorithm === 'ppo') {
    const trajectories = episodes.map((e) => ({ steps: e.grpo.steps.map((s, t) => ({ ...s, reward: (e.steps[t] as Step).reward })) }));
    return trainer.ppoUpdate({ trajectories });
  }
  return trainer.grpoUpdate({ groupSize: config.groupSize, trajectories: episodes.map((e) => e.grpo) });
}

/** Where each phase of a run starts, in iterations counted from 0 (sft epochs included). */
interface Schedule {
  total: number;
  sftEpochs: number;
  rlStart: number;
  /** The first real-environment iteration (Infinity: the run has no real phase). */
  realStart: number;
}

/**
 * A run in progress: what it was given, what it fixed when it started, and the state a snapshot
 * keeps. The steps below read and advance it.
 */
interface Run {
  config: TrainingConfig;
  deps: TrainingDeps;
  options: TrainingOptions;
  synthetic: boolean;
  schedule: Schedule;
  maxSteps: number;
  offlineTransitions: number;
  /** Each offline task's recorded first observation (a synthetic rollout starts there). */
  firstObservation: Map<string, Observation>;
  /** The synthetic phase's validation tasks, and the held-out recorded successes that score it. */
  validating: Task[];
  recorded: RecordedEpisode[];
  criterion: SelectionCriterion;
  trainer: Trainer;
  agent: PolicyAgent;
  pool: Task[];
  /** Ids of the pool's tasks a real phase leaves out (`offline.variantTasks`). */
  syntheticOnly: ReadonlySet<string>;
  lastSeen: Map<string, TaskSeen>;
  metrics: IterationMetrics[];
  iteration: number;
  counter: RealCounter;
  syntheticSteps: number;
  validation: SyntheticValidation | null;
  stoppedBy: TrainingResult['stoppedBy'];
  started: number;
  priorWall: number;
  /** Behaviour cloning's examples, built once when the first sft epoch needs them. */
  sftExamples: SftExample[] | null;
}

/** Runs the loop. The returned trainer is the caller's to dispose. */
export async function runTraining(config: TrainingConfig, deps: TrainingDeps, options: TrainingOptions = {}): Promise<TrainingResult> {
  const run = setUpRun(config, deps, options);
  try {
    while (run.iteration < run.schedule.total) {
      checkAbort(run);
      const phase = phaseOf(run, run.iteration);
      const stop = budgetStop(run, phase);
      if (stop) {
        run.stoppedBy = stop;
        break;
      }
      await runIteration(run, phase);
    }
    await endSyntheticPhase(run);
  } catch (e) {
    run.trainer.dispose();
    throw e;
  }
  return {
    config,
    metrics: run.metrics,
    realTransitions: run.counter.steps,
    realResets: run.counter.resets,
    offlineTransitions: run.offlineTransitions,
    syntheticSteps: run.syntheticSteps,
    stoppedBy: run.stoppedBy,
    validation: run.validation,
    trainer: run.trainer,
    agent: run.agent,
    snapshot: await snapshotOf(run),
  };
}

/** Checks the dependencies against the configuration and starts the run: fresh, or from `options.resume`. */
function setUpRun(config: TrainingConfig, deps: TrainingDeps, options: TrainingOptions): Run {
  const synthetic = config.mode === 'dreamgym' || config.mode === 's2r';
  if (synthetic && !deps.experience) throw new TrainingSetupError(`mode ${config.mode} needs an experience model`);
  if (deps.offline.tasks.length === 0) throw new TrainingSetupError('training needs offline seed tasks, got 0');
  const snap = options.resume;
  if (snap && (snap.format !== 'dreamgym-run' || snap.version !== 1)) throw new TrainingSetupError('not a dreamgym run snapshot (format dreamgym-run, version 1)');

  const trainer = snap ? Trainer.fromCheckpoint(snap.checkpoint) : createTrainer(config, deps.featurizer);
  if (snap?.generatorState !== undefined && deps.generator?.restoreState) deps.generator.restoreState(snap.generatorState);
  // The synthetic phase is validated where the simulator replays recorded episodes (see the config).
  const validating = synthetic && deps.experience ? validationTasks(deps.offline, config.validation.tasks) : [];
  // Held-out recorded successes score the validated policies, where the run has them (see `validation.criterion`).
  const recorded = synthetic && validating.length > 0 && deps.offline.selection ? recordedEpisodes(deps.offline.selection.tasks, deps.offline.selection.trajectories) : [];
  // Recorded episodes held out for selection are seed data the run used too.
  const offlineTrajectories = [...deps.offline.trajectories, ...(synthetic ? (deps.offline.selection?.trajectories ?? []) : [])];
  return {
    config,
    deps,
    options,
    synthetic,
    schedule: scheduleOf(config),
    maxSteps: config.maxSteps > 0 ? config.maxSteps : deps.spec.maxSteps,
    offlineTransitions: offlineTrajectories.reduce((s, t) => s + t.steps.length, 0),
    firstObservation: firstObservations(deps.offline.trajectories),
    validating,
    recorded,
    criterion: recorded.length > 0 ? config.validation.criterion : 'simulator',
    trainer,
    agent: new PolicyAgent(trainer, deps.featurizer, deps.prior ?? null),
    pool: snap ? snap.pool.slice() : (deps.offline.poolTasks?.slice() ?? [...deps.offline.tasks, ...(deps.offline.extraTasks ?? [])]),
    syntheticOnly: new Set((deps.offline.variantTasks ?? []).map((t) => t.id)),
    lastSeen: new Map<string, TaskSeen>(Object.entries(snap?.lastSeen ?? {})),
    metrics: snap ? snap.metrics.slice() : [],
    iteration: snap?.iteration ?? 0,
    counter: { resets: snap?.realResets ?? 0, steps: snap?.realTransitions ?? 0 },
    syntheticSteps: snap?.syntheticSteps ?? 0,
    validation: snap?.validation ?? null,
    stoppedBy: 'done',
    started: performance.now(),
    priorWall: snap?.wallMs ?? 0,
    sftExamples: null,
  };
}

function scheduleOf(config: TrainingConfig): Schedule {
  const sftEpochs = config.mode === 'sft' || (config.warmStart === 'sft' && config.mode !== 'zero-shot') ? config.sft.epochs : 0;
  const realStart = config.mode === 's2r' ? sftEpochs + config.iterations : config.mode === 'real' ? sftEpochs : Infinity;
  return { total: plannedIterations(config), sftEpochs, rlStart: sftEpochs, realStart };
}

/** The first recorded observation of each task (its first trajectory's). */
function firstObservations(trajectories: readonly Trajectory[]): Map<string, Observation> {
  const first = new Map<string, Observation>();
  for (const t of trajectories) {
    const observation = t.steps[0]?.observation;
    if (observation && !first.has(t.taskId)) first.set(t.taskId, observation);
  }
  return first;
}

function phaseOf(run: Run, iteration: number): IterationMetrics['phase'] {
  return iteration < run.schedule.rlStart ? 'sft' : iteration >= run.schedule.realStart ? 'real' : 'synthetic';
}

/** The real-transition budget of a real phase (0: none). */
function realBudgetOf(config: TrainingConfig): number {
  return config.mode === 's2r' ? config.s2r.realBudget : config.budgets.realTransitions;
}

function wallOf(run: Run): number {
  return run.priorWall + performance.now() - run.started;
}

function checkAbort(run: Run): void {
  if (run.options.signal?.aborted) throw new TrainingAbortedError(`training stopped at iteration ${run.iteration}; resume from the last snapshot`);
}

/** The budget that stops the run before this iteration, if one does. */
function budgetStop(run: Run, phase: IterationMetrics['phase']): 'real-budget' | 'wall-budget' | null {
  const { config } = run;
  if (config.budgets.wallSeconds > 0 && wallOf(run) / 1000 >= config.budgets.wallSeconds) return 'wall-budget';
  if (phase !== 'real') return null;
  const budget = realBudgetOf(config);
  return budget > 0 && run.counter.steps >= budget ? 'real-budget' : null;
}

async function snapshotOf(run: Run): Promise<RunSnapshot> {
  const { config, deps, validation } = run;
  return {
    format: 'dreamgym-run',
    version: 1,
    config,
    iteration: run.iteration,
    pool: run.pool.slice(),
    lastSeen: Object.fromEntries(run.lastSeen),
    metrics: run.metrics.slice(),
    realTransitions: run.counter.steps,
    realResets: run.counter.resets,
    syntheticSteps: run.syntheticSteps,
    checkpoint: { ...(await run.trainer.checkpoint()), env: config.env },
    wallMs: wallOf(run),
    ...(deps.generator?.saveState ? { generatorState: deps.generator.saveState() } : {}),
    ...(validation ? { validation: { ...validation } } : {}),
  };
}

/** One iteration: phase changes first, then an sft epoch or an RL iteration, then its figures and snapshot. */
async function runIteration(run: Run, phase: IterationMetrics['phase']): Promise<void> {
  const { config, deps, options, trainer } = run;
  const { total, rlStart, realStart, sftEpochs } = run.schedule;
  const t0 = performance.now();
  options.onProgress?.({ iteration: run.iteration, totalIterations: total, phase });
  let m: IterationMetrics;
  if (phase === 'sft') {
    m = await sftIteration(run);
  } else {
    if (run.iteration === rlStart && sftEpochs === 0) trainer.syncReference();
    if (phase === 'synthetic' && run.iteration === rlStart && run.validation === null && run.validating.length > 0) await startValidation(run);
    if (phase === 'real' && run.iteration === realStart) await selectSynthetic(run);
    // s2r's real phase is RL of its own, from where the synthetic phase left the policy: its KL
    // reference is that policy, not the start of the synthetic phase, which it would pull back to.
    if (run.iteration === realStart && config.mode === 's2r') trainer.syncReference();
    m = await rlIteration(run, phase);
  }
  run.iteration++;
  const done = run.iteration - rlStart;
  if (phase === 'synthetic' && config.validation.every > 0 && done % config.validation.every === 0 && run.iteration < Math.min(total, realStart)) await checkSynthetic(run, done);
  m.poolSize = run.pool.length;
  m.realTransitions = run.counter.steps;
  m.offlineTransitions = run.offlineTransitions;
  m.wallMs = performance.now() - t0;
  run.metrics.push(m);
  if (deps.persist) await deps.persist(await snapshotOf(run));
  options.onProgress?.({ iteration: run.iteration, totalIterations: total, phase, metrics: m });
}

/** A synthetic phase the run ended in (dreamgym, or s2r stopped by its wall-time budget before its real phase). */
async function endSyntheticPhase(run: Run): Promise<void> {
  if (!run.synthetic || !run.validation || run.validation.end !== undefined || run.iteration > run.schedule.realStart) return;
  await selectSynthetic(run);
  if (run.deps.persist) await run.deps.persist(await snapshotOf(run));
}

/** One behaviour-cloning epoch over the expert demonstrations. */
async function sftIteration(run: Run): Promise<IterationMetrics> {
  const update = await run.trainer.sftUpdate(await sftExamplesOf(run));
  if (run.iteration + 1 === run.schedule.rlStart) {
    // RL's KL reference is the policy it starts from, and its learning rate its own.
    run.trainer.syncReference();
    // The examples and the trainer's rows of them (household: 73 MB of candidate features each) are not RL's.
    run.sftExamples = null;
  }
  return { ...emptyMetrics(run.iteration, 'sft'), successRate: update.accuracy ?? 0, loss: update.loss, entropy: update.entropy, updateMs: update.ms };
}

/** Behaviour cloning's examples: every recorded expert decision whose action was a candidate, weighted by `sft.cloning`. */
async function sftExamplesOf(run: Run): Promise<SftExample[]> {
  if (run.sftExamples) return run.sftExamples;
  const { config, deps } = run;
  const contexts: AgentContext[] = [];
  const targets: number[] = [];
  const weights: number[] = [];
  const byId = new Map(deps.offline.tasks.map((t) => [t.id, t]));
  const demonstrations = deps.offline.trajectories.filter((t) => deps.offline.expertIds.has(t.id));
  for (const traj of demonstrations) {
    const weight = cloningWeight(traj, config.sft.cloning);
    if (weight <= 0) continue;
    const task = byId.get(traj.taskId);
    if (!task) continue;
    const history: { action: string; observation: Observation }[] = [];
    for (const step of traj.steps) {
      const index = step.observation.actions.indexOf(step.action);
      if (index >= 0) {
        contexts.push({ instruction: task.instruction, history: history.slice(), observation: step.observation });
        targets.push(index);
        weights.push(weight);
      }
      history.push({ action: step.action, observation: step.observation });
    }
  }
  if (contexts.length === 0) {
    const wanted = config.sft.cloning === 'successes' ? 'a successful one' : 'one with a reward above 0';
    throw new TrainingSetupError(`behaviour cloning (${config.sft.cloning}) needs ${wanted} among the offline data's ${demonstrations.length} demonstrations, got none`);
  }
  const decisions = await run.agent.decisions(contexts);
  run.sftExamples = decisions.map((d, i) => ({ ...d, action: targets[i] as number, weight: weights[i] as number }));
  return run.sftExamples;
}

/**
 * Validates the current policy after `done` synthetic iterations: greedy success inside the
 * simulator on the validation tasks, and its agreement with the held-out recorded successes (no
 * real step, no random draw).
 */
async function validatePolicy(run: Run, done: number): Promise<ValidationCheck> {
  const { config, deps, options, agent, validating, recorded } = run;
  const experience = deps.validationExperience ?? (deps.experience as ExperienceModel);
  const actor = { choose: async (contexts: readonly AgentContext[]) => (await agent.choose(contexts, { greedy: true })).map((c) => c.action) };
  const demos = deps.demos && config.demos > 0 ? (o: Observation, a: string) => (deps.demos as NonNullable<TrainingDeps['demos']>)(o, a, config.demos) : null;
  checkAbort(run);
  let reported = -1;
  const report = (n: number): void => {
    reported = n;
    options.onProgress?.({ iteration: run.iteration, totalIterations: run.schedule.total, phase: 'synthetic', validating: { done: n, total: validating.length } });
  };
  report(0);
  const result = await evaluateSynthetic(actor, experience, validating, run.firstObservation, { maxSteps: run.maxSteps, demos, onProgress: report });
  // An episode that never ended (the step limit) never reported one: the validation is over all the same.
  if (reported < validating.length) report(validating.length);
  const check: ValidationCheck = { iteration: done, success: result.successRate };
  if (result.grounding.reported > 0) check.unknownShare = result.grounding.unknown / result.grounding.reported;
  if (recorded.length > 0) {
    const a = await recordedAgreement(actor, recorded);
    check.replayed = a.replayed;
    check.agreement = a.agreement;
    check.prefix = a.prefix;
    check.perEpisode = a.perEpisode;
  }
  if (options.onValidation) await options.onValidation(check, agent);
  return check;
}

/** Validates the policy the synthetic phase starts from. */
async function startValidation(run: Run): Promise<void> {
  const first = await validatePolicy(run, 0);
  run.validation = { tasks: run.validating.length, start: first.success, criterion: run.criterion, ...(run.recorded.length > 0 ? { recorded: run.recorded.length } : {}), checks: [first] };
}

const withCheck = (v: SyntheticValidation, check: ValidationCheck): SyntheticValidation => ({ ...v, checks: [...(v.checks ?? []), check] });

/** Validates the policy after `done` synthetic iterations; keeps a copy of it if it is the best so far. */
async function checkSynthetic(run: Run, done: number): Promise<void> {
  if (!run.validation) return;
  const check = await validatePolicy(run, done);
  const validation = run.validation;
  const best = replacesKept(check, validation.best ?? validation.checks?.[0] ?? { success: validation.start }, run.criterion, validation.tasks);
  if (best) run.trainer.keepWeights();
  run.validation = { ...withCheck(validation, check), between: [...(validation.between ?? []), check], ...(best ? { best: check } : {}) };
}

/** Ends the synthetic phase: validates where it ended, and puts the best validated policy back if that is not the end. */
async function selectSynthetic(run: Run): Promise<void> {
  if (!run.validation || run.validation.end !== undefined) return;
  const end = await validatePolicy(run, Math.min(run.iteration, run.schedule.realStart) - run.schedule.rlStart);
  const validation = run.validation;
  const best = validation.best ?? validation.checks?.[0] ?? { success: validation.start };
  const kept = replacesKept(end, best, run.criterion, validation.tasks) ? 'end' : validation.best ? 'between' : 'start';
  if (kept === 'start') run.trainer.restoreReference();
  if (kept === 'between') run.trainer.restoreKept();
  run.trainer.dropKept();
  run.validation = { ...withCheck(validation, end), end: end.success, kept };
}

/**
 * One RL iteration in the synthetic or the real environment: choose tasks, roll out G episodes
 * per task, update on the whole groups, store the rollouts, grow the curriculum.
 */
async function rlIteration(run: Run, phase: 'synthetic' | 'real'): Promise<IterationMetrics> {
  const { config, trainer } = run;
  const m = emptyMetrics(run.iteration, phase);
  const warmup = config.rl.warmupIterations;
  const rate = phase === 'real' && config.mode === 's2r' ? config.s2r.learningRate : config.rl.learningRate;
  trainer.setLearningRate(rate * (warmup > 0 ? Math.min(1, (run.iteration - run.schedule.rlStart + 1) / warmup) : 1));

  // 0. Instruction variants join when the synthetic phase starts: also where it resumes from a
  // snapshot of behaviour cloning alone (an experiment's runs share that beginning).
  if (phase === 'synthetic' && run.iteration === run.schedule.rlStart && run.syntheticOnly.size > 0) {
    const present = new Set(run.pool.map((t) => t.id));
    for (const task of run.deps.offline.variantTasks ?? []) if (!present.has(task.id)) run.pool.push(task);
  }
  // 1. Tasks: B from the pool, a share lambda generated once any exist.
  const lambda = config.curriculum.enabled ? config.curriculum.generatedShare : 0;
  // A task without a goal is played by the experience model only.
  const pool = phase === 'real' && run.syntheticOnly.size > 0 ? run.pool.filter((t) => !run.syntheticOnly.has(t.id)) : run.pool;
  const { tasks: chosen, generated: nGenerated } = chooseTasks(pool, config.tasksPerIteration, lambda, streamOf(config.seed, run.iteration, 'tasks'));
  m.generatedShare = nGenerated / config.tasksPerIteration;
  m.generatedTasks = run.pool.filter((t) => t.origin === 'generated').length;

  // 2. Rollouts: G per task.
  const tr = performance.now();
  const episodes = await startEpisodes(run, phase, chosen, m);
  await rollOut(run, phase, episodes, m);
  m.rolloutMs = performance.now() - tr;
  m.syntheticStepsPerSec = m.syntheticSteps > 0 ? m.syntheticSteps / (m.rolloutMs / 1000) : 0;
  // A group with an episode the budget cut is left out of the update and the curriculum: scoring
  // an unfinished episode 0 would push the policy away from whatever it was doing. The iteration's
  // success and reward are over finished episodes (all of them if the budget cut every one).
  const groups: Episode[][] = [];
  for (let g = 0; g < episodes.length; g += config.groupSize) groups.push(episodes.slice(g, g + config.groupSize));
  const whole = groups.filter((group) => group.every((e) => !e.cut));
  const finished = episodes.filter((e) => !e.cut);
  const measured = finished.length > 0 ? finished : episodes;
  m.successRate = mean(measured.map((e) => (e.success ? 1 : 0)));
  m.meanReward = mean(measured.map((e) => e.grpo.reward));

  // 3. Update.
  if (whole.length > 0) {
    const update = await updatePolicy(trainer, config, whole.flat());
    Object.assign(m, { loss: update.loss, kl: update.kl, clipFraction: update.clipFraction, entropy: update.entropy, updateMs: update.ms });
  }
  // 4. Store.
  await storeEpisodes(run, phase, episodes, chosen);
  // 5. Curriculum: V_tau per group; informative tasks seed new ones.
  await growCurriculum(run, chosen.filter((_, g) => whole.includes(groups[g] as Episode[])), whole, m);
  return m;
}

/** G episodes per chosen task, each at its first observation: a counted real reset, or the recorded (else simulated) first state. */
async function startEpisodes(run: Run, phase: 'synthetic' | 'real', chosen: readonly Task[], m: IterationMetrics): Promise<Episode[]> {
  const episodes: Episode[] = [];
  for (const task of chosen) {
    for (let g = 0; g < run.config.groupSize; g++) {
      let env: RealEnvironment | null = null;
      let observation: Observation;
      if (phase === 'real') {
        env = countedEnvironment(run.deps.spec.create(), run.counter);
        observation = env.reset(task);
      } else {
        const recorded = run.firstObservation.get(task.id);
        observation = recorded ?? (await (run.deps.experience as ExperienceModel).reset(agentView(task), []));
        if (!recorded) m.simCalls++;
      }
      episodes.push({ task, env, observation, history: [], steps: [], grpo: { steps: [], reward: 0 }, done: false, success: false, cut: false });
    }
  }
  return episodes;
}

/**
 * Plays the episodes to their end or the step limit, all advanced together. A real phase stops
 * taking real steps once its budget is spent; the episodes it stops are cut (outcome unknown).
 * Under a budget the groups run one after another, so that the budget finishes whole groups
 * first: run side by side, every group's longest episode was cut at once, and an s2r real phase
 * of about one iteration's steps had no whole group to learn from.
 */
async function rollOut(run: Run, phase: 'synthetic' | 'real', episodes: readonly Episode[], m: IterationMetrics): Promise<void> {
  const { config } = run;
  const act = streamOf(config.seed, run.iteration, 'act');
  const realBudget = phase === 'real' ? realBudgetOf(config) : 0;
  const batchSize = realBudget > 0 ? config.groupSize : episodes.length;
  for (let b = 0; b < episodes.length; b += batchSize) {
    const batch = episodes.slice(b, b + batchSize);
    for (let t = 0; t < run.maxSteps; t++) {
      checkAbort(run);
      let running = batch.filter((e) => !e.done && e.observation.actions.length > 0);
      if (realBudget > 0) {
        const allowed = Math.max(0, realBudget - run.counter.steps);
        for (const e of running.slice(allowed)) e.cut = true;
        running = running.slice(0, allowed);
      }
      if (running.length === 0) break;
      const choices = await run.agent.choose(
        running.map((e) => ({ instruction: e.task.instruction, history: e.history, observation: e.observation })),
        { greedy: false, rng: act },
      );
      for (let i = 0; i < running.length; i++) await stepEpisode(run, running[i] as Episode, choices[i] as AgentChoice, m);
    }
  }
}

/** Takes the chosen action in the episode's environment (real, or the experience model) and records the step. */
async function stepEpisode(run: Run, e: Episode, c: AgentChoice, m: IterationMetrics): Promise<void> {
  const { config, deps } = run;
  e.grpo.steps.push({ ...c.decision, action: c.index, logProb: c.logProb });
  let next: Observation;
  let reward: number;
  let done: boolean;
  let valid: boolean;
  let reasoning: string | undefined;
  if (e.env) {
    const r = e.env.step(c.action);
    ({ observation: next, reward, done } = r);
    valid = r.info.valid;
    if (done) e.success = r.info.success === true;
  } else {
    const demos = deps.demos && config.demos > 0 ? await deps.demos(e.observation, c.action, config.demos) : [];
    const r = await (deps.experience as ExperienceModel).step({ task: agentView(e.task), history: e.history.slice(), observation: e.observation, action: c.action, demos });
    m.simCalls++;
    run.syntheticSteps++;
    m.syntheticSteps++;
    ({ observation: next, reward, done, valid, reasoning } = r);
    if (done) e.success = reward >= 0.999;
  }
  const step: Step = { observation: e.observation, action: c.action, reward, done, valid };
  if (reasoning !== undefined) step.reasoning = reasoning;
  e.steps.push(step);
  e.history.push({ observation: e.observation, action: c.action });
  e.grpo.reward += reward;
  m.steps++;
  e.observation = next;
  if (done) e.done = true;
}

/** Adds the iteration's rollouts to the run's buffer. */
async function storeEpisodes(run: Run, phase: 'synthetic' | 'real', episodes: readonly Episode[], chosen: readonly Task[]): Promise<void> {
  if (!run.deps.storeRollouts) return;
  const source = phase === 'real' ? 'real' : 'synthetic';
  await run.deps.storeRollouts(
    // Episode i of the iteration: unique even when a task is chosen twice. An episode whose first
    // state offered no action has no step to store.
    episodes.filter((e) => e.steps.length > 0).map((e) => ({
      id: `${e.task.id}:it${run.iteration}:e${episodes.indexOf(e)}:${source}`,
      taskId: e.task.id,
      env: e.task.env,
      source,
      steps: e.steps,
      reward: e.grpo.reward,
      success: e.success,
    })),
    chosen,
  );
}

/** Scores the whole groups' tasks by reward variance and has the generator vary the informative ones. */
async function growCurriculum(run: Run, tasks: readonly Task[], whole: readonly Episode[][], m: IterationMetrics): Promise<void> {
  const { config, deps, pool, lastSeen } = run;
  const scored = groupVariances(tasks, whole.flat().map((e) => e.grpo.reward), config.groupSize);
  for (const { task, vTau } of scored) if (task.origin === 'generated') lastSeen.set(task.id, { iteration: run.iteration, vTau });
  m.vTauMean = mean(scored.map((x) => x.vTau));
  m.vTauPositiveShare = mean(scored.map((x) => (x.vTau > 0 ? 1 : 0)));
  m.vTauMax = Math.max(0, ...scored.map((x) => x.vTau));
  const seedsForGenerator = informativeTasks(scored);
  if (config.curriculum.enabled && deps.generator && config.curriculum.perIteration > 0 && seedsForGenerator.length > 0) {
    const fresh = await deps.generator.generate(seedsForGenerator, config.curriculum.perIteration);
    for (const task of addTasks(pool, fresh)) lastSeen.set(task.id, { iteration: run.iteration, vTau: Number.NaN });
    capGenerated(pool, lastSeen, config.curriculum.maxGenerated);
  }
}

/**
 * How much a demonstration's decisions count in behaviour cloning (0: left out): a success 1 under
 * `successes`; its episode's reward, clipped to [0, 1], under `reward-weighted`.
 */
export function cloningWeight(trajectory: Pick<Trajectory, 'success' | 'reward'>, cloning: CloningMode): number {
  if (cloning === 'successes') return trajectory.success ? 1 : 0;
  return Number.isFinite(trajectory.reward) ? Math.min(1, Math.max(0, trajectory.reward)) : 0;
}

function emptyMetrics(iteration: number, phase: IterationMetrics['phase']): IterationMetrics {
  return {
    iteration,
    phase,
    successRate: 0,
    meanReward: 0,
    loss: 0,
    kl: 0,
    clipFraction: 0,
    entropy: 0,
    vTauMean: 0,
    vTauPositiveShare: 0,
    vTauMax: 0,
    poolSize: 0,
    generatedTasks: 0,
    generatedShare: 0,
    steps: 0,
    syntheticSteps: 0,
    syntheticStepsPerSec: 0,
    simCalls: 0,
    realTransitions: 0,
    offlineTransitions: 0,
    updateMs: 0,
    rolloutMs: 0,
    wallMs: 0,
  };
}
