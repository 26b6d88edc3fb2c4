/**
 * The trainer: one documented configuration object, a policy head, Adam, and the three update
 * rules (GRPO, PPO, SFT) on top of the shared optimisation loop. It knows the policy only
 * through the head's parameters and forward functions. Checkpoints round-trip weights, the
 * reference copy, optimizer state, iteration and configuration.
 */
import { z } from 'zod';
import { Rng } from '../core/rng.ts';
import { CheckpointError, validateCheckpoint, type Checkpoint, type CheckpointJson } from '../policy/checkpoint.ts';
import { ConfigError, formatIssues, PolicyHead, PolicyHeadConfigSchema, tensorLayout, type ActOptions, type ActResult } from '../policy/head.ts';
import { packDecisions, type Decision, type PolicyInput } from '../policy/input.ts';
import { Adam } from './adam.ts';
import { GrpoConfigSchema, grpoLoss, prepareGrpoBatch, type GrpoBatch } from './grpo.ts';
import { PpoConfigSchema, ppoInput, ppoLoss, preparePpoBatch, type PpoBatch } from './ppo.ts';
import { prepareSftBatch, sftLoss, type SftExample } from './sft.ts';
import { runUpdate, type LossFn, type PreparedBatch } from './update.ts';

/** Adam and clipping settings. */
const OptimizerConfigSchema = z
  .object({
    learningRate: z.number().positive().default(1e-3),
    beta1: z.number().min(0).lt(1).default(0.9),
    beta2: z.number().min(0).lt(1).default(0.999),
    /** Adam's epsilon, explicit because tfjs backends differ in their default. */
    epsilon: z.number().positive().default(1e-8),
    /** Global-norm gradient clipping threshold. */
    maxGradNorm: z.number().positive().default(1),
  })
  .strict();

/**
 * Everything the trainer needs, with defaults. `policy` sets the head (dims are required);
 * `grpo` and `ppo` set their losses; `epochs` and `minibatchSize` (rows, i.e. decisions) the
 * optimisation loop; `temperature` the softmax temperature of acting and of the losses.
 */
const TrainerConfigSchema = z
  .object({
    policy: PolicyHeadConfigSchema,
    optimizer: OptimizerConfigSchema.prefault({}),
    /** Passes over each batch. */
    epochs: z.number().int().min(1).default(1),
    /** Decisions per minibatch. */
    minibatchSize: z.number().int().min(1).default(512),
    /** Softmax temperature for acting and for the losses' log-probs. */
    temperature: z.number().positive().default(1),
    grpo: GrpoConfigSchema.prefault({}),
    ppo: PpoConfigSchema.prefault({}),
    /** Seed of minibatch shuffling. */
    seed: z.number().int().default(0),
  })
  .strict();
export type TrainerConfig = z.output<typeof TrainerConfigSchema>;
export type TrainerConfigInput = z.input<typeof TrainerConfigSchema>;

/** Validates a trainer configuration and fills its defaults; throws {@link ConfigError}. */
export function parseTrainerConfig(input: TrainerConfigInput): TrainerConfig {
  const result = TrainerConfigSchema.safeParse(input);
  if (!result.success) throw new ConfigError(`Invalid trainer config: ${formatIssues(result.error, input)}`);
  return result.data;
}

/** What one update did. */
export interface UpdateMetrics {
  algorithm: 'grpo' | 'ppo' | 'sft';
  /** Completed updates after this one. */
  iteration: number;
  /** Decisions in the batch (after dropping zero-variance groups). */
  rows: number;
  /** Real candidates over all decisions (the benchmark's throughput unit). */
  candidateRows: number;
  minibatches: number;
  /** Mean minibatch loss. */
  loss: number;
  policyLoss: number;
  /** GRPO: k3 KL to the reference. PPO: k3 KL(old || new). SFT: 0. */
  kl: number;
  /** GRPO: share of steps where the clipped term was active. PPO: share with |rho - 1| > clipCoef (CleanRL's clipfrac). SFT: 0. */
  clipFraction: number;
  /** Mean policy entropy over candidates. */
  entropy: number;
  /** Mean global gradient norm before clipping. */
  gradNorm: number;
  /** PPO only. */
  valueLoss?: number;
  /** SFT only: share of decisions where the argmax is the expert's choice. */
  accuracy?: number;
  /** GRPO only. */
  droppedGroups?: number;
  /** True when nothing was updated (every GRPO group had zero variance and was dropped). */
  skipped: boolean;
  /** Wall time of the update. */
  ms: number;
}

function candidateRows(input: PolicyInput): number {
  return input.candidateCounts.reduce((a, b) => a + b, 0);
}

