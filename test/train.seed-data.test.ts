import { describe, expect, it, vi } from 'vitest';
import type { Task, Trajectory } from '../src/core/types.ts';
import { getEnvSpec } from '../src/envs/registry.ts';
import { generateOfflineData } from '../src/envs/offline.ts';
import { RetrievalExperienceModel } from '../src/experience/retrieval/model.ts';
import { HashedEmbedder } from '../src/policy/hashed-embedder.ts';
import type { ExperienceModel } from '../src/experience/types.ts';
import { dataOnlySpec, evaluateSynthetic, MIN_GROUNDING_TASKS, MIN_HELD_OUT_TASKS, MIN_RECORDED, planSeedData, rankSynthetic, SeedDataError, syntheticTrust, THIN_GROUNDING, trustPhrase, type SyntheticTrust } from '../src/train/seed-data.ts';
import { recordedAgreement } from '../src/train/selection.ts';
import { parseTrainingConfig } from '../src/train/config.ts';
import { runTraining } from '../src/train/loop.ts';
import { prepareRun } from '../src/train/setup.ts';
import { Trainer } from '../src/rl/trainer.ts';
import type { SftExample } from '../src/rl/sft.ts';

function shopData(episodes: number, policy = 'noisy:0.3'): { tasks: Task[]; trajectories: Trajectory[] } {
  const pairs = [...generateOfflineData(getEnvSpec('shop'), { episodes, seed: 0, policy, split: 'train' })];
  return { tasks: pairs.map((p) => p.task), trajectories: pairs.map((p) => p.trajectory) };
}

