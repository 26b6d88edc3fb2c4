/**
 * The experiment behind the results table (DreamGym's Table 1 in miniature): every mode and
 * ablation available offline, on one environment, over seeds, evaluated greedy on the same
 * held-out test tasks in the real environment (and on training tasks, so memorization shows).
 * RL modes get the same number of updates; the warm-started ones start from the same SFT
 * checkpoint per seed. Runs that begin alike share that beginning: behaviour cloning runs once per
 * seed and the warm arms resume from its snapshot, and `s2r`, whose synthetic phase is `dreamgym`'s
 * run from the same start, resumes from that run's last snapshot (either equals running it again).
 * `s2r` gets a real budget of 10% of what `real` used from the same start (scratch or warm), and
 * `real` is also run on that budget for the paired comparison.
 */
import { Rng } from '../core/rng.ts';
import type { DomainName } from '../core/types.ts';
import { parseTrainingConfig, type PresetName, type TrainingConfig, type TrainingConfigInput } from './config.ts';
import { aggregateEvaluations, bootstrapInterval, evaluate, type EvalActor, type EvalResult, type Interval } from './evaluate.ts';
import type { PolicyAgent } from './agent.ts';
import { plannedIterations, runTraining, type IterationMetrics, type RunSnapshot } from './loop.ts';
import { keptPhrase, type SyntheticValidation, type ValidationCheck } from './validation.ts';
import { selectionCorrelation, selectionLines } from './selection.ts';
import { hasReferencePolicy, referencePolicy } from './reference.ts';
import { prepareRun } from './setup.ts';

/** One row of the table: a mode (or reference), how it started, and its ablation. */
export interface ExperimentArm {
  name: string;
  /** 'reference' is the scripted policy that cannot see the hidden goal. */
  kind: 'reference' | 'trained';
  config?: Partial<TrainingConfigInput>;
  /** Real budget as a share of the real transitions that arm `budgetOf` used (s2r and the matched real run). */
  budgetShareOfReal?: number;
  /** The `real` arm whose real transitions set the budget: `real` or `real (warm sft)`. */
  budgetOf?: 'real' | 'real (warm sft)';
}

/** The arms run for each environment. */
export const EXPERIMENT_ARMS: readonly ExperimentArm[] = [
  { name: 'scripted reference (no hidden goal)', kind: 'reference' },
  { name: 'zero-shot', kind: 'trained', config: { mode: 'zero-shot' } },
  { name: 'sft', kind: 'trained', config: { mode: 'sft' } },
  { name: 'real', kind: 'trained', config: { mode: 'real' } },
  { name: 'dreamgym', kind: 'trained', config: { mode: 'dreamgym' } },
  { name: 'real (warm sft)', kind: 'trained', config: { mode: 'real', warmStart: 'sft' } },
  { name: 'dreamgym (warm sft)', kind: 'trained', config: { mode: 'dreamgym', warmStart: 'sft' } },
  { name: 'dreamgym (warm sft) --no-curriculum', kind: 'trained', config: { mode: 'dreamgym', warmStart: 'sft', curriculum: { enabled: false } } },
  { name: 's2r, 10% real budget', kind: 'trained', config: { mode: 's2r' }, budgetShareOfReal: 0.1, budgetOf: 'real' },
  { name: 'real, 10% real budget', kind: 'trained', config: { mode: 'real' }, budgetShareOfReal: 0.1, budgetOf: 'real' },
  { name: 's2r (warm sft), 10% real budget', kind: 'trained', config: { mode: 's2r', warmStart: 'sft' }, budgetShareOfReal: 0.1, budgetOf: 'real (warm sft)' },
  { name: 'real (warm sft), 10% real budget', kind: 'trained', config: { mode: 'real', warmStart: 'sft' }, budgetShareOfReal: 0.1, budgetOf: 'real (warm sft)' },
];

/** One arm's figures for one seed. */
export interface ArmSeedResult {
  seed: number;
  heldOut: EvalResult;
  train: EvalResult;
  realTransitions: number;
  offlineTransitions: number;
  syntheticSteps: number;
  wallMs: number;
  /**
   * Iterations this run took over from another arm's run of the same seed (its behaviour cloning,
   * or a whole synthetic phase); 0 when it ran from the start. `wallMs` leaves them out.
   */
  sharedIterations: number;
  /** The synthetic phase's validation inside the simulator (null without a synthetic phase). */
  validation: SyntheticValidation | null;
  /**
   * Every validation point of the synthetic phase with the validated policy's real held-out
   * success (greedy, the same test tasks), when the experiment measured them (`probeValidation`).
   */
  probes?: ValidationProbe[];
  curve: Pick<IterationMetrics, 'iteration' | 'phase' | 'successRate' | 'meanReward' | 'realTransitions'>[];
}

