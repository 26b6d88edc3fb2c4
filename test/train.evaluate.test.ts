import { describe, expect, it } from 'vitest';
import type { RealEnvironment, Task } from '../src/core/types.ts';
import { Rng } from '../src/core/rng.ts';
import { getEnvSpec } from '../src/envs/registry.ts';
import type { AnyEnvSpec } from '../src/envs/spec.ts';
import {
  aggregateEvaluations,
  bootstrapInterval,
  bootstrapIntervalGrouped,
  evaluate,
  type EvalActor,
  type EvalContext,
  type EvalResult,
} from '../src/train/evaluate.ts';

const shop = getEnvSpec('shop');
const household = getEnvSpec('household');

function ones(k: number, n: number): number[] {
  return Array.from({ length: n }, (_, i) => (i < k ? 1 : 0));
}

/** Always the first admissible action. */
const firstAction: EvalActor = { choose: async (contexts) => contexts.map((c) => c.observation.actions[0] ?? 'look') };

function contextKey(c: Pick<EvalContext, 'instruction' | 'history' | 'observation'>): string {
  return [c.instruction, c.history.map((h) => h.action).join('\u0001'), c.observation.text].join('\u0000');
}

/**
 * A test-only oracle: replays the expert's recorded trajectories, looked up by everything the
 * actor sees (instruction, its earlier actions, the observation). Product code never does this.
 */
function expertReplay(spec: AnyEnvSpec, tasks: readonly Task[]): EvalActor {
  const plan = new Map<string, string>();
  for (const task of tasks) {
    const env = spec.create();
    let observation = env.reset(task);
    const history: { action: string }[] = [];
    for (let t = 0; t < spec.maxSteps; t++) {
      const action = env.expertAction();
      const key = contextKey({ instruction: task.instruction, history, observation });
      const known = plan.get(key);
      if (known !== undefined && known !== action) throw new Error(`ambiguous expert state for ${task.id}`);
      plan.set(key, action);
      const result = env.step(action);
      history.push({ action });
      observation = result.observation;
      if (result.done) break;
    }
  }
  return {
    choose: async (contexts) =>
      contexts.map((c) => {
        const action = plan.get(contextKey(c));
        if (action === undefined) throw new Error('expert replay left the recorded trajectories');
        return action;
      }),
  };
}

/** A spec whose environments count their reset and step calls. */
function countingSpec(spec: AnyEnvSpec): { spec: AnyEnvSpec; counts: { create: number; reset: number; step: number } } {
  const counts = { create: 0, reset: 0, step: 0 };
  const wrapped: AnyEnvSpec = {
    name: spec.name,
    description: spec.description,
    maxSteps: spec.maxSteps,
    tasks: (o) => spec.tasks(o),
    validateTask: (t) => spec.validateTask(t),
    create: (): RealEnvironment => {
      counts.create++;
      const env = spec.create();
      return {
        name: env.name,
        maxSteps: env.maxSteps,
        reset: (task) => (counts.reset++, env.reset(task)),
        step: (action) => (counts.step++, env.step(action)),
        expertAction: () => {
          throw new Error('evaluation must not ask the expert');
        },
      };
    },
  };
  return { spec: wrapped, counts };
}

