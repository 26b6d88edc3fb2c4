/**
 * The training loop's one configuration object: documented defaults (zod), two presets as plain
 * objects, and layering defaults < preset < run config (< per-call overrides where a function
 * takes them).
 */
import { z } from 'zod';
import { DomainNameSchema } from '../core/types.ts';
import { GRPO_LOSS_TYPES, SCALE_REWARDS } from '../rl/grpo-variants.ts';
import { SELECTION_CRITERIA } from './selection.ts';

/** The retrieval simulator's grounding modes (see `grounding` in the config). */
export const GROUNDING_MODES = ['calibrated', 'auto', 'off'] as const;

/**
 * `grounding: 'auto'` grounds a simulator that predicts fewer than this share of its held-out
 * recorded steps right: there most synthetic steps are made up. One bound for every domain, set
 * between the recorded logs measured (BENCHMARKS.md, "Data scaling").
 */
export const AUTO_GROUNDING_RIGHT = 0.1;

export type GroundingMode = (typeof GROUNDING_MODES)[number];

/** What a run's retrieval simulator does where its data is thin: the mode and whether steps halt. */
export interface SimulatorGrounding {
  mode: GroundingMode;
  /** Whether unknown steps halt (for `auto`, what it decided). */
  grounded: boolean;
  /** `auto` only: the share of held-out recorded steps the cross-fitted simulator predicted right (NaN: none could be held out). */
  heldOutRight?: number;
}

/** `simulator grounded (3% of held-out recorded steps predicted right, under 10%: unknown steps halt)`, `simulator not grounded`, ... */
export function groundingPhrase(g: SimulatorGrounding): string {
  const state = g.grounded ? 'simulator grounded' : 'simulator not grounded';
  if (g.mode !== 'auto' || g.heldOutRight === undefined) return state;
  const right = Number.isFinite(g.heldOutRight) ? `${(g.heldOutRight * 100).toFixed(0)}% of held-out recorded steps predicted right` : 'no recorded episode could be held out';
  return g.grounded ? `${state} (${right}, under ${AUTO_GROUNDING_RIGHT * 100}%: unknown steps halt)` : `${state} (${right})`;
}

/**
 * - `zero-shot`: the prior alone (no update);
 * - `sft`: behaviour cloning on the offline expert data;
 * - `real`: GRPO in the real environment;
 * - `dreamgym`: GRPO in the synthetic environment only (0 real transitions);
 * - `s2r`: dreamgym, then GRPO in the real environment within a budget of real transitions.
 */
export const TRAINING_MODES = ['zero-shot', 'sft', 'real', 'dreamgym', 's2r'] as const;
export type TrainingMode = (typeof TRAINING_MODES)[number];

/** The RL update: GRPO (group-relative advantages), or PPO (a value head and GAE over each step's reward). */
export const RL_ALGORITHMS = ['grpo', 'ppo'] as const;
export type RlAlgorithm = (typeof RL_ALGORITHMS)[number];

/**
 * What behaviour cloning learns from the offline data's demonstrations (see `sft.cloning`):
 * - `successes`: the decisions of the successful episodes, each weighted alike;
 * - `reward-weighted`: the decisions of every episode with a positive reward, each weighted by its
 *   episode's reward (a shop purchase of the right product in the wrong size still shows most of
 *   the way; an episode with reward 0 shows nothing).
 */
export const CLONING_MODES = ['successes', 'reward-weighted'] as const;
export type CloningMode = (typeof CLONING_MODES)[number];

/**
 * Who records the `noisy:0.3` half of the preset's noisy episodes: `demonstrator`, the
 * environment's goal-blind demonstrator where it has one (else its expert); `expert`, the expert,
 * which may read the task's hidden goal.
 */
export const NOISY_SOURCES = ['demonstrator', 'expert'] as const;
export type NoisySource = (typeof NOISY_SOURCES)[number];

/** Most recorded episodes (`offline.recorded`): the bound of the other episode counts. */
export const MAX_RECORDED = 1_000_000;

/** Noise of the recorded episodes' demonstrator by default (see `offline.recordedNoise`). */
export const RECORDED_NOISE = 0.5;

