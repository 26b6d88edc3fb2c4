/**
 * The replay database: record types, object stores, indexes and the versioned upgrades.
 *
 * Layout (schema version 3):
 * - `runs`         key `id`.                    One record per training run (embedding settings, counters).
 * - `tasks`        key `[runId, id]`.           Tasks with lineage and reward statistics.
 *                  indexes `by-run-seq` [runId, seq], `by-run-origin` [runId, origin].
 * - `trajectories` key `[runId, id]`.           Episode headers; steps live in `transitions`.
 *                  indexes `by-run-seq` [runId, seq], `by-run-source` [runId, source],
 *                  `by-run-task` [runId, taskId], `by-evict` [runId, evictRank, seq] (unpinned only).
 * - `transitions`  key `[runId, seq]`.          One record per step, with its embedding. A trajectory's
 *                  steps have consecutive seqs, so "by run" and "by trajectory" are key ranges.
 * - `checkpoints`  key `[runId, name]`.         Named tensors, optimizer state, iteration, config.
 * - `metrics`      key `[runId, iteration]`.    Per-iteration figures.
 * - `quarantine`   auto-increment key.          Records an upgrade could not migrate, set aside with
 *                                               their store, key and what was wrong (version 3).
 *
 * Every key starts with the run id, so everything of a run is one key range per store.
 * Upgrades are a list of steps (`MIGRATIONS`); opening at version N applies the steps above the
 * database's current version inside the version-change transaction, keeping every record it can
 * read; one it cannot (a damaged record: an unknown source, a missing field) is moved to
 * `quarantine` instead of failing the upgrade, which would leave every later open failing too.
 */
import type { DBSchema, IDBPDatabase, IDBPTransaction, StoreNames } from 'idb';
import type { JsonValue, Task, TrajectorySource } from '../core/types.ts';
import { trajectoryV1Problem } from './records.ts';

/** The schema version this build writes. */
export const SCHEMA_VERSION = 3;

/** The default database name (one database per origin). */
export const DEFAULT_DB_NAME = 'dreamgym-replay';

/** Trajectory sources in a fixed order (used for counters and compact codes). */
export const SOURCES: readonly TrajectorySource[] = ['offline', 'synthetic', 'real'];

/** Trajectory and transition counts of one source. */
export interface SourceCounters {
  trajectories: number;
  transitions: number;
  /** Sum of trajectory rewards (for means). */
  rewardSum: number;
  /** Trajectories with `success`. */
  successes: number;
}

/** Counters kept in the run record and updated in the same transaction as every write. */
export interface RunCounters {
  tasks: number;
  bySource: Record<TrajectorySource, SourceCounters>;
  /** Trajectories and transitions removed by capacity eviction since the run began. */
  evicted: { trajectories: number; transitions: number };
}

/** A training run. The embedding settings are fixed when the run is created. */
export interface RunRecord {
  id: string;
  name?: string;
  createdAt: number;
  updatedAt: number;
  /** Identifies the embedder (see `Embedder.id`); vectors of different ids are not comparable. */
  embedderId: string;
  /** Length of every transition embedding in this run. */
  embeddingDim: number;
  /** Per-run capacity in transitions; `undefined` means the store's default. */
  maxTransitions?: number;
  /** Free-form run configuration (JSON). */
  config?: JsonValue;
  /** Next sequence numbers (monotonic, never reused). */
  next: { task: number; trajectory: number; transition: number };
  counters: RunCounters;
  /** Name of the most recently saved checkpoint. */
  latestCheckpoint?: string;
}

/** Lifetime reward statistics of a task (not reduced by eviction). */
export interface TaskStats {
  count: number;
  rewardSum: number;
  rewardSumSq: number;
  successes: number;
}

/** A task stored in a run, with its lineage. */
export interface TaskRecord {
  runId: string;
  id: string;
  seq: number;
  task: Task;
  origin: Task['origin'];
  parentId?: string;
  /** 0 for seed tasks, parent's generation + 1 for generated ones. */
  generation: number;
  stats: TaskStats;
  createdAt: number;
}

