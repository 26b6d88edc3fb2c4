/**
 * The replay buffer and run persistence (IndexedDB via idb). Browser- and worker-safe entry;
 * Node callers add `src/replay/node.ts` (fake-indexeddb).
 */
export { openReplayStore, ReplayStore, DEFAULT_MAX_TRANSITIONS } from './store.ts';
export { repairStore, type RepairOptions, type RepairFinding, type RepairReport } from './repair.ts';
export type {
  OpenReplayStoreOptions,
  RunInit,
  PutTrajectoriesOptions,
  PutTrajectoriesResult,
  ReplayFilter,
  TrajectoryFilter,
  TransitionFilter,
  SampleOptions,
  SourceCounts,
  RunCounts,
  RunStats,
  RetrievalHit,
  CheckpointInput,
  CheckpointInfo,
  MetricInput,
  ReadOptions,
  SkippedRecord,
} from './types.ts';
export {
  SCHEMA_VERSION,
  DEFAULT_DB_NAME,
  MIGRATIONS,
  type RunRecord,
  type TaskRecord,
  type TaskStats,
  type TrajectoryRecord,
  type TransitionRecord,
  type CheckpointRecord,
  type MetricRecord,
  type QuarantineRecord,
  type NamedTensor,
  type TensorDtype,
  type TensorData,
} from './schema.ts';
export { RetrievalIndex, type SearchHit, type SearchFilter, type IndexRow } from './retrieval.ts';
export {
  InProcessLockManager,
  runLockName,
  channelName,
  type LockManagerLike,
  type RunLock,
  type ReplayChange,
  type ReplayEvent,
  type ReplayListener,
} from './coordination.ts';
export type { VersionChangeInfo } from './database.ts';
export {
  importJsonl,
  exportJsonl,
  exportJsonlToString,
  validateJsonl,
  type JsonlValidation,
  type JsonlInput,
  type JsonlStream,
  type ImportJsonlOptions,
  type ImportProgress,
  type ImportSummary,
  type ExportJsonlOptions,
} from './jsonl-io.ts';
export {
  ReplayError,
  StorageFullError,
  EmbeddingDimensionError,
  EmbedderMismatchError,
  UnknownRunError,
  RunExistsError,
  UnknownTaskError,
  DuplicateTrajectoryError,
  ReplayValidationError,
  CapacityError,
  RunLockedError,
  StoreClosedError,
  DatabaseBlockedError,
  SchemaTooNewError,
  CheckpointNotFoundError,
  CorruptRecordError,
  isQuotaError,
} from './errors.ts';
