/**
 * The inspector's curriculum rows (src/ui/inspect/curriculum.ts): lineage order and depth, the
 * stored reward mean and variance, and the loop's last V_tau.
 */
import { describe, expect, it } from 'vitest';
import type { TaskRecord } from '../src/replay/index.ts';
import { buildCurriculum } from '../src/ui/inspect/curriculum.ts';

function task(id: string, seq: number, parentId?: string, rewards: number[] = []): TaskRecord {
  const generation = parentId ? 1 : 0;
  return {
    runId: 'r',
    id,
    seq,
    task: { id, env: 'shop', instruction: `do ${id}`, goal: null, split: 'train', origin: parentId ? 'generated' : 'seed', ...(parentId ? { parentId, generation } : {}) },
    origin: parentId ? 'generated' : 'seed',
    ...(parentId ? { parentId } : {}),
    generation,
    stats: { count: rewards.length, rewardSum: rewards.reduce((a, b) => a + b, 0), rewardSumSq: rewards.reduce((a, b) => a + b * b, 0), successes: rewards.filter((r) => r === 1).length },
    createdAt: 0,
  };
}

describe('buildCurriculum', () => {
  it('puts each generated task under its parent, indented by depth', () => {
    const rows = buildCurriculum([task('a', 0), task('b', 1), task('a1', 2, 'a'), task('a1x', 3, 'a1'), task('b1', 4, 'b')]);
    expect(rows.map((r) => [r.id, r.depth])).toEqual([
      ['a', 0],
      ['a1', 1],
      ['a1x', 2],
      ['b', 0],
      ['b1', 1],
    ]);
    expect(rows[1]?.parentId).toBe('a');
  });

  it('computes the mean and population variance of stored rewards, and carries the last V_tau', () => {
    const rows = buildCurriculum([task('a', 0, undefined, [1, 0, 1, 0]), task('g', 1, 'a', [1]), task('n', 2)], { g: { iteration: 3, vTau: 0.25 }, n: { iteration: 4, vTau: Number.NaN } });
    expect(rows[0]?.meanReward).toBe(0.5);
    expect(rows[0]?.rewardVariance).toBeCloseTo(0.25, 12);
    expect(rows[0]?.vTau).toBeNull();
    expect(rows[1]?.vTau).toBe(0.25);
    expect(rows[1]?.scoredAt).toBe(3);
    expect(rows[1]?.rewardVariance).toBe(0);
    // Never scored (NaN) and no episodes: shown as unknown.
    expect(rows[2]?.vTau).toBeNull();
    expect(rows[2]?.meanReward).toBeNull();
  });

  it('lists a task whose parent is missing as a root, and survives a lineage cycle', () => {
    const orphan = buildCurriculum([task('x', 0, 'gone')]);
    expect(orphan.map((r) => [r.id, r.depth])).toEqual([['x', 0]]);
    const cyclic = buildCurriculum([task('p', 0, 'q'), task('q', 1, 'p')]);
    expect(cyclic.map((r) => r.id).sort()).toEqual(['p', 'q']);
  });
});
