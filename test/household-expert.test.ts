import { describe, expect, it } from 'vitest';
import { Rng } from '../src/core/rng.ts';
import type { Task, Trajectory } from '../src/core/types.ts';
import { expertPolicy, noisyPolicy, runEpisode, type Policy } from '../src/envs/episode.ts';
import { HouseholdEnv, householdTasks } from '../src/envs/household/index.ts';

const TRAIN = householdTasks({ split: 'train', count: 200, seed: 2024 });
const TEST = householdTasks({ split: 'test', count: 200, seed: 2024 });

function run(tasks: readonly Task[], policy: Policy, seed: number): Trajectory[] {
  const env = new HouseholdEnv();
  const rng = new Rng(seed);
  return tasks.map((t) => runEpisode(env, t, policy, { rng }));
}

const successRate = (ts: readonly Trajectory[]): number => ts.filter((t) => t.success).length / ts.length;
const meanSteps = (ts: readonly Trajectory[]): number => ts.reduce((s, t) => s + t.steps.length, 0) / ts.length;

describe('household expert', () => {
  const expertTrain = run(TRAIN, expertPolicy, 1);
  const expertTest = run(TEST, expertPolicy, 1);

  it('solves 100% of 200 train and 200 test tasks well within 50 steps', () => {
    for (const tr of [...expertTrain, ...expertTest]) {
      expect(tr.success, tr.taskId).toBe(true);
      expect(tr.reward).toBe(1);
      expect(tr.steps.length, tr.taskId).toBeLessThanOrEqual(20);
      expect(tr.steps.every((s) => s.valid)).toBe(true);
    }
    expect(meanSteps([...expertTrain, ...expertTest])).toBeLessThan(12);
  });

  it('always picks one of the observation\'s actions, also in states reached by random actions', () => {
    let checked = 0;
    const checking: Policy = (env, observation, rng) => {
      const expert = env.expertAction();
      expect(observation.actions).toContain(expert);
      checked++;
      return rng.chance(0.6) ? rng.pick(observation.actions) : expert;
    };
    run(TRAIN.slice(0, 60), checking, 7);
    run(TEST.slice(0, 60), checking, 8);
    expect(checked).toBeGreaterThan(2000);
  });

  it('recovers after 30 random actions', () => {
    const env = new HouseholdEnv();
    const rng = new Rng(99);
    for (const task of [...TRAIN.slice(0, 60), ...TEST.slice(0, 60)]) {
      let obs = env.reset(task);
      let result: ReturnType<HouseholdEnv['step']> | undefined;
      for (let i = 0; i < 30; i++) {
        result = env.step(rng.pick(obs.actions));
        if (result.done) break;
        obs = result.observation;
      }
      while (!result?.done) result = env.step(env.expertAction());
      expect(result.info.success, `${task.id} after random start`).toBe(true);
    }
  });

  it('with 30% noise still mostly succeeds but takes longer; with more noise it fails sometimes', () => {
    const tasks = TRAIN.slice(0, 100);
    const expert = expertTrain.slice(0, 100);
    const noisy = run(tasks, noisyPolicy(0.3), 3);
    expect(successRate(noisy)).toBeGreaterThanOrEqual(0.9);
    expect(successRate(noisy)).toBeLessThanOrEqual(successRate(expert));
    expect(meanSteps(noisy)).toBeGreaterThan(meanSteps(expert) + 1);
    // Heavier noise gives the mix of successes and failures offline data needs.
    const heavy = run(tasks, noisyPolicy(0.7), 4);
    expect(heavy.some((t) => t.success)).toBe(true);
    expect(heavy.some((t) => !t.success)).toBe(true);
    expect(successRate(heavy)).toBeLessThan(successRate(expert));
    for (const t of heavy.filter((x) => !x.success)) expect([t.steps.length, t.reward]).toEqual([50, 0]);
  });
});
