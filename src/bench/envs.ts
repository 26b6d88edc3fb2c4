/**
 * The CLI suite `envs`: how fast the real environments run, cold and warm. The environments keep
 * module-level caches (shop: each catalogue with its BM25 index and memoised search rankings;
 * household: room layouts), so a first pass over a set of tasks and a repeated pass measure very
 * different things:
 *
 * - cold: the caches emptied first ({@link clearEnvCaches}), as in a freshly loaded page or
 *   process, with a new environment instance: every world, index and search is built on first use;
 * - warm: the same work repeated with the caches filled by an earlier pass.
 *
 * Each figure is the median of `reps` passes; a cold pass clears the caches before it starts.
 */
import { Rng } from '../core/rng.ts';
import { ENV_NAMES, type EnvName, type Task } from '../core/types.ts';
import { expertPolicy, runEpisode } from '../envs/episode.ts';
import { clearEnvCaches, getEnvSpec } from '../envs/registry.ts';
import type { AnyEnvSpec } from '../envs/spec.ts';
import type { BenchRow } from './types.ts';

/** Options of {@link benchEnvs}. */
export interface EnvBenchOptions {
  envs?: readonly EnvName[];
  /** Train tasks generated, and expert episodes per pass (default 200). */
  tasks?: number;
  /** Passes per figure (default 3). */
  reps?: number;
}

const median = (xs: readonly number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? Number.NaN;

function time<T>(fn: () => T): { ms: number; value: T } {
  const t0 = performance.now();
  const value = fn();
  return { ms: performance.now() - t0, value };
}

/** One pass of expert episodes over `tasks` on a new environment instance; returns steps and ms. */
function expertPass(spec: AnyEnvSpec, tasks: readonly Task[]): { steps: number; ms: number } {
  const env = spec.create();
  const rng = new Rng(1);
  const { ms, value: steps } = time(() => {
    let n = 0;
    for (const task of tasks) n += runEpisode(env, task, expertPolicy, { rng }).steps.length;
    return n;
  });
  return { steps, ms };
}

/** Task generation and expert-episode throughput per environment, cold and warm. */
export async function benchEnvs(options: EnvBenchOptions = {}): Promise<BenchRow[]> {
  const count = options.tasks ?? 200;
  const reps = options.reps ?? 3;
  if (!(Number.isInteger(reps) && reps >= 1)) throw new RangeError(`reps must be an integer >= 1, got ${reps}`);
  const rows: BenchRow[] = [];
  for (const name of options.envs ?? ENV_NAMES) {
    const spec = getEnvSpec(name);
    const generate = (): Task[] => spec.tasks({ split: 'train', count, seed: 1 });

    const coldGen: number[] = [];
    for (let r = 0; r < reps; r++) {
      clearEnvCaches();
      coldGen.push(time(generate).ms);
    }
    const warmGen: number[] = [];
    let tasks: Task[] = [];
    for (let r = 0; r < reps; r++) {
      const t = time(generate);
      warmGen.push(t.ms);
      tasks = t.value;
    }
    rows.push(
      { name: `${name}: generate ${count} train tasks, cold`, value: median(coldGen), unit: 'ms', note: `median of ${reps}; fresh caches, so it includes building the worlds` },
      { name: `${name}: generate ${count} train tasks, warm`, value: median(warmGen), unit: 'ms', note: `median of ${reps}; repeated call` },
    );

    const cold: { steps: number; ms: number }[] = [];
    for (let r = 0; r < reps; r++) {
      clearEnvCaches();
      cold.push(expertPass(spec, tasks));
    }
    const warm: { steps: number; ms: number }[] = [];
    for (let r = 0; r < reps; r++) warm.push(expertPass(spec, tasks));
    const rate = (p: { steps: number; ms: number }): number => p.steps / (p.ms / 1000);
    const steps = cold[0]?.steps ?? 0;
    rows.push(
      {
        name: `${name}: expert episode steps per second, cold`,
        value: median(cold.map(rate)),
        unit: 'steps/s',
        note: `median of ${reps} passes of ${count} episodes (${steps} steps), each on fresh caches and a new environment, so every world (and, in shop, every search) is built on first use; ${(median(cold.map((p) => p.ms)) / 1000).toFixed(2)} s per pass`,
      },
      {
        name: `${name}: expert episode steps per second, warm`,
        value: median(warm.map(rate)),
        unit: 'steps/s',
        note: `median of ${reps} repeated passes over the same ${count} episodes, caches filled`,
      },
    );
  }
  return rows;
}
