import * as tf from '@tensorflow/tfjs';
import { describe, expect, it, vi } from 'vitest';
import type { RealEnvironment, Task, Trajectory } from '../src/core/types.ts';
import type { AnyEnvSpec } from '../src/envs/spec.ts';
import { ENV_PRESETS, parseTrainingConfig, PRESETS, RL_LEARNING_RATE, SCRATCH_INIT_SCALE, TrainingConfigError, type TrainingConfigInput } from '../src/train/config.ts';
import { cloningWeight, plannedIterations, runTraining, TrainingAbortedError, validationTasks, TrainingSetupError, type IterationMetrics, type RunSnapshot, type TrainingDeps, type TrainingProgress } from '../src/train/loop.ts';
import { prepareRun, recordedSeedData } from '../src/train/setup.ts';
import { getEnvSpec } from '../src/envs/registry.ts';
import type { SftExample } from '../src/rl/sft.ts';
import { RetrievalExperienceModel } from '../src/experience/retrieval/model.ts';
import { HashedEmbedder } from '../src/policy/hashed-embedder.ts';
import { selectionScore } from '../src/train/selection.ts';
import type { ValidationCheck } from '../src/train/validation.ts';
import { Trainer } from '../src/rl/trainer.ts';
import { parseCheckpoint, serializeCheckpoint } from '../src/policy/checkpoint.ts';
import { RecombinationTaskGenerator, type TaskGenerator } from '../src/curriculum/generator.ts';
import type { ChatCompletion, ChatCompletionRequestNonStreaming, ChatEngine } from '../src/llm/engine.ts';

/** Tiny settings: every run takes a second or two. */
const TINY: Partial<TrainingConfigInput> = {
  iterations: 2,
  tasksPerIteration: 2,
  groupSize: 2,
  maxSteps: 6,
  offline: { expertEpisodes: 8, noisyEpisodes: 8, extraTasks: 4 },
  sft: { epochs: 2 },
  evalEpisodes: 2,
  policy: { hiddenDim: 8, embeddingDim: 64 },
  curriculum: { perIteration: 2 },
};

const config = (over: Partial<TrainingConfigInput>) => parseTrainingConfig({ env: 'shop', mode: 'dreamgym', ...TINY, ...over } as TrainingConfigInput);

/** A spec whose environments count every reset and step (and creation). */
function spy(spec: AnyEnvSpec): { spec: AnyEnvSpec; calls: { create: number; reset: number; step: number } } {
  const calls = { create: 0, reset: 0, step: 0 };
  return {
    calls,
    spec: {
      ...spec,
      name: spec.name,
      maxSteps: spec.maxSteps,
      tasks: (o) => spec.tasks(o),
      validateTask: (t) => spec.validateTask(t),
      create: (): RealEnvironment => {
        calls.create++;
        const env = spec.create();
        return {
          name: env.name,
          maxSteps: env.maxSteps,
          reset: (task: Task) => (calls.reset++, env.reset(task)),
          step: (action: string) => (calls.step++, env.step(action)),
          expertAction: () => env.expertAction(),
        };
      },
    },
  };
}

const withoutTimes = (ms: readonly IterationMetrics[]) =>
  ms.map(({ wallMs: _w, rolloutMs: _r, updateMs: _u, syntheticStepsPerSec: _s, ...rest }) => rest);

/** A snapshot as on disk: the state as JSON, the policy as a checkpoint file. */
const asOnDisk = (s: RunSnapshot): RunSnapshot => ({ ...(JSON.parse(JSON.stringify({ ...s, checkpoint: null })) as RunSnapshot), checkpoint: parseCheckpoint(serializeCheckpoint(s.checkpoint)) });

describe('training config', () => {
  it('layers defaults < preset < run config and explains a bad value', () => {
    const c = parseTrainingConfig({ env: 'household', mode: 'real', iterations: 3 }, 'quick');
    expect(c.iterations).toBe(3);
    expect(c.groupSize).toBe(PRESETS.quick.groupSize);
    expect(c.rl.entropyCoef).toBe(0.001);
    // The RL learning rate depends on the starting point unless given.
    expect(c.rl.learningRate).toBe(RL_LEARNING_RATE.scratch);
    expect(c.prior).toBe('lexical');
    // From scratch the head starts near 0 (the policy is its prior); after behaviour cloning at full scale.
    expect(c.policy.initScale).toBe(SCRATCH_INIT_SCALE);
    expect(parseTrainingConfig({ env: 'shop', mode: 'sft' }).policy.initScale).toBe(1);
    expect(parseTrainingConfig({ env: 'shop', mode: 'dreamgym', warmStart: 'sft' }).policy.initScale).toBe(1);
    expect(parseTrainingConfig({ env: 'shop', mode: 'real', policy: { initScale: 0.5 } }).policy.initScale).toBe(0.5);
    expect(parseTrainingConfig({ env: 'shop', mode: 'real', warmStart: 'sft' }).rl.learningRate).toBe(3e-4);
    expect(parseTrainingConfig({ env: 'shop', mode: 'real', warmStart: 'sft', rl: { learningRate: 1e-3 } }).rl.learningRate).toBe(1e-3);
    // s2r's real phase fine-tunes what the synthetic phase trained: the warm rate, or a lower RL rate.
    expect(parseTrainingConfig({ env: 'shop', mode: 's2r' }).s2r.learningRate).toBe(RL_LEARNING_RATE.warm);
    expect(parseTrainingConfig({ env: 'shop', mode: 's2r', rl: { learningRate: 1e-4 } }).s2r.learningRate).toBe(1e-4);
    expect(parseTrainingConfig({ env: 'shop', mode: 's2r', s2r: { learningRate: 5e-3 } }).s2r.learningRate).toBe(5e-3);
    expect(() => parseTrainingConfig({ env: 'shop', mode: 'train-hard' as 'sft' })).toThrow(TrainingConfigError);
    expect(() => parseTrainingConfig({ env: 'shop', mode: 'sft', groupSize: 1 })).toThrow(/groupSize/);
    expect(() => parseTrainingConfig({ env: 'shop', mode: 'sft', bogus: 1 } as TrainingConfigInput)).toThrow(TrainingConfigError);
    expect(() => parseTrainingConfig({ env: 'shop', mode: 'sft' }, 'huge' as 'quick')).toThrow(/unknown preset "huge"/);
  });

  it("layers an environment's own adjustment between the preset and the run config", () => {
    const shop = ENV_PRESETS.shop?.offline?.expertEpisodes;
    expect(shop).toBe(800);
    expect(parseTrainingConfig({ env: 'shop', mode: 'sft' }, 'quick').offline.expertEpisodes).toBe(shop);
    expect(parseTrainingConfig({ env: 'shop', mode: 'sft' }).offline.expertEpisodes).toBe(shop);
    expect(parseTrainingConfig({ env: 'household', mode: 'sft' }, 'quick').offline.expertEpisodes).toBe(PRESETS.quick.offline.expertEpisodes);
    // The rest of the preset stays, and the run config still wins.
    expect(parseTrainingConfig({ env: 'shop', mode: 'sft' }, 'quick').offline.noisyEpisodes).toBe(PRESETS.quick.offline.noisyEpisodes);
    expect(parseTrainingConfig({ env: 'shop', mode: 'sft', offline: { expertEpisodes: 7 } }, 'quick').offline.expertEpisodes).toBe(7);
  });

  it('counts sft epochs and RL iterations', () => {
    expect(plannedIterations(config({ mode: 'zero-shot' }))).toBe(0);
    expect(plannedIterations(config({ mode: 'sft' }))).toBe(2);
    expect(plannedIterations(config({ mode: 'dreamgym', warmStart: 'sft' }))).toBe(4);
    expect(plannedIterations(config({ mode: 's2r' }))).toBe(4);
  });
});