describe('planSeedData', () => {
  it('splits by task, deterministically; held-out trajectories never ground the model', () => {
    const { tasks, trajectories } = shopData(40);
    const plan = planSeedData(tasks, trajectories, 3);
    expect(plan.domain).toBe('shop');
    expect(plan.counts).toMatchObject({ groundingTasks: 32, heldOutTasks: 8, groundingTrajectories: 32, heldOutTrajectories: 8 });
    const held = new Set(plan.heldOut.map((t) => t.id));
    expect(plan.grounding.trajectories.some((t) => held.has(t.taskId))).toBe(false);
    expect(plan.heldOut.every((t) => plan.heldOutStarts.has(t.id))).toBe(true);
    expect(planSeedData(tasks, trajectories, 3).heldOut).toEqual(plan.heldOut);
    expect(planSeedData(tasks, trajectories, 4).heldOut).not.toEqual(plan.heldOut);
  });

  it('holds recorded successes out for model selection where the data can spare them: neither grounding nor evaluation holds them', () => {
    const { tasks, trajectories } = shopData(100, 'expert');
    const plan = planSeedData(tasks, trajectories, 3);
    expect(plan.counts).toMatchObject({ heldOutTasks: 20, selectionTasks: 8, groundingTasks: 72 });
    const selection = plan.grounding.selection;
    expect(selection?.tasks.length).toBe(8);
    const chosen = new Set(selection?.tasks.map((t) => t.id));
    expect(selection?.trajectories.every((t) => chosen.has(t.taskId) && t.success)).toBe(true);
    expect(plan.grounding.trajectories.some((t) => chosen.has(t.taskId))).toBe(false);
    expect(plan.heldOut.some((t) => chosen.has(t.id))).toBe(false);
    // 40 tasks: 32 left after the held-out ones, 10% of them is under the fewest recorded successes worth an estimate.
    const small = shopData(40, 'expert');
    const smallPlan = planSeedData(small.tasks, small.trajectories, 3);
    expect(smallPlan.counts.selectionTasks).toBe(0);
    expect(smallPlan.grounding.selection).toBeUndefined();
  });

  it("offers every recorded episode to behaviour cloning: reward-weighted cloning learns from the data's partly right failures, successes-only cloning from its successes", async () => {
    const { tasks, trajectories } = shopData(40);
    const plan = planSeedData(tasks, trajectories, 3);
    const grounding = plan.grounding.trajectories;
    const wins = grounding.filter((t) => t.success);
    const partial = grounding.filter((t) => !t.success && t.reward > 0);
    // Shop's purchase reward is partial: noisy episodes hold successes and partly right purchases.
    expect(wins.length).toBeGreaterThan(0);
    expect(partial.length).toBeGreaterThan(0);
    expect(partial.every((t) => plan.grounding.expertIds.has(t.id))).toBe(true);
    const decisionsOf = (ts: readonly Trajectory[]) => ts.reduce((n, t) => n + t.steps.filter((s) => s.observation.actions.includes(s.action)).length, 0);
    const cloned = async (cloning: 'successes' | 'reward-weighted'): Promise<readonly SftExample[]> => {
      const c = parseTrainingConfig({ env: 'shop', mode: 'sft', iterations: 1, evalEpisodes: 1, sft: { epochs: 1, cloning }, policy: { hiddenDim: 8, embeddingDim: 64 } });
      const run = await prepareRun(c, { data: { spec: dataOnlySpec('shop', plan.maxSteps), offline: plan.grounding, evalTasks: [] } });
      const seen: (readonly SftExample[])[] = [];
      const original = Trainer.prototype.sftUpdate;
      const spyOn = vi.spyOn(Trainer.prototype, 'sftUpdate').mockImplementation(function (this: Trainer, examples) {
        seen.push(examples);
        return original.call(this, examples);
      });
      try {
        (await runTraining(c, run.deps)).trainer.dispose();
      } finally {
        spyOn.mockRestore();
        run.dispose();
      }
      return seen[0] ?? [];
    };
    expect(await cloned('successes')).toHaveLength(decisionsOf(wins));
    const weighted = await cloned('reward-weighted');
    expect(weighted).toHaveLength(decisionsOf([...wins, ...partial]));
    expect(weighted.some((e) => (e.weight as number) < 1)).toBe(true);
  });

  it('names what is missing and how much is needed', () => {
    const { tasks, trajectories } = shopData(20);
    const error = (f: () => unknown): string => {
      try {
        f();
      } catch (e) {
        expect(e).toBeInstanceOf(SeedDataError);
        return (e as Error).message;
      }
      return 'no error';
    };
    expect(error(() => planSeedData([], [], 0))).toMatch(/no tasks: a data-only run needs at least 15 seed tasks/);
    expect(error(() => planSeedData(tasks.slice(0, 12), trajectories.slice(0, 12), 0))).toMatch(
      new RegExp(`has 12 seed tasks with trajectories: a data-only run needs at least ${MIN_GROUNDING_TASKS + MIN_HELD_OUT_TASKS} \\(${MIN_GROUNDING_TASKS} to ground the experience model, ${MIN_HELD_OUT_TASKS} held out`),
    );
    expect(error(() => planSeedData(tasks, trajectories.slice(2), 0))).toMatch(/2 of 20 seed tasks have no trajectory \("shop-train-0-0", "shop-train-0-1"\)/);
    expect(error(() => planSeedData(tasks.slice(1), trajectories, 0))).toMatch(/1 trajectories have no task in the data/);
    const household = { ...tasks[0]!, id: 'h', env: 'household' };
    expect(error(() => planSeedData([...tasks, household], trajectories, 0))).toMatch(/mixes domains \(shop: 40 records, household: 1 records\)/);
    const failures = trajectories.map((t) => ({ ...t, success: false, reward: 0 }));
    expect(error(() => planSeedData(tasks, failures, 0))).toMatch(/none of the 15 trajectories that ground the experience model succeeds/);
  });
});

