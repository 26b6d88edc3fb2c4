/**
 * The training commands of the `dreamgym` CLI: `train`, `eval`, `runs`, `export` and
 * `experiment`, over the file-backed run store (./run-store.ts) and the training core in
 * src/train (the same loop the page runs).
 *
 * Rules every command here follows: arguments are checked, and output paths resolved, before
 * any work, and a bad one is one line on stderr with a non-zero exit that leaves the store as it
 * was; counts are plain decimal integers (`1e3`, `0x10` and `' 3'` are refused); files are
 * written atomically (devices, pipes and `-` straight through); SIGINT or SIGTERM stop a
 * long command cleanly (a training run stays resumable; exit 130 or 143) and a second one quits
 * at once.
 */
import { availableParallelism } from 'node:os';
import { mkdir, readFile, stat } from 'node:fs/promises';
import { dirname, isAbsolute, join, normalize, sep } from 'node:path';
import { Command, InvalidArgumentError, Option } from 'commander';
import { ENV_NAMES, type DomainName, type EnvName } from '../core/types.ts';
import { getEnvSpec, isBuiltinEnv } from '../envs/registry.ts';
import { chooseEnv, timeoutArg, type CommandEnv } from './env-module.ts';
import { LLMServerError } from '../llm/errors.ts';
import { HttpChatEngine } from '../llm/http-engine.ts';
import { LexicalPrior } from '../llm/prior.ts';
import { parseCheckpoint, CheckpointError, type Checkpoint } from '../policy/checkpoint.ts';
import { Featurizer } from '../policy/features.ts';
import { HashedEmbedder } from '../policy/hashed-embedder.ts';
import { Trainer } from '../rl/trainer.ts';
import { PolicyAgent } from '../train/agent.ts';
import { chatLine, trajectoryToChat } from '../train/chat.ts';
import { CLONING_MODES, groundingPhrase, MAX_RECORDED, NOISY_SOURCES, parseTrainingConfig, PRESETS, RECORDED_NOISE, RECORDED_SELECTION, RL_ALGORITHMS, TRAINING_MODES, TrainingConfigError, type CloningMode, type NoisySource, type PresetName, type RlAlgorithm, type TrainingConfig, type TrainingConfigInput } from '../train/config.ts';
import { evaluate, type EvalActor, type EvalResult, type Interval } from '../train/evaluate.ts';
import { EXPERIMENT_ARMS, experimentFiles, runExperiment, type ExperimentResult } from '../train/experiment.ts';
import { ExperimentWorkerPool } from './experiment-pool.ts';
import { runScaling, SCALING_ARMS, SCALING_BUDGET, SCALING_DOMAINS, SCALING_SIZES, ScalingError, writeScalingFiles, type ScalingResult } from './scaling.ts';
import { runSuite, SUITE_ARMS, SUITE_DOMAINS, SUITE_FIDELITY, suiteBudgetText, SuiteError, writeSuiteFiles, type SuiteResult } from './suite.ts';
import { plannedIterations, runTraining, TrainingAbortedError, TrainingSetupError, type RunSnapshot, type TrainingResult } from '../train/loop.ts';
import { keptPhrase } from '../train/validation.ts';
import { evaluationTasks, prepareRun, type AutoGrounding, type RunLLM } from '../train/setup.ts';
import { dataOnlySpec, evaluateSynthetic, planSeedData, rankSynthetic, SeedDataError, syntheticTrust, trustPhrase, type SeedDataPlan } from '../train/seed-data.ts';
import { recordedAgreement } from '../train/selection.ts';
import { RetrievalExperienceModel } from '../experience/retrieval/model.ts';
import type { ExperienceModel } from '../experience/types.ts';
import { parseJsonl } from '../core/jsonl.ts';
import { validateJsonl } from '../replay/jsonl-io.ts';
import { createProgress, type Progress } from './progress.ts';
import { openOutput, printable, resolveOutput, writeFileAtomic, writeOutput, type OutputTarget } from './output.ts';
import {
  DEFAULT_STORE_DIR,
  recordMetrics,
  RunStore,
  type RunRecord,
  type RunWriter,
  type StoredEvaluation,
} from './run-store.ts';
import { useFastestNodeBackend } from './tf-node.ts';

/** Ends the command with this exit code (and an optional one-line message on stderr). */
export class CliExit extends Error {
  override name = 'CliExit';
  constructor(
    readonly code: number,
    message = '',
  ) {
    super(message);
  }
}

/** A user error: one line, exit 1. */
export class CliUsageError extends Error {
  override name = 'CliUsageError';
}

type Out = (text: string) => void;

/** Node's fs error text without its own path. */
function fsReason(e: unknown): string {
  return e instanceof Error ? e.message.replace(/, \w+ '[^']*'$/, '') : String(e);
}

// ---------------------------------------------------------------------------------------------
// argument parsers

/** A plain decimal integer in [min, max] (no exponent, hex, sign games or spaces). */
export function countArg(min: number, max = 1_000_000_000): (value: string) => number {
  return (value: string) => {
    const n = /^\d+$/.test(value) ? Number(value) : Number.NaN;
    if (!Number.isSafeInteger(n) || n < min || n > max) {
      throw new InvalidArgumentError(`expected an integer from ${min} to ${max}, got ${JSON.stringify(value)}`);
    }
    return n;
  };
}

/** Comma-separated episode counts, each from 1 to {@link MAX_RECORDED}, each once. */
function sizeList(value: string): number[] {
  const parts = value.split(',').map((x) => x.trim());
  const sizes = parts.map((p) => {
    const n = /^\d+$/.test(p) ? Number(p) : Number.NaN;
    if (!Number.isSafeInteger(n) || n < 1 || n > MAX_RECORDED) throw new InvalidArgumentError(`expected comma-separated integers from 1 to ${MAX_RECORDED}, got ${JSON.stringify(p)} in ${JSON.stringify(value)}`);
    return n;
  });
  const twice = sizes.find((n, i) => sizes.indexOf(n) !== i);
  if (twice !== undefined) throw new InvalidArgumentError(`each size once, got ${twice} twice in ${JSON.stringify(value)}`);
  return sizes;
}

/** A plain decimal number (no exponent, hex or spaces) in [min, max]. */
function decimalArg(min: number, max: number): (value: string) => number {
  return (value: string) => {
    const n = /^\d+(?:\.\d+)?$/.test(value) ? Number(value) : Number.NaN;
    if (!Number.isFinite(n) || n < min || n > max) throw new InvalidArgumentError(`expected a number from ${min} to ${max}, got ${JSON.stringify(value)}`);
    return n;
  };
}

/** A seed: a plain decimal integer, possibly negative. */
export function seedArg(value: string): number {
  const n = /^-?\d+$/.test(value) ? Number(value) : Number.NaN;
  if (!Number.isSafeInteger(n)) throw new InvalidArgumentError(`expected an integer, got ${JSON.stringify(value)}`);
  return n;
}

// ---------------------------------------------------------------------------------------------
// signals

type StopReason = 'SIGINT' | 'SIGTERM' | 'stop-after';

/** Aborts `controller` on SIGINT/SIGTERM; a second signal quits at once after `onForce`. Returns the remover. */
function onStopSignals(controller: AbortController, err: Out, onForce: () => void): () => void {
  const handler = (signal: 'SIGINT' | 'SIGTERM'): void => {
    if (controller.signal.aborted) {
      onForce();
      process.exit(signal === 'SIGINT' ? 130 : 143);
    }
    controller.abort(signal);
    err(`\ndreamgym: ${signal}: stopping cleanly (again to quit at once)\n`);
  };
  const int = (): void => handler('SIGINT');
  const term = (): void => handler('SIGTERM');
  process.on('SIGINT', int);
  process.on('SIGTERM', term);
  return () => {
    process.off('SIGINT', int);
    process.off('SIGTERM', term);
  };
}

function exitCodeOf(reason: StopReason): number {
  return reason === 'SIGINT' ? 130 : reason === 'SIGTERM' ? 143 : 0;
}

// ---------------------------------------------------------------------------------------------
// formatting

const pct = (x: number): string => `${(100 * x).toFixed(1)}%`;
const interval = (i: Interval, f: (x: number) => string = pct): string => `${f(i.mean)} [${f(i.low)}, ${f(i.high)}]`;
const seconds = (ms: number): string => `${(ms / 1000).toFixed(1)} s`;

/** The summary JSON of a run (`train --out`): what run.json holds, under its own format name. */
function runSummary(record: RunRecord): Record<string, unknown> {
  const { format: _f, version: _v, ...rest } = record;
  return { format: 'dreamgym-train-summary', version: 1, runId: record.id, ...rest, wallMs: record.trainWallMs + record.evalWallMs };
}

function greedyActor(agent: PolicyAgent): EvalActor {
  return { choose: async (contexts) => (await agent.choose(contexts, { greedy: true })).map((c) => c.action) };
}

/** Evaluates `agent` on held-out test tasks with a progress bar on a terminal. */
async function evaluateHeldOut(agent: PolicyAgent, env: DomainName, episodes: number, signal: AbortSignal | undefined, iteration: number): Promise<StoredEvaluation> {
  const spec = getEnvSpec(env);
  const tasks = evaluationTasks(spec, episodes);
  const started = performance.now();
  const bar = createProgress(`${env} evaluate`, tasks.length);
  let result: EvalResult;
  try {
    result = await evaluate(greedyActor(agent), spec, tasks, { signal, onProgress: (done) => bar.update(done) });
  } finally {
    bar.stop();
  }
  return { ...result, iteration, wallMs: performance.now() - started };
}

// ---------------------------------------------------------------------------------------------
// train

/**
 * A data-only run's evaluation: greedy, on the held-out seed tasks (at most `episodes`), inside the
 * experience model (the run's LLM or grounded retrieval model, else a retrieval model grounded on
 * the same data). Stored with `environment: 'synthetic'`.
 */
async function evaluateInSimulation(agent: PolicyAgent, plan: SeedDataPlan, model: ExperienceModel | null, episodes: number, signal: AbortSignal | undefined, iteration: number): Promise<StoredEvaluation> {
  const started = performance.now();
  // The figure is judged by a grounded simulator whatever the run trained in, so it can say how much of it the data supports.
  const own = model !== null && !(model instanceof RetrievalExperienceModel && model.grounding === null) ? null : await RetrievalExperienceModel.fromTrajectories(plan.grounding.tasks, plan.grounding.trajectories, new HashedEmbedder({ dim: 256 }), { grounding: true });
  const tasks = plan.heldOut.slice(0, episodes);
  const bar = createProgress(`${plan.domain} evaluate (synthetic)`, tasks.length);
  try {
    const result = await evaluateSynthetic(greedyActor(agent), (own ?? model) as ExperienceModel, tasks, plan.heldOutStarts, {
      maxSteps: plan.maxSteps,
      onProgress: (done) => bar.update(done),
      ...(signal ? { signal } : {}),
    });
    const { grounding: _grounding, ...evaluation } = result;
    // The policy's replay of the same tasks' recorded successes: what the data, not the simulator, says of it.
    const evaluated = new Set(tasks.map((t) => t.id));
    const recorded = plan.heldOutRecorded.filter((e) => evaluated.has(e.taskId));
    const replay = recorded.length > 0 ? await recordedAgreement(greedyActor(agent), recorded) : null;
    return { ...evaluation, iteration, wallMs: performance.now() - started, environment: 'synthetic', trust: syntheticTrust(result, replay) };
  } finally {
    bar.stop();
    own?.dispose();
  }
}

