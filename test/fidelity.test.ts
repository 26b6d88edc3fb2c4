import { describe, expect, it } from 'vitest';
import { getEnvSpec } from '../src/envs/registry.ts';
import { EchoExperienceModel } from '../src/experience/baselines.ts';
import type { RetrievalModelConfig } from '../src/experience/retrieval/model.ts';
import type { ExperienceModel } from '../src/experience/types.ts';
import { Rng } from '../src/core/rng.ts';
import type { RealEnvironment, Task } from '../src/core/types.ts';
import { runEpisode } from '../src/envs/episode.ts';
import type { AnyEnvSpec } from '../src/envs/spec.ts';
import {
  jaccard,
  measureFalseSuccess,
  measureGoalBlindFalseSuccess,
  measureFidelity,
  measureFidelityTable,
  mixedOfflineData,
  type FidelityMeasures,
  type FidelityTable,
} from '../src/train/fidelity.ts';

type Env = 'shop' | 'household';

/**
 * Floors set from measurement at this size (150 train / 40 test episodes, seed 0; BENCHMARKS.md
 * "Simulator fidelity" has the full-size table), each between what the model measures and what a
 * deliberately broken variant (neighbours ranked farthest first, no reward model, echo) measures,
 * so that the broken variants fail them.
 */
const FLOORS: Record<Env, Partial<Record<keyof FidelityMeasures, number>>> = {
  shop: { actionAgreement: 0.76, nextStateMatch: 0.55, finalVerdictBalanced: 0.85 },
  household: { actionAgreement: 0.945, nextStateMatch: 0.63, consistency: 0.95, finalVerdictBalanced: 0.9 },
};
/** The most a uniformly random policy may succeed inside the simulator (it succeeds 0-2.5% for real). */
const RANDOM_SUCCESS_CEILING = 0.1;
/** Margins over the best trivial simulator. */
const MARGINS: Record<Env, Partial<Record<keyof FidelityMeasures, number>>> = {
  shop: { actionAgreement: 0.3, nextStateMatch: 0.3, finalVerdictBalanced: 0.2 },
  // Household's verdict tied majority (97.5 both at this size) while a trip away and back counted
  // as an unasked choice at the place; it now measures 100.
  household: { actionAgreement: 0.08, nextStateMatch: 0.3, finalVerdictBalanced: 0.01 },
};

const SIZE = { trainEpisodes: 150, testEpisodes: 40, seed: 0, falseSuccessEpisodes: 40 };

/** The floors a measured model misses, as readable strings (empty when it meets them all). */
function misses(env: Env, measures: FidelityMeasures, randomSuccess?: readonly number[]): string[] {
  const out: string[] = [];
  for (const [key, floor] of Object.entries(FLOORS[env]) as [keyof FidelityMeasures, number][]) {
    if (!(measures[key] >= floor)) out.push(`${key} ${measures[key]} < ${floor}`);
  }
  for (const r of randomSuccess ?? []) if (r > RANDOM_SUCCESS_CEILING) out.push(`random success ${r} > ${RANDOM_SUCCESS_CEILING}`);
  return out;
}

const randomSuccessOf = (t: FidelityTable): number[] => t.falseSuccess.filter((r) => r.policy === 'random' && r.taskType === 'all').map((r) => r.simSuccess);

/**
 * The floors judge the predictor alone (`grounding: false`): grounded, a step it predicts badly
 * halts as unknown, which the grounding test below measures on its own.
 */
async function table(env: Env, model: Partial<RetrievalModelConfig> = {}, baselines: ('echo' | 'majority')[] = []): Promise<FidelityTable> {
  return measureFidelityTable(getEnvSpec(env), { ...SIZE, model: { grounding: false, ...model }, baselines });
}

describe('jaccard', () => {
  it('is intersection over union of the two sets', () => {
    expect(jaccard(['a', 'b', 'c'], ['b', 'c', 'd'])).toBe(0.5);
    expect(jaccard([], [])).toBe(1);
    expect(jaccard(['a'], [])).toBe(0);
    expect(jaccard(['a', 'a'], ['a'])).toBe(1);
  });
});

