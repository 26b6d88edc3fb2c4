/**
 * A dreamgym JSONL file as the offline seed data of a new run on a built-in environment, in place
 * of the episodes the page would generate with the environment's expert and noisy policies. The
 * whole file is checked before anything is written (the replay store's `validateJsonl`: every
 * line, and the records' references to each other), errors name the line, and every record must
 * belong to the run's environment, whose held-out tasks the run is still evaluated on.
 */
import { JsonlError, parseJsonl } from '../../core/jsonl.ts';
import type { Task, Trajectory } from '../../core/types.ts';
import { getEnvSpec } from '../../envs/registry.ts';
import type { AnyEnvSpec } from '../../envs/spec.ts';
import { validateJsonl, type ReplayStore } from '../../replay/index.ts';
import type { TrainingConfig } from '../../train/config.ts';
import type { OfflineData } from '../../train/loop.ts';
import { evaluationTasks } from '../../train/setup.ts';

/** What a run keeps about the seed file it was started on. */
export interface SeedFileSummary {
  file: string;
  tasks: number;
  trajectories: number;
}

/** Thrown when a seed file is well-formed but cannot seed the run (wrong environment, no trajectory). */
export class SeedFileError extends Error {
  override name = 'SeedFileError';
}

/**
 * The offline data of seed `tasks` and `trajectories` (recorded before this run, so stored as
 * `offline`): every trajectory is a behaviour-cloning candidate, weighed by `sft.cloning` (only
 * the successes under `successes`; every episode by its reward under `reward-weighted`).
 */
function offlineFromRecords(tasks: readonly Task[], trajectories: readonly Trajectory[]): OfflineData {
  return { tasks: tasks.slice(), trajectories: trajectories.map((t) => (t.source === 'offline' ? t : { ...t, source: 'offline' })), expertIds: new Set(trajectories.map((t) => t.id)), extraTasks: [] };
}

/**
 * Checks `text` (a dreamgym JSONL file) as the seed data of a run on environment `env` and returns
 * it as offline data. Throws the store's {@link JsonlError} (naming lines) for a malformed file and
 * {@link SeedFileError} for one of another environment or without trajectories.
 */
export async function seedFileOffline(text: string, env: string, fileName: string): Promise<{ offline: OfflineData; summary: SeedFileSummary }> {
  await validateJsonl(text);
  const data = parseJsonl(text);
  // The line of the first record of another environment, so the message points at it.
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!.trim();
    if (line === '') continue;
    const record = JSON.parse(line) as { task?: { env?: unknown }; trajectory?: { env?: unknown; source?: unknown } };
    const of = record.task?.env ?? record.trajectory?.env;
    if (of !== env) throw new SeedFileError(`${fileName}: line ${i + 1}: a record of environment ${JSON.stringify(of)}, but the run trains on ${JSON.stringify(env)}; nothing written`);
    // Seed data grounds the experience model: recorded episodes only, never a simulator's own output.
    if (record.trajectory?.source === 'synthetic') {
      throw new SeedFileError(`${fileName}: line ${i + 1}: a synthetic trajectory; seed data must be recorded episodes (source offline or real): drop the synthetic ones; nothing written`);
    }
  }
  if (data.trajectories.length === 0) throw new SeedFileError(`${fileName}: no trajectories: seed data needs recorded episodes to ground the experience model; nothing written`);
  return { offline: offlineFromRecords(data.tasks, data.trajectories), summary: { file: fileName, tasks: data.tasks.length, trajectories: data.trajectories.length } };
}

/**
 * What `prepareRun` takes for a run on seed data from a file: the run's real environment and its
 * held-out tasks (so the run is evaluated like any other), with the file's episodes as offline data.
 */
export function seedFileRun(config: Pick<TrainingConfig, 'env' | 'evalEpisodes'>, offline: OfflineData): { spec: AnyEnvSpec; offline: OfflineData; evalTasks: Task[] } {
  const spec = getEnvSpec(config.env);
  return { spec, offline, evalTasks: evaluationTasks(spec, config.evalEpisodes) };
}

/**
 * The seed data of a run started on a file, read back from its replay buffer (a resumed run):
 * its offline trajectories, and the seed tasks and those the trajectories belong to.
 */
export async function storedSeedData(replay: ReplayStore, runId: string): Promise<OfflineData> {
  const trajectories = await replay.getTrajectories({ runId, source: 'offline' });
  const used = new Set(trajectories.map((t) => t.taskId));
  const tasks = (await replay.getTasks(runId)).filter((r) => r.origin === 'seed' || used.has(r.id)).map((r) => r.task);
  return offlineFromRecords(tasks, trajectories);
}