/** The size options `train` and `experiment` share (most of them hidden). */
interface SizeOptions {
  iterations?: number;
  offlineEpisodes?: number;
  groupSize?: number;
  tasksPerIteration?: number;
  maxSteps?: number;
  sftEpochs?: number;
  embeddingScale?: number;
  repeatPenalty?: number;
  evalEpisodes?: number;
  validationTasks?: number;
  validationEvery?: number;
  validationCriterion?: 'recorded' | 'simulator';
  grounding?: 'calibrated' | 'auto' | 'off';
  recorded?: number;
  recordedNoise?: number;
  recordedSelection?: number;
  cloning?: CloningMode;
  taskVariants?: number;
  noisySource?: NoisySource;
}

/** Every size option once, in this order (the compiler checks the list against {@link SizeOptions}). */
const SIZE_OPTION_NAMES = Object.keys({
  iterations: 0, offlineEpisodes: 0, groupSize: 0, tasksPerIteration: 0, maxSteps: 0, sftEpochs: 0, embeddingScale: 0, repeatPenalty: 0, evalEpisodes: 0, validationTasks: 0, validationEvery: 0, validationCriterion: 0, grounding: 0, recorded: 0, recordedNoise: 0, recordedSelection: 0, cloning: 0, taskVariants: 0, noisySource: 0,
} satisfies Record<keyof SizeOptions, 0>) as (keyof SizeOptions)[];

/**
 * The configuration layers the size options give (defaults and presets fill the rest).
 * `sizedElsewhere`: the recorded log's size comes from elsewhere (the scaling experiment's sizes), so
 * its noise and selection share apply without `--recorded N`.
 */
function sizeOverrides(opts: SizeOptions, sizedElsewhere = false): Partial<TrainingConfigInput> {
  const o: Partial<TrainingConfigInput> = {};
  if (opts.iterations !== undefined) o.iterations = opts.iterations;
  if (opts.offlineEpisodes !== undefined) o.offline = { expertEpisodes: opts.offlineEpisodes, noisyEpisodes: opts.offlineEpisodes };
  const logged = opts.recorded !== undefined || sizedElsewhere;
  if (opts.recordedNoise !== undefined && !logged) throw new CliUsageError(`--recorded-noise ${opts.recordedNoise} is the noise of --recorded N's episodes: give --recorded N too`);
  if (opts.recordedSelection !== undefined && !logged) throw new CliUsageError(`--recorded-selection ${opts.recordedSelection} sets aside --recorded N's successes: give --recorded N too`);
  if (opts.noisySource !== undefined && logged) throw new CliUsageError(`--noisy-source ${opts.noisySource} picks who records the preset's noisy episodes; a --recorded log has none`);
  if (opts.recorded !== undefined) o.offline = { ...o.offline, recorded: opts.recorded };
  if (opts.noisySource !== undefined) o.offline = { ...o.offline, noisySource: opts.noisySource };
  if (opts.recordedNoise !== undefined) o.offline = { ...o.offline, recordedNoise: opts.recordedNoise };
  if (opts.recordedSelection !== undefined) o.offline = { ...o.offline, recordedSelection: opts.recordedSelection };
  if (opts.groupSize !== undefined) o.groupSize = opts.groupSize;
  if (opts.tasksPerIteration !== undefined) o.tasksPerIteration = opts.tasksPerIteration;
  if (opts.maxSteps !== undefined) o.maxSteps = opts.maxSteps;
  if (opts.sftEpochs !== undefined || opts.cloning !== undefined) o.sft = { ...(opts.sftEpochs !== undefined ? { epochs: opts.sftEpochs } : {}), ...(opts.cloning !== undefined ? { cloning: opts.cloning } : {}) };
  if (opts.embeddingScale !== undefined) o.policy = { embeddingScale: opts.embeddingScale };
  if (opts.taskVariants !== undefined) o.curriculum = { variants: opts.taskVariants };
  if (opts.repeatPenalty !== undefined) o.repeatPenalty = opts.repeatPenalty;
  if (opts.evalEpisodes !== undefined) o.evalEpisodes = opts.evalEpisodes;
  if (opts.grounding !== undefined) o.grounding = opts.grounding;
  if (opts.validationTasks !== undefined || opts.validationEvery !== undefined || opts.validationCriterion !== undefined) {
    o.validation = {
      ...(opts.validationTasks !== undefined ? { tasks: opts.validationTasks } : {}),
      ...(opts.validationEvery !== undefined ? { every: opts.validationEvery } : {}),
      ...(opts.validationCriterion !== undefined ? { criterion: opts.validationCriterion } : {}),
    };
  }
  return o;
}

interface TrainOptions extends SizeOptions {
  env?: EnvName;
  data?: string;
  envModule?: string;
  envTimeout?: number;
  mode?: TrainingConfig['mode'];
  warmStart?: 'none' | 'sft';
  algorithm?: RlAlgorithm;
  sim?: 'retrieval' | 'llm';
  preset: PresetName;
  seed?: number;
  store: string;
  out?: string;
  resume?: string;
  realBudget?: number;
  curriculum: boolean;
  prior?: 'uniform' | 'lexical' | 'llm';
  stopAfter?: number;
  replay: boolean;
  reasoning: boolean;
  llmUrl?: string;
  llmModel?: string;
}

/** Options that shape a run's config: not allowed with --resume (a run continues with its own). */
const CONFIG_OPTIONS: readonly (keyof TrainOptions)[] = [
  'env', 'mode', 'warmStart', 'algorithm', 'sim', 'preset', 'seed', 'realBudget', 'curriculum', 'prior', ...SIZE_OPTION_NAMES, 'replay', 'reasoning',
];

const flag = (name: string): string => (name === 'replay' || name === 'reasoning' ? `--no-${name}` : `--${name.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`);

/** Refuses LLM options that cannot apply, with why (a new run; `--resume` checks against the run's own config). */
function checkLlmOptions(opts: TrainOptions): void {
  if (opts.llmModel !== undefined && opts.llmUrl === undefined) throw new CliUsageError('--llm-model names a model of the server at --llm-url: give --llm-url URL too');
  if (opts.resume !== undefined) return;
  if (opts.replay === false && !(opts.sim === 'llm' && opts.llmUrl !== undefined)) {
    throw new CliUsageError('--no-replay applies to the LLM experience model (--sim llm with --llm-url: k = 0 retrieved real transitions in its prompt); the retrieval model here is its data');
  }
  if (opts.reasoning === false && !(opts.sim === 'llm' && opts.llmUrl !== undefined)) {
    throw new CliUsageError('--no-reasoning applies to the LLM experience model (--sim llm with --llm-url: no reasoning before its prediction); the retrieval model does not reason');
  }
  if (opts.llmUrl === undefined) {
    if (opts.sim === 'llm') throw new CliUsageError('--sim llm needs an LLM: give --llm-url URL of an OpenAI-compatible server (llama.cpp, Ollama, vLLM), or use the page (WebLLM on WebGPU), or --sim retrieval');
    if (opts.prior === 'llm') throw new CliUsageError('--prior llm needs an LLM: give --llm-url URL of an OpenAI-compatible server that returns logprobs (llama.cpp), or use the page, or --prior uniform or lexical');
  } else if (opts.sim !== 'llm' && opts.prior !== 'llm' && !opts.curriculum) {
    throw new CliUsageError('--llm-url serves --sim llm, --prior llm and the curriculum\'s task generator: with --no-curriculum and neither, nothing would use it');
  }
}

/**
 * Connects to the server at `url` before anything is written: one `GET /v1/models`, no retries.
 * Without `--llm-model`, a server that lists exactly one model gets that one named in requests.
 */
export async function connectLlm(url: string, model: string | undefined): Promise<RunLLM & { engine: HttpChatEngine }> {
  let engine: HttpChatEngine;
  try {
    engine = new HttpChatEngine(url);
  } catch (e) {
    throw new CliUsageError(`--llm-url: ${e instanceof Error ? e.message : String(e)}`);
  }
  let models: string[];
  try {
    models = await new HttpChatEngine(url, { maxRetries: 0, timeoutMs: 30_000 }).listModels();
  } catch (e) {
    if (e instanceof LLMServerError) throw new CliUsageError(`cannot use the LLM server: ${e.message}`);
    throw e;
  }
  const chosen = model ?? (models.length === 1 ? models[0] : undefined);
  return { engine, ...(chosen !== undefined ? { model: chosen } : {}) };
}

/** The run's configuration from the command line (defaults < preset < options). */
function configFromOptions(opts: TrainOptions, env: DomainName): TrainingConfig {
  if (!opts.mode) throw new CliUsageError(`--mode is required (${TRAINING_MODES.join(', ')}) unless --resume names a run`);
  const rl = opts.mode === 'real' || opts.mode === 'dreamgym' || opts.mode === 's2r';
  if (opts.warmStart === 'sft' && !rl) throw new CliUsageError(`--warm-start sft applies to the RL modes (real, dreamgym, s2r), not ${opts.mode}`);
  const input: TrainingConfigInput = { ...sizeOverrides(opts), env, mode: opts.mode, sim: opts.sim ?? 'retrieval' };
  if (opts.replay === false) input.demos = 0;
  if (opts.reasoning === false) input.reasoning = false;
  if (opts.warmStart !== undefined) input.warmStart = opts.warmStart;
  if (opts.algorithm !== undefined) {
    if (!rl) throw new CliUsageError(`--algorithm applies to the RL modes (real, dreamgym, s2r), not ${opts.mode}`);
    input.rl = { algorithm: opts.algorithm };
  }
  if (opts.prior !== undefined) input.prior = opts.prior;
  if (opts.seed !== undefined) input.seed = opts.seed;
  if (!opts.curriculum) input.curriculum = { ...input.curriculum, enabled: false };
  if (opts.realBudget !== undefined) {
    if (opts.mode === 's2r') input.s2r = { realBudget: opts.realBudget };
    else if (opts.mode === 'real') input.budgets = { realTransitions: opts.realBudget };
    else throw new CliUsageError(`--real-budget applies to the modes that use the real environment (real, s2r), not ${opts.mode}`);
  }
  try {
    return parseTrainingConfig(input, opts.preset);
  } catch (e) {
    if (e instanceof TrainingConfigError) throw new CliUsageError(e.message);
    throw e;
  }
}