describe('retrieval experience model fidelity (held-out test-split episodes)', () => {
  for (const env of ['shop', 'household'] as const) {
    it(`${env}: meets the floors, beats the trivial simulators by the stated margins, and a random policy cannot game it`, async () => {
      const t = await table(env, {}, ['echo', 'majority']);
      const [model, ...baselines] = t.rows;
      expect(model?.sim).toBe('retrieval');
      expect(baselines.map((b) => b.sim)).toEqual(['echo', 'majority']);
      expect(model!.testTransitions).toBeGreaterThan(100);
      expect(misses(env, model!, randomSuccessOf(t))).toEqual([]);
      for (const [key, margin] of Object.entries(MARGINS[env]) as [keyof FidelityMeasures, number][]) {
        for (const b of baselines) expect(model![key] - b[key], `${key} over ${b.sim}`).toBeGreaterThanOrEqual(margin);
      }
      // In shop each trivial simulator wins one half of the verdict by always giving the same answer
      // and loses the other. (Household's failures are step-limit endings, which no simulator calls
      // a success: there the random policy's success inside the simulator is what tells them apart.)
      if (env === 'shop') for (const b of baselines) expect(b.finalVerdictBalanced).toBeLessThanOrEqual(0.8);
      // Both policies were measured in both task groups, inside and outside the simulator.
      expect(new Set(t.falseSuccess.map((r) => `${r.policy}/${r.tasks}`))).toEqual(
        new Set(['random', 'noisy:0.3', 'scripted:0.3', 'demonstrator:0.3'].flatMap((p) => [`${p}/grounded`, `${p}/held-out`])),
      );
    });

    it(`${env}: the floors catch a broken model: neighbours ranked backwards, or no reward model`, async () => {
      const farthest = await table(env, { neighbourOrder: 'farthest' });
      expect(misses(env, farthest.rows[0]!, randomSuccessOf(farthest))).not.toEqual([]);
      // Without the reward model and the kinds of action successes require: no evidence for a success but its kind.
      const noReward = await table(env, { useRewardModel: false, requiredKinds: false });
      expect(misses(env, noReward.rows[0]!, randomSuccessOf(noReward)).some((m) => m.startsWith('random success'))).toBe(true);
    });

    it(`${env}: the floors catch an echo simulator`, async () => {
      const held = mixedOfflineData(getEnvSpec(env), 'noisy:0.3,noisy:1', 40, 1, 'test');
      const echo = await measureFidelity(new EchoExperienceModel(), held);
      expect(misses(env, echo)).not.toEqual([]);
    });
  }
});

describe('grounded retrieval model fidelity', () => {
  it('shop: the steps it keeps match reality more often than the predictor alone, it states its grounding, and a random policy cannot game it', async () => {
    const predictor = await table('shop');
    const grounded = await measureFidelityTable(getEnvSpec('shop'), { ...SIZE, baselines: [], falseSuccessPolicies: ['random'], goalBlind: false });
    const [p, g] = [predictor.rows[0]!, grounded.rows[0]!];
    expect(p.unknownShare).toBe(0);
    expect(p.doubtfulShare).toBe(0);
    // Made-up steps are flagged: halted, or gone on at a cost.
    expect(g.unknownShare + g.doubtfulShare).toBeGreaterThan(0);
    expect(g.knownNextStateMatch).toBeGreaterThan(p.nextStateMatch + 0.1);
    // Reward accuracy is stated on the steps it answers, apart from the share it declines (whose
    // reward is its penalty, not a prediction); without grounding every step is answered.
    expect(g.declinedShare).toBeCloseTo(g.unknownShare + g.doubtfulShare, 10);
    expect(g.answeredRewardAccuracy).toBeGreaterThan(g.rewardAccuracy);
    expect(g.answeredRewardAccuracy).toBeGreaterThanOrEqual(0.9);
    expect(p.declinedShare).toBe(0);
    expect(p.answeredRewardAccuracy).toBe(p.rewardAccuracy);
    expect(p.answeredDoneAccuracy).toBe(p.doneAccuracy);
    expect(randomSuccessOf(grounded).every((r) => r <= RANDOM_SUCCESS_CEILING)).toBe(true);
    const report = grounded.grounding!;
    expect(report.heldOutSteps).toBe(g.trainTransitions);
    expect(report.success.precision).toBeGreaterThan(0.9);
    expect(predictor.grounding).toBeUndefined();
  });
});

