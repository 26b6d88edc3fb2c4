/**
 * The page's access to a run's stored data on the main thread: the replay buffer and curriculum
 * for the inspector, the exports (checkpoint file, dreamgym JSONL, chat JSONL, run report), the
 * JSONL import, deleting a run, clearing all storage and repairing corrupt records. Each call opens the databases, does its
 * work and closes them again, so the page never holds a connection that would block the training
 * worker or a database deletion.
 */
import type { Task, Trajectory, TrajectorySource } from '../../core/types.ts';
import { checkpointFileName, serializeCheckpoint, type Checkpoint } from '../../policy/checkpoint.ts';
import { fromRecord } from '../../policy/replay-sink.ts';
import { HashedEmbedder } from '../../policy/hashed-embedder.ts';
import {
  CheckpointNotFoundError,
  DEFAULT_DB_NAME,
  exportJsonl,
  importJsonl,
  openReplayStore,
  repairStore,
  type ImportSummary,
  type RepairReport,
  type ReplayStore,
  type TaskRecord,
  type TrajectoryRecord,
} from '../../replay/index.ts';
import { chatLine, trajectoryToChat } from '../../train/chat.ts';
import { ENVIRONMENTS, isBuiltinEnv } from '../../envs/registry.ts';
import type { IterationMetrics } from '../../train/loop.ts';
import type { StorageNames } from '../../../workers/training.protocol.ts';
import { DEFAULT_RUN_INDEX_NAME, RunIndex, type PageRunRecord } from '../../train/runs/records.ts';
import { metricsFromValues, SNAPSHOT_CHECKPOINT, snapshotFromCheckpoint } from '../../train/runs/snapshot.ts';
import { buildCurriculum, type CurriculumRow } from '../inspect/curriculum.ts';

/** Trajectory outcomes the inspector filters by. */
export type OutcomeFilter = 'success' | 'failure';

/** What the inspector lists. */
export interface BufferFilter {
  source?: TrajectorySource;
  taskId?: string;
  outcome?: OutcomeFilter;
}

/** A file for the user to save. */
export interface DownloadFile {
  name: string;
  type: string;
  data: Blob;
}

/** The run report: configuration, status, evaluation and every iteration's metrics. */
export interface RunReport {
  format: 'dreamgym-run-report';
  version: 1;
  run: PageRunRecord;
  metrics: IterationMetrics[];
}

/** Storage use as the browser reports it. */
export interface StorageUse {
  usage: number | null;
  quota: number | null;
  persisted: boolean | null;
}

/** Thrown when an action needs data the run does not have (yet). */
export class RunDataError extends Error {
  override name = 'RunDataError';
}

/** The embedder of stored transitions (the training worker uses the same, see workers/training-host.ts). */
const transitionEmbedder = (): HashedEmbedder => new HashedEmbedder({ dim: 256 });

/** Safe file-name part of a run id. */
function fileStem(runId: string): string {
  return runId.replace(/[^A-Za-z0-9._-]+/g, '_');
}

/** The page's stored runs (see the module comment). */
export class RunData {
  constructor(private readonly storage: StorageNames = {}) {}

  private get replayName(): string {
    return this.storage.replay ?? DEFAULT_DB_NAME;
  }

  private get indexName(): string {
    return this.storage.index ?? DEFAULT_RUN_INDEX_NAME;
  }

  private async withReplay<T>(fn: (store: ReplayStore) => Promise<T>): Promise<T> {
    const store = await openReplayStore({ name: this.replayName, broadcast: false });
    try {
      return await fn(store);
    } finally {
      await store.close();
    }
  }

  private async withIndex<T>(fn: (index: RunIndex) => Promise<T>): Promise<T> {
    const index = await RunIndex.open({ name: this.indexName });
    try {
      return await fn(index);
    } finally {
      index.close();
    }
  }

  /** Every run of the page, oldest first. */
  listRuns(): Promise<PageRunRecord[]> {
    return this.withIndex((index) => index.list());
  }

  /** Trajectory headers of a run that match `filter`, oldest first. */
  trajectories(runId: string, filter: BufferFilter = {}): Promise<TrajectoryRecord[]> {
    return this.withReplay(async (store) => {
      if (!(await store.getRun(runId))) return [];
      const headers = await store.getTrajectoryRecords({ runId, ...(filter.source ? { source: filter.source } : {}), ...(filter.taskId ? { taskId: filter.taskId } : {}) });
      if (!filter.outcome) return headers;
      const success = filter.outcome === 'success';
      return headers.filter((h) => h.success === success);
    });
  }