/** A validation point of a synthetic phase and the real held-out success of the policy validated there. */
export interface ValidationProbe extends ValidationCheck {
  real: number;
}

/** One arm over seeds. */
export interface ArmResult {
  name: string;
  /**
   * The configuration of the arm's last seed (null for the reference). Seeds differ only in
   * `seed` and, for arms with a share of another arm's real transitions, in that budget, which
   * each seed's `realTransitions` shows.
   */
  config: TrainingConfig | null;
  seeds: ArmSeedResult[];
  success: Interval;
  reward: Interval;
  trainSuccess: Interval;
  realTransitions: number;
  offlineTransitions: number;
  wallMs: number;
}

export interface ExperimentResult {
  env: DomainName;
  preset: PresetName;
  seeds: number[];
  evalEpisodes: number;
  arms: ArmResult[];
  /** Paired comparisons that test the method's claims, each with a bootstrap interval over tasks and seeds. */
  comparisons: { name: string; value: number; low: number; high: number; note: string }[];
  wallMs: number;
  command: string;
}

export interface ExperimentOptions {
  /** A built-in environment, or a loaded module's domain (registered; `envModule` names its file for worker threads). */
  env: DomainName;
  /** The environment module's path when `env` is one: a runner in another thread loads it from there. */
  envModule?: string;
  seeds: number;
  preset?: PresetName;
  /** Overrides applied to every arm (sizes for quick checks). */
  overrides?: Partial<TrainingConfigInput>;
  /** Training tasks evaluated per run (the memorization check). */
  trainEvalEpisodes?: number;
  onProgress?: (text: string) => void;
  signal?: AbortSignal;
  /** Only these arms (by name); default all. */
  arms?: readonly string[];
  /** The command the table says made it (default: the `experiment` command with env, seeds and preset). */
  command?: string;
  /**
   * (arm, seed) runs in flight at once (default 1). Each run is self-contained (its data, policy
   * and random streams come from its seed), so the figures do not depend on it; a runner that
   * uses threads (`runner`) makes it pay on a machine with several cores.
   */
  concurrency?: number;
  /** Runs one (arm, seed) job; default {@link runArmSeed} on this thread. */
  runner?: ArmSeedRunner;
  /**
   * Also evaluate, in the real environment, the policy at every validation point of each synthetic
   * phase (see {@link ArmSeedResult.probes}): what the selection criterion's correlation with real
   * success is measured on. Costs one held-out evaluation per validation point.
   */
  probeValidation?: boolean;
}

/** One (arm, seed) run of an experiment: everything a thread needs to run it alone. */
export interface ArmSeedJob {
  env: DomainName;
  /** The environment module's path when `env` is one (a worker thread loads and registers it before the run). */
  envModule?: string;
  preset: PresetName;
  overrides?: Partial<TrainingConfigInput>;
  /** An arm of {@link EXPERIMENT_ARMS}, by name. */
  arm: string;
  seed: number;
  /** Training tasks evaluated (the memorization check). */
  trainEvalEpisodes: number;
  /** Real transitions of the arm's budget (arms with `budgetShareOfReal`). */
  realBudget?: number;
  /** A snapshot of another job of the same seed whose run so far is this job's beginning: resume from it. */
  resume?: RunSnapshot;
  /** Iterations after which to hand back this run's snapshot (jobs that begin alike resume from them). */
  keepAt?: readonly number[];
  /** Evaluate the policy of every validation point in the real environment (see {@link ExperimentOptions.probeValidation}). */
  probeValidation?: boolean;
}

/** What an (arm, seed) run gives back. */
export interface ArmSeedOutcome {
  result: ArmSeedResult;
  /** The run's configuration (null for the reference). */
  config: TrainingConfig | null;
  evalEpisodes: number;
  /** The snapshots the job asked for (`keepAt`) that its run reached, in iteration order. */
  snapshots?: RunSnapshot[];
}

/** Runs one (arm, seed) job: on this thread ({@link runArmSeed}) or in a worker. */
export type ArmSeedRunner = (job: ArmSeedJob, signal?: AbortSignal) => Promise<ArmSeedOutcome>;

const actorOf = (agent: PolicyAgent): EvalActor => ({ choose: async (ctxs) => (await agent.choose(ctxs, { greedy: true })).map((c) => c.action) });

