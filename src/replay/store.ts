/**
 * The replay store: DreamGym's experience replay buffer and the persistence of a training run
 * (tasks, trajectories, transitions with embeddings, checkpoints, metrics) in IndexedDB via idb.
 *
 * - Every write is one transaction: all of it lands or none of it does. A full disk surfaces as
 *   `StorageFullError` with the transaction rolled back.
 * - Capacity is per run (`maxTransitions`): when a write would exceed it, whole trajectories are
 *   evicted, oldest synthetic first, then other unpinned data; pinned data (offline seed data by
 *   default) is never evicted. A write spread over several transactions (a JSONL import) plans
 *   its evictions up front (`planEvictions`), writes with `evict: false` and evicts only when it
 *   commits (`evictTrajectories`), so that undoing it never has to bring evicted data back.
 * - `retrieve` answers exact top-k cosine queries from an in-memory index per run, loaded lazily
 *   from the database and kept in sync with this store's writes and evictions; writes by other
 *   contexts (announced over BroadcastChannel) make it reload.
 * - The factory is injected (`indexedDB` option), so the same code runs in the page, in workers
 *   and in Node over fake-indexeddb.
 */
import { unwrap, type IDBPDatabase, type IDBPTransaction } from 'idb';
import { transitionText } from '../core/embedding.ts';
import { Rng } from '../core/rng.ts';
import type { Task, Trajectory, TrajectorySource } from '../core/types.ts';
import {
  ChangeNotifier,
  acquireRunLock,
  defaultLockManager,
  isRunLocked,
  type LockManagerLike,
  type ReplayChange,
  type ReplayListener,
  type RunLock,
} from './coordination.ts';
import { assertIdbGlobals, openDatabase } from './database.ts';
import {
  CapacityError,
  CheckpointNotFoundError,
  CorruptRecordError,
  DuplicateTrajectoryError,
  EmbedderMismatchError,
  EmbeddingDimensionError,
  ReplayValidationError,
  RunExistsError,
  RunLockedError,
  StoreClosedError,
  UnknownRunError,
  UnknownTaskError,
  toReplayError,
} from './errors.ts';
import {
  assemblyProblem,
  checkpointProblem,
  derivedRunProblem,
  metricProblem,
  runProblem,
  taskProblem,
  tallyTrajectories,
  toTransitionRecords,
  trajectoryOf,
  trajectoryProblem,
  transitionProblem,
  usableEvicted,
} from './records.ts';
import { IndexCache } from './index-cache.ts';
import type { RetrievalIndex } from './retrieval.ts';
import {
  DEFAULT_DB_NAME,
  SCHEMA_VERSION,
  SOURCES,
  STORE_NAMES,
  emptyCounters,
  evictRankOf,
  runRange,
  type CheckpointRecord,
  type MetricRecord,
  type QuarantineRecord,
  type ReplayDB,
  type ReplayStoreName,
  type RunRecord,
  type TaskRecord,
  type TrajectoryRecord,
  type TransitionRecord,
} from './schema.ts';
import type {
  CheckpointInfo,
  CheckpointInput,
  MetricInput,
  OpenReplayStoreOptions,
  PutTrajectoriesOptions,
  PutTrajectoriesResult,
  ReadOptions,
  ReplayFilter,
  RetrievalHit,
  RunCounts,
  RunInit,
  RunStats,
  SampleOptions,
  SkippedRecord,
  SourceCounts,
  TrajectoryFilter,
  TransitionFilter,
} from './types.ts';
import { checkCount, checkId, checkPositive, checkTensor, compactCopy, idList, sourceList, validateTask, validateTrajectory } from './validate.ts';

/** The default per-run capacity in transitions. */
export const DEFAULT_MAX_TRANSITIONS = 1_000_000;

/** `putTrajectories` options, with the one a write spread over several transactions needs. */
export interface PutTrajectoriesWriteOptions extends PutTrajectoriesOptions {
  /**
   * false: evict nothing, even beyond the run's capacity. Only for a multi-transaction write that
   * planned its evictions with `planEvictions` and does them when it commits (`evictTrajectories`).
   * Default true.
   */
  evict?: boolean;
}

/** One trajectory of a planned write: what eviction depends on. */
export interface PlannedTrajectory {
  id: string;
  source: TrajectorySource;
  /** Its number of steps (= transitions). */
  length: number;
}

/** The evictions a multi-transaction write needs (see `ReplayStore.planEvictions`). */
export interface EvictionPlan {
  /** Trajectories to evict at commit, in eviction order; may include ones the write adds itself. */
  trajectoryIds: string[];
  /** Their transitions. */
  transitions: number;
}

type RW = IDBPTransaction<ReplayDB, ReplayStoreName[], 'readwrite'>;
type RO = IDBPTransaction<ReplayDB, ReplayStoreName[], 'readonly'>;
type AnyTx = RW | RO;

/** The transaction `repairStore` works in: every store, readwrite (readonly for a dry run). */
export type MaintenanceTx = IDBPTransaction<ReplayDB, ReplayStoreName[], 'readwrite' | 'readonly'>;

/**
 * The stores a run record's counters and sequence numbers are rebuilt from. Every transaction
 * that reads a run record for a write includes them, so a damaged record is repaired in place.
 */
const RUN_DATA: ReplayStoreName[] = ['runs', 'tasks', 'trajectories', 'transitions'];

/** `RUN_DATA` plus other stores. */
function withRunData(...more: ReplayStoreName[]): ReplayStoreName[] {
  return [...RUN_DATA, ...more.filter((m) => !RUN_DATA.includes(m))];
}

/** Calls `onSkip`, if any, for a record that failed validation. */
function skip(options: ReadOptions | undefined, record: SkippedRecord): void {
  options?.onSkip?.(record);
}

/**
 * A run record whose identity and settings are sound but whose counters, next sequence numbers
 * or times are damaged, rebuilt from the records of the run that validate (inside `tx`, which
 * must include `RUN_DATA`). The eviction history is kept when it is readable, else restarts at 0.
 */
async function rebuildRun(tx: AnyTx, raw: RunRecord): Promise<RunRecord> {
  const runId = raw.id;
  const range = runRange(runId);
  const counters = emptyCounters();
  counters.evicted = usableEvicted(raw.counters) ?? counters.evicted;
  const [tasks, headers, lastCursor] = await Promise.all([
    tx.objectStore('tasks').getAll(range),
    tx.objectStore('trajectories').getAll(range),
    tx.objectStore('transitions').openKeyCursor(range, 'prev'),
  ]);
  const lastKey = lastCursor?.key[1];
  const lastSeq = typeof lastKey === 'number' && Number.isFinite(lastKey) ? lastKey : -1;
  let nextTask = 0;
  for (const t of tasks) {
    if (typeof t.seq === 'number' && Number.isFinite(t.seq)) nextTask = Math.max(nextTask, t.seq + 1);
    if (taskProblem(t) === null) counters.tasks += 1;
  }
  const { nextTrajectory, nextTransition } = tallyTrajectories(
    counters,
    headers.filter((h) => trajectoryProblem(h) === null),
    lastSeq + 1,
  );
  const old = raw.next as Partial<RunRecord['next']> | undefined;
  const keep = (n: unknown, floor: number): number => (typeof n === 'number' && Number.isInteger(n) && n >= floor ? n : floor);
  const now = Date.now();
  return {
    ...raw,
    createdAt: Number.isFinite(raw.createdAt) ? raw.createdAt : now,
    updatedAt: Number.isFinite(raw.updatedAt) ? raw.updatedAt : now,
    // Never hand out a sequence number some record still uses.
    next: { task: keep(old?.task, nextTask), trajectory: keep(old?.trajectory, nextTrajectory), transition: keep(old?.transition, nextTransition) },
    counters,
  };
}

/** Eviction candidates fetched per request. */
const EVICT_PAGE = 256;
/** Texts per embedder call. */
const EMBED_CHUNK = 1024;

/** Merges a sorted list of seqs into inclusive [from, to] ranges. */
function seqRanges(seqs: readonly number[]): [number, number][] {
  const out: [number, number][] = [];
  for (const s of seqs) {
    const last = out[out.length - 1];
    if (last && s === last[1] + 1) last[1] = s;
    else out.push([s, s]);
  }
  return out;
}

function totalTransitions(run: RunRecord): number {
  return SOURCES.reduce((n, s) => n + run.counters.bySource[s].transitions, 0);
}

function totalTrajectories(run: RunRecord): number {
  return SOURCES.reduce((n, s) => n + run.counters.bySource[s].trajectories, 0);
}

function transitionsRange(runId: string, first: number, length: number): IDBKeyRange {
  return IDBKeyRange.bound([runId, first], [runId, first + length - 1]);
}

/** Deletes a trajectory's header and transitions (inside the caller's transaction) and takes it off the run's counters. */
function deleteTrajectoryRecords(rawTraj: IDBObjectStore, rawTransitions: IDBObjectStore, run: RunRecord, h: TrajectoryRecord): void {
  rawTraj.delete([run.id, h.id]);
  if (h.length > 0) rawTransitions.delete(transitionsRange(run.id, h.firstStep, h.length));
  const c = run.counters.bySource[h.source];
  c.trajectories -= 1;
  c.transitions -= h.length;
  c.rewardSum -= h.reward;
  if (h.success) c.successes -= 1;
}

/** A trajectory to write, with the embeddings of its steps. */
interface PendingTrajectory {
  trajectory: Trajectory;
  vectors: Float32Array[];
}