/** Trains a {@link PolicyHead} with GRPO, PPO or SFT. */
export class Trainer {
  readonly config: TrainerConfig;
  readonly head: PolicyHead;
  private readonly adam: Adam;
  /** Completed updates. */
  iteration = 0;
  private disposed = false;
  /** Learning rate of the next updates, when set (e.g. a lower one for RL after behaviour cloning). */
  private learningRate: number | undefined;
  /**
   * The rows of behaviour-cloning examples, by examples array (same array, same length): the loop
   * passes the same examples every epoch, and packing them again was about a sixth of an epoch
   * (household: 1,164 decisions, 73 MB of candidate features). Weak, so the rows go when the
   * caller drops the examples.
   */
  private readonly sftRows = new WeakMap<readonly SftExample[], { length: number; prepared: PreparedBatch }>();

  constructor(config: TrainerConfigInput) {
    this.config = parseTrainerConfig(config);
    this.head = new PolicyHead(this.config.policy);
    this.head.resetReference();
    const { learningRate, beta1, beta2, epsilon } = this.config.optimizer;
    this.adam = new Adam(this.head.trainable('all'), { learningRate, beta1, beta2, epsilon });
  }

  /** A trainer restored from a checkpoint (its configuration, weights, reference, optimizer and iteration). */
  static fromCheckpoint(checkpoint: Checkpoint): Trainer {
    validateCheckpoint(checkpoint);
    let trainer: Trainer;
    try {
      trainer = new Trainer(checkpoint.config as TrainerConfigInput);
    } catch (e) {
      if (e instanceof ConfigError) throw new CheckpointError('incompatible', e.message);
      throw e;
    }
    try {
      trainer.loadCheckpoint(checkpoint);
    } catch (e) {
      trainer.dispose();
      throw e;
    }
    return trainer;
  }

  private get dims(): { stateDim: number; actionDim: number } {
    return { stateDim: this.config.policy.stateDim, actionDim: this.config.policy.actionDim };
  }

  /** Packs decisions with this head's dimensions. */
  pack(decisions: readonly Decision[]): PolicyInput {
    return packDecisions(decisions, this.dims);
  }

  /** Chooses candidates (sampled with `rng`, or greedy) at the configured temperature unless overridden. */
  act(input: PolicyInput | readonly Decision[], options: ActOptions = {}): Promise<ActResult> {
    const packed = Array.isArray(input) ? this.pack(input as readonly Decision[]) : (input as PolicyInput);
    return this.head.act(packed, { temperature: this.config.temperature, ...options });
  }

  /** Masked logits [n, K] of the decisions. */
  logits(input: PolicyInput | readonly Decision[]): Promise<Float32Array> {
    const packed = Array.isArray(input) ? this.pack(input as readonly Decision[]) : (input as PolicyInput);
    return this.head.logits(packed, this.config.temperature);
  }

  /** Uses `learningRate` for the following updates (the configured one again with `undefined`). */
  setLearningRate(learningRate: number | undefined): void {
    if (learningRate !== undefined && !(learningRate > 0 && Number.isFinite(learningRate))) throw new RangeError(`learningRate must be > 0, got ${learningRate}`);
    this.learningRate = learningRate;
  }

  /** Makes the current weights the KL reference. */
  syncReference(): void {
    this.head.resetReference();
  }

  /** Puts the KL reference's weights back as the policy's (the optimizer state stays). */
  restoreReference(): void {
    this.assertLive();
    this.head.restoreReference();
  }

  /** Keeps a copy of the policy's weights (in checkpoints too) for {@link restoreKept}. */
  keepWeights(): void {
    this.assertLive();
    this.head.keepWeights();
  }

  /** Puts the weights last kept back as the policy's (the optimizer state stays); false when none were kept. */
  restoreKept(): boolean {
    this.assertLive();
    return this.head.restoreKept();
  }

  /** Frees the kept copy of the weights, if any. */
  dropKept(): void {
    this.assertLive();
    this.head.dropKept();
  }

  /** One GRPO update on groups of rollouts. */
  async grpoUpdate(batch: GrpoBatch): Promise<UpdateMetrics> {
    const started = performance.now();
    const { prepared, stats } = prepareGrpoBatch(batch, this.config.grpo, this.dims);
    if (!prepared) {
      return {
        algorithm: 'grpo', iteration: this.iteration, rows: 0, candidateRows: 0, minibatches: 0, loss: 0, policyLoss: 0, kl: 0,
        clipFraction: 0, entropy: 0, gradNorm: 0, droppedGroups: stats.droppedGroups, skipped: true, ms: performance.now() - started,
      };
    }
    if (this.config.grpo.beta > 0) {
      prepared.columns['refLogProb'] = await this.head.referenceTakenLogProbs(prepared.input, prepared.actions, this.config.temperature, this.config.minibatchSize);
    }
    const loss = grpoLoss(this.config.grpo, this.head.config, this.config.temperature);
    const m = await this.run(prepared, loss, 'policy');
    return { ...this.metrics('grpo', prepared, m, started), droppedGroups: stats.droppedGroups };
  }