function armNamed(name: string): ExperimentArm {
  const arm = EXPERIMENT_ARMS.find((a) => a.name === name);
  if (!arm) throw new RangeError(`unknown experiment arm ${JSON.stringify(name)}`);
  return arm;
}

/** The configuration of an (arm, seed) job. */
function jobConfig(job: Pick<ArmSeedJob, 'env' | 'preset' | 'overrides' | 'arm' | 'seed' | 'realBudget'>): TrainingConfig {
  const arm = armNamed(job.arm);
  const input: TrainingConfigInput = { env: job.env, mode: 'zero-shot', seed: job.seed, ...job.overrides, ...arm.config };
  if (arm.budgetShareOfReal !== undefined) {
    const budget = Math.max(1, job.realBudget ?? 1);
    if (input.mode === 's2r') input.s2r = { realBudget: budget };
    else input.budgets = { ...(input.budgets ?? {}), realTransitions: budget };
  }
  return parseTrainingConfig(input, job.preset);
}

/** Runs one arm for one seed on this thread: trains (or resumes from `job.resume`), then evaluates held-out and training tasks. */
export async function runArmSeed(job: ArmSeedJob, signal?: AbortSignal): Promise<ArmSeedOutcome> {
  const arm = armNamed(job.arm);
  const t0 = performance.now();
  if (arm.kind === 'reference') {
    const base = parseTrainingConfig({ env: job.env, mode: 'zero-shot', seed: job.seed, ...job.overrides }, job.preset);
    const run = await prepareRun(base);
    try {
      const heldOut = await evaluate(referencePolicy(job.env), run.deps.spec, run.evalTasks);
      const train = await evaluate(referencePolicy(job.env), run.deps.spec, run.deps.offline.tasks.slice(0, job.trainEvalEpisodes));
      const result: ArmSeedResult = { seed: job.seed, heldOut, train, realTransitions: 0, offlineTransitions: 0, syntheticSteps: 0, wallMs: performance.now() - t0, sharedIterations: 0, validation: null, curve: [] };
      return { result, config: null, evalEpisodes: base.evalEpisodes };
    } finally {
      run.dispose();
    }
  }
  const config = jobConfig(job);
  // The probe reports both criteria's figures, so the held-out demonstrations are recorded whatever the criterion.
  const run = await prepareRun(config, { selection: job.probeValidation === true });
  const snapshots: RunSnapshot[] = [];
  const keepAt = new Set(job.keepAt ?? []);
  const total = plannedIterations(config);
  // The run's final snapshot comes with its result; the others are caught on the way.
  if ([...keepAt].some((i) => i < total)) {
    run.deps.persist = async (snapshot) => {
      if (keepAt.has(snapshot.iteration) && snapshot.iteration < total) snapshots.push(snapshot);
    };
  }
  const probes: ValidationProbe[] = [];
  const onValidation = async (check: ValidationCheck, agent: PolicyAgent): Promise<void> => {
    const real = await evaluate(actorOf(agent), run.deps.spec, run.evalTasks, signal ? { signal } : {});
    probes.push({ ...check, real: real.successRate });
  };
  let res: Awaited<ReturnType<typeof runTraining>>;
  try {
    res = await runTraining(config, run.deps, { signal, ...(job.resume ? { resume: job.resume } : {}), ...(job.probeValidation ? { onValidation } : {}) });
    if (keepAt.has(res.snapshot.iteration) && res.snapshot.iteration === total) snapshots.push(res.snapshot);
  } catch (e) {
    run.dispose();
    throw e;
  }
  try {
    const actor = actorOf(res.agent);
    const heldOut = await evaluate(actor, run.deps.spec, run.evalTasks);
    const train = await evaluate(actor, run.deps.spec, run.deps.offline.tasks.slice(0, job.trainEvalEpisodes));
    const result: ArmSeedResult = {
      seed: job.seed,
      heldOut,
      train,
      realTransitions: res.realTransitions,
      offlineTransitions: res.offlineTransitions,
      syntheticSteps: res.syntheticSteps,
      wallMs: performance.now() - t0,
      sharedIterations: job.resume?.iteration ?? 0,
      validation: res.validation,
      ...(probes.length > 0 ? { probes } : {}),
      curve: res.metrics.map((m) => ({ iteration: m.iteration, phase: m.phase, successRate: m.successRate, meanReward: m.meanReward, realTransitions: m.realTransitions })),
    };
    return { result, config, evalEpisodes: config.evalEpisodes, ...(snapshots.length > 0 ? { snapshots } : {}) };
  } finally {
    res.trainer.dispose();
    run.dispose();
  }
}