describe('bootstrapInterval', () => {
  it('gives low = high = mean for equal values', () => {
    expect(bootstrapInterval([0.5, 0.5, 0.5, 0.5])).toEqual({ mean: 0.5, low: 0.5, high: 0.5 });
    expect(bootstrapInterval([0.1, 0.1, 0.1])).toEqual({ mean: expect.closeTo(0.1, 12), low: 0.1, high: 0.1 });
    expect(bootstrapInterval([7])).toEqual({ mean: 7, low: 7, high: 7 });
  });

  it('matches the hand-computed distribution of [0, 1]', () => {
    // Resampled means of two draws: 0 (p 1/4), 0.5 (p 1/2), 1 (p 1/4). The 2.5% and 97.5%
    // quantiles are 0 and 1; the 30% and 70% quantiles both fall on 0.5.
    expect(bootstrapInterval([0, 1], { seed: 3 })).toEqual({ mean: 0.5, low: 0, high: 1 });
    expect(bootstrapInterval([0, 1], { level: 0.4, seed: 3 })).toEqual({ mean: 0.5, low: 0.5, high: 0.5 });
  });

  it('bounds the mean of a 0/1 vector near the normal approximation, inside [0, 1]', () => {
    const r = bootstrapInterval(ones(30, 100), { seed: 1 });
    expect(r.mean).toBeCloseTo(0.3, 12);
    // Normal approximation: 0.3 ± 1.96 * sqrt(0.3 * 0.7 / 100) = [0.210, 0.390].
    expect(r.low).toBeGreaterThan(0.19);
    expect(r.low).toBeLessThan(0.23);
    expect(r.high).toBeGreaterThan(0.37);
    expect(r.high).toBeLessThan(0.41);
    expect(r.low).toBeLessThan(r.mean);
    expect(r.high).toBeGreaterThan(r.mean);
  });

  it('is deterministic for a seed and wider for fewer samples', () => {
    const a = bootstrapInterval(ones(30, 100), { seed: 42 });
    expect(bootstrapInterval(ones(30, 100), { seed: 42 })).toEqual(a);
    const few = bootstrapInterval(ones(3, 10), { seed: 42 });
    expect(few.mean).toBeCloseTo(0.3, 12);
    expect(few.high - few.low).toBeGreaterThan(1.8 * (a.high - a.low));
    expect(few.low).toBeGreaterThanOrEqual(0);
    expect(few.high).toBeLessThanOrEqual(1);
  });

  it('covers the true mean about 95% of the time by default, where a 90% interval covers clearly less', () => {
    // 400 samples of 40 uniform draws (true mean 0.5): the default interval holds 0.5 in 94% of
    // them, a 90% one in 90%.
    const rng = new Rng(11);
    const samples = Array.from({ length: 400 }, () => Array.from({ length: 40 }, () => rng.next()));
    const coverage = (options?: { level: number }): number =>
      samples.filter((values, i) => {
        const r = bootstrapInterval(values, { resamples: 500, seed: i, ...options });
        return r.low <= 0.5 && 0.5 <= r.high;
      }).length / samples.length;
    const byDefault = coverage();
    expect(byDefault).toBe(coverage({ level: 0.95 }));
    expect(byDefault).toBeGreaterThan(0.93);
    expect(byDefault).toBeLessThan(0.97);
    expect(coverage({ level: 0.9 })).toBeLessThan(0.92);
  });

  it('narrows with a lower level', () => {
    const wide = bootstrapInterval(ones(30, 100), { seed: 5, level: 0.99 });
    const narrow = bootstrapInterval(ones(30, 100), { seed: 5, level: 0.5 });
    expect(narrow.high - narrow.low).toBeLessThan(wide.high - wide.low);
  });

  it('rejects bad input loudly, naming the bad value', () => {
    expect(() => bootstrapInterval([])).toThrow(RangeError);
    expect(() => bootstrapInterval([])).toThrow(/empty/);
    expect(() => bootstrapInterval([1, Number.NaN])).toThrow(/values\[1\].*NaN/);
    expect(() => bootstrapInterval([1], { resamples: 0 })).toThrow(/resamples.*0/);
    expect(() => bootstrapInterval([1], { resamples: 2.5 })).toThrow(/resamples.*2\.5/);
    expect(() => bootstrapInterval([1], { level: 1.5 })).toThrow(/level.*1\.5/);
    expect(() => bootstrapInterval([1], { level: 0 })).toThrow(RangeError);
    expect(() => bootstrapInterval([1], { seed: 0.5 })).toThrow(/seed.*0\.5/);
  });
});

describe('bootstrapIntervalGrouped', () => {
  it('gives low = high = mean for equal values and the mean of the group means', () => {
    expect(bootstrapIntervalGrouped([[1, 1], [1, 1, 1]])).toEqual({ mean: 1, low: 1, high: 1 });
    // Group means 1 and 0.25: every seed weighs the same, whatever its number of tasks.
    expect(bootstrapIntervalGrouped([[1, 1], [1, 0, 0, 0]]).mean).toBeCloseTo(0.625, 12);
  });

  it('carries the spread between seeds, which pooling all tasks hides', () => {
    const groups = [ones(10, 10), ones(0, 10)];
    const grouped = bootstrapIntervalGrouped(groups, { seed: 1 });
    // Resampled seeds give a mean of 0, 0.5 or 1 with p 1/4, 1/2, 1/4: the 95% interval is [0, 1].
    expect(grouped).toEqual({ mean: 0.5, low: 0, high: 1 });
    const pooled = bootstrapInterval(groups.flat(), { seed: 1 });
    expect(pooled.low).toBeGreaterThan(0.2);
    expect(pooled.high).toBeLessThan(0.8);
  });

  it('is deterministic for a seed, and with one group bootstraps within it', () => {
    const groups = [ones(6, 20), ones(9, 20), ones(7, 20)];
    expect(bootstrapIntervalGrouped(groups, { seed: 9 })).toEqual(bootstrapIntervalGrouped(groups, { seed: 9 }));
    const one = bootstrapIntervalGrouped([ones(30, 100)], { seed: 2 });
    expect(one.mean).toBeCloseTo(0.3, 12);
    expect(one.low).toBeGreaterThan(0.19);
    expect(one.high).toBeLessThan(0.41);
  });

  it('rejects no groups, an empty group and bad values', () => {
    expect(() => bootstrapIntervalGrouped([])).toThrow(/empty/);
    expect(() => bootstrapIntervalGrouped([[1], []])).toThrow(/groups\[1\] is empty/);
    expect(() => bootstrapIntervalGrouped([[1], [Number.POSITIVE_INFINITY]])).toThrow(/groups\[1\].*Infinity/);
    expect(() => bootstrapIntervalGrouped([[1]], { level: -1 })).toThrow(/level.*-1/);
  });
});

