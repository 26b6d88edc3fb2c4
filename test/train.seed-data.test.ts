import { describe, expect, it } from 'vitest';
import type { Task, Trajectory } from '../src/core/types.ts';
import { getEnvSpec } from '../src/envs/registry.ts';
import { generateOfflineData } from '../src/envs/offline.ts';
import { RetrievalExperienceModel } from '../src/experience/retrieval.ts';
import { HashedEmbedder } from '../src/policy/hashed-embedder.ts';
import { dataOnlySpec, evaluateSynthetic, MIN_GROUNDING_TASKS, MIN_HELD_OUT_TASKS, planSeedData, SeedDataError } from '../src/train/seed-data.ts';

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