describe('learning-rate warmup', () => {
  /** The first RL update's mean KL to its start (k3), shop `real` from scratch, at a learning rate high enough to overshoot. */
  async function firstKl(warmupIterations: number): Promise<number> {
    const c = config({ mode: 'real', iterations: 1, tasksPerIteration: 4, groupSize: 4, maxSteps: 8, rl: { learningRate: 2e-2, warmupIterations } });
    const run = await prepareRun(c);
    const res = await runTraining(c, run.deps);
    try {
      return (res.metrics[0] as IterationMetrics).kl;
    } finally {
      res.trainer.dispose();
      run.dispose();
    }
  }

  it('scales the first iterations down, so the first update stays near the start; one iteration of warmup is none', async () => {
    expect(parseTrainingConfig({ env: 'shop', mode: 'real' }).rl.warmupIterations).toBe(0);
    const [none, one, four] = [await firstKl(0), await firstKl(1), await firstKl(4)];
    expect(none).toBeGreaterThan(0);
    expect(one).toBe(none);
    // At a quarter of the learning rate the first update moves the policy much less.
    expect(four).toBeGreaterThan(0);
    expect(four).toBeLessThan(none / 2);
  });
});

describe('s2r learning rates', () => {
  it("runs the synthetic phase at the RL rate and the real phase at s2r's own", async () => {
    const rates: (number | undefined)[] = [];
    const setRate = vi.spyOn(Trainer.prototype, 'setLearningRate').mockImplementation(function (this: Trainer, rate: number | undefined) {
      rates.push(rate);
    });
    const c = config({ mode: 's2r', iterations: 2, s2r: { realBudget: 30, learningRate: 1e-4 }, rl: { learningRate: 2e-3 } });
    const run = await prepareRun(c);
    try {
      const res = await runTraining(c, run.deps);
      res.trainer.dispose();
      const phases = res.metrics.map((m) => m.phase);
      expect(phases.slice(0, 2)).toEqual(['synthetic', 'synthetic']);
      expect(phases.slice(2).length).toBeGreaterThan(0);
      expect(phases.slice(2).every((p) => p === 'real')).toBe(true);
      expect(rates).toEqual(phases.map((p) => (p === 'real' ? 1e-4 : 2e-3)));
    } finally {
      setRate.mockRestore();
      run.dispose();
    }
  });
});

describe('s2r KL reference', () => {
  it('is the policy the real phase starts from: synced at the start of RL and again at the start of the real phase', async () => {
    const synced: number[] = [];
    const c = config({ mode: 's2r', iterations: 2, s2r: { realBudget: 30 } });
    const run = await prepareRun(c);
    let iterations = 0;
    const sync = vi.spyOn(Trainer.prototype, 'syncReference').mockImplementation(function (this: Trainer) {
      synced.push(iterations);
    });
    try {
      const res = await runTraining(c, run.deps, { onProgress: (p) => void (p.metrics && (iterations = p.iteration)) });
      res.trainer.dispose();
      expect(res.metrics.slice(2).length).toBeGreaterThan(0);
      // Before the first synthetic iteration (0 done) and before the first real one (2 done).
      expect(synced).toEqual([0, 2]);
    } finally {
      sync.mockRestore();
      run.dispose();
    }
  });
});

describe('the task pool', () => {
  it("starts from the offline data's pool tasks, not every demonstrated task", async () => {
    const c = config({ mode: 'real', iterations: 1, offline: { ...TINY.offline, expertEpisodes: 6, poolDemonstrations: 2 } });
    const run = await prepareRun(c);
    try {
      const pool = run.deps.offline.poolTasks ?? [];
      expect(pool.length).toBe(run.deps.offline.tasks.length - 4 + (run.deps.offline.extraTasks?.length ?? 0));
      const res = await runTraining(c, run.deps);
      res.trainer.dispose();
      expect(res.metrics[0]?.poolSize).toBe(pool.length);
      expect(res.snapshot.pool.slice(0, pool.length).map((t) => t.id)).toEqual(pool.map((t) => t.id));
    } finally {
      run.dispose();
    }
  });
});