/** `putTrajectories`' arguments, checked: the trajectories validated, none twice. */
function checkPutTrajectories(runId: string, trajectories: readonly Trajectory[], options: PutTrajectoriesWriteOptions): { parsed: Trajectory[]; onDuplicate: 'error' | 'skip'; evict: boolean } {
  if (!Array.isArray(trajectories)) throw new TypeError(`trajectories must be an array, got ${String(trajectories)}`);
  const onDuplicate = options.onDuplicate ?? 'error';
  if (onDuplicate !== 'error' && onDuplicate !== 'skip') throw new RangeError(`onDuplicate must be "error" or "skip", got ${JSON.stringify(onDuplicate)}`);
  const evict = options.evict ?? true;
  if (typeof evict !== 'boolean') throw new TypeError(`options.evict must be a boolean, got ${JSON.stringify(evict)}`);
  const parsed = trajectories.map((t, i) => validateTrajectory(t, i));
  const seen = new Set<string>();
  for (const t of parsed) {
    if (seen.has(t.id)) throw new DuplicateTrajectoryError(runId, t.id);
    seen.add(t.id);
  }
  return { parsed, onDuplicate, evict };
}

/**
 * The trajectories to write. Duplicates already stored are looked up only when skipping them;
 * otherwise the headers are written with add(), which fails the transaction on an existing id
 * (one request fewer per trajectory; every IndexedDB request costs tens of microseconds in Chromium).
 */
async function newTrajectories(tx: RW, runId: string, parsed: readonly Trajectory[], embeddings: readonly Float32Array[][], onDuplicate: 'error' | 'skip'): Promise<{ todo: PendingTrajectory[]; skipped: string[] }> {
  const pending = parsed.map((trajectory, i) => ({ trajectory, vectors: embeddings[i] as Float32Array[] }));
  if (onDuplicate !== 'skip') return { todo: pending, skipped: [] };
  const trajStore = tx.objectStore('trajectories');
  const existingKeys = await Promise.all(parsed.map((t) => trajStore.getKey([runId, t.id])));
  return { todo: pending.filter((_, i) => existingKeys[i] === undefined), skipped: parsed.filter((_, i) => existingKeys[i] !== undefined).map((t) => t.id) };
}

/**
 * The stored tasks of the trajectories, which must exist, be sound and share the trajectory's
 * environment. One getAll when the batch touches a good part of the run's tasks, else one get per task.
 */
async function tasksOfTrajectories(tx: RW, run: RunRecord, todo: readonly PendingTrajectory[]): Promise<Map<string, TaskRecord>> {
  const runId = run.id;
  const taskStore = tx.objectStore('tasks');
  const taskIds = [...new Set(todo.map((d) => d.trajectory.taskId))];
  const taskById = new Map<string, TaskRecord>();
  if (run.counters.tasks <= 4 * taskIds.length) {
    const wanted = new Set(taskIds);
    for (const t of await taskStore.getAll(runRange(runId))) if (wanted.has(t.id)) taskById.set(t.id, t);
  } else {
    for (const t of await Promise.all(taskIds.map((id) => taskStore.get([runId, id])))) if (t) taskById.set(t.id, t);
  }
  for (const [id, t] of taskById) {
    const problem = taskProblem(t);
    if (problem) throw new CorruptRecordError('tasks', [runId, id], problem);
  }
  for (const id of taskIds) {
    if (!taskById.has(id)) {
      const user = todo.find((d) => d.trajectory.taskId === id) as PendingTrajectory;
      throw new UnknownTaskError(runId, id, `trajectory ${user.trajectory.id}`);
    }
  }
  for (const { trajectory } of todo) {
    const task = taskById.get(trajectory.taskId) as TaskRecord;
    if (task.task.env !== trajectory.env) {
      throw new ReplayValidationError(`trajectory ${JSON.stringify(trajectory.id)} is in env ${trajectory.env} but its task ${JSON.stringify(task.id)} is in ${task.task.env}`);
    }
  }
  return taskById;
}

/** The oldest unpinned trajectories (synthetic first) to evict so that `adding` more transitions fit in `max`; throws when they cannot. */
async function evictionsFor(tx: RW, run: RunRecord, max: number, adding: number): Promise<TrajectoryRecord[]> {
  let total = totalTransitions(run) + adding;
  const evicted: TrajectoryRecord[] = [];
  if (total <= max) return evicted;
  const index = tx.objectStore('trajectories').index('by-evict');
  let lower: IDBKeyRange = IDBKeyRange.bound([run.id], [run.id, []]);
  while (total > max) {
    const page = await index.getAll(lower, EVICT_PAGE);
    for (const victim of page) {
      if (total <= max) break;
      // A damaged header cannot be evicted correctly (its length may be wrong); repairStore removes it.
      if (trajectoryProblem(victim) !== null) continue;
      evicted.push(victim);
      total -= victim.length;
    }
    const last = page[page.length - 1];
    if (page.length < EVICT_PAGE || last === undefined) break;
    lower = IDBKeyRange.bound([run.id, last.evictRank as number, last.seq], [run.id, []], true, false);
  }
  if (total > max) throw new CapacityError(run.id, max, total);
  return evicted;
}

/**
 * Writes the trajectories' headers and transitions, and counts them on the run and on their
 * tasks' reward statistics (the run and the tasks are written too). `onConflict` hears of a
 * header whose add() failed on an existing id.
 */
function writeTrajectories(
  tx: RW,
  run: RunRecord,
  todo: readonly PendingTrajectory[],
  taskById: ReadonlyMap<string, TaskRecord>,
  options: { pinned: boolean | undefined; onDuplicate: 'error' | 'skip' },
  onConflict: (id: string) => void,
): { added: TrajectoryRecord[]; rows: TransitionRecord[] } {
  const rawTraj = unwrap(tx.objectStore('trajectories'));
  const rawTransitions = unwrap(tx.objectStore('transitions'));
  const now = Date.now();
  const added: TrajectoryRecord[] = [];
  const rows: TransitionRecord[] = [];
  for (const { trajectory, vectors } of todo) {
    const pinned = options.pinned ?? trajectory.source === 'offline';
    const header: TrajectoryRecord = {
      runId: run.id,
      id: trajectory.id,
      seq: run.next.trajectory++,
      taskId: trajectory.taskId,
      env: trajectory.env,
      source: trajectory.source,
      reward: trajectory.reward,
      success: trajectory.success,
      length: trajectory.steps.length,
      firstStep: run.next.transition,
      pinned,
      createdAt: now,
    };
    const rank = evictRankOf(trajectory.source, pinned);
    if (rank !== undefined) header.evictRank = rank;
    run.next.transition += header.length;
    if (options.onDuplicate === 'skip') rawTraj.put(header);
    else {
      const request = rawTraj.add(header);
      request.onerror = () => {
        if (request.error?.name === 'ConstraintError') onConflict(header.id);
      };
    }
    for (const record of toTransitionRecords(run.id, trajectory, header.firstStep, vectors)) {
      rawTransitions.put(record);
      rows.push(record);
    }
    added.push(header);
    const c = run.counters.bySource[trajectory.source];
    c.trajectories += 1;
    c.transitions += header.length;
    c.rewardSum += trajectory.reward;
    if (trajectory.success) c.successes += 1;
    const stats = (taskById.get(trajectory.taskId) as TaskRecord).stats;
    stats.count += 1;
    stats.rewardSum += trajectory.reward;
    stats.rewardSumSq += trajectory.reward * trajectory.reward;
    if (trajectory.success) stats.successes += 1;
  }
  const rawTasks = unwrap(tx.objectStore('tasks'));
  for (const task of taskById.values()) rawTasks.put(task);
  run.updatedAt = now;
  unwrap(tx.objectStore('runs')).put(run);
  return { added, rows };
}

/**
 * Opens (creating or upgrading) the replay database. In Node pass fake-indexeddb's factory
 * (or use `openNodeReplayStore` from `src/replay/node.ts`).
 */
export async function openReplayStore(options: OpenReplayStoreOptions = {}): Promise<ReplayStore> {
  const name = options.name ?? DEFAULT_DB_NAME;
  checkId('store name', name);
  const maxTransitions = options.maxTransitions ?? DEFAULT_MAX_TRANSITIONS;
  checkPositive('maxTransitions', maxTransitions, true);
  const blockedTimeoutMs = options.blockedTimeoutMs ?? 10_000;
  if (!(Number.isFinite(blockedTimeoutMs) && blockedTimeoutMs >= 0)) throw new RangeError(`blockedTimeoutMs must be a non-negative number, got ${blockedTimeoutMs}`);
  const factory = options.indexedDB ?? (globalThis as { indexedDB?: IDBFactory }).indexedDB;
  if (!factory) throw new TypeError('No IndexedDB in this context: pass options.indexedDB (in Node, fake-indexeddb; see src/replay/node.ts)');
  assertIdbGlobals();
  const db = await openDatabase(factory, name, SCHEMA_VERSION, { blockedTimeoutMs, onBlocked: options.onBlocked });
  return new ReplayStore(db, name, {
    maxTransitions,
    locks: options.locks ?? defaultLockManager(),
    broadcast: options.broadcast ?? true,
    onClosed: options.onClosed,
    durability: options.durability ?? 'relaxed',
  });
}

/** The replay store. Get one with `openReplayStore`. */
export class ReplayStore {
  private closedReason: string | null = null;
  private readonly notifier: ChangeNotifier;
  private readonly indexes: IndexCache;
  private readonly runMeta = new Map<string, { embeddingDim: number; embedderId: string }>();
  private readonly heldLocks = new Map<string, RunLock>();