async function trainCommand(opts: TrainOptions, command: Command, out: Out, err: Out): Promise<void> {
  // 1. Everything checked before anything is written.
  checkLlmOptions(opts);
  const store = new RunStore(opts.store);
  if (opts.data !== undefined && (opts.env !== undefined || opts.envModule !== undefined)) {
    throw new CliUsageError('--data trains on seed data alone, with no environment: drop --env/--env-module (or drop --data to use the environment)');
  }
  if (opts.resume === undefined && opts.env === undefined && opts.envModule === undefined && opts.data === undefined) {
    throw new CliUsageError('--env NAME (shop or household), --env-module PATH or --data FILE is required unless --resume names a run');
  }
  if (opts.data !== undefined && opts.recorded !== undefined) {
    throw new CliUsageError(`--recorded ${opts.recorded} records episodes in an environment: --data trains on the file's episodes alone; drop one of them`);
  }
  if (opts.data !== undefined && opts.noisySource !== undefined) {
    throw new CliUsageError(`--noisy-source ${opts.noisySource} records episodes in an environment: --data trains on the file's episodes alone; drop one of them`);
  }
  if (opts.data !== undefined && opts.mode !== undefined && (opts.mode === 'real' || opts.mode === 's2r')) {
    throw new CliUsageError(`--data trains purely in simulation: mode ${opts.mode} needs a real environment (use dreamgym, sft or zero-shot, or --env/--env-module)`);
  }
  if (opts.resume === undefined && !opts.mode) throw new CliUsageError(`--mode is required (${TRAINING_MODES.join(', ')}) unless --resume names a run`);
  let config: TrainingConfig | undefined;
  let expected: Awaited<ReturnType<RunStore['readSnapshot']>> = null;
  let llmModel = opts.llmModel;
  if (opts.resume !== undefined) {
    const given = CONFIG_OPTIONS.filter((k) => command.getOptionValueSource(k) === 'cli');
    if (given.length > 0) throw new CliUsageError(`--resume continues run ${opts.resume} with its own configuration: drop ${given.map(flag).join(', ')}`);
    const record = await store.readRecord(opts.resume);
    if (record.status === 'done') {
      const ev = record.evaluation;
      throw new CliUsageError(
        `run ${record.id} is already done (${record.iteration}/${record.totalIterations} iterations${ev ? `, held-out success ${interval(ev.success)}` : ''}): nothing to resume`,
      );
    }
    expected = await store.readSnapshot(opts.resume);
    if (expected?.rebuilt) throw new CliUsageError(`run ${record.id} was rebuilt after its snapshot.json was lost (${expected.rebuilt.at}): the curriculum's state it would continue from is gone, so it cannot be resumed; eval or export it, or train a new run`);
    config = expected?.snapshot.config ?? record.config;
    if (record.seedData !== undefined && opts.data === undefined) throw new CliUsageError(`run ${record.id} trained on seed data alone (${record.seedData.file}): resume it with --data FILE (the same data)`);
    if (record.seedData === undefined && opts.data !== undefined) throw new CliUsageError(`run ${record.id} did not train on seed data alone: drop --data`);
    // The module's path is not stored (a path can move): a run on a module needs it again.
    if (record.seedData === undefined && !isBuiltinEnv(config.env) && opts.envModule === undefined) {
      throw new CliUsageError(`run ${record.id} trained on the environment module ${JSON.stringify(config.env)}: resume it with --env-module PATH (the path is not stored)`);
    }
    if (isBuiltinEnv(config.env) && opts.envModule !== undefined) throw new CliUsageError(`run ${record.id} trained on the built-in ${config.env}: drop --env-module`);
    // The server's URL is not stored (see RunRecordSchema.llm): a run that used one needs it again.
    const usedLlm = record.llm !== undefined || config.sim === 'llm' || config.prior === 'llm';
    if (usedLlm && opts.llmUrl === undefined) {
      throw new CliUsageError(`run ${record.id} used an LLM server${record.llm?.model ? ` (model ${record.llm.model})` : ''}: resume it with --llm-url URL (the URL is not stored)`);
    }
    if (!usedLlm && opts.llmUrl !== undefined) throw new CliUsageError(`run ${record.id} did not use an LLM server: drop --llm-url`);
    const stored = record.llm?.model ?? undefined;
    if (stored !== undefined && llmModel !== undefined && llmModel !== stored) {
      throw new CliUsageError(`run ${record.id} used model ${stored}, not ${llmModel}: resume it with the same model (or drop --llm-model)`);
    }
    llmModel ??= stored;
  }
  // Seed data alone: read, checked and split before anything is written.
  if (opts.data !== undefined) {
    const seed = config?.seed ?? opts.seed ?? 0;
    const plan = await readSeedData(opts.data, seed);
    if (config === undefined) {
      // Generated tasks cannot be checked without an environment: no curriculum.
      // A file is a user's own log, of unknown quality: grounded as a recorded log is (`auto`).
      config = configFromOptions({ ...opts, curriculum: false, grounding: opts.grounding ?? 'auto' }, plan.domain);
    } else if (plan.domain !== config.env) {
      throw new CliUsageError(`run ${opts.resume} trained on ${JSON.stringify(config.env)} data, but ${opts.data} holds ${JSON.stringify(plan.domain)} data`);
    }
    await trainOnEnv(opts, out, err, store, config, expected, llmModel, { plan, file: opts.data });
    return;
  }
  // The environment: a module is loaded and its every export checked before anything is written.
  const commandEnv: CommandEnv =
    config !== undefined && opts.envModule === undefined
      ? { spec: getEnvSpec(config.env), modulePath: null, dispose: async () => {} }
      : chooseEnv({ env: opts.resume === undefined ? opts.env : undefined, envModule: opts.envModule, envTimeout: opts.envTimeout });
  try {
    if (config === undefined) {
      config = configFromOptions(opts, commandEnv.spec.name);
    } else if (commandEnv.spec.name !== config.env) {
      throw new CliUsageError(`run ${opts.resume} trained on ${JSON.stringify(config.env)}, but --env-module ${opts.envModule ?? ''} is ${JSON.stringify(commandEnv.spec.name)}`);
    }
    await trainOnEnv(opts, out, err, store, config, expected, llmModel, null);
  } finally {
    await commandEnv.dispose();
  }
}

/** Reads, validates (every line, as `validate` does) and splits a seed-data file; errors name what is missing. */
async function readSeedData(file: string, seed: number): Promise<SeedDataPlan> {
  let bytes: Uint8Array;
  try {
    bytes = await readFile(file);
  } catch (e) {
    throw new CliUsageError(`cannot read ${file}: ${fsReason(e)}`);
  }
  // The bytes go through validate's own decoder (strict UTF-8): what validate refuses, train refuses.
  await validateJsonl([bytes]);
  const data = parseJsonl(new TextDecoder('utf-8', { fatal: true }).decode(bytes));
  try {
    return planSeedData(data.tasks, data.trajectories, seed);
  } catch (e) {
    if (e instanceof SeedDataError) throw new CliUsageError(`${file}: ${e.message}; nothing written`);
    throw e;
  }
}

/** A data-only run's data. */
interface DataRun {
  plan: SeedDataPlan;
  file: string;
}

/** The rest of `train`, once the run's configuration and environment (or seed data) are settled. */
async function trainOnEnv(
  opts: TrainOptions,
  out: Out,
  err: Out,
  store: RunStore,
  config: TrainingConfig,
  expected: Awaited<ReturnType<RunStore['readSnapshot']>>,
  llmModel: string | undefined,
  dataRun: DataRun | null,
): Promise<void> {
  const total = plannedIterations(config);
  const done = expected?.snapshot.iteration ?? 0;
  if (opts.stopAfter !== undefined && opts.stopAfter <= done) {
    throw new CliUsageError(`--stop-after ${opts.stopAfter} is not after the run's ${done} completed iterations`);
  }
  const target = opts.out !== undefined ? await resolveOutput(opts.out, { inputs: [opts.data, opts.envModule], forbiddenDir: storeRuns(store) }) : null;

  // The LLM server answers before the run is created, or nothing is written.
  const llm = opts.llmUrl !== undefined ? await connectLlm(opts.llmUrl, llmModel) : null;

  // 2. The run's dependencies (offline data, experience model), then the run itself.
  await useFastestNodeBackend();
  let prepared;
  try {
    const data = dataRun ? { spec: dataOnlySpec(dataRun.plan.domain, dataRun.plan.maxSteps), offline: dataRun.plan.grounding, evalTasks: dataRun.plan.heldOut } : null;
    prepared = await prepareRun(config, { llm, data });
  } catch (e) {
    if (e instanceof TrainingSetupError) throw new CliUsageError(e.message);
    throw e;
  }
  let writer: RunWriter | undefined;
  let bar: Progress | undefined;
  const controller = new AbortController();
  let stopReason: StopReason | null = null;
  const removeSignals = onStopSignals(controller, err, () => {
    bar?.stop();
    writer?.releaseSync();
  });
  try {
    if (opts.resume !== undefined) {
      ({ writer } = await store.resume(opts.resume, expected));
    } else {
      writer = await store.create(config, total);
      if (dataRun) {
        const { heldOutTasks, heldOutTrajectories, groundingTasks, groundingTrajectories, groundingTransitions, selectionTasks } = dataRun.plan.counts;
        await writer.update({ seedData: { file: dataRun.file, groundingTasks, groundingTrajectories, groundingTransitions, heldOutTasks, heldOutTrajectories, ...(selectionTasks > 0 ? { selectionTasks } : {}) } });
      }
    }
    const w = writer;
    const resume = expected?.snapshot;
    err(
      `dreamgym: run ${w.id}: ${config.env} ${config.mode}${dataRun ? ' on seed data alone (evaluated in the synthetic environment)' : ''}, ${resume ? `resuming at iteration ${resume.iteration} of ${total}` : `${total} iterations`} (store ${opts.store})` +
        (llm ? `; LLM server ${llm.engine.server}${llm.model !== undefined ? `, model ${llm.model}` : ''}` : '') +
        autoGroundingLine(prepared.autoGrounding) +
        '\n',
    );
    await w.update({ status: 'running', totalIterations: total, error: undefined, ...(llm ? { llm: { model: llm.model ?? null } } : {}) });

    bar = total > 0 ? createProgress(`${config.env} ${config.mode}`, total) : undefined;
    bar?.update(resume?.iteration ?? 0);
    const deps = {
      ...prepared.deps,
      storeRollouts: (trajectories: Parameters<RunWriter['appendRollouts']>[0], tasks: Parameters<RunWriter['appendRollouts']>[1]) => w.appendRollouts(trajectories, tasks),
      persist: async (snapshot: RunSnapshot) => {
        await w.persist(snapshot);
        await w.update(progressFields(snapshot, w.record));
      },
    };
    let result: TrainingResult;
    try {
      result = await runTraining(config, deps, {
        signal: controller.signal,
        resume,
        onProgress: (p) => {
          if (p.validating) {
            bar?.update(p.iteration, `(validating in the simulator: ${p.validating.done}/${p.validating.total})`);
            return;
          }
          if (!p.metrics) return;
          bar?.update(p.iteration);
          if (opts.stopAfter !== undefined && p.iteration >= opts.stopAfter && p.iteration < p.totalIterations && !controller.signal.aborted) {
            controller.abort('stop-after');
          }
        },
      });
    } finally {
      bar?.stop();
      bar = undefined;
    }
    try {
      // The final state is the resume point too (a zero-shot run has no iteration that saved one).
      await w.persist(result.snapshot);
      await w.update({ ...progressFields(result.snapshot, w.record), offlineTransitions: result.offlineTransitions, stoppedBy: result.stoppedBy });

      // 3. Held-out evaluation, greedy: in the real environment, or (seed data alone) in the synthetic one.
      const evaluation = dataRun
        ? await evaluateInSimulation(result.agent, dataRun.plan, prepared.deps.experience ?? null, config.evalEpisodes, controller.signal, result.snapshot.iteration)
        : await evaluateHeldOut(result.agent, config.env, config.evalEpisodes, controller.signal, result.snapshot.iteration);
      await w.update({ status: 'done', evaluation, evalWallMs: evaluation.wallMs });
    } finally {
      result.trainer.dispose();
    }
    const record = w.record;
    if (target) await writeOutput(target, `${JSON.stringify(runSummary(record), null, 2)}\n`);
    (target?.kind === 'stdout' ? err : out)(`${oneLineSummary(record)}\n`);
  } catch (e) {
    const aborted = controller.signal.aborted && (e instanceof TrainingAbortedError || isAbortError(e) || e === controller.signal.reason);
    if (aborted) stopReason = controller.signal.reason as StopReason;
    if (writer && writer.record.status !== 'done') {
      if (stopReason) {
        await writer.update({ status: 'stopped' }).catch(() => {});
      } else {
        await writer.update({ status: 'failed', error: e instanceof Error ? e.message : String(e) }).catch(() => {});
      }
    }
    if (!stopReason || !writer) throw e;
    const message =
      `stopped${stopReason === 'stop-after' ? ' (--stop-after)' : ` (${stopReason})`} after iteration ${writer.record.iteration} of ${writer.record.totalIterations}; ` +
      `resume with: npx dreamgym train --store ${shellWord(opts.store)} --resume ${writer.id}` +
      (opts.data !== undefined ? ` --data ${shellWord(opts.data)}` : opts.envModule !== undefined ? ` --env-module ${shellWord(opts.envModule)}` : '');
    if (stopReason === 'stop-after') out(`${message}\n`);
    else throw new CliExit(exitCodeOf(stopReason), `dreamgym: ${message}`);
  } finally {
    removeSignals();
    bar?.stop();
    prepared.dispose();
    await writer?.release();
  }
}