describe('validating the synthetic phase', () => {
  it('validates on demonstrated tasks outside the pool first, then pool ones, and none without an experience model or with 0 tasks', async () => {
    const c = config({ mode: 'dreamgym', offline: { ...TINY.offline, expertEpisodes: 6, poolDemonstrations: 2 } });
    const run = await prepareRun(c);
    try {
      const off = run.deps.offline;
      const demonstrated = off.tasks.filter((t) => off.trajectories.some((x) => x.taskId === t.id && x.success && off.expertIds.has(x.id)));
      const pooled = new Set((off.poolTasks ?? []).map((t) => t.id));
      const picked = validationTasks(off, 50);
      expect(picked.length).toBe(demonstrated.length);
      const outside = demonstrated.filter((t) => !pooled.has(t.id)).length;
      expect(outside).toBeGreaterThan(0);
      expect(picked.slice(0, outside).every((t) => !pooled.has(t.id))).toBe(true);
      expect(picked.slice(outside).every((t) => pooled.has(t.id))).toBe(true);
      expect(validationTasks(off, 2).map((t) => t.id)).toEqual(picked.slice(0, 2).map((t) => t.id));
      expect(validationTasks(off, 0)).toEqual([]);
      // Only synthetic runs with the retrieval model validate by default.
      expect(config({ mode: 'dreamgym' }).validation.tasks).toBe(50);
      expect(config({ mode: 'dreamgym', sim: 'llm' }).validation.tasks).toBe(0);
      const realRun = await runTraining(config({ mode: 'real', iterations: 1 }), run.deps);
      realRun.trainer.dispose();
      expect(realRun.validation).toBeNull();
    } finally {
      run.dispose();
    }
  });

  // Four runs, each building the grounded simulator (whose calibration builds three more): more than the default minute.
  it('puts the starting policy back when the phase ends lower inside the simulator, and keeps the end otherwise', async () => {
    const before = tf.memory().numTensors;
    // A learning rate far too high wrecks the policy the behaviour cloning gave.
    const wrecking = { mode: 'dreamgym', warmStart: 'sft', iterations: 3, maxSteps: 10, rl: { learningRate: 3 }, offline: { ...TINY.offline, expertEpisodes: 40 }, sft: { epochs: 20 }, validation: { tasks: 20, criterion: 'simulator', recorded: 0 } } as const;
    const c = config(wrecking);
    const run = await prepareRun(c);
    const paramsOf = (checkpoint: RunSnapshot['checkpoint']) => new Map(checkpoint.weights.map((w) => [w.name, Array.from(w.data as Float32Array)]));
    try {
      const res = await runTraining(c, run.deps);
      res.trainer.dispose();
      const v = res.validation;
      expect(v?.tasks).toBeGreaterThan(0);
      expect(v?.end).toBeLessThan(v?.start as number);
      expect(v?.kept).toBe('start');
      // The kept policy is the KL reference: the policy the synthetic phase started from.
      const weights = paramsOf(res.snapshot.checkpoint);
      const names = [...weights.keys()].filter((n) => !n.startsWith('reference/'));
      expect(names.length).toBeGreaterThan(0);
      for (const n of names) expect(weights.get(n)).toEqual(weights.get(`reference/${n}`));
      expect(res.snapshot.validation).toEqual(v);

      // Without validation the wrecked policy stays.
      const off = await runTraining(config({ ...wrecking, validation: { tasks: 0 } }), run.deps);
      off.trainer.dispose();
      expect(off.validation).toBeNull();
      const wrecked = paramsOf(off.snapshot.checkpoint);
      expect(names.some((n) => JSON.stringify(wrecked.get(n)) !== JSON.stringify(wrecked.get(`reference/${n}`)))).toBe(true);

      // At a sane rate the end is kept whenever it validates higher, and then it is RL's policy.
      const sane = await runTraining(config({ ...wrecking, rl: {} }), run.deps);
      sane.trainer.dispose();
      const sv = sane.validation;
      expect(sv?.kept).toBe((sv?.end as number) > (sv?.start as number) ? 'end' : 'start');
      const saneWeights = paramsOf(sane.snapshot.checkpoint);
      const moved = names.some((n) => JSON.stringify(saneWeights.get(n)) !== JSON.stringify(saneWeights.get(`reference/${n}`)));
      expect(moved).toBe(sv?.kept === 'end');

      // s2r decides before its real phase, so the real phase starts from the kept policy.
      const s2r = await runTraining(config({ ...wrecking, mode: 's2r', s2r: { realBudget: 20 } }), run.deps);
      s2r.trainer.dispose();
      expect(s2r.validation?.kept).toBe('start');
      expect(s2r.metrics.some((m) => m.phase === 'real')).toBe(true);
    } finally {
      run.dispose();
    }
    expect(tf.memory().numTensors).toBe(before);
  }, 180_000);
});

/**
 * The run's experience model, except on validation tasks, where the verdict is scripted per
 * validation round: an episode succeeds at its first step in the rounds listed in `passing`.
 */
function scriptedValidation(deps: TrainingDeps, validating: ReadonlySet<string>, passing: readonly number[], experience = deps.experience as NonNullable<TrainingDeps['experience']>): TrainingDeps {
  let firstSteps = 0;
  return {
    ...deps,
    experience: {
      kind: experience.kind,
      reset: (task, demos) => experience.reset(task, demos),
      step: async (request) => {
        if (!validating.has(request.task.id)) return experience.step(request);
        const round = Math.floor(firstSteps++ / validating.size);
        const reward = passing.includes(round) ? 1 : 0;
        return { reasoning: 'scripted', observation: { text: 'over', actions: [] }, reward, done: true, valid: true };
      },
    },
  };
}

describe('the validation simulator', () => {
  it('runs the validation in validationExperience where the deps give one, and training in experience', async () => {
    const c = config({ mode: 'dreamgym', iterations: 1, tasksPerIteration: 2, groupSize: 2, offline: { ...TINY.offline, expertEpisodes: 12, poolDemonstrations: 4 }, validation: { tasks: 4, every: 0, criterion: 'simulator' } });
    const run = await prepareRun(c);
    try {
      const validating = new Set(validationTasks(run.deps.offline, 4).map((t) => t.id));
      const seen: string[] = [];
      const validationExperience = {
        kind: 'scripted',
        reset: () => Promise.reject(new Error('validation tasks start from their recorded first state')),
        step: async (request: { task: { id: string } }) => {
          seen.push(request.task.id);
          return { reasoning: 'scripted', observation: { text: 'over', actions: [] }, reward: 1, done: true, valid: true };
        },
      };
      const res = await runTraining(c, { ...run.deps, validationExperience });
      res.trainer.dispose();
      // Start and end: every validation task once each, all in the validation simulator.
      expect(seen).toHaveLength(8);
      expect(seen.every((id) => validating.has(id))).toBe(true);
      expect(res.validation?.checks?.map((x) => x.success)).toEqual([1, 1]);
      expect(res.metrics[0]?.syntheticSteps).toBeGreaterThan(0);
    } finally {
      run.dispose();
    }
  });
});