/** A job of the schedule and what it waits for. */
interface PlannedJob {
  job: ArmSeedJob;
  /** Index of the job whose real transitions set this one's budget. */
  budgetFrom: number | null;
  budgetShare: number;
  /** The job whose run this one begins with, and after how many iterations it takes over. */
  resumeFrom: { job: number; iteration: number } | null;
}

/**
 * The beginnings a run shares with others of the same seed: each a key (runs with the same key
 * reach the same snapshot) and the iteration it ends at. Behaviour cloning depends on the data,
 * the policy and the SFT settings only; a synthetic phase (`dreamgym`, or `s2r` before its real
 * phase) on everything but the real phase's budget.
 */
function sharedPrefixes(config: TrainingConfig): { key: string; iteration: number }[] {
  const sftEpochs = sftEpochsOf(config);
  const out: { key: string; iteration: number }[] = [];
  if (sftEpochs > 0) out.push({ key: `sft ${sftKey(config)}`, iteration: sftEpochs });
  if (config.mode === 'dreamgym' || config.mode === 's2r') {
    const { s2r: _s2r, ...rest } = config;
    out.push({ key: `synthetic ${JSON.stringify({ ...rest, mode: 'dreamgym' })}`, iteration: sftEpochs + config.iterations });
  }
  return out;
}

/** The (arm, seed) jobs in run order, with what each waits for. */
function planJobs(options: ExperimentOptions, preset: PresetName, arms: readonly ExperimentArm[], seeds: readonly number[], trainEval: number): PlannedJob[] {
  // Arms that need a `real` arm's figure come after it.
  const ordered = [...arms.filter((a) => a.budgetShareOfReal === undefined), ...arms.filter((a) => a.budgetShareOfReal !== undefined)];
  const planned: PlannedJob[] = [];
  const providers = new Map<string, number>(); // prefix key -> the first job that runs it
  for (const arm of ordered) {
    for (const seed of seeds) {
      const job: ArmSeedJob = { env: options.env, ...(options.envModule !== undefined ? { envModule: options.envModule } : {}), preset, ...(options.overrides ? { overrides: options.overrides } : {}), arm: arm.name, seed, trainEvalEpisodes: trainEval, ...(options.probeValidation ? { probeValidation: true } : {}) };
      let budgetFrom: number | null = null;
      if (arm.budgetShareOfReal !== undefined) {
        const from = planned.findIndex((p) => p.job.arm === (arm.budgetOf ?? 'real (warm sft)') && p.job.seed === seed);
        budgetFrom = from >= 0 ? from : null;
      }
      let resumeFrom: PlannedJob['resumeFrom'] = null;
      if (arm.kind === 'trained') {
        // Resume from the longest beginning another job runs; run the others for later jobs.
        for (const prefix of sharedPrefixes(jobConfig(job))) {
          const provider = providers.get(prefix.key);
          if (provider === undefined) providers.set(prefix.key, planned.length);
          else if (!resumeFrom || prefix.iteration > resumeFrom.iteration) resumeFrom = { job: provider, iteration: prefix.iteration };
        }
        if (resumeFrom) {
          const provider = (planned[resumeFrom.job] as PlannedJob).job;
          provider.keepAt = [...new Set([...(provider.keepAt ?? []), resumeFrom.iteration])].sort((x, y) => x - y);
        }
      }
      planned.push({ job, budgetFrom, budgetShare: arm.budgetShareOfReal ?? 0, resumeFrom });
    }
  }
  return planned;
}

/**
 * Runs every arm for every seed: up to `concurrency` jobs at once, each started once the runs
 * it depends on (its budget's `real` arm, the run whose beginning it shares) are done.
 */