describe('evaluate', () => {
  const shopTasks = shop.tasks({ split: 'test', count: 20, seed: 1 });

  it('an expert-replaying actor succeeds on every task; always-first-action does worse', async () => {
    const expert = await evaluate(expertReplay(shop, shopTasks), shop, shopTasks, { batch: 7 });
    expect(expert.episodes).toBe(20);
    expect(expert.successRate).toBe(1);
    expect(expert.meanReward).toBe(1);
    expect(expert.success).toEqual({ mean: 1, low: 1, high: 1 });
    expect(expert.perTask.map((o) => o.taskId)).toEqual(shopTasks.map((t) => t.id));

    const trivial = await evaluate(firstAction, shop, shopTasks, { batch: 7 });
    expect(trivial.successRate).toBeLessThan(1);
    expect(trivial.success.high).toBeLessThan(expert.success.low);
    expect(trivial.meanReward).toBeLessThan(expert.meanReward);
  });

  it('works on household too (expert 100%, first action less)', async () => {
    const tasks = household.tasks({ split: 'test', count: 12, seed: 1 });
    const expert = await evaluate(expertReplay(household, tasks), household, tasks, { batch: 5 });
    expect(expert.successRate).toBe(1);
    const trivial = await evaluate(firstAction, household, tasks, { batch: 5 });
    expect(trivial.successRate).toBeLessThan(1);
  });

  it("hands the actor each earlier action with the observation it was taken on", async () => {
    const tasks = shopTasks.slice(0, 3);
    const seen: EvalContext[] = [];
    const replay = expertReplay(shop, tasks);
    const recording: EvalActor = { choose: async (contexts) => (seen.push(...contexts), replay.choose(contexts)) };
    await evaluate(recording, shop, tasks, { batch: 1 });
    const later = seen.filter((c) => c.history.length > 0);
    expect(later.length).toBeGreaterThan(0);
    for (let i = 1; i < seen.length; i++) {
      const [prev, now] = [seen[i - 1] as EvalContext, seen[i] as EvalContext];
      if (now.history.length === 0) continue;
      expect(now.history[now.history.length - 1]).toEqual({ action: expect.any(String), observation: prev.observation });
    }
  });

  it('counts every real step, uses one environment per parallel slot and never asks the expert', async () => {
    const { spec, counts } = countingSpec(shop);
    const r = await evaluate(expertReplay(shop, shopTasks), spec, shopTasks, { batch: 8 });
    expect(r.successRate).toBe(1);
    expect(counts.create).toBe(8);
    expect(counts.reset).toBe(20);
    expect(r.realSteps).toBe(counts.step);
    expect(r.realSteps).toBe(r.perTask.reduce((n, o) => n + o.steps, 0));
    expect(r.realSteps).toBeGreaterThan(20);
  });

  it('acts for all running episodes in one choose call per step and shows only what an agent sees', async () => {
    const sizes: number[] = [];
    const seen: EvalContext[] = [];
    const actor: EvalActor = {
      choose: async (contexts) => {
        sizes.push(contexts.length);
        seen.push(...contexts);
        return firstAction.choose(contexts);
      },
    };
    const tasks = shopTasks.slice(0, 5);
    const r = await evaluate(actor, shop, tasks, { batch: 3, maxSteps: 4 });
    expect(sizes[0]).toBe(3);
    expect(Math.max(...sizes)).toBe(3);
    expect(sizes.reduce((a, b) => a + b, 0)).toBe(r.realSteps);
    for (const c of seen) {
      expect(Object.keys(c).sort()).toEqual(['history', 'instruction', 'observation']);
      expect(JSON.stringify(c)).not.toContain('"goal"');
    }
    expect(seen.some((c) => c.history.length === 3)).toBe(true);
  });

  it('cuts episodes at maxSteps as failures with reward 0', async () => {
    const { spec, counts } = countingSpec(shop);
    const tasks = shopTasks.slice(0, 6);
    const r = await evaluate(firstAction, spec, tasks, { maxSteps: 3, batch: 4 });
    expect(r.perTask.every((o) => o.steps === 3 && !o.success && o.reward === 0)).toBe(true);
    expect(r.realSteps).toBe(18);
    expect(counts.step).toBe(18);
    expect(r.success).toEqual({ mean: 0, low: 0, high: 0 });
  });

  it('reports progress once per finished episode', async () => {
    const calls: [number, number][] = [];
    await evaluate(firstAction, shop, shopTasks.slice(0, 4), { maxSteps: 2, batch: 2, onProgress: (d, t) => calls.push([d, t]) });
    expect(calls).toEqual([
      [1, 4],
      [2, 4],
      [3, 4],
      [4, 4],
    ]);
  });

  it('stops between steps when aborted, with the signal reason', async () => {
    const { spec, counts } = countingSpec(shop);
    const controller = new AbortController();
    let calls = 0;
    const actor: EvalActor = {
      choose: async (contexts) => {
        if (++calls === 3) controller.abort(new Error('stop here'));
        return firstAction.choose(contexts);
      },
    };
    await expect(evaluate(actor, spec, shopTasks, { batch: 4, signal: controller.signal })).rejects.toThrow('stop here');
    // Two full steps of the 4 running episodes; the third choose saw the abort and nothing stepped.
    expect(calls).toBe(3);
    expect(counts.step).toBe(8);
  });

  it('rejects with an AbortError for an aborted signal and runs nothing', async () => {
    const { spec, counts } = countingSpec(shop);
    const controller = new AbortController();
    controller.abort();
    await expect(evaluate(firstAction, spec, shopTasks, { signal: controller.signal })).rejects.toMatchObject({ name: 'AbortError' });
    expect(counts).toEqual({ create: 0, reset: 0, step: 0 });
  });

  it('rejects bad arguments and a misbehaving actor', async () => {
    await expect(evaluate(firstAction, shop, [])).rejects.toThrow(/no tasks/);
    await expect(evaluate(firstAction, shop, shopTasks, { batch: 0 })).rejects.toThrow(/batch.*0/);
    await expect(evaluate(firstAction, shop, shopTasks, { maxSteps: 1.5 })).rejects.toThrow(/maxSteps.*1\.5/);
    const hh = household.tasks({ split: 'test', count: 1, seed: 1 });
    await expect(evaluate(firstAction, shop, hh)).rejects.toThrow(/household task, not shop/);
    const short: EvalActor = { choose: async () => [] };
    await expect(evaluate(short, shop, shopTasks.slice(0, 2))).rejects.toThrow(/returned 0 actions for 2 contexts/);
  });
});