describe('keeping the best validated policy', () => {
  it('puts back the policy that validated best between the start and the end, also after a resume', async () => {
    const before = tf.memory().numTensors;
    // Validated at the start (round 0), after iterations 1 and 2 (rounds 1, 2) and at the end (round 3).
    // Four groups of four: with two groups of two, every group of an iteration can end alike, and then the policy does not move.
    // The simulator's verdicts decide here (the default criterion; "selection" below has the recorded one).
    const c = config({ mode: 'dreamgym', iterations: 3, tasksPerIteration: 4, groupSize: 4, offline: { ...TINY.offline, expertEpisodes: 12, poolDemonstrations: 4 }, validation: { tasks: 4, every: 1, criterion: 'simulator' } });
    const run = await prepareRun(c);
    // The predictor alone: on 12 recorded episodes the grounded simulator halts nearly every
    // synthetic episode alike, so the policy would not move between rounds and there would be
    // nothing to choose between.
    const predictor = await RetrievalExperienceModel.fromTrajectories(run.deps.offline.tasks, run.deps.offline.trajectories, new HashedEmbedder({ dim: 256 }), { grounding: false });
    try {
      const validating = new Set(validationTasks(run.deps.offline, 4).map((t) => t.id));
      const pooled = new Set((run.deps.offline.poolTasks ?? []).map((t) => t.id));
      expect(validating.size).toBe(4);
      expect([...validating].some((id) => pooled.has(id))).toBe(false);
      const snapshots: RunSnapshot[] = [];
      const progress: TrainingProgress[] = [];
      const full = await runTraining(c, { ...scriptedValidation(run.deps, validating, [1], predictor), persist: async (s) => void snapshots.push(s) }, { onProgress: (p) => void progress.push(p) });
      full.trainer.dispose();
      // Each round reports its progress, from none to all four tasks, after the iterations completed so far.
      const rounds = progress.filter((p) => p.validating);
      expect(rounds.filter((p) => p.validating?.done === 0).map((p) => p.iteration)).toEqual([0, 1, 2, 3]);
      expect(rounds.filter((p) => p.validating?.done === 4).map((p) => p.iteration)).toEqual([0, 1, 2, 3]);
      expect(rounds.every((p) => p.validating?.total === 4 && p.metrics === undefined)).toBe(true);
      expect(full.validation).toMatchObject({ tasks: 4, start: 0, between: [{ iteration: 1, success: 1 }, { iteration: 2, success: 0 }], best: { iteration: 1, success: 1 }, end: 0, kept: 'between', criterion: 'simulator' });
      expect(full.validation?.checks?.map((x) => [x.iteration, x.success])).toEqual([[0, 0], [1, 1], [2, 0], [3, 0]]);
      // The policy kept is the one after the first iteration, not the start (the reference) nor the end.
      const policyOf = (s: RunSnapshot) => s.checkpoint.weights.filter((w) => !w.name.includes('/')).map((w) => Array.from(w.data as Float32Array));
      const afterFirst = snapshots.find((s) => s.iteration === 1) as RunSnapshot;
      const beforeSelection = snapshots.find((s) => s.iteration === 3 && s.validation?.end === undefined) as RunSnapshot;
      expect(policyOf(full.snapshot)).toEqual(policyOf(afterFirst));
      expect(policyOf(full.snapshot)).not.toEqual(policyOf(beforeSelection));
      // The copy travels in checkpoints while the phase runs, and is dropped once it is decided.
      expect(afterFirst.checkpoint.weights.some((w) => w.name.startsWith('kept/'))).toBe(true);
      expect(full.snapshot.checkpoint.weights.some((w) => w.name.startsWith('kept/'))).toBe(false);

      // Resumed after the second iteration (its copy is in the checkpoint), it ends the same.
      const at2 = snapshots.find((s) => s.iteration === 2) as RunSnapshot;
      const onDisk = asOnDisk(at2);
      // Rounds 0-2 happened before the snapshot; the resumed run's first validation is the end's.
      const resumed = await runTraining(c, scriptedValidation(run.deps, validating, [], predictor), { resume: onDisk });
      resumed.trainer.dispose();
      expect(resumed.validation).toEqual(full.validation);
      expect(resumed.snapshot.checkpoint.weights).toEqual(full.snapshot.checkpoint.weights);
    } finally {
      predictor.dispose();
      run.dispose();
    }
    expect(tf.memory().numTensors).toBe(before);
  });
});

describe('selection by held-out recorded successes', () => {
  it('keeps the policy that replays held-out recorded successes, not a wrecked one the simulator praises; the simulator criterion keeps the wrecked one', async () => {
    const before = tf.memory().numTensors;
    // Behaviour cloning, then a learning rate far too high; the simulator calls every end-of-phase episode a success.
    // 60 held-out successes: enough for the recorded figure's drop to stand beyond its paired noise (see replacesKept).
    const wrecking = { mode: 'dreamgym', warmStart: 'sft', iterations: 3, maxSteps: 10, rl: { learningRate: 3 }, offline: { ...TINY.offline, expertEpisodes: 40, poolDemonstrations: 20 }, sft: { epochs: 20 }, validation: { tasks: 10, recorded: 60, criterion: 'recorded' } } as const;
    const c = config(wrecking);
    const run = await prepareRun(c);
    // The predictor alone: the grounded simulator halts these few recorded tasks' episodes alike, so the update would not move the policy.
    const predictor = await RetrievalExperienceModel.fromTrajectories(run.deps.offline.tasks, run.deps.offline.trajectories, new HashedEmbedder({ dim: 256 }), { grounding: false });
    try {
      const selection = run.deps.offline.selection;
      expect(selection?.trajectories.length).toBe(60);
      // Held out: neither behaviour cloning's data nor the simulator's holds a selection task.
      const seen = new Set([...run.deps.offline.tasks, ...(run.deps.offline.extraTasks ?? [])].map((t) => t.id));
      expect(selection?.tasks.some((t) => seen.has(t.id))).toBe(false);
      const validating = new Set(validationTasks(run.deps.offline, 10).map((t) => t.id));
      const pooled = new Set((run.deps.offline.poolTasks ?? []).map((t) => t.id));
      expect([...validating].some((id) => pooled.has(id))).toBe(false);
      const res = await runTraining(c, scriptedValidation(run.deps, validating, [1], predictor));
      res.trainer.dispose();
      const v = res.validation;
      expect(v?.criterion).toBe('recorded');
      expect(v?.recorded).toBeGreaterThan(0);
      expect([v?.start, v?.end]).toEqual([0, 1]);
      const [start, end] = v?.checks ?? [];
      expect(selectionScore(start as ValidationCheck, 'recorded')).toBeGreaterThan(selectionScore(end as ValidationCheck, 'recorded'));
      expect(v?.kept).toBe('start');
      // Today's criterion, the simulator's success, keeps what it praised.
      const old = await runTraining(config({ ...wrecking, validation: { ...wrecking.validation, criterion: 'simulator' } }), scriptedValidation(run.deps, validating, [1], predictor));
      old.trainer.dispose();
      expect(old.validation?.kept).toBe('end');
    } finally {
      predictor.dispose();
      run.dispose();
    }
    expect(tf.memory().numTensors).toBe(before);
  });
});

describe('runTraining smoke: every mode and ablation runs two iterations', () => {
  const cases: [string, Partial<TrainingConfigInput>][] = [
    ['zero-shot', { mode: 'zero-shot' }],
    ['sft', { mode: 'sft' }],
    ['real', { mode: 'real' }],
    ['dreamgym', { mode: 'dreamgym' }],
    ['dreamgym --warm-start sft', { mode: 'dreamgym', warmStart: 'sft' }],
    ['dreamgym --no-curriculum', { mode: 'dreamgym', curriculum: { enabled: false } }],
    // A budget the real phase does not reach: the run goes through every planned iteration.
    ['s2r', { mode: 's2r', s2r: { realBudget: 1000 } }],
    ['real, household, lexical prior', { mode: 'real', env: 'household', prior: 'lexical' }],
  ];
  for (const [name, over] of cases) {
    it(name, async () => {
      const before = tf.memory().numTensors;
      const c = config(over);
      const run = await prepareRun(c);
      const stored: Trajectory[] = [];
      const res = await runTraining(c, { ...run.deps, storeRollouts: async (t) => void stored.push(...t) });
      try {
        expect(res.metrics).toHaveLength(plannedIterations(c));
        expect(res.stoppedBy).toBe('done');
        for (const m of res.metrics) {
          expect(Number.isFinite(m.loss)).toBe(true);
          expect(m.offlineTransitions).toBe(res.offlineTransitions);
          if (m.phase === 'sft') continue;
          // An RL iteration's figures are those of the rollouts it stored (no budget cut any).
          const rollouts = stored.filter((t) => t.id.includes(`:it${m.iteration}:`));
          expect(rollouts).toHaveLength(c.tasksPerIteration * c.groupSize);
          expect(m.successRate).toBeCloseTo(rollouts.filter((t) => t.success).length / rollouts.length, 12);
          expect(m.meanReward).toBeCloseTo(rollouts.reduce((s, t) => s + t.reward, 0) / rollouts.length, 12);
          expect(m.steps).toBe(rollouts.reduce((s, t) => s + t.steps.length, 0));
        }
        expect(res.offlineTransitions).toBeGreaterThan(0);
        const realSteps = res.metrics.filter((m) => m.phase === 'real').reduce((s, m) => s + m.steps, 0);
        expect(res.realTransitions).toBe(realSteps);
        if (c.mode === 'zero-shot' || c.mode === 'sft' || c.mode === 'dreamgym') expect(res.realTransitions).toBe(0);
        if (c.mode === 'real' || c.mode === 's2r') expect(res.realTransitions).toBeGreaterThan(0);
        if (c.mode === 's2r') expect(res.metrics.map((m) => m.phase)).toEqual(['synthetic', 'synthetic', 'real', 'real']);
        if (c.mode === 'dreamgym') expect(res.syntheticSteps).toBeGreaterThan(0);
        expect(res.snapshot.iteration).toBe(res.metrics.length);
      } finally {
        res.trainer.dispose();
        run.dispose();
      }
      expect(tf.memory().numTensors).toBe(before);
    });
  }
});