/** The store's runs/ as a place no `--out` may write into. */
function storeRuns(store: RunStore): { path: string; what: string } {
  return { path: store.runsDir, what: `the run store ${store.root}` };
}

/** A word as a POSIX shell reads it back (quoted when it has to be). */
function shellWord(word: string): string {
  return /^[A-Za-z0-9_./:=@%+-]+$/.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`;
}

function isAbortError(e: unknown): boolean {
  return (e instanceof Error || e instanceof DOMException) && e.name === 'AbortError';
}

/** The header's note on what `grounding: 'auto'` decided (empty for another mode). */
export function autoGroundingLine(auto: AutoGrounding | null): string {
  return auto === null ? '' : `; ${groundingPhrase({ mode: 'auto', ...auto })}`;
}

/** The record fields that follow a snapshot. */
function progressFields(snapshot: RunSnapshot, record: RunRecord): Partial<RunRecord> {
  return {
    iteration: snapshot.iteration,
    metrics: snapshot.metrics as unknown as RunRecord['metrics'],
    realTransitions: snapshot.realTransitions,
    realResets: snapshot.realResets,
    syntheticSteps: snapshot.syntheticSteps,
    trainWallMs: snapshot.wallMs,
    offlineTransitions: snapshot.metrics.at(-1)?.offlineTransitions ?? record.offlineTransitions,
    ...(snapshot.validation ? { validation: snapshot.validation } : {}),
  };
}

/** `, simulator validation 96.0% -> 90.0% on 50 recorded tasks (kept the start)`, or `(kept iteration 30: 76.0%)` */
function validationSummary(record: RunRecord): string {
  const v = record.validation;
  if (!v || v.end === undefined) return '';
  const kept = keptPhrase(v, pct);
  const [first, last] = [v.checks?.[0]?.replayed, v.checks?.at(-1)?.replayed];
  const replay = first !== undefined && last !== undefined && v.recorded ? `, replaying ${pct(first)} -> ${pct(last)} of ${v.recorded} held-out recorded successes` : '';
  return `, simulator validation ${pct(v.start)} -> ${pct(v.end)} on ${v.tasks} recorded tasks${replay}${kept ? ` (${kept})` : ''}`;
}

/** `, the curriculum generated no task` when it was on through RL iterations and its pool never held a generated task. */
function curriculumSummary(record: RunRecord): string {
  const rl = recordMetrics(record).filter((m) => m.phase !== 'sft');
  return record.config.curriculum.enabled && rl.length > 0 && rl.every((m) => m.generatedTasks === 0) ? ', the curriculum generated no task' : '';
}

/** The mode, with `+sft` when an RL mode was warm-started. */
function modeLabel(c: TrainingConfig): string {
  const rl = c.mode === 'real' || c.mode === 'dreamgym' || c.mode === 's2r';
  return `${c.mode}${rl && c.warmStart === 'sft' ? '+sft' : ''}`;
}

/** `shop dreamgym: success 42.0% [31.0%, 53.0%] on 50 held-out tasks, ...` */
function oneLineSummary(record: RunRecord): string {
  const ev = record.evaluation;
  const c = record.config;
  const d = record.seedData;
  if (d !== undefined) {
    // A data-only run: the success rate is the experience model's verdict, never a real one.
    return (
      `${c.env} ${modeLabel(c)} on seed data alone (no environment): ` +
      (ev ? `SYNTHETIC success ${interval(ev.success)} (95% CI) on ${ev.episodes} held-out seed tasks in the synthetic environment (not a real success rate), mean reward ${ev.meanReward.toFixed(3)}, ${ev.trust ? `${trustPhrase(ev.trust)}, ` : ''}` : 'not evaluated, ') +
      `grounded on ${d.groundingTasks} tasks (${d.groundingTrajectories} trajectories, ${d.groundingTransitions} transitions) of ${d.file}, ${d.selectionTasks ? `${d.selectionTasks} tasks' recorded successes held out for model selection, ` : ''}${d.heldOutTasks} tasks (${d.heldOutTrajectories} trajectories) held out, ` +
      `real transitions ${record.realTransitions}, ${record.iteration} iteration${record.iteration === 1 ? '' : 's'}, no curriculum, wall ${seconds(record.trainWallMs + record.evalWallMs)}, run ${record.id}`
    );
  }
  return (
    `${c.env} ${modeLabel(c)}: ` +
    (ev ? `success ${interval(ev.success)} (95% CI) on ${ev.episodes} held-out tasks, mean reward ${ev.meanReward.toFixed(3)}, ` : 'not evaluated, ') +
    `real transitions ${record.realTransitions}, offline transitions ${record.offlineTransitions}, ` +
    `${record.iteration} iteration${record.iteration === 1 ? '' : 's'}` +
    (record.stoppedBy === 'real-budget' ? ' (stopped by the real budget)' : record.stoppedBy === 'wall-budget' ? ' (stopped by the wall-time budget)' : '') +
    validationSummary(record) +
    curriculumSummary(record) +
    `, wall ${seconds(record.trainWallMs + record.evalWallMs)}, run ${record.id}`
  );
}

// ---------------------------------------------------------------------------------------------
// eval

interface EvalOptions {
  store: string;
  run?: string;
  checkpoint?: string;
  env?: DomainName;
  envModule?: string;
  envTimeout?: number;
  episodes?: number;
  prior: 'uniform' | 'lexical';
  embeddingScale?: number;
  repeatPenalty?: number;
  json?: boolean;
}

/** The hashed-embedding featurizer that produces a checkpoint's input widths (as `prepareRun` builds it). */
function featurizerFor(checkpoint: Checkpoint, embeddingDim: number | null, embeddingScale: number | undefined, what: string): Featurizer {
  const policy = (checkpoint.config as { policy?: { stateDim?: unknown; actionDim?: unknown } }).policy;
  const stateDim = typeof policy?.stateDim === 'number' ? policy.stateDim : NaN;
  const actionDim = typeof policy?.actionDim === 'number' ? policy.actionDim : NaN;
  // The default layout has stateDim = 2D + F and actionDim = D + F for an embedding width D.
  const dim = embeddingDim ?? stateDim - actionDim;
  if (!(Number.isInteger(dim) && dim >= 1)) throw new CliUsageError(`${what}: cannot tell the embedding width from its state/action widths ${stateDim}/${actionDim}`);
  const featurizer = new Featurizer(new HashedEmbedder({ dim }), embeddingScale === undefined ? {} : { embeddingScale });
  if (featurizer.stateDim !== stateDim || featurizer.actionDim !== actionDim) {
    throw new CliUsageError(
      `${what} expects state/action features of width ${stateDim}/${actionDim}, but the hashed-embedding featurizer gives ` +
        `${featurizer.stateDim}/${featurizer.actionDim} (trained with another embedder or an older feature layout)`,
    );
  }
  return featurizer;
}

async function evalCommand(opts: EvalOptions, command: Command, out: Out): Promise<void> {
  if ((opts.run === undefined) === (opts.checkpoint === undefined)) throw new CliUsageError('eval needs either --run ID (with --store) or --checkpoint FILE (with --env or --env-module)');
  if (opts.envModule === undefined) return evalOnEnv(opts, command, out, null);
  if (opts.env !== undefined) throw new CliUsageError('give either --env NAME or --env-module PATH, not both');
  const env = chooseEnv({ envModule: opts.envModule, envTimeout: opts.envTimeout });
  try {
    await evalOnEnv(opts, command, out, env.spec.name);
  } finally {
    await env.dispose();
  }
}

/** `eval` once a module (named `moduleEnv`), if any, is loaded. */
async function evalOnEnv(opts: EvalOptions, command: Command, out: Out, moduleEnv: DomainName | null): Promise<void> {
  let checkpoint: Checkpoint;
  let env: DomainName;
  let featurizer: Featurizer;
  let prior: 'uniform' | 'lexical' | 'llm';
  let repeatPenalty: number | undefined;
  let label: string;
  let episodes: number;
  let iteration: number;
  if (opts.run !== undefined) {
    if (command.getOptionValueSource('prior') === 'cli') throw new CliUsageError(`--prior comes from run ${opts.run}'s configuration: drop it`);
    const store = new RunStore(opts.store);
    const record = await store.readRecord(opts.run);
    // A run on seed data alone names no environment; one given for its domain evaluates it for real.
    const named = opts.env ?? moduleEnv;
    if (record.seedData !== undefined && (named === undefined || named === null)) {
      throw new CliUsageError(
        `run ${record.id} trained on seed data alone: there is no environment to evaluate it in (its synthetic evaluation is in its run.json); ` +
          `give --env-module PATH (or --env NAME) of its domain ${JSON.stringify(record.config.env)} to evaluate it in a real one`,
      );
    }
    if (record.seedData === undefined && opts.env !== undefined) throw new CliUsageError(`--env comes from run ${opts.run}'s configuration: drop it`);
    if (record.seedData !== undefined && opts.env !== undefined && opts.env !== record.config.env) throw new CliUsageError(`run ${record.id} trained on ${JSON.stringify(record.config.env)} data, not ${JSON.stringify(opts.env)}`);
    const saved = await store.readSnapshot(opts.run);
    if (!saved) throw new CliUsageError(`run ${record.id} has no checkpoint yet (no completed iteration): nothing to evaluate`);
    checkpoint = saved.snapshot.checkpoint;
    env = record.config.env;
    if (moduleEnv !== null && moduleEnv !== env) throw new CliUsageError(`run ${record.id} trained on ${JSON.stringify(env)}, but --env-module ${opts.envModule ?? ''} is ${JSON.stringify(moduleEnv)}`);
    prior = record.config.prior;
    if (opts.repeatPenalty !== undefined) throw new CliUsageError(`--repeat-penalty comes from run ${opts.run}'s configuration: drop it`);
    repeatPenalty = record.config.repeatPenalty;
    if (opts.embeddingScale !== undefined) throw new CliUsageError(`--embedding-scale comes from run ${opts.run}'s configuration: drop it`);
    featurizer = featurizerFor(checkpoint, record.config.policy.embeddingDim, record.config.policy.embeddingScale, `run ${record.id}'s checkpoint`);
    label = `run ${record.id} (${modeLabel(record.config)}, iteration ${saved.snapshot.iteration}/${record.totalIterations}, ${record.status})`;
    episodes = opts.episodes ?? record.config.evalEpisodes;
    iteration = saved.snapshot.iteration;
  } else {
    const chosen = opts.env ?? moduleEnv;
    if (chosen === undefined || chosen === null) throw new CliUsageError('--checkpoint needs --env (shop or household) or --env-module PATH: a checkpoint does not say which environment it was trained in');
    const file = opts.checkpoint as string;
    let bytes: Uint8Array;
    try {
      bytes = new Uint8Array(await readFile(file));
    } catch (e) {
      throw new CliUsageError(`cannot read ${file}: ${fsReason(e)}`);
    }
    try {
      checkpoint = parseCheckpoint(bytes);
    } catch (e) {
      throw new CliUsageError(`${file}: ${e instanceof CheckpointError ? e.message : String(e)}`);
    }
    if (checkpoint.env !== undefined && checkpoint.env !== chosen) {
      throw new CliUsageError(`${file} is a policy trained in ${JSON.stringify(checkpoint.env)}, not ${JSON.stringify(chosen)}: evaluate it with ${isBuiltinEnv(checkpoint.env) ? `--env ${checkpoint.env}` : 'the --env-module of that environment'}`);
    }
    env = chosen;
    prior = opts.prior;
    repeatPenalty = opts.repeatPenalty;
    featurizer = featurizerFor(checkpoint, null, opts.embeddingScale, file);
    label = `checkpoint ${file} (update ${checkpoint.iteration})`;
    episodes = opts.episodes ?? 100;
    iteration = checkpoint.iteration;
  }
  await useFastestNodeBackend();
  let trainer: Trainer;
  try {
    trainer = Trainer.fromCheckpoint(checkpoint);
  } catch (e) {
    throw new CliUsageError(`${label}: ${e instanceof Error ? e.message : String(e)}`);
  }
  const controller = new AbortController();
  const removeSignals = onStopSignals(controller, () => {}, () => {});
  try {
    const agent = new PolicyAgent(trainer, featurizer, prior === 'lexical' ? new LexicalPrior(repeatPenalty === undefined ? {} : { repeatPenalty }) : null);
    let evaluation: StoredEvaluation;
    try {
      evaluation = await evaluateHeldOut(agent, env, episodes, controller.signal, iteration);
    } catch (e) {
      if (controller.signal.aborted) throw new CliExit(exitCodeOf(controller.signal.reason as StopReason), 'dreamgym: evaluation stopped');
      throw e;
    }
    if (opts.json) {
      out(`${JSON.stringify({ env, source: label, ...evaluation }, null, 2)}\n`);
    } else {
      out(
        `${env} ${label}: success ${interval(evaluation.success)}, mean reward ${interval(evaluation.reward, (x) => x.toFixed(3))} ` +
          `(95% CI) on ${evaluation.episodes} held-out tasks, ${evaluation.realSteps} real steps, wall ${seconds(evaluation.wallMs)}\n`,
      );
    }
  } finally {
    removeSignals();
    trainer.dispose();
  }
}

