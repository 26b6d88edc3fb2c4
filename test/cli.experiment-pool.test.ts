import { afterEach, describe, expect, it } from 'vitest';
import { ExperimentWorkerPool } from '../src/cli/experiment-pool.ts';
import { runArmSeed, type ArmSeedJob } from '../src/train/experiment.ts';

const TINY = {
  iterations: 1,
  tasksPerIteration: 2,
  groupSize: 2,
  maxSteps: 6,
  offline: { expertEpisodes: 6, noisyEpisodes: 4, extraTasks: 2 },
  sft: { epochs: 1 },
  evalEpisodes: 3,
  policy: { hiddenDim: 8, embeddingDim: 64 },
};

const job = (arm: string, seed: number, overrides: object = TINY): ArmSeedJob => ({ env: 'shop', preset: 'quick', overrides, arm, seed, trainEvalEpisodes: 2 });

let pool: ExperimentWorkerPool | null = null;
afterEach(async () => {
  await pool?.close();
  pool = null;
});

describe('ExperimentWorkerPool', () => {
  it('runs jobs in worker threads with the same figures as on this thread, and hands back the snapshots asked for', async () => {
    pool = new ExperimentWorkerPool(2);
    const [real, sft] = await Promise.all([pool.run(job('real', 1)), pool.run({ ...job('sft', 0), keepAt: [1] })]);
    const here = await runArmSeed(job('real', 1));
    expect({ ...real.result, wallMs: 0 }).toEqual({ ...here.result, wallMs: 0 });
    expect(real.result.realTransitions).toBeGreaterThan(0);
    expect(sft.snapshots?.map((x) => x.iteration)).toEqual([1]);
    // The snapshot crosses threads intact: a warm arm resumed from it in a worker shares it.
    const warm = await pool.run({ ...job('real (warm sft)', 0), resume: sft.snapshots![0]! });
    expect(warm.result.sharedIterations).toBe(1);
    expect(warm.result.curve[0]?.phase).toBe('sft');
  }, 60_000);

  it('a job that throws in the worker rejects with its message, and the pool goes on', async () => {
    pool = new ExperimentWorkerPool(1);
    await expect(pool.run(job('warp', 0))).rejects.toThrow('unknown experiment arm "warp"');
    const ok = await pool.run(job('zero-shot', 0));
    expect(ok.result.heldOut.episodes).toBe(3);
  }, 60_000);

  it('an aborted signal stops the job (its worker is terminated) and rejects', async () => {
    pool = new ExperimentWorkerPool(1);
    const controller = new AbortController();
    const long = pool.run(job('real', 0, { ...TINY, iterations: 10_000 }), controller.signal);
    setTimeout(() => controller.abort(), 1500);
    await expect(long).rejects.toThrow('experiment job real, seed 0 stopped');
    // A new worker takes the next job.
    const ok = await pool.run(job('zero-shot', 0));
    expect(ok.result.seed).toBe(0);
    await expect(pool.run(job('zero-shot', 0), AbortSignal.abort())).rejects.toThrow('stopped before it started');
  }, 60_000);

  it('rejects a size that is not an integer >= 1', () => {
    expect(() => new ExperimentWorkerPool(0)).toThrow('worker pool size must be an integer >= 1, got 0');
  });
});