describe('the RL algorithm', () => {
  // Two RL iterations of each RL mode (s2r: two synthetic, then two real).
  const cases: [Partial<TrainingConfigInput>, number][] = [
    [{ mode: 'real' }, 2],
    [{ mode: 'dreamgym', warmStart: 'sft' }, 2],
    [{ mode: 's2r', s2r: { realBudget: 1000 } }, 4],
  ];
  for (const [over, rlIterations] of cases) {
    it(`${over.mode}${over.warmStart ? ' --warm-start sft' : ''}: PPO updates through a value head where set, GRPO by default`, async () => {
      const before = tf.memory().numTensors;
      for (const algorithm of ['grpo', 'ppo'] as const) {
        const ppo = vi.spyOn(Trainer.prototype, 'ppoUpdate');
        const grpo = vi.spyOn(Trainer.prototype, 'grpoUpdate');
        const c = config({ ...over, rl: { algorithm } });
        const run = await prepareRun(c);
        try {
          const res = await runTraining(c, run.deps);
          res.trainer.dispose();
          expect(res.metrics).toHaveLength(plannedIterations(c));
          const rl = res.metrics.filter((m) => m.phase !== 'sft');
          expect(rl).toHaveLength(rlIterations);
          expect((algorithm === 'ppo' ? ppo : grpo).mock.calls).toHaveLength(rlIterations);
          expect((algorithm === 'ppo' ? grpo : ppo).mock.calls).toHaveLength(0);
          expect(rl.every((m) => Number.isFinite(m.loss) && m.updateMs > 0)).toBe(true);
          expect(res.snapshot.checkpoint.weights.some((w) => w.name.includes('value'))).toBe(algorithm === 'ppo');
        } finally {
          ppo.mockRestore();
          grpo.mockRestore();
          run.dispose();
        }
      }
      expect(tf.memory().numTensors).toBe(before);
    });
  }
});

describe('a real budget that runs out mid-iteration', () => {
  it('stops the run at the start of the first iteration after the budget is spent', async () => {
    // Every iteration runs at least four episodes of at least one step: a budget of 4 is spent by
    // the first real iteration, and the next one does not start.
    const cases: [Partial<TrainingConfigInput>, IterationMetrics['phase'][]][] = [
      [{ mode: 's2r', s2r: { realBudget: 4 } }, ['synthetic', 'synthetic', 'real']],
      [{ mode: 'real', budgets: { realTransitions: 4 } }, ['real']],
    ];
    for (const [over, phases] of cases) {
      const c = config(over);
      const run = await prepareRun(c);
      const res = await runTraining(c, run.deps);
      res.trainer.dispose();
      run.dispose();
      expect(plannedIterations(c)).toBeGreaterThan(phases.length);
      expect(res.metrics.map((m) => m.phase)).toEqual(phases);
      expect(res.metrics.at(-1)?.realTransitions).toBe(4);
      expect(res.realTransitions).toBe(4);
      expect(res.stoppedBy).toBe('real-budget');
    }
  });

  it('leaves groups with an unfinished episode out of the update and the iteration figures', async () => {
    // 4 tasks x 2 rollouts of shop after a short behaviour cloning, against 24 real transitions:
    // the budget stops some episodes before they end. Their outcome is unknown; scoring them 0 (as
    // before) made them failures in the figures and in the update.
    const c = config({ mode: 'real', warmStart: 'sft', sft: { epochs: 15 }, offline: { expertEpisodes: 30, noisyEpisodes: 4, extraTasks: 0 }, iterations: 1, tasksPerIteration: 4, budgets: { realTransitions: 24 }, curriculum: { enabled: false } });
    const run = await prepareRun(c);
    const stored: Trajectory[] = [];
    const res = await runTraining(c, { ...run.deps, storeRollouts: async (t) => void stored.push(...t) });
    try {
      expect(res.realTransitions).toBe(24);
      const m = res.metrics.at(-1);
      expect(m?.phase).toBe('real');
      const ended = (t: Trajectory): boolean => t.steps.at(-1)?.done === true || t.steps.length >= c.maxSteps;
      const finished = stored.filter(ended);
      expect(finished.length).toBeGreaterThan(0);
      expect(stored.length).toBeGreaterThan(finished.length);
      const meanOf = (ts: readonly Trajectory[]): number => ts.reduce((s, t) => s + t.reward, 0) / ts.length;
      expect(meanOf(finished)).toBeGreaterThan(0);
      expect(m?.meanReward).toBeCloseTo(meanOf(finished), 6);
      expect(m?.successRate).toBeCloseTo(finished.filter((t) => t.success).length / finished.length, 6);
    } finally {
      res.trainer.dispose();
      run.dispose();
    }
  });

  it('runs the groups one after another, so the budget ends whole groups first and the update has them', async () => {
    // 4 tasks x 2 rollouts from scratch against 20 real transitions. Side by side, all 8 episodes
    // took their second step by transition 16 and none could have bought by then (search, open,
    // buy): every group held a cut episode and nothing was learned from the budget.
    const c = config({ mode: 'real', iterations: 1, tasksPerIteration: 4, maxSteps: 8, budgets: { realTransitions: 20 }, curriculum: { enabled: false } });
    const run = await prepareRun(c);
    const stored: Trajectory[] = [];
    const res = await runTraining(c, { ...run.deps, storeRollouts: async (t) => void stored.push(...t) });
    try {
      expect(res.realTransitions).toBe(20);
      const ended = (t: Trajectory): boolean => t.steps.at(-1)?.done === true || t.steps.length >= c.maxSteps;
      const group = (t: Trajectory): number => Math.floor(Number(/:e(\d+):/.exec(t.id)?.[1]) / c.groupSize);
      // The first group ran to its end; cut episodes only in the groups after the last whole one.
      const first = stored.filter((t) => group(t) === 0);
      expect(first).toHaveLength(2);
      expect(first.every(ended)).toBe(true);
      const lastWhole = Math.max(...[0, 1, 2, 3].filter((g) => stored.filter((t) => group(t) === g && ended(t)).length === c.groupSize));
      expect(stored.filter((t) => !ended(t)).every((t) => group(t) > lastWhole)).toBe(true);
      expect(res.metrics.at(-1)?.updateMs).toBeGreaterThan(0);
    } finally {
      res.trainer.dispose();
      run.dispose();
    }
  });
});

