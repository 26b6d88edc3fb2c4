import { describe, expect, it } from 'vitest';
import { TrajectorySchema } from '../src/core/types.ts';
import { generateOfflineData, summarise } from '../src/envs/offline.ts';
import { getEnvSpec } from '../src/envs/registry.ts';

describe('offline data', () => {
  it('runs one valid episode per seed task, deterministically', () => {
    const spec = getEnvSpec('shop');
    const options = { episodes: 20, seed: 5, policy: 'noisy:0.5', split: 'train' as const };
    const a = [...generateOfflineData(spec, options)];
    const b = [...generateOfflineData(spec, options)];
    expect(a).toEqual(b);
    expect(a).toHaveLength(20);
    for (const { task, trajectory } of a) {
      expect(TrajectorySchema.parse(trajectory)).toEqual(trajectory);
      expect(trajectory.taskId).toBe(task.id);
      expect(trajectory.source).toBe('offline');
      expect(trajectory.steps.at(-1)?.done).toBe(true);
    }
    const other = [...generateOfflineData(spec, { ...options, seed: 6 })];
    expect(other.map((x) => x.task.id)).not.toEqual(a.map((x) => x.task.id));
  });

  it('summarises success rate, mean steps and mean reward', () => {
    const spec = getEnvSpec('household');
    const pairs = [...generateOfflineData(spec, { episodes: 10, seed: 2, policy: 'expert', split: 'test' })];
    const summary = summarise(pairs.map((p) => p.trajectory));
    expect(summary.episodes).toBe(10);
    expect(summary.successRate).toBe(1);
    expect(summary.meanReward).toBe(1);
    const steps = pairs.reduce((n, p) => n + p.trajectory.steps.length, 0) / 10;
    expect(summary.meanSteps).toBeCloseTo(steps, 10);
    expect(summarise([])).toEqual({ episodes: 0, successRate: 0, meanSteps: 0, meanReward: 0 });
  });

  it("records the environment's demonstrator, a fresh one per episode, where it has one", () => {
    const shop = getEnvSpec('shop');
    const options = { episodes: 30, seed: 4, policy: 'demonstrator', split: 'train' as const };
    const a = [...generateOfflineData(shop, options)];
    expect(a).toEqual([...generateOfflineData(shop, options)]);
    expect(a.every(({ task, trajectory }) => trajectory.id === `${task.id}:demonstrator`)).toBe(true);
    // A demonstrator that kept one episode's opened products for the next would fail far more.
    expect(summarise(a.map((p) => p.trajectory)).successRate).toBeGreaterThan(0.85);
    const household = getEnvSpec('household');
    const explorer = [...generateOfflineData(household, { ...options, episodes: 10 })];
    expect(summarise(explorer.map((p) => p.trajectory)).successRate).toBeGreaterThan(0.85);
    const bare = { ...household, name: 'bare', demonstrator: undefined };
    expect(() => [...generateOfflineData(bare, { ...options })]).toThrow(/bare has no demonstrator/);
  });

  it('checks its arguments loudly', () => {
    const spec = getEnvSpec('shop');
    expect(() => [...generateOfflineData(spec, { episodes: 0, seed: 0, policy: 'expert', split: 'train' })]).toThrow(/got 0/);
    expect(() => [...generateOfflineData(spec, { episodes: 1, seed: 0.5, policy: 'expert', split: 'train' })]).toThrow(/got 0.5/);
    expect(() => [...generateOfflineData(spec, { episodes: 1, seed: 0, policy: 'random', split: 'train' })]).toThrow(/Unknown policy/);
  });
});