export async function runExperiment(options: ExperimentOptions): Promise<ExperimentResult> {
  const started = performance.now();
  const preset = options.preset ?? 'quick';
  const seeds = Array.from({ length: options.seeds }, (_, i) => i);
  // The scripted reference exists for the built-in domains only.
  const arms = EXPERIMENT_ARMS.filter((a) => (options.arms ? options.arms.includes(a.name) : a.kind !== 'reference' || hasReferencePolicy(options.env)));
  const reference = arms.find((a) => a.kind === 'reference');
  if (reference && !hasReferencePolicy(options.env)) throw new RangeError(`the arm ${JSON.stringify(reference.name)} has no policy for ${options.env}: it exists for the built-in domains only`);
  const trainEval = options.trainEvalEpisodes ?? 100;
  const concurrency = options.concurrency ?? 1;
  if (!(Number.isInteger(concurrency) && concurrency >= 1)) throw new RangeError(`concurrency must be an integer >= 1, got ${concurrency}`);
  const runner = options.runner ?? runArmSeed;
  const planned = planJobs(options, preset, arms, seeds, trainEval);
  const outcomes: (ArmSeedOutcome | undefined)[] = planned.map(() => undefined);
  const state: ('waiting' | 'running' | 'done')[] = planned.map(() => 'waiting');
  const running = new Map<number, Promise<void>>();
  // Stops the jobs in flight when the caller's signal fires or a job fails.
  const inner = new AbortController();
  const forward = (): void => inner.abort(options.signal?.reason);
  if (options.signal?.aborted) forward();
  options.signal?.addEventListener('abort', forward, { once: true });
  const isReady = (p: PlannedJob): boolean =>
    (p.budgetFrom === null || state[p.budgetFrom] === 'done') && (p.resumeFrom === null || state[p.resumeFrom.job] === 'done');
  const start = (i: number): void => {
    const p = planned[i] as PlannedJob;
    const job: ArmSeedJob = { ...p.job };
    if (p.budgetFrom !== null || p.budgetShare > 0) {
      const reference = p.budgetFrom === null ? 0 : (outcomes[p.budgetFrom] as ArmSeedOutcome).result.realTransitions;
      job.realBudget = Math.max(1, Math.round(p.budgetShare * reference));
    }
    if (p.resumeFrom !== null) {
      // A provider stopped early by a budget did not reach it: then this job runs from the start.
      const at = p.resumeFrom.iteration;
      const snapshot = (outcomes[p.resumeFrom.job] as ArmSeedOutcome).snapshots?.find((x) => x.iteration === at);
      if (snapshot) job.resume = snapshot;
    }
    state[i] = 'running';
    options.onProgress?.(`${options.env}: ${job.arm}, seed ${job.seed}${concurrency > 1 ? ` (${running.size + 1} running)` : ''}`);
    running.set(
      i,
      runner(job, inner.signal).then(
        (outcome) => {
          outcomes[i] = outcome;
          state[i] = 'done';
          running.delete(i);
        },
        (e: unknown) => {
          // A job stopped because another failed says nothing new; a failure names its job.
          if (inner.signal.aborted) throw e;
          throw new Error(`${options.env}: ${job.arm}, seed ${job.seed} failed: ${e instanceof Error ? e.message : String(e)}`, { cause: e });
        },
      ),
    );
  };
  try {
    while (state.some((s) => s !== 'done')) {
      if (options.signal?.aborted) throw new Error('experiment stopped');
      for (let i = 0; i < planned.length && running.size < concurrency; i++) {
        if (state[i] === 'waiting' && isReady(planned[i] as PlannedJob)) start(i);
      }
      if (running.size === 0) throw new Error('experiment schedule stalled: no job can start');
      await Promise.race(running.values());
    }
  } catch (e) {
    // A failed job fails the experiment: stop the others.
    inner.abort(e);
    throw e;
  } finally {
    options.signal?.removeEventListener('abort', forward);
    // Let jobs in flight settle before returning or rethrowing, so none outlives the call.
    await Promise.allSettled(running.values());
  }
  // Snapshots are only a means of sharing; drop them from the results.
  for (const o of outcomes) if (o) delete o.snapshots;

  const results: ArmResult[] = [];
  for (const arm of arms) {
    const mine = planned.flatMap((p, i) => (p.job.arm === arm.name ? [outcomes[i] as ArmSeedOutcome] : []));
    const perSeed = mine.map((o) => o.result);
    const agg = aggregateEvaluations(perSeed.map((s) => s.heldOut));
    const trainAgg = aggregateEvaluations(perSeed.map((s) => s.train));
    results.push({
      name: arm.name,
      config: mine.at(-1)?.config ?? null,
      seeds: perSeed,
      success: agg.success,
      reward: agg.reward,
      trainSuccess: trainAgg.success,
      realTransitions: meanOf(perSeed.map((s) => s.realTransitions)),
      offlineTransitions: meanOf(perSeed.map((s) => s.offlineTransitions)),
      wallMs: meanOf(perSeed.map((s) => s.wallMs)),
    });
  }
  const evalEpisodes = outcomes.find((o) => o !== undefined)?.evalEpisodes ?? 0;
  return {
    env: options.env,
    preset,
    seeds,
    evalEpisodes,
    arms: results,
    comparisons: comparisons(results),
    wallMs: performance.now() - started,
    command: options.command ?? `npx dreamgym experiment --env ${options.env} --seeds ${options.seeds} --preset ${preset}`,
  };
}