describe('honesty: a synthetic-only run never touches the real environment', () => {
  it('dreamgym (with sft warm start and curriculum) makes 0 real resets and steps, also on tasks without a recorded first state', async () => {
    const c = config({ mode: 'dreamgym', warmStart: 'sft', iterations: 3 });
    const run = await prepareRun(c);
    const counted = spy(run.deps.spec);
    // RL's pool holds only tasks without a recorded episode (and the generated ones that join it):
    // every rollout starts from the experience model's reset.
    const offline = run.deps.offline;
    const unrecorded = offline.extraTasks ?? [];
    expect(unrecorded.length).toBeGreaterThan(0);
    const recorded = new Set(offline.trajectories.map((t) => t.taskId));
    expect(unrecorded.some((t) => recorded.has(t.id))).toBe(false);
    const experience = run.deps.experience as NonNullable<TrainingDeps['experience']>;
    let simResets = 0;
    const stored: Trajectory[] = [];
    const res = await runTraining(c, {
      ...run.deps,
      spec: counted.spec,
      offline: { ...offline, poolTasks: unrecorded },
      experience: { kind: experience.kind, reset: (task, demos) => (simResets++, experience.reset(task, demos)), step: (request) => experience.step(request) },
      storeRollouts: async (t) => void stored.push(...t),
    });
    res.trainer.dispose();
    run.dispose();
    const episodes = c.iterations * c.tasksPerIteration * c.groupSize;
    expect(simResets).toBe(episodes);
    expect(stored).toHaveLength(episodes);
    expect(stored.some((t) => recorded.has(t.taskId))).toBe(false);
    expect(res.syntheticSteps).toBe(stored.reduce((s, t) => s + t.steps.length, 0));
    expect(counted.calls).toEqual({ create: 0, reset: 0, step: 0 });
    expect(res.realTransitions).toBe(0);
    expect(res.realResets).toBe(0);
  });

  it('a recorded log with successes set aside: the synthetic phase is scored on them by the recorded criterion, trains on none of them and never steps the environment', async () => {
    const c = config({ mode: 'dreamgym', warmStart: 'sft', iterations: 2, tasksPerIteration: 4, offline: { recorded: 30, recordedSelection: 0.2 }, validation: { tasks: 4, every: 1 } });
    const run = await prepareRun(c);
    const aside = run.deps.offline.selection?.trajectories ?? [];
    expect(aside.length).toBeGreaterThanOrEqual(2);
    const asideTasks = new Set(aside.map((t) => t.taskId));
    const counted = spy(run.deps.spec);
    const stored: Trajectory[] = [];
    const res = await runTraining(c, { ...run.deps, spec: counted.spec, storeRollouts: async (t) => void stored.push(...t) });
    res.trainer.dispose();
    run.dispose();
    expect(res.validation?.criterion).toBe('recorded');
    expect(res.validation?.recorded).toBe(aside.length);
    expect((res.validation?.checks ?? []).every((k) => k.agreement !== undefined && k.prefix !== undefined) && (res.validation?.checks ?? []).length > 0).toBe(true);
    expect(stored.length).toBeGreaterThan(0);
    expect(stored.some((t) => asideTasks.has(t.taskId))).toBe(false);
    expect(counted.calls).toEqual({ create: 0, reset: 0, step: 0 });
  });

  it('instruction variants of recorded tasks join a synthetic pool only: dreamgym trains on them with 0 real steps, an s2r real phase never chooses one', async () => {
    const over = { warmStart: 'sft', iterations: 3, tasksPerIteration: 4, offline: { recorded: 16 }, curriculum: { variants: 12, generatedShare: 1, perIteration: 0 } } as const;
    const c = config({ mode: 'dreamgym', ...over });
    const run = await prepareRun(c);
    const variants = run.deps.offline.variantTasks ?? [];
    expect(variants.length).toBeGreaterThan(0);
    const pooled = new Set(run.deps.offline.tasks.map((t) => t.id));
    for (const v of variants) {
      expect(v.goal).toBeNull();
      expect(pooled.has(v.rootId as string)).toBe(true);
    }
    const counted = spy(run.deps.spec);
    const stored: Trajectory[] = [];
    const res = await runTraining(c, { ...run.deps, spec: counted.spec, storeRollouts: async (t) => void stored.push(...t) });
    res.trainer.dispose();
    run.dispose();
    const variantIds = new Set(variants.map((v) => v.id));
    // generatedShare 1: every task of every iteration is a variant.
    expect(stored.length).toBeGreaterThan(0);
    expect(stored.every((t) => variantIds.has(t.taskId))).toBe(true);
    expect(counted.calls).toEqual({ create: 0, reset: 0, step: 0 });

    // Resumed from behaviour cloning's snapshot (as an experiment's warm arms are), the synthetic phase still gets them.
    const cloningRun = await prepareRun(config({ mode: 'sft', ...over }));
    const cloned = await runTraining(config({ mode: 'sft', ...over }), cloningRun.deps);
    cloned.trainer.dispose();
    cloningRun.dispose();
    const again = await prepareRun(c);
    const resumedStored: Trajectory[] = [];
    const resumed = await runTraining(c, { ...again.deps, storeRollouts: async (t) => void resumedStored.push(...t) }, { resume: cloned.snapshot });
    resumed.trainer.dispose();
    again.dispose();
    expect(resumedStored.length).toBe(stored.length);
    expect(resumedStored.every((t) => variantIds.has(t.taskId))).toBe(true);

    const s = config({ mode: 's2r', ...over, iterations: 1, s2r: { realBudget: 40 } });
    const s2r = await prepareRun(s);
    expect((s2r.deps.offline.variantTasks ?? []).length).toBeGreaterThan(0);
    const resetGoals: unknown[] = [];
    const real = spy(s2r.deps.spec);
    const create = real.spec.create;
    const watched: AnyEnvSpec = { ...real.spec, create: () => { const env = create(); return { ...env, reset: (task: Task) => (resetGoals.push(task.goal), env.reset(task)) }; } };
    const out = await runTraining(s, { ...s2r.deps, spec: watched });
    out.trainer.dispose();
    s2r.dispose();
    expect(resetGoals.length).toBeGreaterThan(0);
    expect(resetGoals.every((g) => g !== null)).toBe(true);
    // Not for a real-only run, nor by default without recorded episodes.
    expect(config({ mode: 'dreamgym' }).curriculum.variants).toBe(0);
    const realRun = await prepareRun(config({ mode: 'real', ...over }));
    expect(realRun.deps.offline.variantTasks).toBeUndefined();
    realRun.dispose();
  });

  it('a real run counts every real step it takes', async () => {
    const c = config({ mode: 'real' });
    const run = await prepareRun(c);
    const counted = spy(run.deps.spec);
    const res = await runTraining(c, { ...run.deps, spec: counted.spec });
    res.trainer.dispose();
    run.dispose();
    expect(counted.calls.step).toBeGreaterThan(0);
    expect(res.realTransitions).toBe(counted.calls.step);
    expect(res.realResets).toBe(counted.calls.reset);
  });

  it('refuses a synthetic mode without an experience model', async () => {
    const c = config({ mode: 'dreamgym' });
    const run = await prepareRun(c);
    await expect(runTraining(c, { ...run.deps, experience: null })).rejects.toThrow(TrainingSetupError);
    run.dispose();
  });
});