  /** One PPO update on rollouts with per-step rewards (evaluates V first, then GAE). */
  async ppoUpdate(batch: PpoBatch): Promise<UpdateMetrics> {
    const started = performance.now();
    const input = ppoInput(batch, this.dims);
    const values = await this.head.values(input);
    const prepared = preparePpoBatch(batch, input, values, this.config.ppo);
    const m = await this.run(prepared, ppoLoss(this.config.ppo, this.head.config, this.config.temperature), 'all');
    return { ...this.metrics('ppo', prepared, m, started), valueLoss: m.metrics['valueLoss'] ?? 0 };
  }

  /** One behaviour-cloning update on expert decisions. */
  async sftUpdate(examples: readonly SftExample[]): Promise<UpdateMetrics> {
    const started = performance.now();
    let rows = this.sftRows.get(examples);
    if (rows?.length !== examples.length) this.sftRows.set(examples, (rows = { length: examples.length, prepared: prepareSftBatch(examples, this.dims) }));
    const { prepared } = rows;
    const m = await this.run(prepared, sftLoss(this.head.config, this.config.temperature), 'policy');
    return { ...this.metrics('sft', prepared, m, started), accuracy: m.metrics['accuracy'] ?? 0 };
  }

  private async run(prepared: PreparedBatch, loss: LossFn, group: 'policy' | 'all') {
    this.assertLive();
    const result = await runUpdate(prepared, loss, this.adam, {
      epochs: this.config.epochs,
      minibatchSize: this.config.minibatchSize,
      maxGradNorm: this.config.optimizer.maxGradNorm,
      rng: new Rng((this.config.seed * 1_000_003 + this.iteration) >>> 0),
      variables: this.head.trainable(group),
      params: this.head.params(),
      // GRPO's KL term reads the reference's log-probs from a column computed once per update.
      reference: null,
      learningRate: this.learningRate,
      layout: tensorLayout(this.head.config),
    });
    this.iteration += 1;
    return result;
  }

  private metrics(
    algorithm: UpdateMetrics['algorithm'],
    prepared: PreparedBatch,
    m: Awaited<ReturnType<Trainer['run']>>,
    started: number,
  ): UpdateMetrics {
    return {
      algorithm,
      iteration: this.iteration,
      rows: prepared.input.count,
      candidateRows: candidateRows(prepared.input),
      minibatches: m.minibatches,
      loss: m.loss,
      policyLoss: m.metrics['policyLoss'] ?? m.loss,
      kl: m.metrics['kl'] ?? 0,
      clipFraction: m.metrics['clipFraction'] ?? 0,
      entropy: m.metrics['entropy'] ?? 0,
      gradNorm: m.gradNorm,
      skipped: false,
      ms: performance.now() - started,
    };
  }

  /** A checkpoint of the current state (weights, reference copy, Adam state, iteration, config). */
  async checkpoint(): Promise<Checkpoint> {
    this.assertLive();
    return {
      format: 'dreamgym-checkpoint',
      version: 1,
      iteration: this.iteration,
      config: JSON.parse(JSON.stringify(this.config)) as { [key: string]: CheckpointJson },
      weights: await this.head.exportWeights(true),
      optimizer: await this.adam.exportState(),
    };
  }

  /**
   * Loads a checkpoint into this trainer, all or nothing. Its policy head settings (all but the
   * seed) must equal this trainer's (otherwise {@link CheckpointError} 'incompatible'); other
   * settings stay as configured here.
   */
  loadCheckpoint(checkpoint: Checkpoint): void {
    this.assertLive();
    validateCheckpoint(checkpoint);
    const theirs = TrainerConfigSchema.safeParse(checkpoint.config);
    if (!theirs.success) throw new CheckpointError('incompatible', `config: ${formatIssues(theirs.error, checkpoint.config)}`);
    // The initialisation seed and leadDim (speed only) do not matter once weights are loaded; every other head setting does.
    const shape = ({ seed: _seed, leadDim: _leadDim, ...rest }: TrainerConfig['policy']): string => JSON.stringify(rest);
    const a = shape(theirs.data.policy);
    const b = shape(this.config.policy);
    if (a !== b) throw new CheckpointError('incompatible', `policy head settings differ: checkpoint ${a}, trainer ${b}`);
    // Check the optimizer state before touching the weights, so that a refused checkpoint
    // changes nothing (importWeights itself checks everything before assigning).
    this.adam.checkState(checkpoint.optimizer);
    this.head.importWeights(checkpoint.weights);
    this.adam.importState(checkpoint.optimizer);
    this.iteration = checkpoint.iteration;
  }

  /** Frees every tensor. */
  dispose(): void {
    if (this.disposed) return;
    this.disposed = true;
    this.adam.dispose();
    this.head.dispose();
  }

  private assertLive(): void {
    if (this.disposed) throw new Error('Trainer used after dispose()');
  }
}