describe('aggregateEvaluations', () => {
  function fake(successes: number[], steps = 5): EvalResult {
    const perTask = successes.map((s, i) => ({ taskId: `t${i}`, success: s === 1, reward: s, steps }));
    const mean = successes.reduce((a, b) => a + b, 0) / successes.length;
    const iv = { mean, low: mean, high: mean };
    return { episodes: successes.length, successRate: mean, meanReward: mean, success: iv, reward: iv, perTask, realSteps: steps * successes.length };
  }

  it('averages seeds and bounds them with the grouped bootstrap', () => {
    const a = aggregateEvaluations([fake(ones(10, 10)), fake(ones(0, 10)), fake(ones(5, 10))], { seed: 4 });
    expect(a.seeds).toBe(3);
    expect(a.episodes).toBe(30);
    expect(a.realSteps).toBe(150);
    expect(a.successRate).toBeCloseTo(0.5, 12);
    expect(a.success).toEqual(bootstrapIntervalGrouped([ones(10, 10), ones(0, 10), ones(5, 10)], { seed: 4 }));
    expect(a.success.low).toBeLessThan(0.3);
    expect(a.success.high).toBeGreaterThan(0.7);
    expect(a.perSeed.map((s) => s.successRate)).toEqual([1, 0, 0.5]);
  });

  it('rejects an empty list', () => {
    expect(() => aggregateEvaluations([])).toThrow(/no evaluations/);
  });
});