describe('prepareRun with an injected LLM', () => {
  it('without one, sim llm and prior llm are refused naming --llm-url; with one, they and the generator use it', async () => {
    await expect(prepareRun(config({ sim: 'llm' }))).rejects.toThrow(/needs an LLM: .*--llm-url/);
    await expect(prepareRun(config({ prior: 'llm' }))).rejects.toThrow(/needs an LLM: .*--llm-url/);
    const seen: ChatCompletionRequestNonStreaming[] = [];
    const engine: ChatEngine = {
      chatCompletion: async (request) => {
        seen.push(request);
        return { choices: [{ index: 0, message: { role: 'assistant', content: '{"tasks": []}' }, finish_reason: 'stop', logprobs: null }] } as unknown as ChatCompletion;
      },
    };
    const run = await prepareRun(config({ sim: 'llm', prior: 'llm' }), { llm: { engine, model: 'm' } });
    expect(run.deps.experience?.kind).toBe('llm');
    expect(run.deps.prior?.kind).toBe('llm');
    expect(run.deps.generator?.kind).toBe('llm');
    expect(run.experience).toBeNull();
    // Demonstrations come from the offline data's real transitions, most similar first.
    const first = run.deps.offline.trajectories[0]!.steps[0]!;
    const demos = await run.deps.demos!(first.observation, first.action, 3);
    expect(demos).toHaveLength(3);
    expect(demos[0]).toMatchObject({ state: first.observation.text, action: first.action });
    expect(demos[0]!.score!).toBeGreaterThanOrEqual(demos[2]!.score!);
    await run.deps.generator!.generate(run.deps.offline.tasks.slice(0, 1), 1);
    expect(seen[0]?.model).toBe('m');
    // The retrieval model stays the default, and needs no LLM.
    const plain = await prepareRun(config({}));
    expect(plain.deps.experience?.kind).toBe('retrieval');
    expect(plain.deps.generator?.kind).toBe('recombination');
    plain.dispose();
  });
});

/**
 * Runs `c` uninterrupted, then again stopped (through the AbortSignal) once `stopAt` iterations
 * are done and resumed from that snapshot as from disk. Every run gets a fresh task generator, as
 * a resumed run in another process has, and its own store of rollouts.
 */
async function stopAndResume(c: ReturnType<typeof config>, stopAt: number) {
  const run = await prepareRun(c);
  const freshGenerator = (): RecombinationTaskGenerator => new RecombinationTaskGenerator({ seed: c.seed });
  const storing = (into: Trajectory[]): TrainingDeps => ({ ...run.deps, generator: freshGenerator(), storeRollouts: async (t) => void into.push(...t) });
  const stored = { full: [] as Trajectory[], stopped: [] as Trajectory[], resumed: [] as Trajectory[] };
  try {
    const full = await runTraining(c, storing(stored.full));
    full.trainer.dispose();
    const controller = new AbortController();
    let last: RunSnapshot | undefined;
    const persist = async (s: RunSnapshot) => {
      last = s;
      if (s.iteration === stopAt) controller.abort();
    };
    await expect(runTraining(c, { ...storing(stored.stopped), persist }, { signal: controller.signal })).rejects.toThrow(TrainingAbortedError);
    const at = last as RunSnapshot;
    expect(at.iteration).toBe(stopAt);
    const resumed = await runTraining(c, storing(stored.resumed), { resume: asOnDisk(at) });
    resumed.trainer.dispose();
    return { full, resumed, at, stored, initialGeneratorState: freshGenerator().saveState() };
  } finally {
    run.dispose();
  }
}

describe('abort and resume', () => {
  it('a run stopped midway and resumed from its last snapshot equals an uninterrupted one', async () => {
    // Stopped after the third iteration (sft, sft, first RL iteration).
    const c = config({ mode: 'dreamgym', warmStart: 'sft', iterations: 3 });
    const { full, resumed, stored } = await stopAndResume(c, 3);
    expect(resumed.snapshot.iteration).toBe(full.snapshot.iteration);
    expect(resumed.snapshot.pool.map((t) => t.id)).toEqual(full.snapshot.pool.map((t) => t.id));
    expect(withoutTimes(resumed.metrics)).toEqual(withoutTimes(full.metrics));
    expect(resumed.snapshot.checkpoint.weights).toEqual(full.snapshot.checkpoint.weights);
    // The buffer: what the stopped run stored, then the resumed one, is what the uninterrupted run stored.
    expect(stored.full.length).toBeGreaterThan(0);
    expect(stored.stopped.length).toBeGreaterThan(0);
    expect([...stored.stopped, ...stored.resumed]).toEqual(stored.full);
    // The synthetic phase's validation too (started before the stop, ended after the resume).
    expect(full.validation?.end).toBeDefined();
    expect(resumed.validation).toEqual(full.validation);
  });

  const midRealPhase: [string, Partial<TrainingConfigInput>, number][] = [
    // From scratch in the real environment: stopped after two of four iterations.
    ['real', { mode: 'real', iterations: 4, tasksPerIteration: 3, budgets: { realTransitions: 90 } }, 2],
    // Two synthetic iterations, then the real phase under its budget: stopped after its first iteration.
    ['s2r', { mode: 's2r', iterations: 3, tasksPerIteration: 3, s2r: { realBudget: 45 } }, 4],
  ];
  for (const [name, over, stopAt] of midRealPhase) {
    it(`${name}: resumed mid-real-phase, it spends the same real budget and generates the same tasks as an uninterrupted run`, async () => {
      const c = config(over);
      const { full, resumed, at, stored, initialGeneratorState } = await stopAndResume(c, stopAt);
      // The stop fell inside the real phase, after real steps and generated tasks, and the run went on.
      expect(at.metrics.at(-1)?.phase).toBe('real');
      expect(at.realTransitions).toBeGreaterThan(0);
      expect(at.realResets).toBeGreaterThan(0);
      expect(at.generatorState).not.toEqual(initialGeneratorState);
      expect(full.metrics.length).toBeGreaterThan(stopAt);
      expect(resumed.realTransitions).toBe(full.realTransitions);
      expect(resumed.realResets).toBe(full.realResets);
      expect(resumed.stoppedBy).toBe(full.stoppedBy);
      expect(resumed.snapshot.generatorState).toEqual(full.snapshot.generatorState);
      expect(resumed.snapshot.pool.map((t) => t.id)).toEqual(full.snapshot.pool.map((t) => t.id));
      expect(withoutTimes(resumed.metrics)).toEqual(withoutTimes(full.metrics));
      expect(resumed.snapshot.checkpoint.weights).toEqual(full.snapshot.checkpoint.weights);
      expect([...stored.stopped, ...stored.resumed]).toEqual(stored.full);
    });
  }
});