/** Behaviour-cloning epochs `config` runs before RL (or as its whole run). */
function sftEpochsOf(config: TrainingConfig): number {
  return config.mode === 'sft' || (config.warmStart === 'sft' && config.mode !== 'zero-shot') ? Math.min(config.sft.epochs, plannedIterations(config)) : 0;
}

/** What behaviour cloning depends on: runs with the same key reach the same SFT snapshot. */
function sftKey(config: TrainingConfig): string {
  const { env, seed, offline, sft, policy, prior, maxSteps } = config;
  // The trainer's RL settings travel in the SFT checkpoint; the RL learning rate is set per iteration from the run's config.
  const { learningRate: _lr, ...rl } = config.rl;
  return JSON.stringify({ env, seed, offline, sft, policy, prior, maxSteps, rl });
}

const meanOf = (xs: readonly number[]): number => (xs.length === 0 ? Number.NaN : xs.reduce((s, x) => s + x, 0) / xs.length);

/**
 * Ratio of two arms' success on the same tasks and seeds, with a bootstrap interval from
 * resampling (seed, task) pairs jointly.
 */
export function pairedRatio(a: ArmResult, b: ArmResult, seed = 0): { value: number; low: number; high: number } {
  const pairs: [number, number][] = [];
  for (const sa of a.seeds) {
    const sb = b.seeds.find((s) => s.seed === sa.seed);
    if (!sb) continue;
    const bt = new Map(sb.heldOut.perTask.map((p) => [p.taskId, p.success ? 1 : 0]));
    for (const p of sa.heldOut.perTask) {
      const y = bt.get(p.taskId);
      if (y !== undefined) pairs.push([p.success ? 1 : 0, y]);
    }
  }
  const ratio = (ps: readonly [number, number][]): number => {
    const x = ps.reduce((s, p) => s + p[0], 0);
    const y = ps.reduce((s, p) => s + p[1], 0);
    // No success in the denominator: the ratio is undefined (0/0) or unbounded, not a figure to compare with a goal.
    return y === 0 ? (x === 0 ? Number.NaN : Number.POSITIVE_INFINITY) : x / y;
  };
  if (pairs.length === 0) return { value: Number.NaN, low: Number.NaN, high: Number.NaN };
  const value = ratio(pairs);
  if (Number.isNaN(value)) return { value, low: Number.NaN, high: Number.NaN };
  const rng = new Rng(seed);
  const samples: number[] = [];
  for (let r = 0; r < 2000; r++) samples.push(ratio(Array.from({ length: pairs.length }, () => pairs[rng.int(0, pairs.length - 1)] as [number, number])));
  // A resample with 0/0 counts as no evidence either way: 1.
  for (let i = 0; i < samples.length; i++) if (Number.isNaN(samples[i])) samples[i] = 1;
  samples.sort((x, y) => x - y);
  return { value, low: samples[Math.floor(0.025 * (samples.length - 1))] as number, high: samples[Math.ceil(0.975 * (samples.length - 1))] as number };
}

/** Difference of success or reward (a - b) on paired tasks and seeds, with a bootstrap interval. */
export function pairedDifference(a: ArmResult, b: ArmResult, measure: 'success' | 'reward' = 'success'): Interval {
  const value = (p: { success: boolean; reward: number }): number => (measure === 'success' ? (p.success ? 1 : 0) : p.reward);
  const diffs: number[] = [];
  for (const sa of a.seeds) {
    const sb = b.seeds.find((s) => s.seed === sa.seed);
    if (!sb) continue;
    const bt = new Map(sb.heldOut.perTask.map((p) => [p.taskId, value(p)]));
    for (const p of sa.heldOut.perTask) {
      const y = bt.get(p.taskId);
      if (y !== undefined) diffs.push(value(p) - y);
    }
  }
  return diffs.length === 0 ? { mean: Number.NaN, low: Number.NaN, high: Number.NaN } : bootstrapInterval(diffs, { seed: 1 });
}