describe('a data-only run has no real environment', () => {
  it('dataOnlySpec refuses to create one', () => {
    const spec = dataOnlySpec('library', 7);
    expect(spec.maxSteps).toBe(7);
    expect(() => spec.create()).toThrow(/no real environment for "library": this run trains on seed data alone/);
    expect(() => spec.tasks({ split: 'test', count: 1, seed: 0 })).toThrow(SeedDataError);
  });

  it('evaluateSynthetic plays held-out tasks inside the experience model: every held-out task once, 0 real steps; taking the first listed action rarely succeeds', async () => {
    const { tasks, trajectories } = shopData(40, 'expert');
    const plan = planSeedData(tasks, trajectories, 0);
    const model = await RetrievalExperienceModel.fromTrajectories(plan.grounding.tasks, plan.grounding.trajectories, new HashedEmbedder({ dim: 64 }));
    try {
      const first = { choose: async (contexts: readonly { observation: { actions: string[] } }[]) => contexts.map((c) => c.observation.actions[0] ?? '') };
      const result = await evaluateSynthetic(first, model, plan.heldOut, plan.heldOutStarts, { maxSteps: plan.maxSteps });
      expect(result.episodes).toBe(plan.heldOut.length);
      expect(result.realSteps).toBe(0);
      expect(result.perTask.every((o) => o.steps >= 1)).toBe(true);
      expect(result.successRate).toBeLessThan(0.5);
    } finally {
      model.dispose();
    }
  });
});

