import { describe, expect, it } from 'vitest';
import { Rng } from '../src/core/rng.ts';
import { TaskSchema } from '../src/core/types.ts';
import { expertPolicy, noisyPolicy, runEpisode } from '../src/envs/episode.ts';
import {
  EXPERT_STEP_BUDGET,
  generateCatalogue,
  generateShopTasks,
  productSplit,
  ShopEnv,
  ShopGoalSchema,
  shopSpec,
  validateShopTask,
} from '../src/envs/shop/index.ts';

const train = generateShopTasks({ split: 'train', count: 200, seed: 1 });
const test = generateShopTasks({ split: 'test', count: 200, seed: 1 });

describe('generateShopTasks', () => {
  it('makes well-formed seed tasks with WebShop-style ids and goals', () => {
    expect(train).toHaveLength(200);
    train.forEach((t, i) => {
      expect(TaskSchema.parse(t)).toEqual(t);
      expect(t.id).toBe(`shop-train-1-${i}`);
      expect(t).toMatchObject({ env: 'shop', split: 'train', origin: 'seed' });
      const goal = ShopGoalSchema.parse(t.goal);
      expect(goal.catalogueSeed).toBe(0);
      expect(goal.attributes.length).toBeGreaterThanOrEqual(1);
      expect(goal.attributes.length).toBeLessThanOrEqual(3);
      const target = generateCatalogue(0).byId.get(goal.targetId);
      if (!target) throw new Error(`unknown target ${goal.targetId}`);
      expect(goal.productType).toBe(target.productType);
      for (const a of goal.attributes) expect(target.attributes).toContain(a);
      expect(Object.keys(goal.options).sort()).toEqual(Object.keys(target.options).sort());
      expect(goal.maxPrice).toBeGreaterThan(target.price);
      expect(goal.maxPrice).toBeLessThanOrEqual(Math.ceil(target.price * 1.6));
      expect(t.instruction).toMatch(/^i need .+, price lower than \d+\.00 dollars$/);
      expect(t.instruction).toBe(t.instruction.toLowerCase());
    });
    expect(new Set(train.map((t) => t.instruction)).size).toBe(train.length);
    expect(test.every((t) => t.id.startsWith('shop-test-1-'))).toBe(true);
  });

  it('is deterministic per seed, differs across seeds, and a smaller count is a prefix', () => {
    expect(generateShopTasks({ split: 'train', count: 200, seed: 1 })).toEqual(train);
    const other = generateShopTasks({ split: 'train', count: 20, seed: 2 });
    expect(other.map((t) => t.instruction)).not.toEqual(train.slice(0, 20).map((t) => t.instruction));
    expect(generateShopTasks({ split: 'train', count: 20, seed: 1 })).toEqual(train.slice(0, 20));
    expect(generateShopTasks({ split: 'train', count: 0, seed: 1 })).toEqual([]);
    expect(shopSpec.tasks({ split: 'test', count: 200, seed: 1 })).toEqual(test);
  });

  it('uses disjoint target products for train and test, from a fixed ~80/20 partition', () => {
    const targets = (tasks: typeof train): Set<string> => new Set(tasks.map((t) => ShopGoalSchema.parse(t.goal).targetId));
    const trainTargets = targets([...train, ...generateShopTasks({ split: 'train', count: 100, seed: 99 })]);
    const testTargets = targets([...test, ...generateShopTasks({ split: 'test', count: 100, seed: 99 })]);
    for (const id of testTargets) expect(trainTargets.has(id), id).toBe(false);
    for (const id of trainTargets) expect(productSplit(id)).toBe('train');
    for (const id of testTargets) expect(productSplit(id)).toBe('test');
    const products = generateCatalogue(0).products;
    const testShare = products.filter((p) => productSplit(p.id) === 'test').length / products.length;
    expect(testShare).toBeGreaterThan(0.15);
    expect(testShare).toBeLessThan(0.25);
  });

  it('rejects bad options loudly', () => {
    expect(() => generateShopTasks({ split: 'valid' as 'train', count: 1, seed: 0 })).toThrow(/"valid"/);
    expect(() => generateShopTasks({ split: 'train', count: -1, seed: 0 })).toThrow(/-1/);
    expect(() => generateShopTasks({ split: 'train', count: 1, seed: Number.NaN })).toThrow(/NaN/);
  });

  it('gives tasks that all validate', () => {
    for (const t of [...train, ...test]) expect(validateShopTask(t)).toEqual({ ok: true });
  });
});

describe('shop expert and noisy policy', () => {
  it('the expert succeeds on 100% of 200 train and 200 test tasks, well inside the step limit', () => {
    const env = shopSpec.create();
    for (const t of [...train, ...test]) {
      const traj = runEpisode(env, t, expertPolicy, { rng: new Rng(0) });
      expect(traj.success, t.instruction).toBe(true);
      expect(traj.reward).toBe(1);
      expect(traj.steps.length).toBeLessThanOrEqual(EXPERT_STEP_BUDGET);
      expect(traj.steps.every((s) => s.valid)).toBe(true);
      expect(traj.steps.every((s) => s.observation.actions.includes(s.action))).toBe(true);
    }
  });

  it('noisy:0.3 gives a mix of successes and failures', () => {
    const env = new ShopEnv();
    const rng = new Rng(42);
    let successes = 0;
    const rewards = new Set<number>();
    const episodes = train.slice(0, 100);
    for (const t of episodes) {
      const traj = runEpisode(env, t, noisyPolicy(0.3), { rng });
      if (traj.success) successes++;
      rewards.add(traj.reward);
      expect(traj.steps.length).toBeLessThanOrEqual(15);
    }
    expect(successes).toBeGreaterThan(50);
    expect(successes).toBeLessThan(100);
    expect(rewards.size).toBeGreaterThan(2); // partial rewards occur too
  });

  it('exposes the spec the registry needs', () => {
    expect(shopSpec.name).toBe('shop');
    expect(shopSpec.maxSteps).toBe(15);
    expect(shopSpec.description.length).toBeGreaterThan(10);
    expect(shopSpec.create()).toBeInstanceOf(ShopEnv);
  });
});
