import { describe, expect, it } from 'vitest';
import type { Task } from '../src/core/types.ts';
import { rewardVariance, selectHighVarianceTasks } from '../src/curriculum/variance.ts';

const task = (id: string): Task => ({ id, env: 'shop', instruction: `task ${id}`, goal: {}, split: 'train', origin: 'seed' });

describe('rewardVariance', () => {
  it('is the mean squared deviation (population variance)', () => {
    expect(rewardVariance([1, 1, 1, 1])).toBe(0);
    expect(rewardVariance([0, 1])).toBe(0.25);
    expect(rewardVariance([0, 0, 0, 1])).toBeCloseTo(0.1875, 12);
    expect(rewardVariance([0.5])).toBe(0);
  });
  it('is maximal for an even split of successes and failures', () => {
    expect(rewardVariance([0, 0, 0, 0, 1, 1, 1, 1])).toBeGreaterThan(rewardVariance([0, 0, 0, 0, 0, 0, 1, 1]));
  });
  it('rejects empty or non-finite rewards with the bad value', () => {
    expect(() => rewardVariance([])).toThrow(/at least one reward, got \[\]/);
    expect(() => rewardVariance([0, Number.NaN])).toThrow(/reward 1 is NaN/);
  });
});

describe('selectHighVarianceTasks', () => {
  const groups = [
    { task: task('solved'), rewards: [1, 1, 1, 1] },
    { task: task('hard'), rewards: [0, 0, 0, 0] },
    { task: task('b-mixed'), rewards: [0, 1, 0, 1] },
    { task: task('a-mixed'), rewards: [1, 0, 1, 0] },
    { task: task('rare'), rewards: [0, 0, 0, 1] },
  ];
  it('keeps only tasks with spread, highest variance first, ties by id', () => {
    const picked = selectHighVarianceTasks(groups, 10);
    expect(picked.map((s) => s.task.id)).toEqual(['a-mixed', 'b-mixed', 'rare']);
    expect(picked[0]).toMatchObject({ variance: 0.25, meanReward: 0.5 });
    expect(selectHighVarianceTasks(groups, 1).map((s) => s.task.id)).toEqual(['a-mixed']);
    expect(selectHighVarianceTasks(groups, 10, { minVariance: 0.2 })).toHaveLength(2);
    expect(selectHighVarianceTasks(groups, 0)).toEqual([]);
  });
  it('checks its arguments', () => {
    expect(() => selectHighVarianceTasks(groups, -1)).toThrow(/got -1/);
    expect(() => selectHighVarianceTasks([{ task: task('x'), rewards: [] }], 1)).toThrow(/at least one reward/);
  });
});
