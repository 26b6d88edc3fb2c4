import { readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import * as tf from '@tensorflow/tfjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateOfflineData } from '../src/envs/offline.ts';
import { getEnvSpec } from '../src/envs/registry.ts';
import { EPISODE_OVER_TEXT, RetrievalDataError, RetrievalExperienceModel, transitionsFromTrajectories } from '../src/experience/retrieval.ts';
import { HashedEmbedder } from '../src/policy/hashed-embedder.ts';

const data = [...generateOfflineData(getEnvSpec('shop'), { episodes: 60, seed: 4, policy: 'noisy:0.3', split: 'train' })];
const tasks = data.map((d) => d.task);
const trajectories = data.map((d) => d.trajectory);
let model: RetrievalExperienceModel;
let tensorsBefore = 0;

beforeAll(async () => {
  tensorsBefore = tf.memory().numTensors;
  model = await RetrievalExperienceModel.fromTrajectories(tasks, trajectories, new HashedEmbedder({ dim: 128 }), { rewardModel: { epochs: 10 } });
});
afterAll(() => {
  model.dispose();
  expect(tf.memory().numTensors).toBe(tensorsBefore);
});

describe('RetrievalExperienceModel', () => {
  it('replays a stored transition exactly for the same state and action', async () => {
    const traj = trajectories.find((t) => t.steps.length >= 3);
    if (!traj) throw new Error('fixture has no long trajectory');
    const task = tasks.find((t) => t.id === traj.taskId) as (typeof tasks)[number];
    const [s0, s1] = traj.steps;
    const step = await model.step({ task, history: [], observation: s0!.observation, action: s0!.action, demos: [] });
    expect(step.valid).toBe(true);
    expect(step.done).toBe(false);
    expect(step.reward).toBe(0);
    expect(step.observation).toEqual(s1!.observation);
    expect(step.reasoning).toMatch(/same state and action/);
  });

  it('ignores whitespace around the action, as the real environments do', async () => {
    const traj = trajectories.find((t) => t.steps.length >= 3)!;
    const task = tasks.find((t) => t.id === traj.taskId)!;
    const [s0, s1] = traj.steps;
    const step = await model.step({ task, history: [], observation: s0!.observation, action: `  ${s0!.action} `, demos: [] });
    expect(step).toMatchObject({ valid: true, done: false, observation: s1!.observation });
    expect(step.reasoning).toMatch(/same state and action/);
  });

  it('on an unseen state, reuses the nearest stored transition rewritten for the new task, deterministically', async () => {
    const [held] = [...generateOfflineData(getEnvSpec('shop'), { episodes: 1, seed: 99, policy: 'expert', split: 'test' })];
    const { task, trajectory } = held!;
    const s0 = trajectory.steps[0]!;
    const request = { task, history: [], observation: s0.observation, action: s0.action, demos: [] };
    const step = await model.step(request);
    expect(step).toMatchObject({ valid: true, done: false, reward: 0 });
    expect(step.reasoning).toMatch(/nearest stored transition/);
    // The neighbour's own instruction was rewritten into this task's.
    expect(step.observation.text).toContain(`Instruction: ${task.instruction}`);
    expect(step.observation.actions.length).toBeGreaterThan(0);
    // Same inputs, same prediction; and a model built again from the same data predicts the same.
    expect(await model.step(request)).toEqual(step);
    const again = await RetrievalExperienceModel.fromTrajectories(tasks, trajectories, new HashedEmbedder({ dim: 128 }), { rewardModel: { epochs: 10 } });
    try {
      expect(await again.step(request)).toEqual(step);
      expect(await again.reset(task, [])).toEqual(await model.reset(task, []));
    } finally {
      again.dispose();
    }
  });

  it('marks an action outside the admissible list invalid and keeps the state', async () => {
    const { steps } = trajectories[0]!;
    const obs = steps[steps.length - 1]!.observation;
    const step = await model.step({ task: tasks[0]!, history: [], observation: obs, action: 'click[no such thing]', demos: [] });
    expect(step).toMatchObject({ valid: false, reward: 0, done: false });
    expect(step.observation.actions).toEqual(obs.actions);
    expect(step.observation.text).toContain('Invalid action');
  });

  it('ends an episode on the action that ended episodes in the data, with a reward', async () => {
    const bought = trajectories.find((t) => t.success);
    if (!bought) throw new Error('fixture has no successful trajectory');
    const task = tasks.find((t) => t.id === bought.taskId)!;
    const last = bought.steps[bought.steps.length - 1]!;
    expect(last.action).toBe('click[buy now]');
    const step = await model.step({ task, history: [], observation: last.observation, action: last.action, demos: [] });
    expect(step.done).toBe(true);
    expect(step.observation.text).toBe(EPISODE_OVER_TEXT);
    expect(step.reward).toBeGreaterThan(0.5);
  });

  it('reset gives a stored first state rewritten for the new task', async () => {
    const unseen = getEnvSpec('shop').tasks({ split: 'test', count: 3, seed: 11 });
    for (const task of unseen) {
      const obs = await model.reset(task, []);
      expect(obs.text).toContain(task.instruction);
      expect(obs.actions.length).toBeGreaterThan(0);
    }
  });

  it('needs valid data and tasks for every trajectory', async () => {
    expect(() => transitionsFromTrajectories([], trajectories.slice(0, 1))).toThrow(RetrievalDataError);
    await expect(RetrievalExperienceModel.fromTransitions([], new HashedEmbedder({ dim: 16 }))).rejects.toThrow(/at least one valid/);
  });
});

describe('the retrieval model never touches an environment', () => {
  /** Every project file reachable through static imports from `entry`. */
  function importGraph(entry: string): string[] {
    const seen = new Set<string>();
    const stack = [resolve(entry)];
    while (stack.length > 0) {
      const file = stack.pop() as string;
      if (seen.has(file)) continue;
      seen.add(file);
      const source = readFileSync(file, 'utf8');
      for (const m of source.matchAll(/(?:import|export)\s[^'"]*?from\s+['"](\.[^'"]+)['"]|import\(\s*['"](\.[^'"]+)['"]\s*\)/g)) {
        const spec = m[1] ?? m[2];
        if (spec) stack.push(resolve(dirname(file), spec));
      }
    }
    return [...seen];
  }

  it('imports nothing under src/envs', () => {
    const files = importGraph(join('src', 'experience', 'retrieval.ts'));
    expect(files.length).toBeGreaterThan(3);
    expect(files.some((f) => f.includes(join('src', 'experience', 'reward-model.ts')))).toBe(true);
    expect(files.filter((f) => f.includes(`${join('src', 'envs')}`))).toEqual([]);
  });

  it('the graph walker does see env imports where they exist', () => {
    expect(importGraph(join('src', 'train', 'fidelity.ts')).some((f) => f.includes(join('src', 'envs')))).toBe(true);
  });
});