// ---------------------------------------------------------------------------------------------
// runs

async function runsCommand(opts: { store: string; json?: boolean }, out: Out): Promise<void> {
  const store = new RunStore(opts.store);
  const listing = await store.list();
  if (opts.json) {
    const rows: Record<string, unknown>[] = [];
    for (const l of listing) {
      const r = l.record;
      if (!r) {
        rows.push({ id: l.id, status: 'corrupt', problem: l.problem });
        continue;
      }
      rows.push({
        id: r.id,
        env: r.config.env,
        mode: r.config.mode,
        warmStart: r.config.warmStart,
        status: r.status === 'running' && !(await store.isActive(r.id)) ? 'interrupted' : r.status,
        iteration: r.iteration,
        totalIterations: r.totalIterations,
        success: r.evaluation?.success ?? null,
        evaluatedIn: r.evaluation ? (r.evaluation.environment ?? 'real') : null,
        ...(r.evaluation?.trust ? { trust: r.evaluation.trust } : {}),
        realTransitions: r.realTransitions,
        created: r.created,
      });
    }
    out(`${JSON.stringify(rows, null, 2)}\n`);
    return;
  }
  if (listing.length === 0) {
    out(`no runs in ${opts.store}\n`);
    return;
  }
  const rows = [['id', 'env', 'mode', 'status', 'iterations', 'held-out success (95% CI)']];
  for (const l of listing) {
    if (!l.record) {
      rows.push([l.id, '-', '-', 'corrupt', '-', l.problem]);
      continue;
    }
    const r = l.record;
    const status = r.status === 'running' && !(await store.isActive(r.id)) ? 'interrupted' : r.status;
    rows.push([r.id, r.config.env, modeLabel(r.config), status, `${r.iteration}/${r.totalIterations}`, r.evaluation ? `${interval(r.evaluation.success)}${r.evaluation.environment === 'synthetic' ? ' (synthetic)' : ''}` : '-']);
  }
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((row) => (row[i] ?? '').length)));
  out(rows.map((row) => row.map((cell, i) => (i === row.length - 1 ? cell : cell.padEnd(widths[i]!))).join('  ')).join('\n') + '\n');
  out(dataOnlyRanking(listing.flatMap((l) => (l.record ? [l.record] : []))));
}

/**
 * What the synthetic evaluations of data-only runs on the same data can rank: for each data file
 * with two or more evaluated runs, their order by replay estimate and what cannot be ranked.
 */
export function dataOnlyRanking(records: readonly RunRecord[]): string {
  const byData = new Map<string, RunRecord[]>();
  for (const r of records) {
    if (r.seedData === undefined || r.evaluation?.trust === undefined) continue;
    const key = `${r.config.env} ${r.seedData.file}`;
    byData.set(key, [...(byData.get(key) ?? []), r]);
  }
  let text = '';
  for (const [key, runs] of byData) {
    if (runs.length < 2) continue;
    const { order, cannot } = rankSynthetic(runs.map((r) => ({ id: r.id, trust: r.evaluation?.trust as NonNullable<StoredEvaluation['trust']> })));
    text += `data-only runs on ${key}: never ranked by their SYNTHETIC success; by recorded replay: ${order.length > 0 ? order.join(' > ') : 'none placed'}`;
    text += cannot.length > 0 ? `; cannot rank ${cannot.join('; ')}\n` : '\n';
  }
  return text;
}

// ---------------------------------------------------------------------------------------------
// export

interface ExportOptions {
  store: string;
  run: string;
  format: 'jsonl' | 'chat';
  out: string;
  skipBad?: boolean;
  envModule?: string;
  envTimeout?: number;
}

/**
 * The declared description of a run's environment `env`, for the chat system message: a built-in
 * one's, or that of the module `--env-module` loads (whose name must be `env`); none otherwise.
 */
async function exportDescription(opts: ExportOptions, runId: string, env: DomainName): Promise<string | undefined> {
  if (opts.envModule === undefined) return isBuiltinEnv(env) ? getEnvSpec(env).description : undefined;
  if (opts.format !== 'chat') throw new CliUsageError('--env-module is for --format chat only (its description opens each conversation)');
  if (isBuiltinEnv(env)) throw new CliUsageError(`run ${runId} trained on the built-in ${env}: drop --env-module`);
  const loaded = chooseEnv({ envModule: opts.envModule, envTimeout: opts.envTimeout });
  try {
    if (loaded.spec.name !== env) throw new CliUsageError(`run ${runId} trained on ${JSON.stringify(env)}, but --env-module ${opts.envModule} is ${JSON.stringify(loaded.spec.name)}`);
    return loaded.spec.description;
  } finally {
    await loaded.dispose();
  }
}