function comparisons(arms: readonly ArmResult[]): ExperimentResult['comparisons'] {
  const by = (name: string): ArmResult | undefined => arms.find((a) => a.name === name);
  const out: ExperimentResult['comparisons'] = [];
  const ratio = (name: string, a?: ArmResult, b?: ArmResult, note = ''): void => {
    if (!a || !b) return;
    const r = pairedRatio(a, b);
    out.push({ name, value: r.value, low: r.low, high: r.high, note });
  };
  const diff = (name: string, a?: ArmResult, b?: ArmResult, note = '', measure: 'success' | 'reward' = 'success'): void => {
    if (!a || !b) return;
    const d = pairedDifference(a, b, measure);
    out.push({ name, value: d.mean, low: d.low, high: d.high, note });
  };
  diff('real (from scratch) - zero-shot, mean reward', by('real'), by('zero-shot'), 'learning without demonstrations', 'reward');
  diff('dreamgym (from scratch) - zero-shot, mean reward', by('dreamgym'), by('zero-shot'), 'learning without demonstrations', 'reward');
  ratio('dreamgym / real (from scratch), success ratio', by('dreamgym'), by('real'), 'goal >= 0.95, same number of updates (n/a when real never succeeded)');
  ratio('dreamgym / real (warm sft), success ratio', by('dreamgym (warm sft)'), by('real (warm sft)'), 'goal >= 0.95, same number of updates');
  ratio('s2r / real (from scratch), success ratio', by('s2r, 10% real budget'), by('real'), 'goal >= 1 with 10% of real transitions');
  ratio('s2r / real at the same 10% budget (from scratch), success ratio', by('s2r, 10% real budget'), by('real, 10% real budget'), 'goal >= 1.4');
  ratio('s2r / real (warm sft), success ratio', by('s2r (warm sft), 10% real budget'), by('real (warm sft)'), 'goal >= 1 with 10% of real transitions');
  ratio('s2r / real at the same 10% budget (warm sft), success ratio', by('s2r (warm sft), 10% real budget'), by('real (warm sft), 10% real budget'), 'goal >= 1.4');
  diff('dreamgym (warm sft) - sft, success', by('dreamgym (warm sft)'), by('sft'), 'GRPO in the simulator must not lower real success (>= 0)');
  diff('real (warm sft) - sft, success', by('real (warm sft)'), by('sft'), 'GRPO after SFT should improve held-out success');
  diff('curriculum effect: dreamgym (warm sft) - --no-curriculum, success', by('dreamgym (warm sft)'), by('dreamgym (warm sft) --no-curriculum'), 'ablation');
  return out;
}

const figure = (x: number): string => (Number.isNaN(x) ? 'n/a' : x === Number.POSITIVE_INFINITY ? 'inf' : x.toFixed(2));
const pct = (x: number): string => (Number.isFinite(x) ? (100 * x).toFixed(1) : 'n/a');
const interval = (i: Interval): string => `${pct(i.mean)} [${pct(i.low)}, ${pct(i.high)}]`;

/** The files of an experiment: table.md, results.json, curves.csv and an SVG plot of the learning curves. */
export function experimentFiles(r: ExperimentResult): Record<string, string> {
  const lines = [
    `# ${r.env}: held-out success (greedy, ${r.evalEpisodes} test tasks, real environment), ${r.seeds.length} seeds`,
    '',
    `Command: \`${r.command}\` (preset ${r.preset}); ${(r.wallMs / 60000).toFixed(1)} min in all.`,
    '',
    '| arm | held-out success % [95% CI] | mean reward | training-task success % | real transitions | offline transitions | wall s / seed |',
    '| --- | --- | --- | --- | ---: | ---: | ---: |',
    ...r.arms.map(
      (a) =>
        `| ${a.name} | ${interval(a.success)} | ${a.reward.mean.toFixed(3)} | ${pct(a.trainSuccess.mean)} | ${Math.round(a.realTransitions)} | ${Math.round(a.offlineTransitions)} | ${(a.wallMs / 1000).toFixed(0)} |`,
    ),
    '',
    '| comparison | value [95% CI] | note |',
    '| --- | --- | --- |',
    ...r.comparisons.map((c) => `| ${c.name} | ${figure(c.value)} [${figure(c.low)}, ${figure(c.high)}] | ${c.note} |`),
    '',
    ...validationLines(r),
    ...probedSelectionLines(r),
  ];
  const csv = ['arm,seed,iteration,phase,success_rate,mean_reward,real_transitions'];
  for (const a of r.arms) for (const s of a.seeds) for (const c of s.curve) csv.push(`"${a.name}",${s.seed},${c.iteration},${c.phase},${c.successRate},${c.meanReward},${c.realTransitions}`);
  return {
    'table.md': lines.join('\n'),
    'results.json': `${JSON.stringify(r, (_k, v: unknown) => (typeof v === 'number' && !Number.isFinite(v) ? null : v), 2)}\n`,
    'curves.csv': `${csv.join('\n')}\n`,
    [`${r.env}.svg`]: curvesSvg(r),
  };
}