/** A "simulator" that steps a real environment of each episode's task: what a policy sees inside is what it would see outside. */
function replayModel(spec: AnyEnvSpec, tasks: readonly Task[]): ExperienceModel {
  let world = spec.create();
  return {
    kind: 'replay',
    reset: async () => ({ text: '', actions: [] }),
    step: async ({ task, history, action }) => {
      if (history.length === 0) {
        world = spec.create();
        world.reset(tasks.find((t) => t.id === task.id)!);
      }
      const r = world.step(action);
      return { reasoning: '', observation: r.observation, reward: r.reward, done: r.done, valid: true };
    },
  };
}

describe('next-state match by kind of action', () => {
  it('adds up to the overall figure, marks actions taken before as "again", and scores a faithful replay 100% on every kind', async () => {
    const spec = getEnvSpec('household');
    const held = mixedOfflineData(spec, 'noisy:0.3,noisy:1', 20, 1, 'test');
    const withNext = held.reduce((n, { trajectory }) => n + trajectory.steps.length - 1, 0);
    const echo = await measureFidelity(new EchoExperienceModel(), held);
    const steps = echo.nextStateByKind.reduce((n, k) => n + k.steps, 0);
    expect(steps).toBe(withNext);
    const weighted = echo.nextStateByKind.reduce((x, k) => x + k.match * k.steps, 0) / steps;
    expect(weighted).toBeCloseTo(echo.nextStateMatch, 10);
    // Most steps first; walks to places the instruction does not name lead, and returns are their own kind.
    expect(echo.nextStateByKind.map((k) => k.steps)).toEqual([...echo.nextStateByKind.map((k) => k.steps)].sort((a, b) => b - a));
    expect(echo.nextStateByKind.map((k) => k.kind)).toEqual(expect.arrayContaining(['go to qx', 'go to qx again']));
    expect(echo.nextStateByKind.find((k) => k.kind === 'go to qx')?.match).toBe(0);
    const replay = await measureFidelity(replayModel(spec, held.map((h) => h.task)), held);
    expect(replay.nextStateByKind.length).toBeGreaterThan(5);
    for (const k of replay.nextStateByKind) expect(k.match, k.kind).toBe(1);
  });
});