/** A fresh run's generator (as a resumed run in another process has: see setup.ts), counting its calls by iteration. */
function countedGenerator(c: ReturnType<typeof config>, calls: number[], at: () => number): TaskGenerator {
  const g = new RecombinationTaskGenerator({ seed: c.seed });
  return {
    kind: g.kind,
    generate: (seeds, n) => (calls.push(at()), g.generate(seeds, n)),
    generateWithReport: (seeds, n) => g.generateWithReport(seeds, n),
    saveState: () => g.saveState(),
    restoreState: (state) => g.restoreState(state),
  };
}

describe('resume and the curriculum', () => {
  it('a resumed run generates the same tasks as an uninterrupted one after the resume point', async () => {
    const c = config({ mode: 'dreamgym', iterations: 4, groupSize: 4, tasksPerIteration: 4, curriculum: { perIteration: 4 } });
    const run = await prepareRun(c);
    let iteration = 0;
    const onProgress = (p: TrainingProgress) => void (iteration = p.iteration);
    const deps: TrainingDeps = { ...run.deps, storeRollouts: async () => {} };
    const generated = (s: RunSnapshot) => s.pool.filter((t) => t.origin === 'generated').map((t) => t.id);

    const fullCalls: number[] = [];
    const full = await runTraining(c, { ...deps, generator: countedGenerator(c, fullCalls, () => iteration) }, { onProgress });
    full.trainer.dispose();

    // Stopped after two iterations, then resumed as from disk with another fresh generator.
    let last: RunSnapshot | undefined;
    const controller = new AbortController();
    const persist = async (s: RunSnapshot) => {
      last = s;
      if (s.iteration === 2) controller.abort();
    };
    const stopped = runTraining(c, { ...deps, generator: countedGenerator(c, [], () => iteration), persist }, { signal: controller.signal, onProgress });
    await expect(stopped).rejects.toThrow(TrainingAbortedError);
    const resumedCalls: number[] = [];
    const resumed = await runTraining(c, { ...deps, generator: countedGenerator(c, resumedCalls, () => iteration) }, { resume: asOnDisk(last!), onProgress });
    resumed.trainer.dispose();
    run.dispose();

    // The generator ran both before and after the resume point, so the test can tell.
    expect(fullCalls.filter((i) => i < 2).length).toBeGreaterThan(0);
    expect(resumedCalls.length).toBeGreaterThan(0);
    expect(generated(resumed.snapshot)).toEqual(generated(full.snapshot));
    expect(resumed.snapshot.generatorState).toEqual(full.snapshot.generatorState);
    expect(withoutTimes(resumed.metrics)).toEqual(withoutTimes(full.metrics));
  });
});

describe('behaviour cloning on a recorded log', () => {
  it('weighs a demonstration by its success, or by its reward (clipped to [0, 1]) when reward-weighted', () => {
    expect(cloningWeight({ success: true, reward: 1 }, 'successes')).toBe(1);
    expect(cloningWeight({ success: false, reward: 0.6 }, 'successes')).toBe(0);
    expect(cloningWeight({ success: false, reward: 0.6 }, 'reward-weighted')).toBe(0.6);
    expect(cloningWeight({ success: true, reward: 1 }, 'reward-weighted')).toBe(1);
    expect(cloningWeight({ success: false, reward: -0.2 }, 'reward-weighted')).toBe(0);
    expect(cloningWeight({ success: true, reward: 3 }, 'reward-weighted')).toBe(1);
    expect(cloningWeight({ success: false, reward: Number.NaN }, 'reward-weighted')).toBe(0);
    expect(() => parseTrainingConfig({ env: 'shop', mode: 'sft', sft: { cloning: 'best' as 'successes' } })).toThrow(/sft\.cloning.*got "best"/);
    expect(parseTrainingConfig({ env: 'shop', mode: 'sft' }).sft.cloning).toBe('successes');
  });

  it("clones the log's successes alike, or every episode with a reward weighted by it; a log with nothing to clone is refused", async () => {
    const over = { mode: 'sft' as const, offline: { recorded: 24 }, sft: { epochs: 1 } };
    const data = recordedSeedData(getEnvSpec('shop'), config(over));
    const wins = data.trajectories.filter((t) => t.success);
    const partial = data.trajectories.filter((t) => !t.success && t.reward > 0);
    // Shop's purchase reward is partial: the log holds successes and partly right purchases.
    expect(wins.length).toBeGreaterThan(0);
    expect(partial.length).toBeGreaterThan(0);
    const decisionsOf = (ts: readonly Trajectory[]) => ts.reduce((n, t) => n + t.steps.filter((s) => s.observation.actions.includes(s.action)).length, 0);
    const cloned = async (cloning: 'successes' | 'reward-weighted', offline = data): Promise<readonly SftExample[]> => {
      const c = config({ ...over, sft: { epochs: 1, cloning } });
      const run = await prepareRun(c, { data: { spec: getEnvSpec('shop'), offline, evalTasks: [] } });
      const seen: (readonly SftExample[])[] = [];
      const original = Trainer.prototype.sftUpdate;
      const spyOn = vi.spyOn(Trainer.prototype, 'sftUpdate').mockImplementation(function (this: Trainer, examples) {
        seen.push(examples);
        return original.call(this, examples);
      });
      try {
        const res = await runTraining(c, run.deps);
        res.trainer.dispose();
      } finally {
        spyOn.mockRestore();
        run.dispose();
      }
      return seen[0] ?? [];
    };
    const successes = await cloned('successes');
    expect(successes).toHaveLength(decisionsOf(wins));
    expect(successes.every((e) => e.weight === 1)).toBe(true);
    const weighted = await cloned('reward-weighted');
    expect(weighted).toHaveLength(decisionsOf([...wins, ...partial]));
    const rewards = new Set([...wins, ...partial].map((t) => Math.min(1, t.reward)));
    expect(weighted.every((e) => rewards.has(e.weight as number))).toBe(true);
    expect(weighted.some((e) => (e.weight as number) < 1)).toBe(true);
    // Only failures: nothing for `successes`, the partly right ones for `reward-weighted`.
    const failures = { ...data, trajectories: data.trajectories.filter((t) => !t.success) };
    await expect(cloned('successes', failures)).rejects.toThrow(/behaviour cloning \(successes\) needs a successful one among the offline data's \d+ demonstrations/);
    expect(await cloned('reward-weighted', failures)).toHaveLength(decisionsOf(partial));
  });
});