  /** @internal Use `openReplayStore`. */
  constructor(
    private readonly db: IDBPDatabase<ReplayDB>,
    /** The database name. */
    readonly name: string,
    private readonly settings: {
      maxTransitions: number;
      locks: LockManagerLike;
      broadcast: boolean;
      onClosed?: (reason: string) => void;
      durability: IDBTransactionDurability;
    },
  ) {
    this.indexes = new IndexCache({
      describe: async (runId) => {
        const run = await this.getRun(runId);
        if (!run) throw new UnknownRunError(runId);
        return { dim: run.embeddingDim, transitions: totalTransitions(run) };
      },
      read: (runId, from, to, limit) =>
        this.read(['transitions'], (tx) => tx.objectStore('transitions').getAll(IDBKeyRange.bound([runId, from], [runId, to]), limit)),
    });
    this.notifier = new ChangeNotifier(name, settings.broadcast, (change) => this.onRemoteChange(change));
    const raw = unwrap(db);
    raw.onversionchange = (event) => {
      this.shutDown(`another tab or worker is opening a newer version of the database (${event.oldVersion} -> ${event.newVersion}); reload the page`);
    };
    raw.onclose = () => this.shutDown('the browser closed the database connection (storage cleared or unavailable)');
  }

  /** The schema version of the open database. */
  get version(): number {
    return this.db.version;
  }

  /** Whether the store is closed. */
  get closed(): boolean {
    return this.closedReason !== null;
  }

  /** The default per-run capacity in transitions. */
  get maxTransitions(): number {
    return this.settings.maxTransitions;
  }

  /** Closes the connection and the channel and releases the run locks this store holds. */
  async close(): Promise<void> {
    if (this.closedReason !== null) return;
    this.closedReason = 'close() was called';
    const locks = [...this.heldLocks.values()];
    this.heldLocks.clear();
    await Promise.all(locks.map((l) => l.release()));
    this.notifier.close();
    this.indexes.clear();
    this.db.close();
  }

  private shutDown(reason: string): void {
    if (this.closedReason !== null) return;
    this.closedReason = reason;
    for (const lock of this.heldLocks.values()) void lock.release();
    this.heldLocks.clear();
    this.notifier.close();
    this.indexes.clear();
    this.db.close();
    this.settings.onClosed?.(reason);
  }

  private assertOpen(): void {
    if (this.closedReason !== null) throw new StoreClosedError(this.closedReason);
  }

  // ---------------------------------------------------------------- transactions

  /** Runs `body` in one readwrite transaction; maps failures (quota!) to typed errors. */
  private async write<T>(stores: ReplayStoreName[], operation: string, body: (tx: RW) => Promise<T>): Promise<T> {
    this.assertOpen();
    let tx: RW;
    try {
      tx = this.db.transaction(stores, 'readwrite', { durability: this.settings.durability });
    } catch (err) {
      throw toReplayError(operation, err);
    }
    const raw = unwrap(tx);
    const done = tx.done;
    done.catch(() => undefined);
    let result: T;
    try {
      result = await body(tx);
    } catch (err) {
      try {
        raw.abort();
      } catch {
        // Already aborted (e.g. by the quota failure that caused err).
      }
      await done.catch(() => undefined);
      throw toReplayError(operation, raw.error, err);
    }
    try {
      // Commit now rather than when the event loop turns (an optimisation only: if the
      // transaction already finished, `done` says how).
      raw.commit?.();
    } catch {
      // Finished or aborted already.
    }
    try {
      await done;
    } catch (err) {
      throw toReplayError(operation, raw.error, err);
    }
    return result;
  }

  private async read<T>(stores: ReplayStoreName[], body: (tx: RO) => Promise<T>): Promise<T> {
    this.assertOpen();
    const tx = this.db.transaction(stores, 'readonly');
    const done = tx.done;
    done.catch(() => undefined);
    const result = await body(tx);
    await done;
    return result;
  }

  /**
   * The run record, validated: `CorruptRecordError` when its identity or embedding settings are
   * damaged; damaged counters, sequence numbers or times are rebuilt from the data (and saved
   * when `tx` is readwrite), so that a write goes on with correct counts.
   */
  private async requireRun(tx: AnyTx, runId: string): Promise<RunRecord> {
    const run = await tx.objectStore('runs').get(runId);
    if (!run) throw new UnknownRunError(runId);
    const problem = runProblem(run);
    if (problem) throw new CorruptRecordError('runs', runId, problem);
    const derived = derivedRunProblem(run as unknown as Record<string, unknown>);
    if (derived === null) return run;
    const names = tx.objectStoreNames as unknown as DOMStringList;
    if (!RUN_DATA.every((n) => names.contains(n))) throw new CorruptRecordError('runs', runId, `${derived} (read the run with getRun to rebuild it)`);
    const rebuilt = await rebuildRun(tx, run);
    if (tx.mode === 'readwrite') await (tx as RW).objectStore('runs').put(rebuilt);
    this.indexes.drop(runId);
    return rebuilt;
  }

  private async meta(runId: string): Promise<{ embeddingDim: number; embedderId: string }> {
    const cached = this.runMeta.get(runId);
    if (cached) return cached;
    const run = await this.getRun(runId);
    if (!run) throw new UnknownRunError(runId);
    const meta = { embeddingDim: run.embeddingDim, embedderId: run.embedderId };
    this.runMeta.set(runId, meta);
    return meta;
  }

  // ---------------------------------------------------------------- runs

  /** Creates a run. Throws `RunExistsError` if the id is taken. */
  async createRun(init: RunInit): Promise<RunRecord> {
    checkId('run id', init?.id);
    if (typeof init.embedding !== 'object' || init.embedding === null) throw new TypeError(`run ${init.id}: embedding must be { id, dim }, got ${String(init.embedding)}`);
    checkId('embedding id', init.embedding.id);
    checkPositive('embedding dim', init.embedding.dim);
    if (init.maxTransitions !== undefined) checkPositive('maxTransitions', init.maxTransitions, true);
    const now = Date.now();
    const run: RunRecord = {
      id: init.id,
      createdAt: now,
      updatedAt: now,
      embedderId: init.embedding.id,
      embeddingDim: init.embedding.dim,
      next: { task: 0, trajectory: 0, transition: 0 },
      counters: emptyCounters(),
    };
    if (init.name !== undefined) run.name = init.name;
    if (init.config !== undefined) run.config = init.config;
    if (init.maxTransitions !== undefined) run.maxTransitions = init.maxTransitions;
    await this.write(['runs'], `createRun(${init.id})`, async (tx) => {
      const runs = tx.objectStore('runs');
      if ((await runs.getKey(init.id)) !== undefined) throw new RunExistsError(init.id);
      await runs.add(run);
    });
    this.runMeta.set(run.id, { embeddingDim: run.embeddingDim, embedderId: run.embedderId });
    this.notifier.publish({ type: 'run-created', runId: run.id });
    return run;
  }

  /**
   * The run record, or undefined. Throws `CorruptRecordError` when the record's identity or
   * embedding settings are damaged; damaged counters (or sequence numbers) are rebuilt from the
   * run's records and saved first.
   */
  async getRun(runId: string): Promise<RunRecord | undefined> {
    checkId('run id', runId);
    const run = await this.read(['runs'], (tx) => tx.objectStore('runs').get(runId));
    if (run === undefined) return undefined;
    const problem = runProblem(run);
    if (problem) throw new CorruptRecordError('runs', runId, problem);
    if (derivedRunProblem(run as unknown as Record<string, unknown>) === null) return run;
    return this.write(RUN_DATA, `rebuilding the counters of run ${runId}`, (tx) => this.requireRun(tx, runId));
  }

  /** Every run, by id; a corrupt run record is left out and reported (`options.onSkip`). */
  async listRuns(options: ReadOptions = {}): Promise<RunRecord[]> {
    const runs = await this.read(['runs'], (tx) => tx.objectStore('runs').getAll());
    const out: RunRecord[] = [];
    for (const run of runs) {
      const problem = runProblem(run);
      if (problem) skip(options, { store: 'runs', key: (run as { id?: IDBValidKey }).id ?? '', problem });
      else out.push((await this.getRun(run.id)) as RunRecord);
    }
    return out;
  }

  /**
   * Throws `RunLockedError` when another context (tab, window, worker) holds the run's lock: the
   * run is being trained there, and a write from here would interleave with that trainer's.
   */
  private async refuseIfLockedElsewhere(runId: string): Promise<void> {
    this.assertOpen();
    if (!this.heldLocks.has(runId) && (await isRunLocked(this.settings.locks, this.name, runId))) throw new RunLockedError(runId);
  }

  /**
   * Deletes a run and everything in it. Returns false if there was no such run. Refuses with
   * `RunLockedError` while another context trains it.
   */
  async deleteRun(runId: string): Promise<boolean> {
    checkId('run id', runId);
    this.assertOpen();
    await this.refuseIfLockedElsewhere(runId);
    const existed = await this.write(['runs', 'tasks', 'trajectories', 'transitions', 'checkpoints', 'metrics'], `deleteRun(${runId})`, async (tx) => {
      const runs = tx.objectStore('runs');
      if ((await runs.getKey(runId)) === undefined) return false;
      const range = runRange(runId);
      await Promise.all([
        runs.delete(runId),
        tx.objectStore('tasks').delete(range),
        tx.objectStore('trajectories').delete(range),
        tx.objectStore('transitions').delete(range),
        tx.objectStore('checkpoints').delete(range),
        tx.objectStore('metrics').delete(range),
      ]);
      return true;
    });
    this.indexes.drop(runId);
    this.runMeta.delete(runId);
    if (existed) this.notifier.publish({ type: 'run-deleted', runId });
    return existed;
  }

  // ---------------------------------------------------------------- tasks