describe('false-success measurement', () => {
  it('tells a simulator that calls every ending a success from one that never does', async () => {
    const spec = getEnvSpec('shop');
    const tasks = spec.tasks({ split: 'train', count: 10, seed: 3 });
    const gullible: ExperienceModel = {
      kind: 'gullible',
      reset: async () => ({ text: '', actions: [] }),
      step: async ({ action }) =>
        action === 'click[buy now]'
          ? { reasoning: '', observation: { text: 'over', actions: [] }, reward: 1, done: true, valid: true }
          : { reasoning: '', observation: { text: 'item', actions: ['click[buy now]'] }, reward: 0, done: false, valid: true },
    };
    const [gullibleRow] = await measureFalseSuccess(spec, gullible, tasks, 'random', 0, 'grounded');
    expect(gullibleRow).toMatchObject({ policy: 'random', tasks: 'grounded', taskType: 'all', episodes: 10, simSuccess: 1 });
    expect(gullibleRow!.realSuccess).toBeLessThan(0.5);
    const [echoRow] = await measureFalseSuccess(spec, new EchoExperienceModel(), tasks, 'noisy:0.3', 0, 'held-out');
    expect(echoRow!.simSuccess).toBe(0);
    await expect(measureFalseSuccess(spec, gullible, tasks, 'greedy', 0, 'grounded')).rejects.toThrow(/random" or "noisy:EPS/);
  });

  it('the noisy scripted policy acts on what the simulator shows: a simulator that replays the real world scores what the real one does', async () => {
    const spec = getEnvSpec('household');
    const tasks = spec.tasks({ split: 'train', count: 12, seed: 4 });
    // What the policy sees inside the replay simulator is what it would see outside, so the two
    // columns agree; echo never ends an episode.
    const replay = replayModel(spec, tasks);
    const [same] = await measureGoalBlindFalseSuccess(spec, replay, tasks, 'scripted', 0, 0, 'grounded');
    expect(same!.policy).toBe('scripted:0');
    expect(same!.realSuccess).toBeGreaterThanOrEqual(0.9);
    expect(same!.simSuccess).toBe(same!.realSuccess);
    const rows = await measureGoalBlindFalseSuccess(spec, new EchoExperienceModel(), tasks, 'scripted', 0.3, 0, 'held-out');
    expect(rows.find((r) => r.taskType === 'all')!.simSuccess).toBe(0);
    await expect(measureGoalBlindFalseSuccess(spec, replay, tasks, 'scripted', 2, 0, 'grounded')).rejects.toThrow(/got 2/);
  });

  it('the noisy demonstrator acts on observations alone, a fresh one per episode, inside and outside the simulator', async () => {
    for (const env of ['shop', 'household'] as const) {
      const spec = getEnvSpec(env);
      const tasks = spec.tasks({ split: 'train', count: 10, seed: 6 });
      const [same] = await measureGoalBlindFalseSuccess(spec, replayModel(spec, tasks), tasks, 'demonstrator', 0, 0, 'grounded');
      expect(same!.policy).toBe('demonstrator:0');
      // Without noise it succeeds as often as the offline data's demonstrator episodes on the same tasks.
      const recorded = tasks.map((t) => runEpisode(spec.create(), t, spec.demonstrator!(), { rng: new Rng(0) }).success);
      expect(same!.realSuccess).toBe(recorded.filter(Boolean).length / tasks.length);
      expect(same!.realSuccess).toBeGreaterThanOrEqual(0.7);
      expect(same!.simSuccess).toBe(same!.realSuccess);
      const echo = await measureGoalBlindFalseSuccess(spec, new EchoExperienceModel(), tasks, 'demonstrator', 0.3, 0, 'held-out');
      expect(echo.find((r) => r.taskType === 'all' || echo.length === 1)!.simSuccess).toBe(0);
    }
    // A "demonstrator" that reads its environment (the goal) is refused, not measured.
    const shop = getEnvSpec('shop');
    const peeking = { ...shop, demonstrator: () => (env: RealEnvironment) => env.expertAction() } as AnyEnvSpec;
    await expect(measureGoalBlindFalseSuccess(peeking, new EchoExperienceModel(), shop.tasks({ split: 'train', count: 2, seed: 6 }), 'demonstrator', 0, 0, 'grounded')).rejects.toThrow(/read its environment \(expertAction\)/);
    await expect(measureGoalBlindFalseSuccess({ ...shop, demonstrator: undefined } as AnyEnvSpec, new EchoExperienceModel(), [], 'demonstrator', 0, 0, 'grounded')).rejects.toThrow(/has no demonstrator/);
  });

  it('the real column does not depend on the simulator measured next to it', async () => {
    const spec = getEnvSpec('shop');
    const tasks = spec.tasks({ split: 'train', count: 20, seed: 5 });
    // The gullible model ends every episode at once; echo never does: very different numbers of draws.
    const gullible: ExperienceModel = {
      kind: 'gullible',
      reset: async () => ({ text: '', actions: [] }),
      step: async () => ({ reasoning: '', observation: { text: 'over', actions: [] }, reward: 1, done: true, valid: true }),
    };
    const [a] = await measureFalseSuccess(spec, gullible, tasks, 'noisy:0.3', 0, 'grounded');
    const [b] = await measureFalseSuccess(spec, new EchoExperienceModel(), tasks, 'noisy:0.3', 0, 'grounded');
    expect(a!.realSuccess).toBe(b!.realSuccess);
    expect(a!.simSuccess).not.toBe(b!.simSuccess);
  });
});
