import { describe, expect, it } from 'vitest';
import { Rng } from '../src/core/rng.ts';
import type { Task } from '../src/core/types.ts';
import { addTasks, capGenerated, chooseTasks, groupVariances, informativeTasks, type TaskSeen } from '../src/curriculum/pool.ts';

const task = (id: string, origin: Task['origin'] = 'seed', goal: Task['goal'] = { id }): Task => ({
  id,
  env: 'shop',
  instruction: `find ${id}`,
  goal,
  split: 'train',
  origin,
  ...(origin === 'generated' ? { parentId: 's0', generation: 1 } : {}),
});

const seeds = Array.from({ length: 10 }, (_, i) => task(`s${i}`));
const generated = Array.from({ length: 6 }, (_, i) => task(`g${i}`, 'generated'));

describe('chooseTasks (lambda mixing)', () => {
  it('takes only seed tasks while there are no generated ones', () => {
    const { tasks, generated: n } = chooseTasks(seeds, 8, 0.5, new Rng(1));
    expect(n).toBe(0);
    expect(tasks).toHaveLength(8);
    expect(new Set(tasks.map((t) => t.id)).size).toBe(8);
    expect(tasks.every((t) => t.origin === 'seed')).toBe(true);
  });

  it('takes round(lambda * B) generated tasks once they exist, at most as many as exist', () => {
    expect(chooseTasks([...seeds, ...generated], 8, 0.5, new Rng(1)).generated).toBe(4);
    expect(chooseTasks([...seeds, ...generated], 8, 0.25, new Rng(1)).generated).toBe(2);
    expect(chooseTasks([...seeds, ...generated.slice(0, 1)], 8, 0.5, new Rng(1)).generated).toBe(1);
    const { tasks } = chooseTasks([...seeds, ...generated], 8, 1, new Rng(2));
    expect(tasks.filter((t) => t.origin === 'generated')).toHaveLength(6);
  });

  it('is deterministic for the random stream and checks its arguments', () => {
    expect(chooseTasks([...seeds, ...generated], 8, 0.5, new Rng(3))).toEqual(chooseTasks([...seeds, ...generated], 8, 0.5, new Rng(3)));
    expect(() => chooseTasks(seeds, 0, 0.5, new Rng(1))).toThrow(/count must be an integer >= 1, got 0/);
    expect(() => chooseTasks(seeds, 4, 1.5, new Rng(1))).toThrow(/lambda must be in \[0, 1\], got 1.5/);
  });
});

describe('V_tau and seed selection', () => {
  it('scores each group by the variance of its rewards and keeps the informative tasks once', () => {
    const scored = groupVariances([seeds[0]!, seeds[1]!, seeds[0]!], [1, 0, 1, 0, 0, 0, 0, 1, 1, 1, 0, 0], 4);
    expect(scored.map((x) => x.vTau)).toEqual([0.25, 0.1875, 0.25]);
    expect(informativeTasks(scored).map((t) => t.id)).toEqual(['s0', 's1']);
    expect(informativeTasks(groupVariances([seeds[2]!], [1, 1, 1, 1], 4))).toEqual([]);
    expect(() => groupVariances([seeds[0]!], [1, 0, 1], 4)).toThrow(/expected 4 rewards/);
  });
});

describe('adding tasks (lineage kept, no duplicates)', () => {
  it('adds only new goals and ids, keeping parent and generation', () => {
    const pool = seeds.slice(0, 2);
    const child = task('c1', 'generated', { id: 'new' });
    const sameGoal = task('c2', 'generated', { id: 's0' });
    const sameId = task('s1', 'generated', { id: 'other' });
    expect(addTasks(pool, [child, sameGoal, sameId, child]).map((t) => t.id)).toEqual(['c1']);
    expect(pool.map((t) => t.id)).toEqual(['s0', 's1', 'c1']);
    expect(pool[2]).toMatchObject({ parentId: 's0', generation: 1, origin: 'generated' });
  });
});

describe('capping the pool', () => {
  it('evicts zero-variance generated tasks first (oldest first), then the oldest, never seed tasks', () => {
    const pool = [...seeds.slice(0, 2), ...generated];
    const seen = new Map<string, TaskSeen>([
      ['g0', { iteration: 5, vTau: 0.2 }],
      ['g1', { iteration: 3, vTau: 0 }],
      ['g2', { iteration: 1, vTau: 0 }],
      ['g3', { iteration: 0, vTau: 0.1 }],
      ['g4', { iteration: 7, vTau: Number.NaN }],
    ]);
    expect(capGenerated(pool, seen, 3)).toEqual(['g2', 'g1', 'g5']);
    expect(pool.map((t) => t.id)).toEqual(['s0', 's1', 'g0', 'g3', 'g4']);
    expect(seen.has('g2')).toBe(false);
    expect(capGenerated(pool, seen, 3)).toEqual([]);
    expect(capGenerated(pool, seen, 0)).toEqual(['g3', 'g0', 'g4']);
    expect(pool.map((t) => t.id)).toEqual(['s0', 's1']);
  });
});