  /** One whole trajectory (steps included), or undefined. */
  trajectory(runId: string, id: string): Promise<Trajectory | undefined> {
    return this.withReplay(async (store) => (await store.getTrajectories({ runId, ids: [id] }))[0]);
  }

  /** The run's tasks as the curriculum tree (see ../inspect/curriculum.ts). */
  curriculum(runId: string): Promise<CurriculumRow[]> {
    return this.withReplay(async (store) => {
      if (!(await store.getRun(runId))) return [];
      const tasks: TaskRecord[] = await store.getTasks(runId);
      let lastSeen: Record<string, { iteration: number; vTau: number }> = {};
      try {
        const snapshot = snapshotFromCheckpoint(await store.loadCheckpoint(runId, SNAPSHOT_CHECKPOINT));
        lastSeen = snapshot.lastSeen;
        // The loop's task pool holds generated tasks no rollout has used (so not stored) yet.
        const stored = new Set(tasks.map((t) => t.id));
        let seq = tasks.reduce((m, t) => Math.max(m, t.seq), 0);
        for (const task of snapshot.pool) {
          if (stored.has(task.id)) continue;
          tasks.push({
            runId,
            id: task.id,
            seq: ++seq,
            task,
            origin: task.origin,
            ...(task.parentId ? { parentId: task.parentId } : {}),
            generation: task.generation ?? 0,
            stats: { count: 0, rewardSum: 0, rewardSumSq: 0, successes: 0 },
            createdAt: 0,
          });
        }
      } catch (e) {
        // No snapshot yet (no completed iteration): tasks have no V_tau of the loop's own.
        if (!(e instanceof CheckpointNotFoundError)) throw e;
      }
      return buildCurriculum(tasks, lastSeen);
    });
  }

  /** The run's latest policy as a checkpoint file (the format `dreamgym eval --checkpoint` reads). */
  checkpointFile(runId: string): Promise<DownloadFile> {
    return this.withReplay(async (store) => {
      let checkpoint: Checkpoint;
      try {
        checkpoint = snapshotFromCheckpoint(await store.loadCheckpoint(runId, SNAPSHOT_CHECKPOINT)).checkpoint;
      } catch (e) {
        if (!(e instanceof CheckpointNotFoundError)) throw e;
        // A run made from an imported checkpoint keeps it as a plain policy checkpoint.
        try {
          checkpoint = fromRecord(await store.loadCheckpoint(runId));
        } catch (e2) {
          if (e2 instanceof CheckpointNotFoundError) throw new RunDataError(`run ${runId} has no checkpoint yet (no completed iteration)`);
          throw e2;
        }
      }
      const bytes = serializeCheckpoint(checkpoint);
      return { name: `${fileStem(runId)}-${checkpointFileName(checkpoint)}`, type: 'application/octet-stream', data: new Blob([bytes as Uint8Array<ArrayBuffer>]) };
    });
  }

  /** The run's experience as dreamgym JSONL (tasks, then trajectories). */
  datasetFile(runId: string): Promise<DownloadFile> {
    return this.withReplay(async (store) => {
      if (!(await store.getRun(runId))) throw new RunDataError(`run ${runId} has no stored experience`);
      const parts: string[] = [];
      for await (const line of exportJsonl(store, runId)) parts.push(line);
      return { name: `${fileStem(runId)}.dreamgym.jsonl`, type: 'application/x-ndjson', data: new Blob(parts, { type: 'application/x-ndjson' }) };
    });
  }

  /** The run's trajectories as chat-messages JSONL (src/train/chat.ts). */
  chatFile(runId: string): Promise<DownloadFile> {
    return this.withReplay(async (store) => {
      if (!(await store.getRun(runId))) throw new RunDataError(`run ${runId} has no stored experience`);
      const tasks = new Map<string, Task>((await store.getTasks(runId)).map((r) => [r.id, r.task]));
      const parts: string[] = [];
      const headers = await store.getTrajectoryRecords({ runId });
      // Page by page, so a large buffer is never assembled whole.
      for (let i = 0; i < headers.length; i += 256) {
        const ids = headers.slice(i, i + 256).map((h) => h.id);
        for (const t of await store.getTrajectories({ runId, ids })) {
          const task = tasks.get(t.taskId);
          if (!task || t.steps.length === 0) continue;
          // A built-in environment's declared description; another domain (seed data) is named only.
          const description = isBuiltinEnv(t.env) ? ENVIRONMENTS[t.env].description : undefined;
          parts.push(`${chatLine(trajectoryToChat(task, t, { description }))}\n`);
        }
      }
      return { name: `${fileStem(runId)}.chat.jsonl`, type: 'application/x-ndjson', data: new Blob(parts, { type: 'application/x-ndjson' }) };
    });
  }