describe('what a synthetic evaluation can be trusted for', () => {
  it("counts the simulator's unknown steps, where it reports grounding", async () => {
    const { tasks, trajectories } = shopData(40, 'expert');
    const plan = planSeedData(tasks, trajectories, 0);
    const model = await RetrievalExperienceModel.fromTrajectories(plan.grounding.tasks, plan.grounding.trajectories, new HashedEmbedder({ dim: 64 }));
    try {
      const first = { choose: async (contexts: readonly { observation: { actions: string[] } }[]) => contexts.map((c) => c.observation.actions[0] ?? '') };
      // Every other step the simulator says the data does not support.
      let n = 0;
      const judging: ExperienceModel = {
        kind: 'judging',
        reset: (t, d) => model.reset(t, d),
        step: async (r) => ({ ...(await model.step(r)), grounding: { support: 0.5, unknown: n++ % 2 === 1 } }),
      };
      const judged = await evaluateSynthetic(first, judging, plan.heldOut, plan.heldOutStarts, { maxSteps: plan.maxSteps });
      expect(judged.grounding.reported).toBe(judged.grounding.steps);
      expect(judged.grounding.unknown).toBe(Math.floor(judged.grounding.steps / 2));
      const silent = await evaluateSynthetic(first, model, plan.heldOut, plan.heldOutStarts, { maxSteps: plan.maxSteps });
      expect(silent.grounding.steps).toBeGreaterThan(0);
      // Today's retrieval model may or may not report grounding; a model without it reports none.
      const bare: ExperienceModel = { kind: 'bare', reset: (t, d) => model.reset(t, d), step: async (r) => {
        const { grounding: _g, ...step } = await model.step(r);
        return step;
      } };
      expect((await evaluateSynthetic(first, bare, plan.heldOut, plan.heldOutStarts, { maxSteps: plan.maxSteps })).grounding.reported).toBe(0);
    } finally {
      model.dispose();
    }
  });

  it("holds the held-out tasks' recorded successes out for the replay estimate, and states grounding, estimate and limits", async () => {
    const { tasks, trajectories } = shopData(60, 'expert');
    const plan = planSeedData(tasks, trajectories, 0);
    const held = new Set(plan.heldOut.map((t) => t.id));
    expect(plan.heldOutRecorded.length).toBeGreaterThanOrEqual(MIN_RECORDED);
    expect(plan.heldOutRecorded.every((e) => held.has(e.taskId))).toBe(true);
    // The policy that plays the recorded actions replays every recorded success.
    const recordedAction = new Map(plan.heldOutRecorded.flatMap((e) => e.steps.map((s, i) => [`${e.instruction}#${i}`, s.action] as const)));
    const replaying = { choose: async (cs: readonly { instruction: string; history: readonly unknown[] }[]) => cs.map((c) => recordedAction.get(`${c.instruction}#${c.history.length}`) ?? '') };
    const replay = await recordedAgreement(replaying, plan.heldOutRecorded);
    expect(replay.replayed).toBe(1);

    const sure = { mean: 1, low: 1, high: 1 };
    const none = { mean: 0, low: 0, high: 0 };
    const trusted = syntheticTrust({ success: sure, grounding: { steps: 100, reported: 100, unknown: 5, doubtful: 0 } }, replay);
    expect(trusted).toEqual({ unknownShare: 0.05, doubtfulShare: 0, recorded: { episodes: replay.episodes, replayed: replay.replayedInterval, agreement: 1 }, flags: [] });
    expect(trustPhrase(trusted)).toBe(`grounding: 5.0% of simulator steps unknown; recorded replay 100.0% [100.0%, 100.0%] of ${replay.episodes} held-out recorded successes (an estimate of real success from below)`);

    // The shortcut: the simulator says 100%, no recorded success is replayed, and a third of its steps were unknown.
    const zero = { ...replay, replayed: 0, replayedInterval: none, agreement: 0.4 };
    const shortcut = syntheticTrust({ success: sure, grounding: { steps: 90, reported: 90, unknown: 30, doubtful: 0 } }, zero);
    expect(shortcut.flags).toEqual(['grounding-thin', 'claim-above-recorded']);
    expect(trustPhrase(shortcut)).toBe(
      `grounding: 33.3% of simulator steps unknown (too thin to rank by: over ${(100 * THIN_GROUNDING).toFixed(1)}%); recorded replay 0.0% [0.0%, 0.0%] of ${replay.episodes} held-out recorded successes (an estimate of real success from below); the simulator's figure is above what the recorded successes support`,
    );
    // No step halts, but most are doubtful (answered on weak support): as thin as halting ones.
    const guessed = syntheticTrust({ success: sure, grounding: { steps: 90, reported: 90, unknown: 0, doubtful: 54 } }, zero);
    expect(guessed.flags).toEqual(['grounding-thin', 'claim-above-recorded']);
    expect(trustPhrase(guessed)).toContain(`grounding: 0.0% of simulator steps unknown, 60.0% doubtful (too thin to rank by: over ${(100 * THIN_GROUNDING).toFixed(1)}% unknown or doubtful)`);
    expect(syntheticTrust({ success: sure, grounding: { steps: 90, reported: 90, unknown: 0, doubtful: 9 } }, zero).flags).toEqual(['claim-above-recorded']);
    // A simulator that reports no grounding, and too few recorded successes for an estimate.
    const blind = syntheticTrust({ success: sure, grounding: { steps: 10, reported: 0, unknown: 0, doubtful: 0 } }, { ...replay, episodes: MIN_RECORDED - 1 });
    expect(blind).toEqual({ unknownShare: null, recorded: null, flags: ['grounding-unreported', 'few-recorded'] });
    expect(trustPhrase(blind)).toBe(`grounding: not reported by this simulator; recorded replay: fewer than ${MIN_RECORDED} held-out recorded successes, no estimate`);
  });

  it('ranks data-only runs by their replay estimates and says which it cannot rank', () => {
    const trust = (mean: number, low: number, high: number, unknownShare: number | null = 0): SyntheticTrust => ({
      unknownShare,
      recorded: { episodes: 50, replayed: { mean, low, high }, agreement: mean },
      flags: unknownShare !== null && unknownShare > THIN_GROUNDING ? ['grounding-thin'] : [],
    });
    const clear = rankSynthetic([
      { id: 'dreamgym', trust: trust(0.1, 0.02, 0.2) },
      { id: 'sft', trust: trust(0.9, 0.8, 0.98) },
      { id: 'zero-shot', trust: trust(0.5, 0.36, 0.64) },
    ]);
    expect(clear).toEqual({ order: ['sft', 'zero-shot', 'dreamgym'], cannot: [] });
    const muddled = rankSynthetic([
      { id: 'a', trust: trust(0.5, 0.36, 0.64) },
      { id: 'b', trust: trust(0.56, 0.42, 0.7) },
      { id: 'c', trust: trust(0.9, 0.8, 0.98, 0.4) },
      { id: 'd', trust: { unknownShare: null, recorded: null, flags: ['grounding-unreported', 'few-recorded'] } },
    ]);
    // The replay runs no simulator: thin grounding (c) disqualifies c's synthetic figure, not its place.
    expect(muddled.order).toEqual(['c', 'b', 'a']);
    expect(muddled.cannot).toEqual([
      `d: no replay estimate (fewer than ${MIN_RECORDED} held-out recorded successes)`,
      'b and a: replay intervals overlap',
    ]);
  });
});
