import { describe, expect, it } from 'vitest';
import { Rng } from '../src/core/rng.ts';
import type { Task } from '../src/core/types.ts';
import { create, maxSteps, name, tasks, validateTask } from '../src/envs/example/library.ts';
import { checkModuleExports, checkTasks } from '../src/envs/module.ts';

/** The module's tasks as the host fills them in. */
const seedTasks = (split: 'train' | 'test', count: number, seed = 0): Task[] => checkTasks('tasks()', name, { split, count, seed }, tasks({ split, count, seed }));

function play(task: Task, choose: (actions: string[], expert: string, rng: Rng) => string, rng: Rng): { success: boolean; steps: number } {
  const env = create();
  let obs = env.reset(task);
  for (let t = 1; t <= maxSteps; t++) {
    const r = env.step(choose(obs.actions, env.expertAction?.() ?? '', rng));
    obs = r.observation;
    if (r.done) return { success: r.info?.success === true, steps: t };
  }
  throw new Error('the episode did not end within maxSteps');
}

describe('the example library module', () => {
  it('has the exports the contract asks for', () => {
    const shapes = Object.fromEntries(Object.entries({ name, description: 'a library', maxSteps, create, tasks, validateTask }).map(([k, v]) => [k, typeof v === 'function' ? { kind: 'function' as const } : { kind: 'value' as const, value: v }]));
    expect(checkModuleExports('library.ts', shapes, ['shop', 'household']).name).toBe('library');
  });

  it('deterministic tasks; train and test never ask for the same (genre, author); every task validates', () => {
    expect(seedTasks('train', 20, 4)).toEqual(seedTasks('train', 20, 4));
    const pair = (t: Task): string => { const g = t.goal as { genre: string; author: string }; return `${g.genre}/${g.author}`; };
    const train = new Set(seedTasks('train', 300).map(pair));
    const test = seedTasks('test', 100);
    expect(test.some((t) => train.has(pair(t)))).toBe(false);
    for (const t of test) expect(validateTask(t)).toEqual({ ok: true });
    expect(validateTask({ ...test[0]!, split: 'train' })).toMatchObject({ ok: false });
    expect(validateTask({ ...test[0]!, goal: { genre: 'horror' } })).toMatchObject({ ok: false });
  });

  it('the expert solves every task in 4 steps; a random policy almost never does; an inadmissible action is invalid, not thrown', () => {
    const rng = new Rng(7);
    const test = seedTasks('test', 100);
    expect(test.every((t) => play(t, (_a, expert) => expert, rng).steps === 4)).toBe(true);
    const random = test.filter((t) => play(t, (actions, _e, r) => r.pick(actions), rng).success).length;
    expect(random).toBeLessThan(15);
    const env = create();
    const first = env.reset(test[0]!);
    expect(first.actions).toContain('go to front desk');
    const bad = env.step('fly away');
    expect(bad).toMatchObject({ done: false, reward: 0, info: { valid: false } });
  });
});