  /** The run report as a JSON file. */
  async reportFile(runId: string): Promise<DownloadFile> {
    const report = await this.report(runId);
    return { name: `${fileStem(runId)}.report.json`, type: 'application/json', data: new Blob([`${JSON.stringify(report, null, 2)}\n`], { type: 'application/json' }) };
  }

  /** The run report (see {@link RunReport}). */
  async report(runId: string): Promise<RunReport> {
    const run = await this.withIndex((index) => index.get(runId));
    if (!run) throw new RunDataError(`no run ${runId}`);
    const metrics = await this.withReplay(async (store) => ((await store.getRun(runId)) ? (await store.readMetrics(runId)).map((r) => metricsFromValues(r.values)) : []));
    return { format: 'dreamgym-run-report', version: 1, run, metrics };
  }

  /**
   * Imports a dreamgym JSONL file into the run's replay buffer: validated as a whole first, so a
   * malformed file writes nothing and its error names the line (`JsonlError`).
   */
  importDataset(runId: string, file: Blob): Promise<ImportSummary> {
    return this.withReplay(async (store) => {
      if (!(await store.getRun(runId))) throw new RunDataError(`run ${runId} has no replay buffer to import into`);
      return importJsonl(store, runId, file, { embedder: transitionEmbedder() });
    });
  }

  /** Deletes a run: its replay data and its index record. Refuses (RunLockedError) while a context trains it. */
  async deleteRun(runId: string): Promise<void> {
    await this.withReplay((store) => store.deleteRun(runId));
    await this.withIndex((index) => index.delete(runId));
  }

  /**
   * Finds corrupt records of the replay database (`repairStore`): with `dryRun` it only lists
   * them; otherwise it removes them and rebuilds the counters of the runs they belonged to. Runs
   * another context trains are left alone (listed in `lockedRuns`).
   */
  repair(dryRun: boolean): Promise<RepairReport> {
    return this.withReplay((store) => repairStore(store, { dryRun }));
  }

  /** Deletes both databases of the page (every run). */
  async clearAll(): Promise<void> {
    for (const name of [this.replayName, this.indexName]) await deleteDatabase(name);
  }
}

/** Deletes an IndexedDB database; fails rather than waits when a connection keeps it open. */
function deleteDatabase(name: string, timeoutMs = 5000): Promise<void> {
  return new Promise((resolve, reject) => {
    const request = indexedDB.deleteDatabase(name);
    const timer = setTimeout(() => reject(new RunDataError(`could not delete ${name}: another tab keeps it open`)), timeoutMs);
    request.onsuccess = () => {
      clearTimeout(timer);
      resolve();
    };
    request.onerror = () => {
      clearTimeout(timer);
      reject(request.error ?? new RunDataError(`could not delete ${name}`));
    };
  });
}

/** What `navigator.storage` says about this origin's storage (nulls where it says nothing). */
export async function storageUse(storage: StorageManager | undefined = globalThis.navigator?.storage): Promise<StorageUse> {
  if (!storage) return { usage: null, quota: null, persisted: null };
  const estimate = typeof storage.estimate === 'function' ? await storage.estimate() : {};
  const persisted = typeof storage.persisted === 'function' ? await storage.persisted() : null;
  return { usage: estimate.usage ?? null, quota: estimate.quota ?? null, persisted };
}

/** Asks the browser to keep this origin's storage (never evicted under pressure); returns whether it will. */
export async function requestPersistence(storage: StorageManager | undefined = globalThis.navigator?.storage): Promise<boolean> {
  if (!storage || typeof storage.persist !== 'function') return false;
  return storage.persist();
}

/** `12.3 MB` */
export function formatBytes(n: number): string {
  if (n < 1024) return `${n} B`;
  const units = ['KB', 'MB', 'GB', 'TB'];
  let v = n / 1024;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${v.toFixed(1)} ${units[i]}`;
}