/** The selection criteria's correlations with real success, when the experiment measured its validated policies (`probeValidation`). */
function probedSelectionLines(r: ExperimentResult): string[] {
  const c = selectionCorrelation([{ name: r.env, experiment: r }]);
  return c.basis === 'validation points' ? [...selectionLines(c).slice(1), ''] : [];
}

/**
 * Each synthetic phase's validation inside the simulator (see `validation` in the config), per
 * arm: start -> end by seed, with the iteration kept where the phase ended with an earlier
 * policy, and on how many seeds the start, an iteration in between or the end was kept.
 */
function validationLines(r: ExperimentResult): string[] {
  const rows = r.arms.flatMap((a) => {
    const validated = a.seeds.flatMap((s) => (s.validation?.end !== undefined ? [s.validation] : []));
    if (validated.length === 0) return [];
    const runs = validated
      .map((v) => {
        const kept = keptPhrase(v, pct);
        return `${pct(v.start)} -> ${pct(v.end ?? Number.NaN)}${kept ? ` (${kept})` : ''}`;
      })
      .join(', ');
    const count = (k: SyntheticValidation['kept']): number => validated.filter((v) => v.kept === k).length;
    return [`| ${a.name} | ${runs} | ${count('start')} / ${count('between')} / ${count('end')} |`];
  });
  if (rows.length === 0) return [];
  return [
    'Synthetic phases, validated greedily inside the simulator on recorded tasks at the start, every few iterations and at the end (start -> end, %, by seed; the phase ends with the policy that validated best):',
    '',
    '| arm | validation | kept: start / in between / end |',
    '| --- | --- | ---: |',
    ...rows,
    '',
  ];
}

/** Learning curves (rollout success per iteration, mean over seeds) of the trained arms, as a small SVG. */
export function curvesSvg(r: ExperimentResult): string {
  const W = 720;
  const H = 360;
  const pad = { l: 50, r: 250, t: 30, b: 40 };
  const series = r.arms
    .filter((a) => a.seeds.some((s) => s.curve.length > 0))
    .map((a) => {
      const n = Math.max(...a.seeds.map((s) => s.curve.length));
      const ys = Array.from({ length: n }, (_, i) => meanOf(a.seeds.map((s) => s.curve[i]?.successRate).filter((x): x is number => x !== undefined)));
      return { name: a.name, ys };
    });
  const maxX = Math.max(1, ...series.map((s) => s.ys.length - 1));
  const x = (i: number): number => pad.l + ((W - pad.l - pad.r) * i) / maxX;
  const y = (v: number): number => pad.t + (H - pad.t - pad.b) * (1 - v);
  const colours = ['#1f77b4', '#ff7f0e', '#2ca02c', '#d62728', '#9467bd', '#8c564b', '#e377c2', '#7f7f7f', '#bcbd22', '#17becf'];
  const esc = (t: string): string => t.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
  const parts = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="sans-serif" font-size="12">`,
    `<rect width="${W}" height="${H}" fill="white"/>`,
    `<text x="${pad.l}" y="18">${esc(`${r.env}: rollout success per iteration (sft: expert-choice accuracy), mean of ${r.seeds.length} seeds`)}</text>`,
    `<line x1="${pad.l}" y1="${y(0)}" x2="${W - pad.r}" y2="${y(0)}" stroke="#444"/>`,
    `<line x1="${pad.l}" y1="${y(0)}" x2="${pad.l}" y2="${y(1)}" stroke="#444"/>`,
    ...[0, 0.25, 0.5, 0.75, 1].map((v) => `<text x="${pad.l - 8}" y="${y(v) + 4}" text-anchor="end">${(100 * v).toFixed(0)}%</text>`),
    `<text x="${(pad.l + W - pad.r) / 2}" y="${H - 10}" text-anchor="middle">iteration</text>`,
  ];
  series.forEach((s, k) => {
    const c = colours[k % colours.length] as string;
    const pts = s.ys.map((v, i) => `${x(i).toFixed(1)},${y(Number.isFinite(v) ? v : 0).toFixed(1)}`).join(' ');
    parts.push(`<polyline fill="none" stroke="${c}" stroke-width="2" points="${pts}"/>`);
    parts.push(`<text x="${W - pad.r + 10}" y="${pad.t + 16 * k + 10}" fill="${c}">${esc(s.name)}</text>`);
  });
  parts.push('</svg>', '');
  return parts.join('\n');
}