  /**
   * Stores tasks in a run (one transaction). A generated task's parent must be in the run or in
   * the same call; its generation is the parent's plus one (seed tasks: 0). Putting an existing
   * id replaces the task but keeps its reward statistics.
   */
  async putTasks(runId: string, tasks: readonly Task[]): Promise<TaskRecord[]> {
    checkId('run id', runId);
    await this.refuseIfLockedElsewhere(runId);
    if (!Array.isArray(tasks)) throw new TypeError(`tasks must be an array, got ${String(tasks)}`);
    const parsed = tasks.map((t, i) => validateTask(t, i));
    const seen = new Set<string>();
    for (const t of parsed) {
      if (seen.has(t.id)) throw new ReplayValidationError(`task ${JSON.stringify(t.id)} appears twice in one putTasks call`);
      seen.add(t.id);
    }
    if (parsed.length === 0) {
      await this.meta(runId);
      return [];
    }
    const records = await this.write(RUN_DATA, `putTasks(${runId}, ${parsed.length} tasks)`, async (tx) => {
      const run = await this.requireRun(tx, runId);
      const store = tx.objectStore('tasks');
      const batch = new Map(parsed.map((t) => [t.id, t]));
      const existing = new Map<string, TaskRecord>();
      const wanted = new Set<string>(parsed.map((t) => t.id));
      for (const t of parsed) if (t.parentId !== undefined) wanted.add(t.parentId);
      const found = await Promise.all([...wanted].map((id) => store.get([runId, id])));
      // A damaged stored task is replaced as if new (its stats and seq cannot be trusted).
      for (const r of found) if (r && taskProblem(r) === null) existing.set(r.id, r);

      const generation = new Map<string, number>();
      const generationOf = (id: string, path: string[]): number => {
        const known = generation.get(id);
        if (known !== undefined) return known;
        if (path.includes(id)) throw new ReplayValidationError(`task lineage has a cycle: ${[...path, id].join(' -> ')}`);
        const inBatch = batch.get(id);
        let g: number;
        if (inBatch) {
          if (inBatch.parentId === undefined) g = 0;
          else {
            if (!batch.has(inBatch.parentId) && !existing.has(inBatch.parentId)) throw new UnknownTaskError(runId, inBatch.parentId, `task ${inBatch.id} (parentId)`);
            g = generationOf(inBatch.parentId, [...path, id]) + 1;
          }
        } else {
          g = (existing.get(id) as TaskRecord).generation;
        }
        generation.set(id, g);
        return g;
      };

      const now = Date.now();
      const out: TaskRecord[] = [];
      let added = 0;
      for (const task of parsed) {
        const old = existing.get(task.id);
        const record: TaskRecord = {
          runId,
          id: task.id,
          seq: old ? old.seq : run.next.task++,
          task,
          origin: task.origin,
          generation: generationOf(task.id, []),
          stats: old ? old.stats : { count: 0, rewardSum: 0, rewardSumSq: 0, successes: 0 },
          createdAt: old ? old.createdAt : now,
        };
        if (task.parentId !== undefined) record.parentId = task.parentId;
        if (!old) added++;
        void store.put(record).catch(() => undefined);
        out.push(record);
      }
      run.counters.tasks += added;
      run.updatedAt = now;
      await tx.objectStore('runs').put(run);
      return out;
    });
    this.notifier.publish({ type: 'tasks-put', runId, taskIds: records.map((r) => r.id) });
    return records;
  }

  /** Tasks of a run in insertion order; optionally only some ids or one origin. Corrupt ones are left out and reported. */
  async getTasks(runId: string, filter: { ids?: readonly string[]; origin?: Task['origin'] } = {}, options: ReadOptions = {}): Promise<TaskRecord[]> {
    checkId('run id', runId);
    const ids = idList('task id', filter.ids);
    return this.read(['tasks'], async (tx) => {
      const store = tx.objectStore('tasks');
      let records: TaskRecord[];
      if (ids) records = (await Promise.all(ids.map((id) => store.get([runId, id])))).filter((r): r is TaskRecord => r !== undefined);
      else if (filter.origin !== undefined) records = await store.index('by-run-origin').getAll([runId, filter.origin]);
      // The store itself, not its seq index: a record whose seq is damaged is missing from the index and would vanish unreported.
      else records = await store.getAll(runRange(runId));
      records = valid(records, 'tasks', (r) => [runId, r.id], taskProblem, options);
      if (filter.origin !== undefined) records = records.filter((r) => r.origin === filter.origin);
      return records.sort((a, b) => a.seq - b.seq);
    });
  }

  // ---------------------------------------------------------------- trajectories

  /**
   * Stores trajectories in one transaction (all or nothing), one transition record per step with
   * its embedding; updates the tasks' reward statistics and the run's counters, and evicts the
   * oldest unpinned data if the run would exceed its capacity (unless `options.evict` is false).
   * Every trajectory's task must be stored in the run.
   */
  async putTrajectories(runId: string, trajectories: readonly Trajectory[], options: PutTrajectoriesWriteOptions = {}): Promise<PutTrajectoriesResult> {
    checkId('run id', runId);
    await this.refuseIfLockedElsewhere(runId);
    const { parsed, onDuplicate, evict } = checkPutTrajectories(runId, trajectories, options);
    const meta = await this.meta(runId);
    const embeddings = await this.embeddingsFor(runId, meta, parsed, options);
    if (parsed.length === 0) return { added: [], skipped: [], transitions: 0, evicted: { trajectoryIds: [], transitions: 0 } };

    const operation = `putTrajectories(${runId}, ${parsed.length} trajectories)`;
    let duplicate: string | undefined;
    const outcome = await this.write(['runs', 'tasks', 'trajectories', 'transitions'], operation, async (tx) => {
      const run = await this.requireRun(tx, runId);
      const { todo, skipped } = await newTrajectories(tx, runId, parsed, embeddings, onDuplicate);
      if (todo.length === 0) return { added: [] as TrajectoryRecord[], rows: [] as TransitionRecord[], evicted: [] as TrajectoryRecord[], skipped };
      const taskById = await tasksOfTrajectories(tx, run, todo);
      const adding = todo.reduce((n, d) => n + d.trajectory.steps.length, 0);
      const evicted = evict ? await evictionsFor(tx, run, run.maxTransitions ?? this.settings.maxTransitions, adding) : [];
      // A new trajectory with the id of one evicted here would silently replace it: the header's
      // add() cannot fail once the victim's delete has run in this transaction.
      if (onDuplicate === 'error') {
        const ids = new Set(parsed.map((t) => t.id));
        const victim = evicted.find((v) => ids.has(v.id));
        if (victim) throw new DuplicateTrajectoryError(runId, victim.id);
      }
      const rawTraj = unwrap(tx.objectStore('trajectories'));
      const rawTransitions = unwrap(tx.objectStore('transitions'));
      for (const victim of evicted) {
        deleteTrajectoryRecords(rawTraj, rawTransitions, run, victim);
        run.counters.evicted.trajectories += 1;
        run.counters.evicted.transitions += victim.length;
      }
      const written = writeTrajectories(tx, run, todo, taskById, { pinned: options.pinned, onDuplicate }, (id) => (duplicate ??= id));
      return { ...written, evicted, skipped };
    }).catch((err: unknown) => {
      throw duplicate !== undefined && (err as { name?: unknown } | null)?.name === 'ConstraintError' ? new DuplicateTrajectoryError(runId, duplicate) : err;
    });

    // Committed: bring the in-memory index along, then tell everyone.
    const evictedTransitions = this.committedRemoval(runId, outcome.evicted, 'evicted');
    this.indexes.apply(runId, (index) => {
      for (const r of outcome.rows) index.add({ seq: r.seq, source: r.source, taskId: r.taskId, vector: r.embedding });
    });
    this.publishAdded(runId, outcome.added, outcome.rows);
    return {
      added: outcome.added.map((h) => h.id),
      skipped: outcome.skipped,
      transitions: outcome.rows.length,
      evicted: { trajectoryIds: outcome.evicted.map((v) => v.id), transitions: evictedTransitions },
    };
  }

  /** Tells every listener which trajectories were added, with their transitions per source. */
  private publishAdded(runId: string, added: readonly TrajectoryRecord[], rows: readonly TransitionRecord[]): void {
    if (added.length === 0) return;
    const perSource: Partial<Record<TrajectorySource, number>> = {};
    for (const h of added) perSource[h.source] = (perSource[h.source] ?? 0) + h.length;
    this.notifier.publish({
      type: 'trajectories-added',
      runId,
      trajectoryIds: added.map((h) => h.id),
      transitions: perSource,
      seqRanges: seqRanges(rows.map((r) => r.seq)),
    });
  }

  /**
   * Deletes trajectories (and their transitions) as if they had never been added: counters and
   * the tasks' reward statistics are reverted. Unknown ids are ignored. Returns the ids deleted.
   */
  async deleteTrajectories(runId: string, ids: readonly string[]): Promise<string[]> {
    checkId('run id', runId);
    await this.refuseIfLockedElsewhere(runId);
    const list = idList('trajectory id', ids) ?? [];
    if (list.length === 0) return [];
    const removed = await this.write(['runs', 'tasks', 'trajectories', 'transitions'], `deleteTrajectories(${runId}, ${list.length} ids)`, async (tx) => {
      const run = await this.requireRun(tx, runId);
      const trajStore = tx.objectStore('trajectories');
      const taskStore = tx.objectStore('tasks');
      const headers = (await Promise.all(list.map((id) => trajStore.get([runId, id])))).filter((h): h is TrajectoryRecord => h !== undefined && trajectoryProblem(h) === null);
      const taskIds = [...new Set(headers.map((h) => h.taskId))];
      const tasks = new Map<string, TaskRecord>();
      for (const t of await Promise.all(taskIds.map((id) => taskStore.get([runId, id])))) if (t) tasks.set(t.id, t);
      const rawTraj = unwrap(trajStore);
      const rawTransitions = unwrap(tx.objectStore('transitions'));
      for (const h of headers) {
        deleteTrajectoryRecords(rawTraj, rawTransitions, run, h);
        const task = tasks.get(h.taskId);
        if (task) {
          task.stats.count -= 1;
          task.stats.rewardSum -= h.reward;
          task.stats.rewardSumSq -= h.reward * h.reward;
          if (h.success) task.stats.successes -= 1;
        }
      }
      const rawTasks = unwrap(taskStore);
      for (const t of tasks.values()) rawTasks.put(t);
      run.updatedAt = Date.now();
      unwrap(tx.objectStore('runs')).put(run);
      return headers;
    });
    this.committedRemoval(runId, removed, 'deleted');
    return removed.map((h) => h.id);
  }