/** The header of a stored trajectory; its steps are the transitions `[runId, firstStep + i]`. */
export interface TrajectoryRecord {
  runId: string;
  id: string;
  seq: number;
  taskId: string;
  env: Task['env'];
  source: TrajectorySource;
  reward: number;
  success: boolean;
  /** Number of steps (= transitions). */
  length: number;
  /** Transition seq of step 0. */
  firstStep: number;
  /** Pinned trajectories are never evicted (offline seed data by default). */
  pinned: boolean;
  /** Eviction order class, only on unpinned trajectories: 0 synthetic (first), 1 other. */
  evictRank?: number;
  createdAt: number;
}

/** One step of a stored trajectory, keyed for retrieval. */
export interface TransitionRecord {
  runId: string;
  seq: number;
  trajectoryId: string;
  taskId: string;
  source: TrajectorySource;
  /** Index of the step in its trajectory. */
  step: number;
  /** The state (observation text) the action was taken in. */
  state: string;
  /** The admissible actions in that state. */
  actions: string[];
  action: string;
  /** The next state's text, or `null` after the last step (the format does not record it). */
  nextState: string | null;
  nextActions: string[] | null;
  reward: number;
  done: boolean;
  valid: boolean;
  reasoning?: string;
  /** Embedding of `transitionText(state, action)`, `embeddingDim` long. */
  embedding: Float32Array;
}

/** Element types a stored tensor may have. */
export type TensorDtype = 'float32' | 'int32' | 'bool';
/** The typed array of each dtype (`bool` as 0/1 bytes). */
export type TensorData = Float32Array | Int32Array | Uint8Array;

/** A named tensor as stored in a checkpoint. `data.length` equals the product of `shape`. */
export interface NamedTensor {
  name: string;
  dtype: TensorDtype;
  shape: number[];
  data: TensorData;
}

/** A saved model state. */
export interface CheckpointRecord {
  runId: string;
  name: string;
  iteration: number;
  createdAt: number;
  tensors: NamedTensor[];
  /** Optimizer slots (e.g. Adam moments) plus its JSON settings. */
  optimizer: { tensors: NamedTensor[]; config?: JsonValue };
  config?: JsonValue;
}

/** The figures of one training iteration. */
export interface MetricRecord {
  runId: string;
  iteration: number;
  /** Wall-clock time (ms since epoch). */
  time: number;
  values: Record<string, number>;
}

/** A record an upgrade set aside because it could not be migrated. */
export interface QuarantineRecord {
  /** The store it was in. */
  store: string;
  /** Its key there. */
  key: IDBValidKey;
  /** What was wrong with it. */
  problem: string;
  /** The upgrade step (schema version) that set it aside. */
  version: number;
  /** When (ms since epoch). */
  at: number;
  /** The record as it was. */
  record: unknown;
}

/** The idb schema of version 3 (the current one). */
export interface ReplayDB extends DBSchema {
  runs: { key: string; value: RunRecord };
  tasks: {
    key: [string, string];
    value: TaskRecord;
    indexes: { 'by-run-seq': [string, number]; 'by-run-origin': [string, string] };
  };
  trajectories: {
    key: [string, string];
    value: TrajectoryRecord;
    indexes: {
      'by-run-seq': [string, number];
      'by-run-source': [string, string];
      'by-run-task': [string, string];
      'by-evict': [string, number, number];
    };
  };
  transitions: { key: [string, number]; value: TransitionRecord };
  checkpoints: { key: [string, string]; value: CheckpointRecord };
  metrics: { key: [string, number]; value: MetricRecord };
  quarantine: { key: number; value: QuarantineRecord };
}

/** Names of the object stores. */
export type ReplayStoreName = StoreNames<ReplayDB>;
export const STORE_NAMES: readonly ReplayStoreName[] = ['runs', 'tasks', 'trajectories', 'transitions', 'checkpoints', 'metrics', 'quarantine'];

