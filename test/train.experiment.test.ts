import { describe, expect, it } from 'vitest';
import { curvesSvg, EXPERIMENT_ARMS, experimentFiles, pairedDifference, pairedRatio, runExperiment, type ArmResult } from '../src/train/experiment.ts';
import type { EvalResult } from '../src/train/evaluate.ts';

const TINY = {
  iterations: 1,
  tasksPerIteration: 2,
  groupSize: 2,
  maxSteps: 6,
  offline: { expertEpisodes: 6, noisyEpisodes: 4, extraTasks: 2 },
  sft: { epochs: 1 },
  evalEpisodes: 4,
  policy: { hiddenDim: 8, embeddingDim: 64 },
};

/** An arm whose held-out outcomes per seed are given as 0/1 lists over tasks t0, t1, ... */
function arm(name: string, outcomes: number[][]): ArmResult {
  const evalOf = (xs: number[]): EvalResult => ({
    episodes: xs.length,
    successRate: xs.reduce((s, x) => s + x, 0) / xs.length,
    meanReward: 0,
    success: { mean: 0, low: 0, high: 0 },
    reward: { mean: 0, low: 0, high: 0 },
    perTask: xs.map((x, i) => ({ taskId: `t${i}`, success: x === 1, reward: x, steps: 1 })),
    realSteps: 0,
  });
  return {
    name,
    config: null,
    seeds: outcomes.map((xs, seed) => ({ seed, heldOut: evalOf(xs), train: evalOf(xs), realTransitions: 0, offlineTransitions: 0, syntheticSteps: 0, wallMs: 0, sftShared: false, curve: [] })),
    success: { mean: 0, low: 0, high: 0 },
    reward: { mean: 0, low: 0, high: 0 },
    trainSuccess: { mean: 0, low: 0, high: 0 },
    realTransitions: 0,
    offlineTransitions: 0,
    wallMs: 0,
  };
}

describe('paired comparisons', () => {
  it('ratio and difference of success on the same tasks and seeds, with intervals', () => {
    const a = arm('a', [[1, 1, 0, 1], [1, 0, 1, 1]]);
    const b = arm('b', [[1, 0, 0, 1], [0, 0, 1, 1]]);
    const r = pairedRatio(a, b);
    expect(r.value).toBeCloseTo(6 / 4);
    expect(r.low).toBeLessThanOrEqual(r.value);
    expect(r.high).toBeGreaterThanOrEqual(r.value);
    const d = pairedDifference(a, b);
    expect(d.mean).toBeCloseTo(2 / 8);
    expect(d.low).toBeLessThanOrEqual(d.mean);
    // Tasks missing on one side are left out; no pairs at all gives NaN.
    expect(Number.isNaN(pairedRatio(a, arm('none', [])).value)).toBe(true);
    // No success in the denominator: undefined (0/0) or unbounded, never a ratio of 1 to compare with a goal.
    const zero = arm('zero', [[0, 0, 0, 0], [0, 0, 0, 0]]);
    expect(Number.isNaN(pairedRatio(zero, zero).value)).toBe(true);
    expect(pairedRatio(a, zero).value).toBe(Number.POSITIVE_INFINITY);
    // Reward differences pair the same way (rewards here are the 0/1 outcomes).
    expect(pairedDifference(a, b, 'reward').mean).toBeCloseTo(2 / 8);
  });
});