/** Share of the recorded successes set aside for model selection by default (see `offline.recordedSelection`): none, as measured. */
export const RECORDED_SELECTION = 0;
/** Fewest recorded successes set aside for model selection, when any are. */
export const MIN_RECORDED_SELECTION = 2;

const EMBEDDING_SCALE_DEFAULT = 1;
/** Initial scale of the head's output weights from scratch (see `policy.initScale`). */
export const SCRATCH_INIT_SCALE = 0.01;
/** Validation tasks of the synthetic phase with the retrieval experience model (see `validation.tasks`). */
export const VALIDATION_TASKS = 50;
/** Synthetic iterations between validations (see `validation.every`). */
export const VALIDATION_EVERY = 5;
/** RL learning rates by starting point (see `rl.learningRate`). */
export const RL_LEARNING_RATE = { warm: 3e-4, scratch: 2e-3 } as const;

export const TrainingConfigSchema = z
  .object({
    /** A built-in environment (`shop`, `household`) or a loaded environment module's name. */
    env: DomainNameSchema,
    mode: z.enum(TRAINING_MODES),
    /** Start the RL modes from behaviour cloning on the offline expert data. */
    warmStart: z.enum(['none', 'sft']).default('none'),
    /** Experience model of the synthetic modes: `retrieval` (no download) or `llm` (page only). */
    sim: z.enum(['retrieval', 'llm']).default('retrieval'),
    /**
     * The retrieval simulator's grounding: `calibrated` halts a synthetic episode at a step the
     * recorded data does not support and grants a success only near recorded ones (honest on a
     * domain it was not built for, pessimistic off the recorded path); `off` answers every step;
     * `auto` calibrates and grounds only a simulator that predicts fewer than
     * {@link AUTO_GROUNDING_RIGHT} of its held-out recorded steps right. Default `auto` with
     * recorded episodes (`offline.recorded`), `off` otherwise: on shop and household grounding
     * costs RL from scratch (BENCHMARKS.md, "Grounding"), and the calibration costs a preset's
     * hundreds of demonstrations three more simulators.
     */
    grounding: z.enum(GROUNDING_MODES).optional(),
    /**
     * Prior over candidates added to the head's logits: none (`uniform`), word overlap with the
     * instruction less a penalty on repeated actions (`lexical`, the offline stand-in for an LLM's
     * common sense), or an LLM's. Default `lexical`: it gives RL from scratch rewards to start from
     * and costs behaviour cloning nothing (BENCHMARKS.md, "training").
     */
    prior: z.enum(['uniform', 'lexical', 'llm']).default('lexical'),
    /**
     * The `lexical` prior's log-odds off an action per earlier time the episode took it (see
     * `LexicalPrior`). Default 2: a trained head can still outweigh it; a stronger penalty helped
     * some arms and hurt others (BENCHMARKS.md, "training").
     */
    repeatPenalty: z.number().min(0).max(100).default(2),
    seed: z.number().int().default(0),
    /** RL iterations (synthetic ones for `s2r`). */
    iterations: z.number().int().min(0).default(20),
    /** Tasks per iteration (B): one GRPO group each. */
    tasksPerIteration: z.number().int().min(1).default(8),
    /** Rollouts per task (G). */
    groupSize: z.number().int().min(2).default(8),
    /** Step limit of an episode; 0 means the environment's own. */
    maxSteps: z.number().int().min(0).default(0),
    offline: z
      .object({
        /**
         * Demonstration episodes on train tasks: the behaviour-cloning data and part of the
         * simulator's grounding. Recorded with the environment's goal-blind demonstrator (shop,
         * household), else with its expert (a loaded environment module without one). Default
         * 200; shop 800 (see {@link ENV_PRESETS}).
         */
        expertEpisodes: z.number().int().min(1).default(200),
        /**
         * How many of the generated demonstrations' tasks join RL's task pool (in recorded order;
         * the others are behaviour-cloning and grounding data only; a run on seed data from a file
         * pools all its tasks). Default 200: from scratch GRPO learned less from a bigger pool
         * (BENCHMARKS.md, "training").
         */
        poolDemonstrations: z.number().int().min(0).default(200),
        /** Noisy episodes (half `noisy:0.3`, half random) that show the simulator failures too. */
        noisyEpisodes: z.number().int().min(0).default(200),
        /**
         * Who takes the non-random steps of the `noisy:0.3` episodes (see {@link NOISY_SOURCES}).
         * Default `demonstrator`: an expert that reads the goal succeeds where an agent seeing only
         * the page cannot (a booking made without viewing anyone's calendar), and a simulator
         * grounded on its episodes pays that shortcut (BENCHMARKS.md, "Grounding").
         */
        noisySource: z.enum(NOISY_SOURCES).default('demonstrator'),
        /**
         * Further train-split tasks with no recorded episode (instructions are cheap, demonstrations
         * are not): RL trains on them too; a synthetic episode on one starts from the experience
         * model's `reset`.
         */
        extraTasks: z.number().int().min(0).default(200),
        /**
         * Seed data of a user's kind instead of the preset's: with N > 0 the offline data is N
         * episodes of an imperfect goal-blind policy on train tasks, successes and failures both
         * kept, as a log of real sessions would be (the environment's demonstrator taking a random
         * admissible action with probability `recordedNoise`; nothing from the goal-reading
         * expert). They are all the data there is: behaviour cloning learns from them (see
         * `sft.cloning`), the simulator is grounded on them alone, and RL's task pool starts from
         * their tasks (no demonstrations, noisy episodes or extra tasks besides). 0: the preset's
         * demonstrations.
         */
        recorded: z.number().int().min(0).max(MAX_RECORDED).default(0),
        /** The recorded episodes' chance of a random admissible action at each step (see `recorded`). */
        recordedNoise: z.number().min(0).max(1).default(RECORDED_NOISE),
        /**
         * Share of the recorded episodes' successes (at least {@link MIN_RECORDED_SELECTION}, chosen
         * by a hash of the task) set aside for model selection: neither behaviour cloning nor the
         * simulator sees them, and a synthetic phase keeps the policy that follows them best
         * (`validation.criterion` defaults to `recorded` then). Without them a recorded-log run
         * has no selection: its other successes are the cloning data. 0 (the default): none set
         * aside; at 0.2 the data they take from cloning and grounding cost more than the selection
         * gave (BENCHMARKS.md, recorded logs), and a 50%-noisy success is a poor yardstick.
         */
        recordedSelection: z.number().min(0).max(0.5).default(RECORDED_SELECTION),
      })
      .strict()
      .prefault({}),
    sft: z
      .object({
        /** Passes over the expert decisions (each one trainer update over all of them). */
        epochs: z.number().int().min(1).default(30),
        learningRate: z.number().positive().default(3e-3),
        /** Which demonstrations it learns from, and how much from each (see {@link CLONING_MODES}). */
        cloning: z.enum(CLONING_MODES).default('successes'),
      })
      .strict()
      .prefault({}),
    rl: z
      .object({
        /** GRPO, or PPO; the other `rl` settings apply to both except `lossType`, `scaleRewards`, `beta` and `dropZeroVarianceGroups` (GRPO's). */
        algorithm: z.enum(RL_ALGORITHMS).default('grpo'),
        /**
         * Default: 3e-4 after a warm start (higher rates drift from the SFT policy without gain);
         * 2e-3 from scratch (higher ones can collapse the policy in its first update).
         */
        learningRate: z.number().positive().optional(),
        lossType: z.enum(GRPO_LOSS_TYPES).default('grpo'),
        scaleRewards: z.enum(SCALE_REWARDS).default('group'),
        /**
         * KL coefficient to the reference (the policy at the start of RL): strong enough to keep a
         * warm start near its SFT policy; from scratch it also keeps RL from collapsing.
         */
        beta: z.number().min(0).default(0.1),
        /** Entropy bonus: small, since a large one drives the policy towards uniform and none risked collapse. */
        entropyCoef: z.number().min(0).default(0.001),
        /**
         * RL iterations over which the learning rate rises linearly to its value, counted from the
         * first RL iteration (the k-th runs at (k+1)/warmup of it, whether or not its groups gave an
         * update); 0: none. Adam's first steps move every weight by about the learning rate whatever
         * the gradient's size; a warmup keeps the first update near its start, but gave no success
         * gain beyond the seeds' spread, so the default is none.
         */
        warmupIterations: z.number().int().min(0).default(0),
        /** Passes over each iteration's rollouts. */
        epochs: z.number().int().min(1).default(2),
        /**
         * Leave out groups whose rewards were all equal: their advantages are 0, so they would only
         * add KL and entropy terms at the full cost of an update (DAPO's dynamic sampling).
         */
        dropZeroVarianceGroups: z.boolean().default(true),
        temperature: z.number().positive().default(1),
      })
      .strict()
      .prefault({}),
    curriculum: z
      .object({
        enabled: z.boolean().default(true),
        /** Share of each iteration's tasks drawn from generated ones once any exist (DreamGym's lambda). */
        generatedShare: z.number().min(0).max(1).default(0.5),
        /** New tasks asked of the generator per iteration, from tasks whose reward variance was > 0. */
        perIteration: z.number().int().min(0).default(4),
        /**
         * Most generated tasks kept. Beyond it the generated task seen longest ago with reward
         * variance 0 goes first, then the oldest.
         */
        maxGenerated: z.number().int().min(1).default(200),
        /**
         * Instruction variants that join a synthetic phase's pool at its start (see
         * `src/curriculum/variants.ts`): recorded instructions with attribute words swapped for
         * others seen in the same place of other recorded instructions. From the data alone, with no
         * goal, so no real phase trains on them. Default 0: with a few recorded episodes they did not
         * raise held-out success (BENCHMARKS.md, "Data scaling").
         */
        variants: z.number().int().min(0).max(100_000).default(0),
      })
      .strict()
      .prefault({}),
    s2r: z
      .object({
        /** Real transitions the real phase may use. */
        realBudget: z.number().int().min(1).default(5000),
        /**
         * Learning rate of the real phase. Default: the warm-start rate (3e-4), or `rl.learningRate`
         * where that is lower: the real phase fine-tunes a policy the synthetic phase trained, as
         * RL after SFT does, and the scratch rate undid what the synthetic phase had learned.
         */
        learningRate: z.number().positive().optional(),
      })
      .strict()
      .prefault({}),
    validation: z
      .object({
        /**
         * Tasks with a successful recorded demonstration (those outside RL's pool first) on which
         * the policy is run greedily inside the simulator when the synthetic phase starts, every
         * `every` iterations and when it ends; the phase ends with the policy that validated best
         * (model selection without a real step). The simulator replays a recorded task's own
         * episode, so its verdicts there follow the real ones: on shop after behaviour cloning
         * (quick preset, seed 4, 100 tasks) validation success went 99 -> 94 -> 94 -> 97 -> 96 ->
         * 89% every 8 iterations as held-out real success went 84 -> 82 -> 80 -> 82 -> 80 -> 78%.
         * Default 50 with the retrieval experience model; 0 (none) with the LLM one, where each
         * episode costs model calls, and with recorded episodes (`offline.recorded`): there the
         * tasks with a success are the behaviour-cloning data itself, the cloned policy replays
         * them inside the simulator (shop, 50 recorded: 95% at the start) and any RL step reads as
         * a loss, so the phase kept its start on 3 of 3 seeds; without validation `dreamgym (warm
         * sft)` ended 8.7 points above `sft` held-out (shop, seeds 0-2, 25 recorded: 9.3). Validation steps are not counted in any iteration's synthetic
         * steps or model calls. With `grounding: 'calibrated'` the validation runs in the same
         * simulator without these tasks' recorded episodes: the grounded one replays them as facts,
         * so a cloned policy read 100% there whatever it did on other tasks.
         */
        tasks: z.number().int().min(0).optional(),
        /**
         * Also validate every this many synthetic iterations (0: only at the start and the end);
         * the phase ends with the policy that validated best (the earliest among equals): the
         * start, an iteration in between, or the end. From scratch GRPO in the simulator climbs
         * for about ten iterations and then wanders (shop, seeds 0-7, held-out real success every
         * 4 iterations); keeping the best validated policy took shop `dreamgym` from 54.5% to
         * 60.0% (quick preset, seeds 0-7, every 5 against start and end only; 53.8% to 59.0%
         * over 12 seeds). See BENCHMARKS.md ("training").
         */
        every: z.number().int().min(0).default(VALIDATION_EVERY),
        /**
         * What picks the kept policy: `recorded`, how well the greedy policy follows held-out
         * recorded successes (see `selectionScore`; where they cannot tell two policies apart the
         * simulator's success decides, see `replacesKept`), or `simulator`, greedy success inside
         * the simulator. A run with no held-out recorded success falls back to `simulator`.
         * Default `recorded` after behaviour cloning (`warmStart: 'sft'`; a recorded log validates
         * only with successes set aside, `offline.recordedSelection`), `simulator` from scratch:
         * over a cloned start's validated policies the recorded figure follows real success and
         * the simulator's does not; from scratch neither does, and the simulator kept better shop
         * policies (BENCHMARKS.md, "Model selection").
         */
        criterion: z.enum(SELECTION_CRITERIA).optional(),
        /**
         * Recorded demonstrations held out for selection, with a built-in environment or a module
         * (recorded like the others, on train tasks none of them uses; neither behaviour cloning
         * nor the simulator sees them); only synthetic modes with the `recorded` criterion (or
         * `--probe-validation`) record them, as scoring them costs every validation. A run on seed data
         * holds a share of its own recorded successes out instead (`SELECTION_SHARE`).
         */
        recorded: z.number().int().min(0).default(VALIDATION_TASKS),
      })
      .strict()
      .prefault({}),
    /** Demonstrations retrieved per synthetic step for the experience model (0: the `--no-replay` ablation; LLM model only). */
    demos: z.number().int().min(0).default(3),
    /** The experience model reasons before its prediction (false: the `--no-reasoning` ablation; LLM model only). */
    reasoning: z.boolean().default(true),
    /** Held-out test tasks evaluated at the end (greedy, real environment). */
    evalEpisodes: z.number().int().min(1).default(100),
    budgets: z
      .object({
        /** Stop once this many online real transitions were used (0: no limit). */
        realTransitions: z.number().int().min(0).default(0),
        /** Stop after this much wall time in seconds (0: no limit). */
        wallSeconds: z.number().min(0).default(0),
      })
      .strict()
      .prefault({}),
    policy: z
      .object({
        hiddenDim: z.number().int().min(1).default(64),
        embeddingDim: z.number().int().min(16).default(512),
        /**
         * Weight of the embedded text slots (instruction, situation, action) against the
         * task-relative match features (see `Featurizer`). Lower makes the head lean on what makes
         * a candidate right (overlap with the instruction, rank, history) rather than on the words
         * of the items it was right about; lower helped shop and hurt household, so one default: 1.
         */
        embeddingScale: z.number().min(0).max(100).default(EMBEDDING_SCALE_DEFAULT),
        /**
         * Scale of the head's initial output weights (see `PolicyHeadConfig.initScale`). Default:
         * 1 with a warm start (behaviour cloning's 20-30 full-batch updates need the usual scale);
         * 0.01 from scratch, so that the untrained policy is its prior: `zero-shot` is the prior
         * alone, and RL from scratch starts there instead of from the random head's choices.
         */
        initScale: z.number().min(0).max(1).optional(),
      })
      .strict()
      .prefault({}),
  })
  .strict()
  .transform((c) => {
    const warm = c.warmStart === 'sft' || c.mode === 'sft';
    const heldOut = c.offline.recorded > 0 && c.offline.recordedSelection > 0;
    const rlRate = c.rl.learningRate ?? (c.warmStart === 'sft' ? RL_LEARNING_RATE.warm : RL_LEARNING_RATE.scratch);
    return {
      ...c,
      grounding: c.grounding ?? (c.offline.recorded > 0 ? ('auto' as const) : ('off' as const)),
      rl: { ...c.rl, learningRate: rlRate },
      s2r: { ...c.s2r, learningRate: c.s2r.learningRate ?? Math.min(rlRate, RL_LEARNING_RATE.warm) },
      policy: { ...c.policy, initScale: c.policy.initScale ?? (warm ? 1 : SCRATCH_INIT_SCALE) },
      validation: {
        ...c.validation,
        // A recorded log validates only where some of its successes are set aside (see `offline.recordedSelection`).
        tasks: c.validation.tasks ?? (c.sim === 'retrieval' && (c.offline.recorded === 0 || heldOut) ? VALIDATION_TASKS : 0),
        // A cloned start is what held-out demonstrations measure best (see `validation.criterion`).
        criterion: c.validation.criterion ?? (heldOut || (c.warmStart === 'sft' && c.offline.recorded === 0) ? ('recorded' as const) : ('simulator' as const)),
      },
    };
  });