/** Version 1's run record: no capacity, no counters (they were counted on demand). */
export interface RunRecordV1 {
  id: string;
  name?: string;
  createdAt: number;
  updatedAt: number;
  embedderId: string;
  embeddingDim: number;
  config?: JsonValue;
  next: { task: number; trajectory: number; transition: number };
  latestCheckpoint?: string;
}

/** Version 1's trajectory record: no pinning or eviction fields. */
export type TrajectoryRecordV1 = Omit<TrajectoryRecord, 'pinned' | 'evictRank'>;

/** Version 1's task record: no `by-run-origin` index, otherwise as version 2. */
export type TaskRecordV1 = TaskRecord;

type UpgradeTx = IDBPTransaction<ReplayDB, ReplayStoreName[], 'versionchange'>;

/** One upgrade step: brings a database from `version - 1` to `version`. */
export interface Migration {
  version: number;
  describe: string;
  migrate(db: IDBPDatabase<ReplayDB>, tx: UpgradeTx): Promise<void>;
}

/** Fresh counters. */
export function emptyCounters(): RunCounters {
  const source = (): SourceCounters => ({ trajectories: 0, transitions: 0, rewardSum: 0, successes: 0 });
  return { tasks: 0, bySource: { offline: source(), synthetic: source(), real: source() }, evicted: { trajectories: 0, transitions: 0 } };
}

/** Eviction class of an unpinned trajectory: synthetic data goes first. */
export function evictRankOf(source: TrajectorySource, pinned: boolean): number | undefined {
  if (pinned) return undefined;
  return source === 'synthetic' ? 0 : 1;
}

/** The key range holding everything of one run in a store whose keys start with the run id. */
export function runRange(runId: string): IDBKeyRange {
  return IDBKeyRange.bound([runId], [runId, []]);
}

/** Records read per request when a migration walks a store. */
const MIGRATION_PAGE = 2000;

/** Creates the quarantine store unless it exists (an upgrade may need it before step 3 runs). */
function ensureQuarantine(db: IDBPDatabase<ReplayDB>): void {
  if (!db.objectStoreNames.contains('quarantine')) db.createObjectStore('quarantine', { autoIncrement: true });
}

/**
 * Moves a record an upgrade cannot migrate out of the way: deletes it from its store and keeps
 * it, with why, in `quarantine` (inside the version-change transaction).
 */
async function quarantine(db: IDBPDatabase<ReplayDB>, tx: UpgradeTx, store: ReplayStoreName, key: IDBValidKey, record: unknown, problem: string, version: number): Promise<void> {
  ensureQuarantine(db);
  await Promise.all([
    tx.objectStore('quarantine').add({ store, key, problem, version, at: Date.now(), record }),
    (tx.objectStore(store) as unknown as { delete(k: IDBValidKey): Promise<void> }).delete(key),
  ]);
}

/** A version-1 header's transitions (by its key range), quarantined with it when the range can be read. */
async function quarantineSteps(db: IDBPDatabase<ReplayDB>, tx: UpgradeTx, header: unknown, version: number): Promise<void> {
  const h = header as { runId?: unknown; id?: unknown; firstStep?: unknown; length?: unknown };
  if (typeof h.runId !== 'string' || !Number.isInteger(h.firstStep) || !Number.isInteger(h.length) || (h.length as number) <= 0) return;
  const first = h.firstStep as number;
  const range = IDBKeyRange.bound([h.runId, first], [h.runId, first + (h.length as number) - 1]);
  const rows = await tx.objectStore('transitions').getAll(range);
  for (const row of rows) {
    await quarantine(db, tx, 'transitions', [row.runId, row.seq], row, `a step of trajectory ${JSON.stringify(h.id)}, which was quarantined`, version);
  }
}

