/**
 * Seed task generation for the shop: deterministic, with train and test tasks drawn from
 * disjoint sets of target products, and every task checked by simulating the expert.
 */
import { hashString, Rng } from '../../core/rng.ts';
import type { Task } from '../../core/types.ts';
import type { Split, TaskGenOptions } from '../spec.ts';
import { DEFAULT_CATALOGUE_SEED, generateCatalogue, type Product } from './catalogue.ts';
import { shopInstruction, type ShopGoal } from './goal.ts';
import { ShopEnv } from './env.ts';
import { OPTION_KINDS } from './vocabulary.ts';

/** A generated task is kept only if the expert finishes it within this many steps (limit 15). */
export const EXPERT_STEP_BUDGET = 10;
/** One product in this many is a test-split target. */
const TEST_FRACTION_DENOMINATOR = 5;

/**
 * The split a product belongs to as a task target: a fixed partition (~80% train, ~20% test)
 * by a hash of its id, so train and test tasks never share a target product.
 */
export function productSplit(productId: string): Split {
  return hashString(`shop-split:${productId}`) % TEST_FRACTION_DENOMINATOR === 0 ? 'test' : 'train';
}

/**
 * Deterministic seed tasks for `split`: the same options give the same tasks, and a smaller
 * `count` gives a prefix of a larger one. Ids are `shop-<split>-<seed>-<index>`.
 */
export function generateShopTasks(options: TaskGenOptions, catalogueSeed: number = DEFAULT_CATALOGUE_SEED): Task[] {
  return [...iterateShopTasks(options, catalogueSeed)];
}

/** The tasks of {@link generateShopTasks}, one at a time (for streams that must not hold them all). */
export function* iterateShopTasks(options: TaskGenOptions, catalogueSeed: number = DEFAULT_CATALOGUE_SEED): Generator<Task> {
  const { split, count, seed } = options;
  if (split !== 'train' && split !== 'test') throw new RangeError(`split must be "train" or "test", got ${JSON.stringify(split)}`);
  if (!Number.isInteger(count) || count < 0) throw new RangeError(`task count must be a non-negative integer, got ${count}`);
  if (!Number.isSafeInteger(seed)) throw new RangeError(`task seed must be a safe integer, got ${seed}`);
  const catalogue = generateCatalogue(catalogueSeed);
  const pool = catalogue.products.filter((p) => productSplit(p.id) === split);
  if (pool.length === 0) throw new RangeError(`catalogue ${catalogueSeed} has no ${split} products`);

  const rng = new Rng((hashString(`shop-tasks:${split}:${seed}`) ^ (seed >>> 0)) >>> 0);
  const env = new ShopEnv();
  let made = 0;
  const seen = new Set<string>();
  const maxAttempts = 100 * count + 100;
  for (let attempt = 0; made < count; attempt++) {
    if (attempt >= maxAttempts) {
      throw new Error(`shop: could only generate ${made} of ${count} ${split} tasks in ${maxAttempts} attempts`);
    }
    const goal = sampleGoal(rng, pool, catalogueSeed);
    const instruction = shopInstruction(goal);
    // Prefer distinct tasks; allow repeats only once distinct ones get hard to find.
    if (seen.has(instruction) && attempt < 20 * count) continue;
    const task: Task = {
      id: `shop-${split}-${seed}-${made}`,
      env: 'shop',
      instruction,
      goal,
      split,
      origin: 'seed',
    };
    if (!expertSolves(env, task)) continue;
    seen.add(instruction);
    made++;
    yield task;
  }
}

/** A goal built from one target product: 1-3 of its attributes, a value per option kind, a budget above its price. */
function sampleGoal(rng: Rng, pool: readonly Product[], catalogueSeed: number): ShopGoal {
  const target = rng.pick(pool);
  const k = rng.int(1, Math.min(3, target.attributes.length));
  const chosen = new Set(rng.sample(target.attributes, k));
  const options: ShopGoal['options'] = {};
  for (const kind of OPTION_KINDS) {
    const values = target.options[kind];
    if (values && values.length > 0) options[kind] = rng.pick(values);
  }
  return {
    catalogueSeed,
    productType: target.productType,
    category: target.category,
    attributes: target.attributes.filter((a) => chosen.has(a)),
    options,
    maxPrice: Math.ceil(target.price * (1.1 + 0.5 * rng.next())),
    targetId: target.id,
  };
}

/** Whether the expert buys a fully matching product within the step budget. */
function expertSolves(env: ShopEnv, task: Task): boolean {
  env.reset(task);
  for (let t = 0; t < EXPERT_STEP_BUDGET; t++) {
    const result = env.step(env.expertAction());
    if (result.done) return result.info.success === true;
  }
  return false;
}