/**
 * A configuration as a run stored it. One stored before `offline.noisySource` existed recorded its
 * noisy episodes with the expert: it reads back as `expert`, so a resumed run keeps its seed data.
 */
export const StoredTrainingConfigSchema = z.preprocess((stored: unknown) => {
  if (!isPlainObject(stored) || !isPlainObject(stored.offline) || 'noisySource' in stored.offline) return stored;
  return { ...stored, offline: { ...stored.offline, noisySource: 'expert' } };
}, TrainingConfigSchema);

export type TrainingConfig = z.output<typeof TrainingConfigSchema>;
export type TrainingConfigInput = z.input<typeof TrainingConfigSchema>;

/**
 * Presets: `quick` learns visibly within minutes on a 2-core laptop and is the experiment's size;
 * `standard` is larger. `quick` runs 45 iterations because household from scratch needs them: its
 * reward is rare in the first iterations, and with fewer many seeds of `real` ended near the prior.
 */
export const PRESETS = {
  quick: { iterations: 45, tasksPerIteration: 8, groupSize: 6, offline: { expertEpisodes: 200, noisyEpisodes: 100 }, sft: { epochs: 20 }, evalEpisodes: 50 },
  standard: { iterations: 45, tasksPerIteration: 8, groupSize: 8, offline: { expertEpisodes: 200, noisyEpisodes: 200 }, sft: { epochs: 30 }, evalEpisodes: 100 },
} as const satisfies Record<string, Partial<TrainingConfigInput>>;
export type PresetName = keyof typeof PRESETS;

