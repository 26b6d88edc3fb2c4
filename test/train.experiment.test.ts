import { describe, expect, it } from 'vitest';
import { parseTrainingConfig } from '../src/train/config.ts';
import { curvesSvg, EXPERIMENT_ARMS, experimentFiles, pairedDifference, pairedRatio, runArmSeed, runExperiment, type ArmResult, type ArmSeedJob, type ExperimentArm, type ArmSeedOutcome } from '../src/train/experiment.ts';
import type { RunSnapshot } from '../src/train/loop.ts';
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
    seeds: outcomes.map((xs, seed) => ({ seed, heldOut: evalOf(xs), train: evalOf(xs), realTransitions: 0, offlineTransitions: 0, syntheticSteps: 0, wallMs: 0, sharedIterations: 0, validation: null, curve: [] })),
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

describe('experiment table: synthetic-phase validation', () => {
  it('shows each seed start -> end, the iteration kept when it was neither, and how often each was kept', () => {
    const a = arm('dreamgym', [[1, 0], [0, 1], [1, 1]]);
    a.seeds[0]!.validation = { tasks: 50, start: 0.02, end: 0.62, between: [{ iteration: 5, success: 0.76 }], best: { iteration: 5, success: 0.76 }, kept: 'between' };
    a.seeds[1]!.validation = { tasks: 50, start: 0.9, end: 0.8, kept: 'start' };
    a.seeds[2]!.validation = { tasks: 50, start: 0.1, end: 0.7, kept: 'end' };
    const r = { env: 'shop', preset: 'quick', seeds: 3, evalEpisodes: 2, arms: [a], comparisons: [], wallMs: 0, command: 'x' } as unknown as Parameters<typeof experimentFiles>[0];
    const table = experimentFiles(r)['table.md']!;
    expect(table).toContain('| dreamgym | 2.0 -> 62.0 (kept iteration 5: 76.0), 90.0 -> 80.0 (kept the start), 10.0 -> 70.0 | 1 / 1 / 1 |');
    // Without measured validation points there is no correlation to show.
    expect(table).not.toContain('Model selection');
    // With them (--probe-validation), each criterion's rank correlation with real success.
    a.seeds[0]!.probes = [0.9, 0.5, 0.1].map((sim, i) => ({ iteration: 5 * i, success: sim, replayed: 0, prefix: 0.1 * i, agreement: 0.5, real: 0.3 * i }));
    const probed = experimentFiles(r)['table.md']!;
    expect(probed).toContain('Model selection: Spearman rank correlation with real success over every policy a synthetic phase validated (arms x seeds x validation points: 3)');
    expect(probed).toContain('| shop | 3 | -1.00 | 1.00 |');
    expect(probed).toContain('Real held-out success of the policy each criterion keeps, mean over 1 synthetic phases: simulator 0.0%, recorded 60.0%, the best validated policy 60.0%.');
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
    expect(pick(shared).sharedIterations).toBe(3);
    expect(pick(alone).sharedIterations).toBe(0);
    expect(pick(shared).curve).toEqual(pick(alone).curve);
    expect(pick(shared).curve.filter((c) => c.phase === 'sft')).toHaveLength(3);
    expect(pick(shared).heldOut.perTask).toEqual(pick(alone).heldOut.perTask);
    expect(pick(shared).train.perTask).toEqual(pick(alone).train.perTask);
  });

  it("s2r resumes from the dreamgym arm's run (its synthetic phase) and equals one run on its own, warm or not", async () => {
    const overrides = { ...TINY, sft: { epochs: 2 }, iterations: 2 };
    const arms = ['real', 'dreamgym', 's2r, 10% real budget', 'sft', 'dreamgym (warm sft)', 'real (warm sft)', 's2r (warm sft), 10% real budget'];
    const shared = await runExperiment({ env: 'shop', seeds: 1, preset: 'quick', overrides, trainEvalEpisodes: 3, arms });
    const alone = await runExperiment({ env: 'shop', seeds: 1, preset: 'quick', overrides, trainEvalEpisodes: 3, arms: ['real', 'real (warm sft)', 's2r, 10% real budget', 's2r (warm sft), 10% real budget'] });
    const pick = (r: typeof shared, name: string) => r.arms.find((a) => a.name === name)!.seeds[0]!;
    // Alone, the warm s2r arm still begins with the behaviour cloning of `real (warm sft)`.
    for (const [name, taken, alsoAlone] of [['s2r, 10% real budget', 2, 0], ['s2r (warm sft), 10% real budget', 4, 2]] as const) {
      expect(pick(shared, name).sharedIterations).toBe(taken);
      expect(pick(alone, name).sharedIterations).toBe(alsoAlone);
      expect(pick(shared, name).curve).toEqual(pick(alone, name).curve);
      expect(pick(shared, name).curve.some((c) => c.phase === 'real')).toBe(true);
      expect(pick(shared, name).realTransitions).toBe(pick(alone, name).realTransitions);
      expect(pick(shared, name).heldOut.perTask).toEqual(pick(alone, name).heldOut.perTask);
    }
    // The synthetic phase taken over is the dreamgym arm's own curve.
    expect(pick(shared, 's2r, 10% real budget').curve.slice(0, 2)).toEqual(pick(shared, 'dreamgym').curve);
    expect(pick(shared, 'dreamgym (warm sft)').sharedIterations).toBe(2);
  }, 60_000);

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

describe('runExperiment scheduling', () => {
  /** A runner that answers at once with made-up figures and records what it was given and when. */
  function recordingRunner(options: { fail?: string } = {}) {
    const log: { event: 'start' | 'end'; job: ArmSeedJob }[] = [];
    const aborted: string[] = [];
    let inFlight = 0;
    let maxInFlight = 0;
    const runner = async (job: ArmSeedJob, signal?: AbortSignal): Promise<ArmSeedOutcome> => {
      log.push({ event: 'start', job });
      inFlight++;
      maxInFlight = Math.max(maxInFlight, inFlight);
      const onAbort = (): void => void aborted.push(`${job.arm}#${job.seed}`);
      signal?.addEventListener('abort', onAbort);
      await new Promise((r) => setTimeout(r, 5 + 3 * job.seed));
      signal?.removeEventListener('abort', onAbort);
      inFlight--;
      if (job.arm === options.fail) throw new Error(`failed: ${job.arm}`);
      log.push({ event: 'end', job });
      const heldOut: EvalResult = { episodes: 1, successRate: 1, meanReward: 1, success: { mean: 1, low: 1, high: 1 }, reward: { mean: 1, low: 1, high: 1 }, perTask: [{ taskId: 't0', success: true, reward: 1, steps: 1 }], realSteps: 0 };
      const realTransitions = job.arm.startsWith('real') && job.realBudget === undefined ? 1000 + job.seed : (job.realBudget ?? 0);
      return {
        result: { seed: job.seed, heldOut, train: heldOut, realTransitions, offlineTransitions: 0, syntheticSteps: 0, wallMs: 1, sharedIterations: job.resume?.iteration ?? 0, validation: null, curve: [] },
        config: null,
        evalEpisodes: 1,
        ...(job.keepAt ? { snapshots: job.keepAt.map((iteration) => ({ iteration, from: `${job.arm}#${job.seed}` }) as unknown as RunSnapshot) } : {}),
      };
    };
    return { runner, log, aborted, maxInFlight: () => maxInFlight };
  }

  it('runs up to `concurrency` jobs at once, each after what it depends on, with the budget and the shared snapshot handed on', async () => {
    const rec = recordingRunner();
    const r = await runExperiment({ env: 'shop', seeds: 2, preset: 'quick', concurrency: 3, runner: rec.runner, trainEvalEpisodes: 1 });
    expect(rec.maxInFlight()).toBe(3);
    expect(r.arms.map((a) => a.name)).toEqual(EXPERIMENT_ARMS.map((a) => a.name));
    const endAt = (arm: string, seed: number): number => rec.log.findIndex((e) => e.event === 'end' && e.job.arm === arm && e.job.seed === seed);
    const starts = rec.log.filter((e) => e.event === 'start');
    expect(starts).toHaveLength(EXPERIMENT_ARMS.length * 2);
    const { sft, iterations } = parseTrainingConfig({ env: 'shop', mode: 'sft' }, 'quick');
    // Which run each arm begins with, and after how many iterations it takes over.
    const source = (arm: ExperimentArm): [string, number] | null => {
      if (arm.config?.mode === 's2r') return arm.config.warmStart === 'sft' ? ['dreamgym (warm sft)', sft.epochs + iterations] : ['dreamgym', iterations];
      return arm.config?.warmStart === 'sft' ? ['sft', sft.epochs] : null;
    };
    const kept: Record<string, number[]> = { sft: [sft.epochs], dreamgym: [iterations], 'dreamgym (warm sft)': [sft.epochs + iterations] };
    for (const { job } of starts) {
      const startAt = rec.log.findIndex((e) => e.event === 'start' && e.job === job);
      const arm = EXPERIMENT_ARMS.find((a) => a.name === job.arm)!;
      if (arm.budgetShareOfReal !== undefined) {
        // After its real arm, with 10% of what that arm used.
        expect(startAt).toBeGreaterThan(endAt(arm.budgetOf!, job.seed));
        expect(job.realBudget).toBe(Math.round(0.1 * (1000 + job.seed)));
      }
      const from = source(arm);
      if (from) {
        // After the run it begins with, of its own seed, from that run's snapshot at the iteration it takes over.
        expect(startAt).toBeGreaterThan(endAt(from[0], job.seed));
        expect(job.resume).toMatchObject({ iteration: from[1], from: `${from[0]}#${job.seed}` });
      } else expect(job.resume).toBeUndefined();
      expect(job.keepAt).toEqual(kept[job.arm]);
    }
  });

  it('one job at a time by default, in declared order with the budget arms last', async () => {
    const rec = recordingRunner();
    await runExperiment({ env: 'shop', seeds: 1, preset: 'quick', runner: rec.runner, trainEvalEpisodes: 1, arms: ['real', 's2r, 10% real budget', 'zero-shot'] });
    expect(rec.maxInFlight()).toBe(1);
    expect(rec.log.filter((e) => e.event === 'start').map((e) => e.job.arm)).toEqual(['zero-shot', 'real', 's2r, 10% real budget']);
  });

  it('a failed job fails the experiment and stops the jobs in flight', async () => {
    const rec = recordingRunner({ fail: 'zero-shot' });
    await expect(runExperiment({ env: 'shop', seeds: 3, preset: 'quick', concurrency: 2, runner: rec.runner, trainEvalEpisodes: 1, arms: ['zero-shot', 'real'] })).rejects.toThrow(
      'shop: zero-shot, seed 0 failed: failed: zero-shot',
    );
    // zero-shot seed 0 failed while seed 1 ran: seed 1 was told to stop, and nothing started after the failure.
    expect(rec.aborted).toContain('zero-shot#1');
    expect(rec.log.filter((e) => e.event === 'start').map((e) => `${e.job.arm}#${e.job.seed}`)).toEqual(['zero-shot#0', 'zero-shot#1']);
  });

  it('figures do not depend on concurrency (real runs, interleaved on one thread)', async () => {
    const names = ['real', 'real, 10% real budget'];
    const overrides = { ...TINY, iterations: 2 };
    const one = await runExperiment({ env: 'shop', seeds: 2, preset: 'quick', overrides, trainEvalEpisodes: 2, arms: names });
    const two = await runExperiment({ env: 'shop', seeds: 2, preset: 'quick', overrides, trainEvalEpisodes: 2, arms: names, concurrency: 2 });
    const strip = (r: typeof one) => r.arms.map((a) => a.seeds.map((s) => ({ ...s, wallMs: 0 })));
    expect(strip(two)).toEqual(strip(one));
  });

  it('runArmSeed rejects an unknown arm by name', async () => {
    await expect(runArmSeed({ env: 'shop', preset: 'quick', arm: 'warp', seed: 0, trainEvalEpisodes: 1 })).rejects.toThrow('unknown experiment arm "warp"');
  });
});