describe('runExperiment', () => {
  it('runs the reference, sft and a synthetic arm over two seeds and writes the table, JSON, curves and plot', async () => {
    const names = ['scripted reference (no hidden goal)', 'zero-shot', 'sft', 'dreamgym (warm sft)'];
    const r = await runExperiment({ env: 'shop', seeds: 2, preset: 'quick', overrides: TINY, trainEvalEpisodes: 3, arms: names });
    expect(r.arms.map((a) => a.name)).toEqual(names);
    for (const a of r.arms) {
      expect(a.seeds).toHaveLength(2);
      expect(a.success.low).toBeLessThanOrEqual(a.success.mean);
      expect(a.success.high).toBeGreaterThanOrEqual(a.success.mean);
    }
    const dreamgym = r.arms.find((a) => a.name === 'dreamgym (warm sft)')!;
    expect(dreamgym.realTransitions).toBe(0);
    expect(dreamgym.seeds[0]!.curve.length).toBeGreaterThan(0);
    expect(r.comparisons.some((c) => c.name.startsWith('dreamgym (warm sft) - sft'))).toBe(true);
    const files = experimentFiles(r);
    expect(Object.keys(files).sort()).toEqual(['curves.csv', 'results.json', 'shop.svg', 'table.md']);
    expect(files['table.md']).toMatch(/\| sft \| \d+\.\d \[/);
    expect(JSON.parse(files['results.json']!).arms).toHaveLength(4);
    expect(files['curves.csv']!.split('\n')[0]).toBe('arm,seed,iteration,phase,success_rate,mean_reward,real_transitions');
    expect(curvesSvg(r)).toMatch(/^<svg[^>]*>/);
    expect(files['shop.svg']).toContain('<polyline');
  });

  it('gives the from-scratch s2r and matched real arms 10% of what real from scratch used', async () => {
    const names = ['real', 's2r, 10% real budget', 'real, 10% real budget'];
    const r = await runExperiment({ env: 'shop', seeds: 1, preset: 'quick', overrides: { ...TINY, iterations: 2 }, trainEvalEpisodes: 2, arms: names });
    const used = (name: string): number => r.arms.find((a) => a.name === name)!.seeds[0]!.realTransitions;
    const budget = Math.max(1, Math.round(0.1 * used('real')));
    expect(used('real')).toBeGreaterThan(10);
    for (const name of names.slice(1)) {
      expect(used(name)).toBeGreaterThan(0);
      expect(used(name)).toBeLessThanOrEqual(budget);
    }
    expect(r.comparisons.map((c) => c.name)).toContain('s2r / real at the same 10% budget (from scratch), success ratio');
  });

  it('behaviour cloning runs once per seed: an arm resumed from the shared SFT snapshot equals one run on its own', async () => {
    const warm = 'dreamgym (warm sft)';
    const overrides = { ...TINY, sft: { epochs: 3 }, iterations: 2 };
    const shared = await runExperiment({ env: 'shop', seeds: 1, preset: 'quick', overrides, trainEvalEpisodes: 3, arms: ['sft', warm] });
    const alone = await runExperiment({ env: 'shop', seeds: 1, preset: 'quick', overrides, trainEvalEpisodes: 3, arms: [warm] });
    const pick = (r: typeof shared) => r.arms.find((a) => a.name === warm)!.seeds[0]!;
    expect(pick(shared).sftShared).toBe(true);
    expect(pick(alone).sftShared).toBe(false);
    expect(pick(shared).curve).toEqual(pick(alone).curve);
    expect(pick(shared).curve.filter((c) => c.phase === 'sft')).toHaveLength(3);
    expect(pick(shared).heldOut.perTask).toEqual(pick(alone).heldOut.perTask);
    expect(pick(shared).train.perTask).toEqual(pick(alone).train.perTask);
  });

  it('declares every mode and offline ablation, and the matched 10% budget arms', () => {
    const modes = new Set(EXPERIMENT_ARMS.map((a) => a.config?.mode ?? a.kind));
    expect([...modes].sort()).toEqual(['dreamgym', 'real', 'reference', 's2r', 'sft', 'zero-shot']);
    const budgeted = EXPERIMENT_ARMS.filter((a) => a.budgetShareOfReal === 0.1);
    expect(budgeted.map((a) => a.config?.mode).sort()).toEqual(['real', 'real', 's2r', 's2r']);
    // Each budget comes from the full real arm with the same start (scratch or warm).
    for (const a of budgeted) {
      const of = EXPERIMENT_ARMS.find((x) => x.name === a.budgetOf);
      expect(of?.config?.mode).toBe('real');
      expect(of?.config?.warmStart).toBe(a.config?.warmStart);
    }
    expect(EXPERIMENT_ARMS.some((a) => a.config?.curriculum?.enabled === false)).toBe(true);
  });
});