async function exportCommand(opts: ExportOptions, out: Out, err: Out): Promise<void> {
  const store = new RunStore(opts.store);
  const record = await store.readRecord(opts.run);
  await store.readSnapshot(opts.run);
  const description = await exportDescription(opts, record.id, record.config.env);
  const target: OutputTarget = await resolveOutput(opts.out, { forbiddenDir: storeRuns(store) });
  const writer = await openOutput(target);
  const tasks = new Map<string, Parameters<typeof trajectoryToChat>[0]>();
  let nTasks = 0;
  let nTrajectories = 0;
  let skipped = 0;
  const bad: string[] = [];
  const controller = new AbortController();
  const removeSignals = onStopSignals(controller, () => {}, () => {});
  try {
    let chunk = '';
    const flush = async (): Promise<void> => {
      if (chunk.length > 0) await writer.write(chunk);
      chunk = '';
    };
    for await (const record of store.rollouts(opts.run, opts.skipBad ? { onBad: (problem) => bad.push(problem) } : {})) {
      if (controller.signal.aborted) throw new CliExit(exitCodeOf(controller.signal.reason as StopReason), 'dreamgym: export stopped; nothing written');
      if (record.type === 'task') {
        if (opts.format === 'jsonl') chunk += `${JSON.stringify(record)}\n`;
        else tasks.set(record.task.id, record.task);
        nTasks++;
      } else {
        // A trajectory without steps (an episode whose first state admitted no action) holds no transition.
        if (record.trajectory.steps.length === 0) {
          skipped++;
          continue;
        }
        if (opts.format === 'jsonl') chunk += `${JSON.stringify(record)}\n`;
        else chunk += `${chatLine(trajectoryToChat(tasks.get(record.trajectory.taskId)!, record.trajectory, { description }))}\n`;
        nTrajectories++;
      }
      if (chunk.length >= 1 << 16) await flush();
    }
    await flush();
    await writer.commit();
  } catch (e) {
    await writer.abort();
    throw e;
  } finally {
    removeSignals();
  }
  const line =
    `exported run ${opts.run}: ${opts.format === 'jsonl' ? `${nTasks} tasks, ` : ''}${nTrajectories} trajectories as ${opts.format} to ${opts.out}` +
    (skipped > 0 ? ` (skipped ${skipped} without steps)` : '') +
    (bad.length > 0 ? `; left out ${bad.length} bad line${bad.length === 1 ? '' : 's'} of rollouts.jsonl (--skip-bad)` : '');
  // Each line left out, so that the report says what is missing (on stderr: stdout may be the data).
  for (const problem of bad.slice(0, 50)) err(`dreamgym: export: skipped ${printable(problem)}\n`);
  if (bad.length > 50) err(`dreamgym: export: and ${bad.length - 50} more lines skipped\n`);
  (target.kind === 'stdout' ? err : out)(`${line}\n`);
}

// ---------------------------------------------------------------------------------------------
// experiment (runExperiment and experimentFiles: src/train/experiment.ts)

/** A file name from `experimentFiles`, as a path inside the output directory (no absolute paths, no `..`). */
function experimentFilePath(dir: string, name: string): string {
  const clean = normalize(name);
  if (name === '' || isAbsolute(name) || clean === '.' || clean.split(sep).includes('..') || clean.split('/').includes('..')) {
    throw new Error(`experiment produced a file name that is not a path inside the output directory: ${JSON.stringify(name)}`);
  }
  return join(dir, clean);
}

/** Default `--jobs`: one per core the process may use (tfjs's wasm backend uses one core per thread). */
function defaultJobs(): number {
  return Math.max(1, availableParallelism());
}

interface ExperimentCliOptions extends SizeOptions {
  env?: EnvName;
  /** Repeatable with --suite; one path otherwise. */
  envModule?: string[];
  envTimeout?: number;
  suite?: boolean;
  scaling?: boolean;
  recordedSizes?: number[];
  domains?: string[];
  fidelityEpisodes?: number;
  seeds: number;
  preset: PresetName;
  out: string;
  arm?: string[];
  trainEvalEpisodes?: number;
  jobs: number;
  probeValidation?: boolean;
}

/** The command line that reproduces an experiment's figures: every option that shapes them (not --out or --jobs). */
function experimentCommandLine(opts: Omit<ExperimentCliOptions, 'out' | 'jobs'>): string {
  const where = opts.envModule?.[0] !== undefined ? `--env-module ${shellWord(opts.envModule[0])}` : `--env ${opts.env ?? ''}`;
  const parts = ['npx dreamgym experiment', where, `--seeds ${opts.seeds}`, `--preset ${opts.preset}`];
  for (const arm of opts.arm ?? []) parts.push(`--arm ${JSON.stringify(arm)}`);
  parts.push(...sizeFlags(opts));
  if (opts.probeValidation) parts.push('--probe-validation');
  return parts.join(' ');
}

async function experimentCommand(opts: ExperimentCliOptions, out: Out, err: Out): Promise<void> {
  const known = EXPERIMENT_ARMS.map((a) => a.name);
  const unknown = (opts.arm ?? []).filter((a) => !known.includes(a));
  if (unknown.length > 0) throw new CliUsageError(`unknown arm ${JSON.stringify(unknown[0])}: the arms are ${known.map((a) => JSON.stringify(a)).join(', ')}`);
  if (opts.scaling) {
    if (opts.suite) throw new CliUsageError('--scaling and --suite are two experiments: give one');
    if (opts.env !== undefined || opts.arm !== undefined) throw new CliUsageError(`--scaling runs the arms ${SCALING_ARMS.map((a) => JSON.stringify(a)).join(', ')} on its domains: drop --env and --arm (--domains picks domains, --env-module adds yours)`);
    if (opts.recorded !== undefined) throw new CliUsageError(`--scaling runs every size of --recorded-sizes: drop --recorded ${opts.recorded}`);
    if (opts.fidelityEpisodes !== undefined) throw new CliUsageError('--fidelity-episodes applies to --suite');
    await ensureOutputDir(opts.out);
    await resolveOutput(join(opts.out, 'scaling.json'));
    await runScalingCommand({ ...opts, sizes: sizeOverrides(opts, true), sizeFlags: sizeFlags(opts) }, out, err);
    return;
  }
  if (opts.recordedSizes !== undefined) throw new CliUsageError('--recorded-sizes applies to --scaling: add --scaling (or give one size with --recorded N)');
  if (opts.suite) {
    if (opts.env !== undefined || opts.arm !== undefined) throw new CliUsageError('--suite runs every domain of the suite on its own arms: drop --env and --arm (--domains picks domains, --env-module adds yours)');
    await ensureOutputDir(opts.out);
    await resolveOutput(join(opts.out, 'suite.json'));
    await runSuiteCommand({ ...opts, sizes: sizeOverrides(opts), sizeFlags: sizeFlags(opts) }, out, err);
    return;
  }
  if (opts.domains !== undefined || opts.fidelityEpisodes !== undefined) throw new CliUsageError(`${opts.domains !== undefined ? '--domains' : '--fidelity-episodes'} applies to --suite: add --suite${opts.domains !== undefined ? ' (or --scaling)' : ''}`);
  if (opts.envModule === undefined && opts.env === undefined) throw new CliUsageError('--env NAME (shop or household), --env-module PATH or --suite is required');
  if ((opts.envModule ?? []).length > 1) throw new CliUsageError('give one --env-module PATH (several add domains to --suite only)');
  const commandEnv = chooseEnv({ env: opts.env, envModule: opts.envModule?.[0], envTimeout: opts.envTimeout });
  try {
    if (commandEnv.modulePath !== null && (opts.arm ?? []).includes(EXPERIMENT_ARMS[0]?.name ?? '')) throw new CliUsageError(`the arm ${JSON.stringify(EXPERIMENT_ARMS[0]?.name)} exists for the built-in domains only`);
    await experimentOnEnv(opts, commandEnv, out, err);
  } finally {
    await commandEnv.dispose();
  }
}

/** `experiment --suite`: runs the domain suite (./suite.ts) and writes suite.md and suite.json into `--out`. */
async function runSuiteCommand(opts: ExperimentCliOptions & { sizes: Partial<TrainingConfigInput>; sizeFlags: string[] }, out: Out, err: Out): Promise<void> {
  const words = ['npx dreamgym experiment --suite'];
  if (opts.domains !== undefined) words.push(`--domains ${opts.domains.join(',')}`);
  for (const m of opts.envModule ?? []) words.push(`--env-module ${shellWord(m)}`);
  words.push(`--seeds ${opts.seeds}`, `--preset ${opts.preset}`, ...opts.sizeFlags);
  if (opts.fidelityEpisodes !== undefined) words.push(`--fidelity-episodes ${opts.fidelityEpisodes}`);
  if (opts.probeValidation) words.push('--probe-validation');
  const controller = new AbortController();
  const removeSignals = onStopSignals(controller, err, () => {});
  let result: SuiteResult;
  try {
    result = await runSuite({
      ...(opts.domains !== undefined ? { domains: opts.domains } : {}),
      ...(opts.envModule !== undefined ? { extraModules: opts.envModule } : {}),
      seeds: opts.seeds,
      preset: opts.preset,
      jobs: opts.jobs,
      sizes: opts.sizes,
      ...(opts.trainEvalEpisodes !== undefined ? { trainEvalEpisodes: opts.trainEvalEpisodes } : {}),
      ...(opts.envTimeout !== undefined ? { envTimeoutMs: opts.envTimeout } : {}),
      ...(opts.probeValidation ? { probeValidation: true } : {}),
      ...(opts.fidelityEpisodes !== undefined ? { fidelity: { trainEpisodes: opts.fidelityEpisodes, testEpisodes: Math.round(opts.fidelityEpisodes / 4), falseSuccessEpisodes: Math.round(opts.fidelityEpisodes / 4) } } : {}),
      command: words.join(' '),
      signal: controller.signal,
      onProgress: (text) => err(`dreamgym: ${text.replace(/[\x00-\x1f\x7f]+/g, ' ')}\n`),
    });
  } catch (e) {
    if (e instanceof SuiteError) throw new CliUsageError(`${e.message}; nothing written`);
    if (controller.signal.aborted) throw new CliExit(exitCodeOf(controller.signal.reason as StopReason), 'dreamgym: suite stopped; nothing written');
    throw e;
  } finally {
    removeSignals();
  }
  const names = await writeSuiteFiles(opts.out, result);
  out(`suite: ${result.domains.map((d) => d.name).join(', ')}; ${opts.seeds} seeds, preset ${opts.preset}, wall ${seconds(result.wallMs)}; wrote ${names.join(', ')} to ${opts.out}\n`);
}

