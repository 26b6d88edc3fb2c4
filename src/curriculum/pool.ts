/**
 * The curriculum's task pool: which tasks an iteration trains on (seed tasks, plus a share
 * lambda of generated ones once any exist: DreamGym's mixing), which tasks seed the generator
 * (those whose group rewards varied, V_tau > 0: feasible yet challenging), how new tasks join
 * (no duplicate goal or id), and how the pool is capped.
 */
import type { Rng } from '../core/rng.ts';
import type { Task } from '../core/types.ts';
import { canonicalJson } from './validation.ts';
import { rewardVariance } from './variance.ts';

/** When a generated task was last trained on, and its group's reward variance then (NaN before any). */
export interface TaskSeen {
  iteration: number;
  vTau: number;
}

/**
 * `count` tasks for one iteration: round(lambda * count) generated ones (without replacement,
 * at most as many as exist), the rest seed tasks (without replacement while there are enough).
 */
export function chooseTasks(pool: readonly Task[], count: number, lambda: number, rng: Rng): { tasks: Task[]; generated: number } {
  if (!(Number.isInteger(count) && count >= 1)) throw new RangeError(`count must be an integer >= 1, got ${count}`);
  if (!(lambda >= 0 && lambda <= 1)) throw new RangeError(`lambda must be in [0, 1], got ${lambda}`);
  const seeds = pool.filter((t) => t.origin === 'seed');
  const generated = pool.filter((t) => t.origin === 'generated');
  const nGenerated = Math.min(generated.length, Math.round(lambda * count));
  if (seeds.length === 0 && nGenerated < count) throw new RangeError('the pool has no seed tasks');
  const nSeed = count - nGenerated;
  const fromSeeds = nSeed <= seeds.length ? rng.sample(seeds, nSeed) : Array.from({ length: nSeed }, () => rng.pick(seeds));
  return { tasks: [...rng.sample(generated, nGenerated), ...fromSeeds], generated: nGenerated };
}

/** V_tau per task group: `rewards` holds `groupSize` consecutive rewards per task of `tasks`. */
export function groupVariances(tasks: readonly Task[], rewards: readonly number[], groupSize: number): { task: Task; vTau: number }[] {
  if (rewards.length !== tasks.length * groupSize) throw new RangeError(`expected ${tasks.length * groupSize} rewards (${tasks.length} tasks x ${groupSize}), got ${rewards.length}`);
  return tasks.map((task, i) => ({ task, vTau: rewardVariance(rewards.slice(i * groupSize, (i + 1) * groupSize)) }));
}

/** The distinct tasks whose group rewards varied (V_tau > 0): the generator's seeds. */
export function informativeTasks(scored: readonly { task: Task; vTau: number }[]): Task[] {
  return [...new Map(scored.filter((x) => x.vTau > 0).map((x) => [x.task.id, x.task])).values()];
}

/** Adds `fresh` tasks whose goal and id are new to the pool; returns those added. */
export function addTasks(pool: Task[], fresh: readonly Task[]): Task[] {
  const goals = new Set(pool.map((t) => `${t.env}:${canonicalJson(t.goal)}`));
  const ids = new Set(pool.map((t) => t.id));
  const added: Task[] = [];
  for (const task of fresh) {
    const key = `${task.env}:${canonicalJson(task.goal)}`;
    if (goals.has(key) || ids.has(task.id)) continue;
    goals.add(key);
    ids.add(task.id);
    pool.push(task);
    added.push(task);
  }
  return added;
}

/**
 * Keeps at most `max` generated tasks in `pool` (in place). Evicted first: generated tasks whose
 * last group had reward variance 0 (nothing left to learn from them), the one seen longest ago
 * first; then the generated tasks seen longest ago (never-seen ones count as oldest). Seed tasks
 * are never evicted. Returns the evicted ids.
 */
export function capGenerated(pool: Task[], seen: Map<string, TaskSeen>, max: number): string[] {
  const generated = pool.filter((t) => t.origin === 'generated');
  const excess = generated.length - max;
  if (excess <= 0) return [];
  const rank = (t: Task): [number, number] => {
    const s = seen.get(t.id);
    return [s && s.vTau === 0 ? 0 : 1, s?.iteration ?? -1];
  };
  const drop = generated
    .slice()
    .sort((a, b) => {
      const [za, ia] = rank(a);
      const [zb, ib] = rank(b);
      return za - zb || ia - ib;
    })
    .slice(0, excess)
    .map((t) => t.id);
  const dropped = new Set(drop);
  for (let i = pool.length - 1; i >= 0; i--) if (dropped.has((pool[i] as Task).id)) pool.splice(i, 1);
  for (const id of drop) seen.delete(id);
  return drop;
}