  /**
   * Plans the evictions of a write spread over several transactions (`batches`, in the order they
   * will be written), exactly as if each batch were written by `putTrajectories`: before each
   * batch the oldest unpinned trajectories (synthetic first, earlier batches included) go until
   * it fits. Writes nothing. Throws `CapacityError` if some batch cannot fit even then, so the
   * caller fails before writing anything. The caller then writes the batches with
   * `evict: false` and calls `evictTrajectories` with the plan when it commits: a failure in
   * between has evicted nothing, and undoing the written batches restores the run exactly.
   * `options.pinned` is the one the batches will be written with (default: offline ones).
   */
  async planEvictions(runId: string, batches: readonly (readonly PlannedTrajectory[])[], options: { pinned?: boolean } = {}): Promise<EvictionPlan> {
    checkId('run id', runId);
    // Array.isArray narrows a readonly array to any[]: keep a typed alias for the simulation.
    const planned: readonly (readonly PlannedTrajectory[])[] = batches;
    if (!Array.isArray(batches)) throw new TypeError(`batches must be an array of arrays of trajectories, got ${String(batches)}`);
    batches.forEach((batch, b) => {
      if (!Array.isArray(batch)) throw new TypeError(`batches[${b}] must be an array, got ${String(batch)}`);
      batch.forEach((t: PlannedTrajectory, i) => {
        if (typeof t !== 'object' || t === null) throw new TypeError(`batches[${b}][${i}] must be { id, source, length }, got ${String(t)}`);
        checkId(`batches[${b}][${i}].id`, t.id);
        if (!SOURCES.includes(t.source)) throw new RangeError(`batches[${b}][${i}].source must be one of ${SOURCES.join(', ')}, got ${JSON.stringify(t.source)}`);
        checkCount(`batches[${b}][${i}].length`, t.length);
      });
    });
    if (options.pinned !== undefined && typeof options.pinned !== 'boolean') throw new TypeError(`options.pinned must be a boolean, got ${JSON.stringify(options.pinned)}`);
    return this.read(RUN_DATA, async (tx) => {
      const run = await this.requireRun(tx, runId);
      const max = run.maxTransitions ?? this.settings.maxTransitions;
      const index = tx.objectStore('trajectories').index('by-evict');
      // Stored candidates in eviction order, paged lazily (most writes need few or none).
      let page: TrajectoryRecord[] = [];
      let at = 0;
      let exhausted = false;
      let lower: IDBKeyRange = IDBKeyRange.bound([runId], [runId, []]);
      const storedHead = async (): Promise<TrajectoryRecord | undefined> => {
        if (at < page.length || exhausted) return page[at];
        const fetched = await index.getAll(lower, EVICT_PAGE);
        page = fetched.filter((h) => trajectoryProblem(h) === null);
        at = 0;
        const last = fetched[fetched.length - 1];
        if (fetched.length < EVICT_PAGE || last === undefined) exhausted = true;
        else lower = IDBKeyRange.bound([runId, last.evictRank as number, last.seq], [runId, []], true, false);
        if (page.length === 0 && !exhausted) return storedHead();
        return page[0];
      };
      // This write's own evictable trajectories by rank; each comes after every stored one of its
      // rank (higher seq), and rank 0 (synthetic) before any rank 1.
      const ownSynthetic: PlannedTrajectory[] = [];
      const ownOther: PlannedTrajectory[] = [];
      let nextSynthetic = 0;
      let nextOther = 0;
      let total = totalTransitions(run);
      const plan: EvictionPlan = { trajectoryIds: [], transitions: 0 };
      for (const batch of planned) {
        if (batch.length === 0) continue;
        total += batch.reduce((n, t) => n + t.length, 0);
        while (total > max) {
          const stored = await storedHead();
          let victim: { id: string; length: number } | undefined;
          if (stored && stored.evictRank === 0) victim = page[at++];
          else if (nextSynthetic < ownSynthetic.length) victim = ownSynthetic[nextSynthetic++];
          else if (stored) victim = page[at++];
          else if (nextOther < ownOther.length) victim = ownOther[nextOther++];
          if (!victim) throw new CapacityError(runId, max, total);
          plan.trajectoryIds.push(victim.id);
          plan.transitions += victim.length;
          total -= victim.length;
        }
        for (const t of batch) {
          const rank = evictRankOf(t.source, options.pinned ?? t.source === 'offline');
          if (rank !== undefined) (rank === 0 ? ownSynthetic : ownOther).push(t);
        }
      }
      return plan;
    });
  }

  /**
   * Evicts trajectories (a plan from `planEvictions`) in one transaction: like the evictions of
   * `putTrajectories`, they count as evicted and the tasks' lifetime statistics are kept. Ids no
   * longer stored are ignored; a pinned one is refused with `ReplayValidationError` (nothing is
   * evicted then). Returns what was evicted.
   */
  async evictTrajectories(runId: string, ids: readonly string[]): Promise<PutTrajectoriesResult['evicted']> {
    checkId('run id', runId);
    await this.refuseIfLockedElsewhere(runId);
    const list = idList('trajectory id', ids) ?? [];
    if (list.length === 0) return { trajectoryIds: [], transitions: 0 };
    const evicted = await this.write(RUN_DATA, `evictTrajectories(${runId}, ${list.length} ids)`, async (tx) => {
      const run = await this.requireRun(tx, runId);
      const trajStore = tx.objectStore('trajectories');
      const headers = (await Promise.all(list.map((id) => trajStore.get([runId, id])))).filter((h): h is TrajectoryRecord => h !== undefined && trajectoryProblem(h) === null);
      const pinned = headers.find((h) => h.pinned);
      if (pinned) throw new ReplayValidationError(`trajectory ${JSON.stringify(pinned.id)} of run ${JSON.stringify(runId)} is pinned and cannot be evicted`);
      const rawTraj = unwrap(trajStore);
      const rawTransitions = unwrap(tx.objectStore('transitions'));
      for (const h of headers) {
        deleteTrajectoryRecords(rawTraj, rawTransitions, run, h);
        run.counters.evicted.trajectories += 1;
        run.counters.evicted.transitions += h.length;
      }
      if (headers.length > 0) {
        run.updatedAt = Date.now();
        unwrap(tx.objectStore('runs')).put(run);
      }
      return headers;
    });
    const transitions = this.committedRemoval(runId, evicted, 'evicted');
    return { trajectoryIds: evicted.map((h) => h.id), transitions };
  }

  /** After a committed removal: takes the trajectories off the index and tells everyone. Returns their transitions. */
  private committedRemoval(runId: string, removed: readonly TrajectoryRecord[], reason: 'evicted' | 'deleted'): number {
    this.indexes.apply(runId, (index) => {
      for (const h of removed) if (h.length > 0) index.removeRange(h.firstStep, h.firstStep + h.length - 1);
    });
    const transitions = removed.reduce((n, h) => n + h.length, 0);
    if (removed.length > 0) {
      this.notifier.publish({
        type: 'trajectories-removed',
        runId,
        trajectoryIds: removed.map((h) => h.id),
        transitions,
        reason,
        seqRanges: removed
          .filter((h) => h.length > 0)
          .map((h): [number, number] => [h.firstStep, h.firstStep + h.length - 1])
          .sort((a, b) => a[0] - b[0]),
      });
    }
    return transitions;
  }

  /**
   * Deletes tasks from a run. Refuses with `ReplayValidationError` while a stored trajectory or
   * another task (as parent) still refers to one of them. Returns the ids deleted.
   */
  async deleteTasks(runId: string, ids: readonly string[]): Promise<string[]> {
    checkId('run id', runId);
    await this.refuseIfLockedElsewhere(runId);
    const list = idList('task id', ids) ?? [];
    if (list.length === 0) return [];
    const gone = new Set(list);
    const deleted = await this.write(RUN_DATA, `deleteTasks(${runId}, ${list.length} ids)`, async (tx) => {
      const run = await this.requireRun(tx, runId);
      const taskStore = tx.objectStore('tasks');
      const byTask = tx.objectStore('trajectories').index('by-run-task');
      const present = (await Promise.all(list.map((id) => taskStore.getKey([runId, id])))).filter((k) => k !== undefined).map((k) => k[1]);
      const used = await Promise.all(present.map((id) => byTask.count([runId, id])));
      present.forEach((id, i) => {
        if ((used[i] as number) > 0) throw new ReplayValidationError(`task ${JSON.stringify(id)} of run ${JSON.stringify(runId)} still has ${used[i]} stored trajectories`);
      });
      const children = await taskStore.index('by-run-seq').getAll(runRange(runId));
      for (const child of children) {
        if (child.parentId !== undefined && gone.has(child.parentId) && !gone.has(child.id)) {
          throw new ReplayValidationError(`task ${JSON.stringify(child.parentId)} of run ${JSON.stringify(runId)} is the parent of task ${JSON.stringify(child.id)}`);
        }
      }
      const raw = unwrap(taskStore);
      for (const id of present) raw.delete([runId, id]);
      run.counters.tasks -= present.length;
      run.updatedAt = Date.now();
      unwrap(tx.objectStore('runs')).put(run);
      return present;
    });
    if (deleted.length > 0) this.notifier.publish({ type: 'tasks-deleted', runId, taskIds: deleted });
    return deleted;
  }