/**
 * What an environment changes in every preset (and the defaults); a run's own settings still
 * win. Shop records 800 demonstrations: its demonstrator goes back from a product that lacks the
 * wanted option, and behaviour cloning learns when to only from that many episodes.
 */
export const ENV_PRESETS: Readonly<Record<string, Partial<TrainingConfigInput>>> = {
  shop: { offline: { expertEpisodes: 800 } },
};

/** Thrown for an invalid training configuration; the message names the field and the bad value. */
export class TrainingConfigError extends Error {
  override name = 'TrainingConfigError';
}

function isPlainObject(x: unknown): x is Record<string, unknown> {
  return x !== null && typeof x === 'object' && !Array.isArray(x);
}

/** Deep merge of plain objects: later layers win. */
function merge(...layers: readonly unknown[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const layer of layers) {
    if (!isPlainObject(layer)) continue;
    for (const [k, v] of Object.entries(layer)) out[k] = isPlainObject(v) && isPlainObject(out[k]) ? merge(out[k], v) : v;
  }
  return out;
}

/** Validates a configuration: defaults < preset < the environment's {@link ENV_PRESETS} < `input`. */
export function parseTrainingConfig(input: TrainingConfigInput, preset?: PresetName): TrainingConfig {
  if (preset !== undefined && !(preset in PRESETS)) throw new TrainingConfigError(`unknown preset ${JSON.stringify(preset)}: use ${Object.keys(PRESETS).join(' or ')}`);
  const envLayer = typeof input.env === 'string' && Object.hasOwn(ENV_PRESETS, input.env) ? ENV_PRESETS[input.env] : {};
  const layered = merge(preset ? PRESETS[preset] : {}, envLayer, input);
  const result = TrainingConfigSchema.safeParse(layered);
  if (!result.success) {
    const issue = result.error.issues[0];
    const path = issue?.path.join('.') ?? '';
    // The value refused, as given (a missing one says nothing more).
    let bad: unknown = layered;
    for (const key of issue?.path ?? []) bad = isPlainObject(bad) ? bad[String(key)] : undefined;
    const got = path !== '' && bad !== undefined ? `, got ${typeof bad === 'number' ? String(bad) : JSON.stringify(bad)}` : '';
    throw new TrainingConfigError(`invalid training config${path ? ` at ${path}` : ''}: ${issue?.message ?? 'unknown problem'}${got}`);
  }
  const c = result.data;
  if (c.sim === 'llm' && (c.mode === 'dreamgym' || c.mode === 's2r') && c.demos < 0) throw new TrainingConfigError('demos must be >= 0');
  return c;
}