/** `experiment --scaling`: runs the data-scaling experiment (./scaling.ts) and writes its table, plots and figures into `--out`. */
async function runScalingCommand(opts: ExperimentCliOptions & { sizes: Partial<TrainingConfigInput>; sizeFlags: string[] }, out: Out, err: Out): Promise<void> {
  const words = ['npx dreamgym experiment --scaling'];
  if (opts.domains !== undefined) words.push(`--domains ${opts.domains.join(',')}`);
  for (const m of opts.envModule ?? []) words.push(`--env-module ${shellWord(m)}`);
  if (opts.recordedSizes !== undefined) words.push(`--recorded-sizes ${opts.recordedSizes.join(',')}`);
  words.push(`--seeds ${opts.seeds}`, `--preset ${opts.preset}`, ...opts.sizeFlags);
  const controller = new AbortController();
  const removeSignals = onStopSignals(controller, err, () => {});
  let result: ScalingResult;
  try {
    result = await runScaling({
      ...(opts.domains !== undefined ? { domains: opts.domains } : {}),
      ...(opts.envModule !== undefined ? { extraModules: opts.envModule } : {}),
      ...(opts.recordedSizes !== undefined ? { sizes: opts.recordedSizes } : {}),
      seeds: opts.seeds,
      preset: opts.preset,
      jobs: opts.jobs,
      overrides: opts.sizes,
      ...(opts.trainEvalEpisodes !== undefined ? { trainEvalEpisodes: opts.trainEvalEpisodes } : {}),
      ...(opts.envTimeout !== undefined ? { envTimeoutMs: opts.envTimeout } : {}),
      command: words.join(' '),
      signal: controller.signal,
      onProgress: (text) => err(`dreamgym: ${text.replace(/[\x00-\x1f\x7f]+/g, ' ')}\n`),
    });
  } catch (e) {
    if (e instanceof SuiteError || e instanceof ScalingError) throw new CliUsageError(`${e.message}; nothing written`);
    if (controller.signal.aborted) throw new CliExit(exitCodeOf(controller.signal.reason as StopReason), 'dreamgym: scaling experiment stopped; nothing written');
    throw e;
  } finally {
    removeSignals();
  }
  const names = await writeScalingFiles(opts.out, result);
  out(`scaling: ${result.domains.map((d) => d.name).join(', ')}; sizes ${result.sizes.join(', ')}; ${opts.seeds} seeds, preset ${opts.preset}, wall ${seconds(result.wallMs)}; wrote ${names.join(', ')} to ${opts.out}\n`);
}

/** `--out DIR`: an existing directory, or created now, before the work. */
async function ensureOutputDir(dir: string): Promise<void> {
  try {
    const info = await stat(dir);
    if (!info.isDirectory()) throw new CliUsageError(`cannot write into ${dir}: it is not a directory`);
  } catch (e) {
    if (e instanceof CliUsageError) throw e;
    if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw new CliUsageError(`cannot write into ${dir}: ${fsReason(e)}`);
    try {
      await mkdir(dir, { recursive: true });
    } catch (e2) {
      throw new CliUsageError(`cannot create ${dir}: ${fsReason(e2)}`);
    }
  }
}

/** The size options given, as command-line words (for the command a table says made it). */
function sizeFlags(opts: SizeOptions & { trainEvalEpisodes?: number }): string[] {
  const parts: string[] = [];
  for (const name of [...SIZE_OPTION_NAMES, 'trainEvalEpisodes'] as const) if (opts[name] !== undefined) parts.push(`${flag(name)} ${opts[name]}`);
  return parts;
}

/** `experiment` on one environment, once it is chosen (a module loaded and registered). */
async function experimentOnEnv(opts: ExperimentCliOptions, commandEnv: CommandEnv, out: Out, err: Out): Promise<void> {
  const envName = commandEnv.spec.name;
  // The output directory: an existing directory, or created now, before the work.
  await ensureOutputDir(opts.out);
  // Fails now, with one line, when the directory is not writable.
  await resolveOutput(join(opts.out, 'results.json'));
  await useFastestNodeBackend();
  const controller = new AbortController();
  const removeSignals = onStopSignals(controller, err, () => {});
  let result: ExperimentResult;
  const started = performance.now();
  // One run per worker thread; --jobs 1 runs them here, one after another.
  const pool = opts.jobs > 1 ? new ExperimentWorkerPool(opts.jobs) : null;
  try {
    result = await runExperiment({
      concurrency: opts.jobs,
      ...(pool ? { runner: pool.run } : {}),
      env: envName,
      ...(commandEnv.modulePath !== null ? { envModule: commandEnv.modulePath } : {}),
      seeds: opts.seeds,
      preset: opts.preset,
      ...(opts.arm ? { arms: opts.arm } : {}),
      ...(opts.probeValidation ? { probeValidation: true } : {}),
      overrides: sizeOverrides(opts),
      command: experimentCommandLine(opts),
      ...(opts.trainEvalEpisodes !== undefined ? { trainEvalEpisodes: opts.trainEvalEpisodes } : {}),
      signal: controller.signal,
      onProgress: (text) => err(`dreamgym: ${text.replace(/[\x00-\x1f\x7f]+/g, ' ')}\n`),
    });
  } catch (e) {
    if (controller.signal.aborted) throw new CliExit(exitCodeOf(controller.signal.reason as StopReason), 'dreamgym: experiment stopped; nothing written');
    throw e;
  } finally {
    removeSignals();
    await pool?.close();
  }
  const files = experimentFiles(result);
  const names = Object.keys(files);
  const paths = names.map((name) => experimentFilePath(opts.out, name));
  for (let i = 0; i < names.length; i++) {
    const path = paths[i] as string;
    await mkdir(dirname(path), { recursive: true });
    await writeFileAtomic(path, files[names[i] as string] as string);
  }
  out(`${envName} experiment: ${opts.seeds} seeds, preset ${opts.preset}, wall ${seconds(performance.now() - started)}; wrote ${names.join(', ')} to ${opts.out}\n`);
}

// ---------------------------------------------------------------------------------------------
// the commands

const RECORDED_HELP =
  "seed data of a user's kind: N episodes of the environment's goal-blind demonstrator with noise (a random admissible action at half the steps), successes and failures both kept, instead of the preset's demonstrations; behaviour cloning, the simulator's grounding and RL's first tasks come from them alone";
const TASK_VARIANTS_HELP = "instruction variants in a synthetic phase's task pool: recorded instructions with attribute words swapped for others seen in the same place of other recorded instructions, no goal, so no real phase trains on them (default 0)";
const NOISY_SOURCE_HELP = `who records the noisy:0.3 half of the preset's noisy episodes: ${NOISY_SOURCES.join(' | ')} (the goal-blind demonstrator where the environment has one, or the expert, which may read the task's goal; default demonstrator)`;
const CLONING_HELP = `what behaviour cloning learns from: ${CLONING_MODES.join(' | ')} (the successful episodes alike, or every episode weighted by its reward; default successes)`;