  /** Checks or computes the embeddings of every step, before any transaction starts. */
  private async embeddingsFor(
    runId: string,
    meta: { embeddingDim: number; embedderId: string },
    trajectories: readonly Trajectory[],
    options: PutTrajectoriesOptions,
  ): Promise<Float32Array[][]> {
    const dim = meta.embeddingDim;
    const check = (v: unknown, what: string): Float32Array => {
      if (!(v instanceof Float32Array)) throw new TypeError(`${what}: expected a Float32Array, got ${Object.prototype.toString.call(v)}`);
      if (v.length !== dim) throw new EmbeddingDimensionError(runId, dim, v.length, what);
      for (let i = 0; i < v.length; i++) {
        if (!Number.isFinite(v[i])) throw new ReplayValidationError(`${what}: component ${i} is ${v[i]}`);
      }
      return compactCopy(v);
    };
    if (options.embeddings !== undefined) {
      if (options.embedder !== undefined) throw new TypeError('pass either options.embedder or options.embeddings, not both');
      const given = options.embeddings;
      if (!Array.isArray(given) || given.length !== trajectories.length) {
        throw new RangeError(`options.embeddings must have one entry per trajectory (${trajectories.length}), got ${Array.isArray(given) ? given.length : String(given)}`);
      }
      return trajectories.map((t, i) => {
        const vs = given[i];
        if (!Array.isArray(vs) || vs.length !== t.steps.length) {
          throw new RangeError(`options.embeddings[${i}] must have one vector per step of ${JSON.stringify(t.id)} (${t.steps.length}), got ${Array.isArray(vs) ? vs.length : String(vs)}`);
        }
        return vs.map((v, s) => check(v, `embedding of trajectory ${t.id} step ${s}`));
      });
    }
    const embedder = options.embedder;
    if (embedder === undefined) throw new TypeError('putTrajectories needs options.embedder or options.embeddings (one vector per step)');
    if (embedder.id !== meta.embedderId) throw new EmbedderMismatchError(runId, meta.embedderId, embedder.id);
    if (embedder.dim !== dim) throw new EmbeddingDimensionError(runId, dim, embedder.dim, `embedder ${JSON.stringify(embedder.id)}`);
    const texts = trajectories.flatMap((t) => t.steps.map((s) => transitionText(s.observation.text, s.action)));
    const vectors: Float32Array[] = [];
    for (let i = 0; i < texts.length; i += EMBED_CHUNK) {
      const chunk = texts.slice(i, i + EMBED_CHUNK);
      const out = await embedder.embed(chunk);
      if (!Array.isArray(out) || out.length !== chunk.length) {
        throw new ReplayValidationError(`embedder ${JSON.stringify(embedder.id)} returned ${Array.isArray(out) ? out.length : String(out)} vectors for ${chunk.length} texts`);
      }
      out.forEach((v, j) => vectors.push(check(v, `embedder ${JSON.stringify(embedder.id)} vector for text ${i + j}`)));
    }
    let k = 0;
    return trajectories.map((t) => t.steps.map(() => vectors[k++] as Float32Array));
  }

  /** Trajectory headers matching a filter, oldest first (within one transaction); damaged ones are reported and left out. */
  private async headers(tx: AnyTx, filter: TrajectoryFilter, options?: ReadOptions): Promise<TrajectoryRecord[]> {
    const { runId } = filter;
    const sources = sourceList(filter.source);
    const taskIds = idList('task id', filter.taskId);
    const ids = filter.ids === undefined ? undefined : idList('trajectory id', filter.ids);
    const store = tx.objectStore('trajectories');
    let headers: TrajectoryRecord[];
    if (ids) headers = (await Promise.all(ids.map((id) => store.get([runId, id])))).filter((h): h is TrajectoryRecord => h !== undefined);
    else if (taskIds) headers = (await Promise.all(taskIds.map((id) => store.index('by-run-task').getAll([runId, id])))).flat();
    else if (sources) headers = (await Promise.all(sources.map((s) => store.index('by-run-source').getAll([runId, s])))).flat();
    // The store itself, not its seq index: a header whose seq is damaged is missing from the index and would vanish unreported.
    else headers = await store.getAll(runRange(runId));
    headers = valid(headers, 'trajectories', (h) => [runId, h.id], trajectoryProblem, options);
    if (sources) headers = headers.filter((h) => sources.includes(h.source));
    if (taskIds) headers = headers.filter((h) => taskIds.includes(h.taskId));
    headers.sort((a, b) => a.seq - b.seq);
    return headers;
  }

  private checkFilter(filter: ReplayFilter & { limit?: number }): void {
    if (typeof filter !== 'object' || filter === null) throw new TypeError(`filter must be an object with a runId, got ${String(filter)}`);
    checkId('filter.runId', filter.runId);
    if (filter.limit !== undefined) checkCount('filter.limit', filter.limit);
  }

  /** The run's embedding dimension read in `tx` (undefined for an unknown or damaged run: nothing to check against). */
  private async dimIn(tx: AnyTx, runId: string): Promise<number | undefined> {
    const run = await tx.objectStore('runs').get(runId);
    return run !== undefined && runProblem(run) === null ? run.embeddingDim : undefined;
  }

  /** Trajectory headers (no steps) matching the filter, oldest first; damaged headers are left out and reported. */
  async getTrajectoryRecords(filter: TrajectoryFilter, options: ReadOptions = {}): Promise<TrajectoryRecord[]> {
    this.checkFilter(filter);
    const headers = await this.read(['trajectories'], (tx) => this.headers(tx, filter, options));
    return filter.limit === undefined ? headers : headers.slice(0, filter.limit);
  }

  /**
   * Whole trajectories matching the filter, oldest first. A trajectory that cannot be assembled
   * (a damaged header, a step missing, a damaged transition) is left out and its bad record
   * reported to `options.onSkip`; the others are returned. `limit` counts what is returned.
   */
  async getTrajectories(filter: TrajectoryFilter, options: ReadOptions = {}): Promise<Trajectory[]> {
    this.checkFilter(filter);
    return this.read(['runs', 'trajectories', 'transitions'], async (tx) => {
      const headers = await this.headers(tx, filter, options);
      const dim = await this.dimIn(tx, filter.runId);
      const out: Trajectory[] = [];
      const limit = filter.limit ?? Number.POSITIVE_INFINITY;
      // Assembled a page at a time, so that a limit stops reading early.
      for (let i = 0; i < headers.length && out.length < limit; i += 256) {
        for (const { trajectory } of await this.assemble(tx, headers.slice(i, i + 256), dim, options)) {
          if (out.length < limit) out.push(trajectory);
        }
      }
      return out;
    });
  }

  /** The trajectories of `headers` that assemble (with their transitions), in order; the others are reported. */
  private async assemble(tx: AnyTx, headers: readonly TrajectoryRecord[], dim: number | undefined, options: ReadOptions | undefined): Promise<{ trajectory: Trajectory; transitions: TransitionRecord[] }[]> {
    const store = tx.objectStore('transitions');
    const steps = await Promise.all(headers.map((h) => (h.length === 0 ? Promise.resolve([]) : store.getAll(transitionsRange(h.runId, h.firstStep, h.length)))));
    const out: { trajectory: Trajectory; transitions: TransitionRecord[] }[] = [];
    headers.forEach((h, i) => {
      const rows = steps[i] as TransitionRecord[];
      const problem = assemblyProblem(h, rows, dim);
      if (problem === null) out.push({ trajectory: trajectoryOf(h, rows), transitions: rows });
      else skip(options, problem.store === 'transitions' ? { ...problem, trajectoryId: h.id } : problem);
    });
    return out;
  }

  /**
   * Transitions matching the filter, in storage order. Only those of trajectories that assemble:
   * a trajectory with a damaged or missing record is left out and reported (`options.onSkip`).
   */
  async getTransitions(filter: TransitionFilter, options: ReadOptions = {}): Promise<TransitionRecord[]> {
    this.checkFilter(filter);
    if (filter.trajectoryId !== undefined) checkId('filter.trajectoryId', filter.trajectoryId);
    const ids = filter.trajectoryId === undefined ? undefined : [filter.trajectoryId];
    return this.read(['runs', 'trajectories', 'transitions'], async (tx) => {
      const headers = await this.headers(tx, { ...filter, ids, limit: undefined }, options);
      const dim = await this.dimIn(tx, filter.runId);
      const out: TransitionRecord[] = [];
      const limit = filter.limit ?? Number.POSITIVE_INFINITY;
      for (const h of headers) {
        if (out.length >= limit) break;
        if (h.length === 0) continue;
        const [whole] = await this.assemble(tx, [h], dim, options);
        if (whole) out.push(...whole.transitions.slice(0, limit - out.length));
      }
      return out;
    });
  }

  /** One transition by its seq in the run, or undefined. Throws `CorruptRecordError` when it is damaged. */
  async getTransition(runId: string, seq: number): Promise<TransitionRecord | undefined> {
    checkId('run id', runId);
    checkCount('seq', seq);
    return this.read(['runs', 'transitions'], async (tx) => {
      const record = await tx.objectStore('transitions').get([runId, seq]);
      if (record === undefined) return undefined;
      const problem = transitionProblem(record, await this.dimIn(tx, runId));
      if (problem) throw new CorruptRecordError('transitions', [runId, seq], problem);
      return record;
    });
  }

