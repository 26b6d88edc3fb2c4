/**
 * Public types of the replay store's API: options, filters and results.
 */
import type { Embedder } from '../core/embedding.ts';
import type { Rng } from '../core/rng.ts';
import type { JsonValue, TrajectorySource } from '../core/types.ts';
import type { LockManagerLike } from './coordination.ts';
import type { VersionChangeInfo } from './database.ts';
import type { NamedTensor, TransitionRecord } from './schema.ts';

/** Options of `openReplayStore`. */
export interface OpenReplayStoreOptions {
  /** Database name (default `dreamgym-replay`: one database per origin). */
  name?: string;
  /** The IndexedDB factory (default `globalThis.indexedDB`); in Node pass fake-indexeddb's. */
  indexedDB?: IDBFactory;
  /** Default capacity of each run in transitions (a run may set its own). Default 1,000,000. */
  maxTransitions?: number;
  /** Lock manager for run locks (default `navigator.locks`, else an in-process one). */
  locks?: LockManagerLike;
  /** Announce changes to other contexts over BroadcastChannel (default true). */
  broadcast?: boolean;
  /** How long an open may stay blocked by an old connection before `DatabaseBlockedError` (ms, default 10,000). */
  blockedTimeoutMs?: number;
  /** Called while opening waits for other connections (old tabs) to close. */
  onBlocked?: (info: VersionChangeInfo) => void;
  /**
   * Called when this store closes itself because another context opens a newer schema
   * (`versionchange`) or the browser closed the connection; tell the user to reload.
   */
  onClosed?: (reason: string) => void;
  /** Durability of write transactions (default `relaxed`: faster; data survives a tab crash, not an OS crash). */
  durability?: IDBTransactionDurability;
}

/** What a run is created with. `embedding` takes an `Embedder` or just its id and dimension. */
export interface RunInit {
  id: string;
  embedding: { id: string; dim: number };
  name?: string;
  config?: JsonValue;
  /** This run's capacity in transitions (default: the store's). */
  maxTransitions?: number;
}

/** Options of `putTrajectories`. */
export interface PutTrajectoriesOptions {
  /** Embeds each step's `transitionText(observation.text, action)`; must match the run's embedder. */
  embedder?: Embedder;
  /** Precomputed embeddings instead: `embeddings[i][t]` for trajectory i, step t. */
  embeddings?: readonly (readonly Float32Array[])[];
  /** Pin (never evict) these trajectories. Default: offline trajectories are pinned, others not. */
  pinned?: boolean;
  /** What to do with ids already stored in the run: throw `DuplicateTrajectoryError` (default) or skip them. */
  onDuplicate?: 'error' | 'skip';
}

/** What a `putTrajectories` did. */
export interface PutTrajectoriesResult {
  /** Ids written, in order. */
  added: string[];
  /** Ids skipped as duplicates (`onDuplicate: 'skip'`). */
  skipped: string[];
  /** Transitions written. */
  transitions: number;
  /** Trajectories evicted to stay within capacity. */
  evicted: { trajectoryIds: string[]; transitions: number };
}

/** Selects data of one run. Lists mean "any of". */
export interface ReplayFilter {
  runId: string;
  source?: TrajectorySource | readonly TrajectorySource[];
  taskId?: string | readonly string[];
}

/** Selects trajectories. */
export interface TrajectoryFilter extends ReplayFilter {
  ids?: readonly string[];
  /** At most this many, oldest first. */
  limit?: number;
}

/** Selects transitions. */
export interface TransitionFilter extends ReplayFilter {
  trajectoryId?: string;
  /** At most this many, in storage (seq) order. */
  limit?: number;
}

/** Options of the samplers. */
export interface SampleOptions extends ReadOptions {
  /** Source of randomness (default: seeded from the clock). */
  rng?: Rng;
}

/** Counts of one source. */
export interface SourceCounts {
  trajectories: number;
  transitions: number;
}

/** What a run holds. */
export interface RunCounts {
  tasks: number;
  trajectories: number;
  transitions: number;
  bySource: Record<TrajectorySource, SourceCounts>;
  /** Removed by capacity eviction since the run began. */
  evicted: { trajectories: number; transitions: number };
}

/** Counts plus settings and reward summaries. */
export interface RunStats extends RunCounts {
  runId: string;
  embedderId: string;
  embeddingDim: number;
  maxTransitions: number;
  /** Mean trajectory reward and success rate of the stored trajectories per source (null when none). */
  rewards: Record<TrajectorySource, { meanReward: number | null; successRate: number | null }>;
  latestCheckpoint?: string;
  createdAt: number;
  updatedAt: number;
}

/** A retrieved transition and its cosine similarity to the query. */
export interface RetrievalHit {
  score: number;
  transition: TransitionRecord;
}

/** What a checkpoint is saved from. */
export interface CheckpointInput {
  name: string;
  iteration: number;
  tensors: readonly NamedTensor[];
  optimizer?: { tensors: readonly NamedTensor[]; config?: JsonValue };
  config?: JsonValue;
}

/** A checkpoint without its tensors. */
export interface CheckpointInfo {
  name: string;
  iteration: number;
  createdAt: number;
  tensorCount: number;
  bytes: number;
}

/** One iteration's figures to append. */
export interface MetricInput {
  iteration: number;
  /** Default: now. */
  time?: number;
  values: Record<string, number>;
}

/** A stored record a read left out because it failed validation (see `CorruptRecordError`). */
export interface SkippedRecord {
  /** The object store holding it. */
  store: string;
  /** Its key there. */
  key: IDBValidKey;
  /** What is wrong with it. */
  problem: string;
  /** For a damaged transition: the trajectory left out with it. */
  trajectoryId?: string;
}

/** Options of the reads that walk a run: they skip corrupt records and report each one here. */
export interface ReadOptions {
  /** Called once per corrupt record left out (count them to know how many). */
  onSkip?: (record: SkippedRecord) => void;
}