/** The upgrade steps, in order. Never edit a shipped step; add a new one. */
export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    describe: 'initial layout: runs, tasks, trajectories, transitions, checkpoints, metrics',
    async migrate(db) {
      db.createObjectStore('runs', { keyPath: 'id' });
      const tasks = db.createObjectStore('tasks', { keyPath: ['runId', 'id'] });
      tasks.createIndex('by-run-seq', ['runId', 'seq'], { unique: true });
      const trajectories = db.createObjectStore('trajectories', { keyPath: ['runId', 'id'] });
      trajectories.createIndex('by-run-seq', ['runId', 'seq'], { unique: true });
      trajectories.createIndex('by-run-source', ['runId', 'source']);
      trajectories.createIndex('by-run-task', ['runId', 'taskId']);
      db.createObjectStore('transitions', { keyPath: ['runId', 'seq'] });
      db.createObjectStore('checkpoints', { keyPath: ['runId', 'name'] });
      db.createObjectStore('metrics', { keyPath: ['runId', 'iteration'] });
    },
  },
  {
    version: 2,
    describe: 'capacity and eviction: pin offline trajectories, eviction index, counters in the run record, tasks by origin',
    async migrate(db, tx) {
      const tasks = tx.objectStore('tasks');
      tasks.createIndex('by-run-origin', ['runId', 'origin']);
      const trajectories = tx.objectStore('trajectories');
      trajectories.createIndex('by-evict', ['runId', 'evictRank', 'seq']);

      const counters = new Map<string, RunCounters>();
      const countersOf = (runId: string): RunCounters => {
        let c = counters.get(runId);
        if (!c) counters.set(runId, (c = emptyCounters()));
        return c;
      };
      // Walk the trajectories page by page with getAll (cursors over ranges are slow in fake-indexeddb).
      let lower: [string, string] | undefined;
      for (;;) {
        const range = lower === undefined ? undefined : IDBKeyRange.lowerBound(lower, true);
        const page = (await trajectories.getAll(range, MIGRATION_PAGE)) as unknown as TrajectoryRecordV1[];
        const writes: Promise<unknown>[] = [];
        for (const old of page) {
          // Added after this step shipped: a damaged header used to throw here (an unknown source
          // has no counters), abort the upgrade and leave the database unopenable. Quarantining it
          // gives the same result as before for every sound record.
          const problem = trajectoryV1Problem(old);
          if (problem !== null) {
            await quarantine(db, tx, 'trajectories', [old.runId, old.id], old, problem, 2);
            await quarantineSteps(db, tx, old, 2);
            continue;
          }
          const pinned = old.source === 'offline';
          const record: TrajectoryRecord = { ...old, pinned };
          const rank = evictRankOf(old.source, pinned);
          if (rank !== undefined) record.evictRank = rank;
          writes.push(trajectories.put(record));
          const c = countersOf(old.runId).bySource[old.source];
          c.trajectories += 1;
          c.transitions += old.length;
          c.rewardSum += old.reward;
          if (old.success) c.successes += 1;
        }
        await Promise.all(writes);
        const last = page[page.length - 1];
        if (page.length < MIGRATION_PAGE || last === undefined) break;
        lower = [last.runId, last.id];
      }

      const runs = tx.objectStore('runs');
      const oldRuns = (await runs.getAll()) as unknown as RunRecordV1[];
      const taskStore = tx.objectStore('tasks');
      for (const old of oldRuns) {
        if (typeof old.id !== 'string') {
          await quarantine(db, tx, 'runs', old.id as IDBValidKey, old, 'id: expected a string', 2);
          continue;
        }
        const c = countersOf(old.id);
        c.tasks = await taskStore.count(runRange(old.id));
        await runs.put({ ...old, counters: c });
      }
    },
  },
  {
    version: 3,
    describe: 'quarantine: records an upgrade could not migrate, kept with what was wrong',
    async migrate(db) {
      ensureQuarantine(db);
    },
  },
];

/**
 * Applies the upgrade steps from `oldVersion` (exclusive) to `newVersion` (inclusive) inside
 * the version-change transaction. Exported so tests can build an old-version database.
 */
export async function upgradeDatabase(db: IDBPDatabase<ReplayDB>, tx: UpgradeTx, oldVersion: number, newVersion: number): Promise<void> {
  for (const step of MIGRATIONS) {
    if (step.version > oldVersion && step.version <= newVersion) await step.migrate(db, tx);
  }
}