  /**
   * `n` distinct transitions drawn uniformly from those matching the filter (all of them, in
   * random order, when fewer match). A trajectory found damaged while sampling (a wrong length,
   * a missing or damaged step) is reported (`options.onSkip`) and its transitions are not
   * drawn; the sample is made up from the others.
   */
  async sampleTransitions(filter: ReplayFilter, n: number, options: SampleOptions = {}): Promise<TransitionRecord[]> {
    this.checkFilter(filter);
    checkCount('n', n);
    const rng = options.rng ?? new Rng(Date.now());
    return this.read(['runs', 'trajectories', 'transitions'], async (tx) => {
      let headers = await this.headers(tx, filter, options);
      const dim = await this.dimIn(tx, filter.runId);
      const store = tx.objectStore('transitions');
      const out: TransitionRecord[] = [];
      const taken = new Set<number>();
      // Normally one round. A damaged trajectory met in a round is checked whole, dropped, and
      // the shortfall drawn again from the rest (never the same transition twice).
      for (;;) {
        const starts: number[] = [];
        let total = 0;
        for (const h of headers) {
          starts.push(total);
          total += h.length;
        }
        const need = n - out.length;
        const picks = sampleIndices(rng, total, Math.min(need + taken.size, total));
        const keys: { header: TrajectoryRecord; seq: number }[] = [];
        for (const p of picks) {
          // The header whose range holds p (binary search over the prefix sums).
          let lo = 0;
          let hi = starts.length - 1;
          while (lo < hi) {
            const mid = (lo + hi + 1) >>> 1;
            if ((starts[mid] as number) <= p) lo = mid;
            else hi = mid - 1;
          }
          const h = headers[lo] as TrajectoryRecord;
          const seq = h.firstStep + (p - (starts[lo] as number));
          if (!taken.has(seq)) keys.push({ header: h, seq });
          if (keys.length >= need) break;
        }
        const records = await Promise.all(keys.map((k) => store.get([filter.runId, k.seq])));
        const suspects = new Set<TrajectoryRecord>();
        records.forEach((r, i) => {
          const { header, seq } = keys[i] as { header: TrajectoryRecord; seq: number };
          if (r === undefined || transitionProblem(r, dim) !== null || r.trajectoryId !== header.id || r.step !== seq - header.firstStep) suspects.add(header);
        });
        const damaged = new Set<TrajectoryRecord>();
        for (const h of suspects) if ((await this.assemble(tx, [h], dim, options)).length === 0) damaged.add(h);
        records.forEach((r, i) => {
          const { header, seq } = keys[i] as { header: TrajectoryRecord; seq: number };
          if (r !== undefined && !damaged.has(header) && !taken.has(seq)) {
            out.push(r);
            taken.add(seq);
          }
        });
        if (damaged.size === 0 || out.length >= n) return out;
        headers = headers.filter((h) => !damaged.has(h));
      }
    });
  }

  /** `n` distinct whole trajectories drawn uniformly from those matching the filter; damaged ones are reported and replaced by others. */
  async sampleTrajectories(filter: ReplayFilter, n: number, options: SampleOptions = {}): Promise<Trajectory[]> {
    this.checkFilter(filter);
    checkCount('n', n);
    const rng = options.rng ?? new Rng(Date.now());
    return this.read(['runs', 'trajectories', 'transitions'], async (tx) => {
      let headers = await this.headers(tx, filter, options);
      const dim = await this.dimIn(tx, filter.runId);
      const out: Trajectory[] = [];
      while (out.length < n && headers.length > 0) {
        const picks = sampleIndices(rng, headers.length, Math.min(n - out.length, headers.length));
        const chosen = picks.map((i) => headers[i] as TrajectoryRecord);
        const whole = await this.assemble(tx, chosen, dim, options);
        out.push(...whole.map((w) => w.trajectory));
        const used = new Set(chosen);
        headers = headers.filter((h) => !used.has(h));
      }
      return out;
    });
  }

  // ---------------------------------------------------------------- counts and stats

  /** What a run holds (from counters kept with every write: O(1)). */
  async counts(runId: string): Promise<RunCounts> {
    checkId('run id', runId);
    const run = await this.getRun(runId);
    if (!run) throw new UnknownRunError(runId);
    return countsOf(run);
  }

  /** Counts, settings and reward summaries of a run. */
  async stats(runId: string): Promise<RunStats> {
    checkId('run id', runId);
    const run = await this.getRun(runId);
    if (!run) throw new UnknownRunError(runId);
    const rewards = {} as RunStats['rewards'];
    for (const s of SOURCES) {
      const c = run.counters.bySource[s];
      rewards[s] = c.trajectories === 0 ? { meanReward: null, successRate: null } : { meanReward: c.rewardSum / c.trajectories, successRate: c.successes / c.trajectories };
    }
    const stats: RunStats = {
      ...countsOf(run),
      runId,
      embedderId: run.embedderId,
      embeddingDim: run.embeddingDim,
      maxTransitions: run.maxTransitions ?? this.settings.maxTransitions,
      rewards,
      createdAt: run.createdAt,
      updatedAt: run.updatedAt,
    };
    if (run.latestCheckpoint !== undefined) stats.latestCheckpoint = run.latestCheckpoint;
    return stats;
  }

  // ---------------------------------------------------------------- retrieval

  /**
   * The k stored transitions most similar to `query` (cosine similarity of embeddings), best
   * first, ties to the older transition. `query` must have the run's embedding dimension.
   * Damaged transitions (no embedding, a wrong length, a NaN...) are not in the index: each is
   * reported to `options.onSkip` on every call, and never returned.
   */
  async retrieve(query: Float32Array, k: number, filter: ReplayFilter, options: ReadOptions = {}): Promise<RetrievalHit[]> {
    const [hits] = await this.retrieveBatch([query], k, filter, options);
    return hits as RetrievalHit[];
  }

  /** `retrieve` for several queries in one pass over the index (cheaper than one call each). */
  async retrieveBatch(queries: readonly Float32Array[], k: number, filter: ReplayFilter, options: ReadOptions = {}): Promise<RetrievalHit[][]> {
    this.checkFilter(filter);
    checkPositive('k', k);
    if (!Array.isArray(queries)) throw new TypeError(`queries must be an array of Float32Array, got ${String(queries)}`);
    const meta = await this.meta(filter.runId);
    queries.forEach((q, i) => {
      if (!(q instanceof Float32Array)) throw new TypeError(`query ${i} must be a Float32Array, got ${Object.prototype.toString.call(q)}`);
      if (q.length !== meta.embeddingDim) throw new EmbeddingDimensionError(filter.runId, meta.embeddingDim, q.length, queries.length === 1 ? 'the query' : `query ${i}`);
    });
    const sources = sourceList(filter.source);
    const taskIds = idList('task id', filter.taskId);
    const index = await this.retrievalIndex(filter.runId);
    const searchFilter: { sources?: TrajectorySource[]; taskIds?: string[] } = {};
    if (sources) searchFilter.sources = sources;
    if (taskIds) searchFilter.taskIds = taskIds;
    const found = index.search(queries, k, searchFilter);
    for (const s of this.indexes.skipped(filter.runId)) skip(options, s);
    const reported = new Set<number>();
    return this.read(['transitions'], async (tx) => {
      const store = tx.objectStore('transitions');
      return Promise.all(
        found.map(async (hits) => {
          const records = await Promise.all(hits.map((h) => store.get([filter.runId, h.seq])));
          const out: RetrievalHit[] = [];
          records.forEach((r, i) => {
            // A transition evicted by another context since the index was built is skipped.
            if (!r) return;
            // One damaged since it was indexed is skipped and reported (once per call).
            const problem = transitionProblem(r, meta.embeddingDim);
            if (problem !== null) {
              if (!reported.has(r.seq)) skip(options, { store: 'transitions', key: [filter.runId, r.seq], problem });
              reported.add(r.seq);
              return;
            }
            out.push({ score: (hits[i] as { score: number }).score, transition: r });
          });
          return out;
        }),
      );
    });
  }

  /**
   * The run's in-memory index, loading it on first use. Exposed for benchmarks and tools;
   * `retrieve` is the normal entry point.
   */
  async retrievalIndex(runId: string): Promise<RetrievalIndex> {
    checkId('run id', runId);
    this.assertOpen();
    return this.indexes.get(runId);
  }

  private onRemoteChange(change: ReplayChange): void {
    switch (change.type) {
      case 'trajectories-added':
        this.indexes.remoteAdded(change.runId, change.seqRanges);
        break;
      case 'trajectories-removed':
        this.indexes.remoteRemoved(change.runId, change.seqRanges);
        break;
      case 'run-deleted':
      case 'run-created':
      case 'run-repaired':
        this.indexes.drop(change.runId);
        this.runMeta.delete(change.runId);
        break;
      default:
        break;
    }
  }

  // ---------------------------------------------------------------- checkpoints

  /** Saves (or replaces) a named checkpoint and marks it the run's latest. */
  async saveCheckpoint(runId: string, input: CheckpointInput): Promise<CheckpointInfo> {
    checkId('run id', runId);
    await this.refuseIfLockedElsewhere(runId);
    if (typeof input !== 'object' || input === null) throw new TypeError(`checkpoint must be an object, got ${String(input)}`);
    checkId('checkpoint name', input.name);
    checkCount('checkpoint iteration', input.iteration);
    if (!Array.isArray(input.tensors)) throw new TypeError(`checkpoint tensors must be an array, got ${String(input.tensors)}`);
    const tensors = input.tensors.map((t, i) => checkTensor(`tensor #${i}`, t));
    const optimizerTensors = input.optimizer ? input.optimizer.tensors.map((t, i) => checkTensor(`optimizer tensor #${i}`, t)) : [];
    const record: CheckpointRecord = {
      runId,
      name: input.name,
      iteration: input.iteration,
      createdAt: Date.now(),
      tensors,
      optimizer: { tensors: optimizerTensors },
    };
    if (input.optimizer?.config !== undefined) record.optimizer.config = input.optimizer.config;
    if (input.config !== undefined) record.config = input.config;
    await this.write(withRunData('checkpoints'), `saveCheckpoint(${runId}, ${input.name})`, async (tx) => {
      const run = await this.requireRun(tx, runId);
      run.latestCheckpoint = input.name;
      run.updatedAt = record.createdAt;
      await Promise.all([tx.objectStore('checkpoints').put(record), tx.objectStore('runs').put(run)]);
    });
    this.notifier.publish({ type: 'checkpoint-saved', runId, name: input.name, iteration: input.iteration });
    return infoOf(record);
  }