/** Adds `train`, `eval`, `runs`, `export` and `experiment` to the program. */
export function addTrainingCommands(program: Command, out: Out, err: Out): void {
  const storeOption = (): Option => new Option('--store <dir>', 'run store directory').default(DEFAULT_STORE_DIR);
  const hidden = (flags: string, description: string, parse: (v: string) => number): Option => new Option(flags, description).argParser(parse).hideHelp();

  program
    .command('train')
    .description(
      'Train a policy (a new run in the store, or --resume one), evaluate it greedily on held-out test tasks in the real ' +
        'environment, and print a one-line summary; the summary JSON goes into the run (run.json) and to --out. Offline seed ' +
        'data comes from the environment\'s expert and noisy policies (the preset says how many episodes). Ctrl-C stops ' +
        'cleanly and leaves a resumable run.',
    )
    .showHelpAfterError(false)
    .addOption(new Option('--env <name>', 'built-in environment (this or --env-module, unless --resume)').choices([...ENV_NAMES]))
    .option('--env-module <path>', 'your own environment module (an ES module in the contract the README describes), instead of --env; again with --resume')
    .option('--data <file>', 'seed data alone (dreamgym JSONL of one domain), no environment: the experience model is grounded on part of it, the rest is held out and evaluated in the synthetic environment (modes dreamgym, sft, zero-shot); again with --resume')
    .addOption(new Option('--env-timeout <ms>', 'most milliseconds one call into --env-module may take (default 10000)').argParser(timeoutArg).hideHelp())
    .addOption(new Option('--mode <mode>', 'training mode (required unless --resume)').choices([...TRAINING_MODES]))
    .addOption(new Option('--warm-start <how>', 'start an RL mode from behaviour cloning on the offline expert data').choices(['none', 'sft']))
    .addOption(new Option('--algorithm <name>', 'RL update of the RL modes (default grpo; ppo: a value head and per-step advantages)').choices([...RL_ALGORITHMS]))
    .addOption(new Option('--sim <model>', 'experience model of the synthetic modes (llm: with --llm-url, or in the page)').choices(['retrieval', 'llm']))
    .addOption(new Option('--preset <name>', 'sizes of the run').choices(Object.keys(PRESETS)).default('quick'))
    .option('--iterations <n>', 'RL iterations (synthetic ones for s2r)', countArg(0))
    .option('--seed <s>', 'seed of the run', seedArg)
    .addOption(storeOption())
    .option('--out <file>', 'also write the summary JSON here (- for stdout)')
    .option('--resume <run>', 'continue this run from its last snapshot (with its own configuration)')
    .option('--real-budget <n>', 'real transitions the real phase may use (s2r), or the run (real)', countArg(1))
    .option('--no-curriculum', 'no generated tasks (ablation)')
    .addOption(new Option('--prior <prior>', 'prior over candidate actions (llm: with --llm-url on a server that returns logprobs, or in the page)').choices(['uniform', 'lexical', 'llm']))
    .option('--eval-episodes <n>', 'held-out test tasks evaluated at the end', countArg(1, 100_000))
    .option('--stop-after <n>', 'stop cleanly after N completed iterations, leaving a resumable run (for tests and scripts)', countArg(1))
    .option('--no-replay', 'LLM experience model only (--sim llm): no retrieved demonstrations')
    .option('--no-reasoning', 'LLM experience model only (--sim llm): the outcome without reasoning before it (ablation)')
    .option('--llm-url <url>', 'an OpenAI-compatible server (llama.cpp, Ollama, vLLM) for --sim llm, --prior llm and the curriculum\'s task generator, e.g. http://127.0.0.1:8080')
    .option('--llm-model <name>', 'model name sent to the --llm-url server (default: the one model it lists, if it lists one)')
    .addOption(hidden('--offline-episodes <n>', 'expert and noisy offline episodes (each)', countArg(1, 1_000_000)))
    .addOption(hidden('--group-size <n>', 'rollouts per task', countArg(2, 10_000)))
    .addOption(hidden('--tasks-per-iteration <n>', 'tasks per iteration', countArg(1, 100_000)))
    .addOption(hidden('--max-steps <n>', 'step limit of a training episode (0: the environment\'s)', countArg(0, 100_000)))
    .option('--embedding-scale <x>', 'weight of the embedded text slots against the match features (see the README)', decimalArg(0, 100))
    .option('--repeat-penalty <x>', "the lexical prior's log-odds off an action per earlier time the episode took it (default 2; see the README)", decimalArg(0, 100))
    .option('--validation-tasks <n>', 'recorded tasks a synthetic phase is validated on inside the simulator, ending with the policy that validated best (0: none; default 50 with --sim retrieval; see the README)', countArg(0, 100_000))
    .option('--validation-every <n>', 'synthetic iterations between validations (0: at the start and the end only; default 5)', countArg(0, 100_000))
    .addOption(new Option('--grounding <mode>', "the retrieval simulator's grounding: calibrated (halt at steps the recorded data does not support; see the README), off, or auto (calibrated only where it predicts under 10% of held-out recorded steps right; the default with --recorded or --data, off otherwise)").choices(['calibrated', 'auto', 'off']))
    .addOption(new Option('--validation-criterion <c>', 'what picks the policy a synthetic phase keeps: recorded (how well the greedy policy follows held-out recorded successes, the simulator deciding where they cannot tell two policies apart; the default with --warm-start sft) or simulator (its success inside the simulator; the default from scratch)').choices(['recorded', 'simulator']))
    .addOption(hidden('--sft-epochs <n>', 'behaviour-cloning epochs', countArg(1, 100_000)))
    .option('--recorded <n>', RECORDED_HELP, countArg(1, MAX_RECORDED))
    .addOption(hidden('--recorded-noise <x>', `chance of a random admissible action at each step of the --recorded episodes (default ${RECORDED_NOISE})`, decimalArg(0, 1)))
    .addOption(hidden('--recorded-selection <x>', `share of the --recorded successes set aside for model selection, unseen by cloning and the simulator (0: none; default ${RECORDED_SELECTION})`, decimalArg(0, 0.5)))
    .addOption(new Option('--cloning <how>', CLONING_HELP).choices([...CLONING_MODES]))
    .addOption(new Option('--noisy-source <who>', NOISY_SOURCE_HELP).choices([...NOISY_SOURCES]))
    .option('--task-variants <n>', TASK_VARIANTS_HELP, countArg(0, 100_000))
    .action(async (opts: TrainOptions, command: Command) => trainCommand(opts, command, out, err));

  program
    .command('eval')
    .description(
      'Evaluate a policy greedily on held-out test tasks in the real environment: a run\'s latest checkpoint (--run), or a ' +
        'checkpoint file as the page downloads it (--checkpoint with --env); prints success and mean reward with 95% bootstrap intervals.',
    )
    .showHelpAfterError(false)
    .addOption(storeOption())
    .option('--run <id>', 'a run in the store')
    .option('--checkpoint <file>', 'a checkpoint file (serializeCheckpoint / the page\'s download)')
    .addOption(new Option('--env <name>', 'environment of --checkpoint, or of a --run on seed data alone').choices([...ENV_NAMES]))
    .option('--env-module <path>', 'the environment module of --checkpoint, or of a --run trained on one or on its seed data alone')
    .addOption(new Option('--env-timeout <ms>', 'most milliseconds one call into --env-module may take (default 10000)').argParser(timeoutArg).hideHelp())
    .option('--episodes <n>', 'held-out tasks (default: the run\'s evalEpisodes, or 100)', countArg(1, 100_000))
    .addOption(new Option('--prior <prior>', 'prior of --checkpoint (a run uses its own)').choices(['uniform', 'lexical']).default('lexical'))
    .option('--embedding-scale <x>', 'embedding scale --checkpoint was trained with (a run uses its own; default 1)', decimalArg(0, 100))
    .option('--repeat-penalty <x>', 'repeat penalty of the lexical prior --checkpoint was trained with (a run uses its own; default 2)', decimalArg(0, 100))
    .option('--json', 'print the evaluation as JSON')
    .action(async (opts: EvalOptions, command: Command) => evalCommand(opts, command, out));

  program
    .command('runs')
    .description('List the runs in the store: id, environment, mode, status, iterations, held-out success.')
    .showHelpAfterError(false)
    .addOption(storeOption())
    .option('--json', 'print the list as JSON')
    .action(async (opts: { store: string; json?: boolean }) => runsCommand(opts, out));

  program
    .command('export')
    .description(
      'Write a run\'s rollouts: as dreamgym JSONL (jsonl), or as chat-messages JSONL (chat: one conversation per trajectory, ' +
        'system/user/assistant turns with its reward, the format TRL\'s trainers load).',
    )
    .showHelpAfterError(false)
    .addOption(storeOption())
    .requiredOption('--run <id>', 'a run in the store')
    .addOption(new Option('--format <format>', 'output format').choices(['jsonl', 'chat']).makeOptionMandatory())
    .requiredOption('--out <file>', 'output file (- for stdout)')
    .option('--skip-bad', 'leave out committed lines of rollouts.jsonl that do not read back (and trajectories of a task left out), listing each on stderr, instead of refusing the export')
    .option('--env-module <path>', 'with --format chat, the environment module of a run trained on one (or on its seed data): its description opens each conversation')
    .addOption(new Option('--env-timeout <ms>', 'most milliseconds one call into --env-module may take (default 10000)').argParser(timeoutArg).hideHelp())
    .action(async (opts: ExportOptions) => exportCommand(opts, out, err));

  program
    .command('experiment')
    .description(
      'Run every mode and ablation available offline over several seeds, evaluate them on held-out tasks, and write the ' +
        'table (table.md), results.json, learning curves (CSV) and a plot (SVG) into --out.',
    )
    .showHelpAfterError(false)
    .addOption(new Option('--env <name>', 'built-in environment (or --env-module, or --suite)').choices([...ENV_NAMES]))
    .option('--env-module <path>', 'your own environment module (see the README), instead of --env; with --suite, added to the suite\'s domains (repeatable there)', (v: string, prev: string[] | string | undefined) => [...(Array.isArray(prev) ? prev : prev === undefined ? [] : [prev]), v])
    .addOption(new Option('--env-timeout <ms>', 'most milliseconds one call into --env-module may take (default 10000)').argParser(timeoutArg).hideHelp())
    .option('--suite', `run the domain suite (${SUITE_DOMAINS.map((d) => d.name).join(', ')}) on the arms ${SUITE_ARMS.map((a) => JSON.stringify(a)).join(', ')}, with the simulator's fidelity per domain, and write suite.md and suite.json into --out (sizes: the preset with the suite's budget, ${suiteBudgetText()}; the size options override it)`)
    .option('--scaling', `the data-scaling experiment: for every size N of --recorded-sizes (default ${SCALING_SIZES.join(',')}), N recorded episodes of the domain's noisy goal-blind demonstrator as the only offline data, and the arms ${SCALING_ARMS.map((a) => JSON.stringify(a)).join(', ')}; on the domains ${SCALING_DOMAINS.join(', ')} (or --domains); writes scaling.md (a table per domain), DOMAIN-scaling.svg (success against N) and scaling.json into --out (sizes: the preset with ${Object.entries(SCALING_BUDGET).map(([k, v]) => `${k} ${JSON.stringify(v)}`).join(', ')}; the size options override it)`)
    .option('--recorded-sizes <list>', 'with --scaling: the sizes of the log, comma-separated episode counts', sizeList)
    .option('--domains <names>', 'with --suite or --scaling: only these domains, comma-separated', (v: string) => v.split(',').map((x) => x.trim()).filter((x) => x !== ''))
    .option('--fidelity-episodes <n>', `with --suite: train-split episodes each domain's simulator fidelity is built from (default ${SUITE_FIDELITY.trainEpisodes}); a quarter as many test-split episodes measure it, and as many random episodes per task group its false success`, countArg(4, 1_000_000))
    .option('--seeds <n>', 'seeds per mode', countArg(1, 1000), 3)
    .addOption(new Option('--preset <name>', 'sizes of each run').choices(Object.keys(PRESETS)).default('quick'))
    .requiredOption('--out <dir>', 'output directory (created if needed)')
    .option('--arm <name>', 'run only this arm (repeatable; e.g. "zero-shot", "dreamgym (warm sft)")', (v: string, prev: string[] = []) => [...prev, v])
    .option('--probe-validation', "also evaluate every policy a synthetic phase validates in the real environment, and table each selection criterion's rank correlation with it (with --suite: every domain's synthetic arms)")
    .option('--jobs <n>', 'runs at once, each in a worker thread of its own (1: one after another in this thread); the figures do not depend on it', countArg(1, 256), defaultJobs())
    .addOption(hidden('--iterations <n>', 'RL iterations of every arm', countArg(0, 1_000_000)))
    .addOption(hidden('--offline-episodes <n>', 'expert and noisy offline episodes (each)', countArg(1, 1_000_000)))
    .addOption(hidden('--group-size <n>', 'rollouts per task', countArg(2, 10_000)))
    .addOption(hidden('--tasks-per-iteration <n>', 'tasks per iteration', countArg(1, 100_000)))
    .addOption(hidden('--max-steps <n>', 'step limit of a training episode (0: the environment\'s)', countArg(0, 100_000)))
    .option('--embedding-scale <x>', 'weight of the embedded text slots against the match features (see the README)', decimalArg(0, 100))
    .option('--repeat-penalty <x>', "the lexical prior's log-odds off an action per earlier time the episode took it (default 2; see the README)", decimalArg(0, 100))
    .option('--validation-tasks <n>', 'recorded tasks a synthetic phase is validated on inside the simulator, ending with the policy that validated best (0: none; default 50 with --sim retrieval; see the README)', countArg(0, 100_000))
    .option('--validation-every <n>', 'synthetic iterations between validations (0: at the start and the end only; default 5)', countArg(0, 100_000))
    .addOption(new Option('--grounding <mode>', "the retrieval simulator's grounding: calibrated (halt at steps the recorded data does not support; see the README), off, or auto (calibrated only where it predicts under 10% of held-out recorded steps right; the default with --recorded or --data, off otherwise)").choices(['calibrated', 'auto', 'off']))
    .addOption(new Option('--validation-criterion <c>', 'what picks the policy a synthetic phase keeps: recorded (how well the greedy policy follows held-out recorded successes, the simulator deciding where they cannot tell two policies apart; the default with --warm-start sft) or simulator (its success inside the simulator; the default from scratch)').choices(['recorded', 'simulator']))
    .addOption(hidden('--sft-epochs <n>', 'behaviour-cloning epochs', countArg(1, 100_000)))
    .addOption(hidden('--eval-episodes <n>', 'held-out test tasks per run', countArg(1, 100_000)))
    .addOption(hidden('--train-eval-episodes <n>', 'training tasks evaluated per run', countArg(1, 100_000)))
    .option('--recorded <n>', RECORDED_HELP, countArg(1, MAX_RECORDED))
    .addOption(hidden('--recorded-noise <x>', `chance of a random admissible action at each step of the --recorded episodes (default ${RECORDED_NOISE})`, decimalArg(0, 1)))
    .addOption(hidden('--recorded-selection <x>', `share of the --recorded successes set aside for model selection, unseen by cloning and the simulator (0: none; default ${RECORDED_SELECTION})`, decimalArg(0, 0.5)))
    .addOption(new Option('--cloning <how>', CLONING_HELP).choices([...CLONING_MODES]))
    .addOption(new Option('--noisy-source <who>', NOISY_SOURCE_HELP).choices([...NOISY_SOURCES]))
    .option('--task-variants <n>', TASK_VARIANTS_HELP, countArg(0, 100_000))
    .action(async (opts: ExperimentCliOptions) => experimentCommand(opts, out, err));
}