  /** Loads a checkpoint by name, or the latest saved one. Throws `CheckpointNotFoundError`. */
  async loadCheckpoint(runId: string, name?: string): Promise<CheckpointRecord> {
    checkId('run id', runId);
    if (name !== undefined) checkId('checkpoint name', name);
    return this.read(withRunData('checkpoints'), async (tx) => {
      const run = await this.requireRun(tx, runId);
      const wanted = name ?? run.latestCheckpoint;
      if (wanted === undefined) throw new CheckpointNotFoundError(runId, undefined);
      const record = await tx.objectStore('checkpoints').get([runId, wanted]);
      if (!record) throw new CheckpointNotFoundError(runId, wanted);
      const problem = checkpointProblem(record);
      if (problem) throw new CorruptRecordError('checkpoints', [runId, wanted], problem);
      return record;
    });
  }

  /** The run's checkpoints (without tensors), by name; corrupt ones are left out and reported. */
  async listCheckpoints(runId: string, options: ReadOptions = {}): Promise<CheckpointInfo[]> {
    checkId('run id', runId);
    const records = await this.read(['checkpoints'], (tx) => tx.objectStore('checkpoints').getAll(runRange(runId)));
    return valid(records, 'checkpoints', (r) => [runId, r.name], checkpointProblem, options).map(infoOf);
  }

  /** Deletes a checkpoint; returns whether it existed. */
  async deleteCheckpoint(runId: string, name: string): Promise<boolean> {
    checkId('run id', runId);
    await this.refuseIfLockedElsewhere(runId);
    checkId('checkpoint name', name);
    return this.write(withRunData('checkpoints'), `deleteCheckpoint(${runId}, ${name})`, async (tx) => {
      const run = await this.requireRun(tx, runId);
      const store = tx.objectStore('checkpoints');
      if ((await store.getKey([runId, name])) === undefined) return false;
      await store.delete([runId, name]);
      if (run.latestCheckpoint === name) {
        delete run.latestCheckpoint;
        await tx.objectStore('runs').put(run);
      }
      return true;
    });
  }

  // ---------------------------------------------------------------- metrics

  /** Appends per-iteration records (an iteration already stored is replaced). One transaction. */
  async appendMetrics(runId: string, records: readonly MetricInput[]): Promise<void> {
    checkId('run id', runId);
    await this.refuseIfLockedElsewhere(runId);
    if (!Array.isArray(records)) throw new TypeError(`metrics must be an array, got ${String(records)}`);
    const now = Date.now();
    const rows: MetricRecord[] = records.map((m, i) => {
      if (typeof m !== 'object' || m === null) throw new TypeError(`metrics[${i}] must be an object, got ${String(m)}`);
      checkCount(`metrics[${i}].iteration`, m.iteration);
      if (m.time !== undefined && !Number.isFinite(m.time)) throw new RangeError(`metrics[${i}].time must be a finite number, got ${m.time}`);
      if (typeof m.values !== 'object' || m.values === null) throw new TypeError(`metrics[${i}].values must be an object of numbers, got ${String(m.values)}`);
      const values: Record<string, number> = {};
      for (const [key, value] of Object.entries(m.values)) {
        if (typeof value !== 'number') throw new TypeError(`metrics[${i}].values.${key} must be a number, got ${JSON.stringify(value)}`);
        values[key] = value;
      }
      return { runId, iteration: m.iteration, time: m.time ?? now, values };
    });
    if (rows.length === 0) return;
    await this.write(withRunData('metrics'), `appendMetrics(${runId}, ${rows.length} records)`, async (tx) => {
      await this.requireRun(tx, runId);
      const store = unwrap(tx.objectStore('metrics'));
      for (const row of rows) store.put(row);
    });
    this.notifier.publish({ type: 'metrics-appended', runId, iterations: rows.map((r) => r.iteration) });
  }

  /** Metric records of a run in iteration order, optionally within [from, to]; corrupt ones are left out and reported. */
  async readMetrics(runId: string, range: { from?: number; to?: number } = {}, options: ReadOptions = {}): Promise<MetricRecord[]> {
    checkId('run id', runId);
    const from = range.from ?? 0;
    const to = range.to ?? Number.POSITIVE_INFINITY;
    if (!(Number.isFinite(from) && from >= 0)) throw new RangeError(`from must be a non-negative number, got ${from}`);
    if (!(to >= from)) throw new RangeError(`to must be >= from, got from ${from}, to ${to}`);
    const records = await this.read(['metrics'], (tx) => tx.objectStore('metrics').getAll(IDBKeyRange.bound([runId, from], [runId, to])));
    return valid(records, 'metrics', (r) => [runId, r.iteration], metricProblem, options);
  }

  // ---------------------------------------------------------------- coordination

  /**
   * Takes the run's trainer lock (a Web Lock shared by all tabs and workers of the origin).
   * Throws `RunLockedError` ("this run is being trained elsewhere") if another context holds it.
   * The lock is released by `release()`, by `close()`, or when this context ends.
   */
  async acquireRunLock(runId: string): Promise<RunLock> {
    checkId('run id', runId);
    this.assertOpen();
    if (this.heldLocks.has(runId)) throw new RunLockedError(runId);
    const lock = await acquireRunLock(this.settings.locks, this.name, runId);
    const held: RunLock = {
      runId: lock.runId,
      name: lock.name,
      get released() {
        return lock.released;
      },
      release: async () => {
        this.heldLocks.delete(runId);
        await lock.release();
      },
    };
    this.heldLocks.set(runId, held);
    return held;
  }

  /** Whether some context (this one included) holds the run's trainer lock. */
  async isRunLocked(runId: string): Promise<boolean> {
    checkId('run id', runId);
    return isRunLocked(this.settings.locks, this.name, runId);
  }

  /** Whether another context (not this store) holds the run's trainer lock. */
  async lockedElsewhere(runId: string): Promise<boolean> {
    checkId('run id', runId);
    return !this.heldLocks.has(runId) && (await isRunLocked(this.settings.locks, this.name, runId));
  }

  /**
   * @internal For `repairStore`: runs `body` in one transaction over every store (readonly for a
   * dry run; a failure rolls all of it back). After a write, forgets what this store cached of the
   * runs `body` returns as changed and tells other contexts to do the same.
   */
  async maintain<T extends { changedRuns: readonly string[] }>(dryRun: boolean, body: (tx: MaintenanceTx) => Promise<T>): Promise<T> {
    const stores = [...STORE_NAMES];
    if (dryRun) return this.read(stores, (tx) => body(tx as MaintenanceTx));
    const result = await this.write(stores, 'repairStore', (tx) => body(tx as MaintenanceTx));
    for (const runId of result.changedRuns) {
      this.indexes.drop(runId);
      this.runMeta.delete(runId);
      this.notifier.publish({ type: 'run-repaired', runId });
    }
    return result;
  }

  /** The records upgrades set aside (`quarantine` store), oldest first. */
  async listQuarantine(): Promise<QuarantineRecord[]> {
    return this.read(['quarantine'], (tx) => tx.objectStore('quarantine').getAll());
  }

  /**
   * Listens to changes: this store's own (`origin: 'local'`) and, over BroadcastChannel, those of
   * other tabs and workers (`origin: 'remote'`). Returns the unsubscribe function.
   */
  subscribe(listener: ReplayListener): () => void {
    this.assertOpen();
    return this.notifier.subscribe(listener);
  }
}

/** The records that validate; the others are reported to `options.onSkip`. */
function valid<T>(records: readonly T[], store: ReplayStoreName, keyOf: (r: T) => IDBValidKey, problemOf: (r: unknown) => string | null, options: ReadOptions | undefined): T[] {
  const out: T[] = [];
  for (const r of records) {
    const problem = problemOf(r);
    if (problem === null) out.push(r);
    else skip(options, { store, key: keyOf(r), problem });
  }
  return out;
}

function countsOf(run: RunRecord): RunCounts {
  const bySource = {} as Record<TrajectorySource, SourceCounts>;
  for (const s of SOURCES) bySource[s] = { trajectories: run.counters.bySource[s].trajectories, transitions: run.counters.bySource[s].transitions };
  return {
    tasks: run.counters.tasks,
    trajectories: totalTrajectories(run),
    transitions: totalTransitions(run),
    bySource,
    evicted: { ...run.counters.evicted },
  };
}

function infoOf(record: CheckpointRecord): CheckpointInfo {
  const all = [...record.tensors, ...record.optimizer.tensors];
  return {
    name: record.name,
    iteration: record.iteration,
    createdAt: record.createdAt,
    tensorCount: record.tensors.length,
    bytes: all.reduce((n, t) => n + t.data.byteLength, 0),
  };
}

/** `m` distinct integers from [0, total), in random order. */
function sampleIndices(rng: Rng, total: number, m: number): number[] {
  if (m <= 0) return [];
  if (m * 3 >= total) return rng.sample(Array.from({ length: total }, (_, i) => i), m);
  const picked = new Set<number>();
  const out: number[] = [];
  while (out.length < m) {
    const i = rng.int(0, total - 1);
    if (!picked.has(i)) {
      picked.add(i);
      out.push(i);
    }
  }
  return out;
}
