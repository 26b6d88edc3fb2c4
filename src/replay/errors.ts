/**
 * Typed errors of the replay store. Every error a caller may want to handle has its own class
 * (check with `instanceof`); all extend `ReplayError`. IndexedDB failures are mapped here, in
 * one place (`toReplayError`), so that a full disk always surfaces as `StorageFullError`.
 */

/** Base class of every error thrown by `src/replay`. */
export class ReplayError extends Error {
  override name = 'ReplayError';
}

/**
 * The browser refused the write because the origin's storage quota is used up
 * (IndexedDB `QuotaExceededError`). The transaction was rolled back: nothing of the failed
 * write remains. The caller can pause, tell the user, free space (e.g. delete old runs) and retry.
 */
export class StorageFullError extends ReplayError {
  override name = 'StorageFullError';
  constructor(
    /** What was being written, in words (e.g. `putTrajectories(run-1, 40 trajectories)`). */
    readonly operation: string,
    /** The DOMException (or other error) reported by IndexedDB. */
    override readonly cause?: unknown,
  ) {
    super(
      `Browser storage is full: ${operation} was rolled back and nothing of it was saved. ` +
        'Free space (for example delete old runs) or grant persistent storage, then resume.',
    );
  }
}

/** A vector's length differs from the run's embedding dimension. */
export class EmbeddingDimensionError extends ReplayError {
  override name = 'EmbeddingDimensionError';
  constructor(
    readonly runId: string,
    readonly expected: number,
    readonly actual: number,
    /** Where the vector came from (e.g. `query`, `embedder "hash-256"`, `trajectory t1 step 3`). */
    readonly what: string,
  ) {
    super(`Embedding dimension mismatch in run ${JSON.stringify(runId)}: the run stores ${expected}-dim vectors, ${what} has ${actual}`);
  }
}

/** The embedder's id differs from the one the run was created with (vectors would not be comparable). */
export class EmbedderMismatchError extends ReplayError {
  override name = 'EmbedderMismatchError';
  constructor(
    readonly runId: string,
    readonly expected: string,
    readonly actual: string,
  ) {
    super(`Run ${JSON.stringify(runId)} was embedded with ${JSON.stringify(expected)}; got embedder ${JSON.stringify(actual)}`);
  }
}

/**
 * No run with this id: in the replay store, or (with `store` and `known`) in the CLI's run
 * directory, whose message lists the runs it has.
 */
export class UnknownRunError extends ReplayError {
  override name = 'UnknownRunError';
  constructor(
    readonly runId: string,
    readonly store?: string,
    readonly known?: readonly string[],
  ) {
    super(store === undefined ? `No run ${JSON.stringify(runId)} in the replay store` : `unknown run ${JSON.stringify(runId)} in ${store}: ${listRuns(known ?? [])}`);
  }
}

function listRuns(known: readonly string[]): string {
  if (known.length === 0) return 'the store has no runs';
  const more = known.length > 20 ? ` and ${known.length - 20} more` : '';
  return `known runs: ${known.slice(0, 20).join(', ')}${more}`;
}

/** `createRun` with an id that already exists. */
export class RunExistsError extends ReplayError {
  override name = 'RunExistsError';
  constructor(readonly runId: string) {
    super(`Run ${JSON.stringify(runId)} already exists`);
  }
}

/** A trajectory or generated task refers to a task that is neither stored in the run nor in the same write. */
export class UnknownTaskError extends ReplayError {
  override name = 'UnknownTaskError';
  constructor(
    readonly runId: string,
    readonly taskId: string,
    readonly referencedBy: string,
  ) {
    super(`Run ${JSON.stringify(runId)} has no task ${JSON.stringify(taskId)} (referenced by ${referencedBy}); put the task first`);
  }
}

/** A trajectory id that is already stored in the run (or repeated within one write). */
export class DuplicateTrajectoryError extends ReplayError {
  override name = 'DuplicateTrajectoryError';
  constructor(
    readonly runId: string,
    readonly trajectoryId: string,
  ) {
    super(`Run ${JSON.stringify(runId)} already has trajectory ${JSON.stringify(trajectoryId)}`);
  }
}

/** A value failed validation against the Foundation schema or the store's rules. */
export class ReplayValidationError extends ReplayError {
  override name = 'ReplayValidationError';
}

/**
 * A write needs more room than the run's capacity allows even after evicting every evictable
 * (non-pinned) trajectory. Nothing was written.
 */
export class CapacityError extends ReplayError {
  override name = 'CapacityError';
  constructor(
    readonly runId: string,
    readonly maxTransitions: number,
    readonly required: number,
  ) {
    super(
      `Run ${JSON.stringify(runId)} holds at most ${maxTransitions} transitions, but this write needs ${required} ` +
        'after evicting all unpinned data; raise maxTransitions or write less pinned data',
    );
  }
}

/** Another tab, window or worker is training this run (it holds the run's Web Lock). */
export class RunLockedError extends ReplayError {
  override name = 'RunLockedError';
  constructor(readonly runId: string) {
    super(`Run ${JSON.stringify(runId)} is being trained elsewhere (another tab, window or worker holds its lock)`);
  }
}

/** The store was closed (by `close()`, by a newer version opening in another tab, or by the browser). */
export class StoreClosedError extends ReplayError {
  override name = 'StoreClosedError';
  constructor(readonly reason: string) {
    super(`The replay store is closed: ${reason}`);
  }
}

/**
 * Opening (upgrading) the database stayed blocked by another connection that did not close
 * (typically an old tab running an older build). Close other tabs of this page and retry.
 */
export class DatabaseBlockedError extends ReplayError {
  override name = 'DatabaseBlockedError';
  constructor(
    readonly database: string,
    readonly version: number,
    readonly waitedMs: number,
  ) {
    super(
      `Opening database ${JSON.stringify(database)} at version ${version} was blocked for ${waitedMs} ms by another ` +
        'connection (an old tab of this page?). Close other tabs of this page and try again.',
    );
  }
}

/** The database on disk was written by a newer build than this one. */
export class SchemaTooNewError extends ReplayError {
  override name = 'SchemaTooNewError';
  constructor(
    readonly database: string,
    readonly supported: number,
    override readonly cause?: unknown,
  ) {
    super(`Database ${JSON.stringify(database)} was written by a newer version of dreamgym (this build reads up to schema ${supported}); reload the page`);
  }
}

/** No checkpoint under this name (or none at all) in the run. */
export class CheckpointNotFoundError extends ReplayError {
  override name = 'CheckpointNotFoundError';
  constructor(
    readonly runId: string,
    readonly checkpoint: string | undefined,
  ) {
    super(
      checkpoint === undefined
        ? `Run ${JSON.stringify(runId)} has no checkpoint`
        : `Run ${JSON.stringify(runId)} has no checkpoint ${JSON.stringify(checkpoint)}`,
    );
  }
}

/** Whether `error` is (or wraps) IndexedDB's quota failure. */
export function isQuotaError(error: unknown): boolean {
  if (error instanceof StorageFullError) return true;
  if (typeof error !== 'object' || error === null) return false;
  const name = (error as { name?: unknown }).name;
  if (name === 'QuotaExceededError') return true;
  // Some engines report the quota failure as the transaction's error with an unspecific name.
  const message = (error as { message?: unknown }).message;
  return typeof message === 'string' && /quota/i.test(message) && name !== 'AbortError';
}

/**
 * Maps the errors of a failed IndexedDB write to the store's typed errors. Looks at every
 * candidate (the thrown error, the transaction's `error`, the abort event's error): a quota
 * failure anywhere becomes `StorageFullError`; otherwise the first error is returned as is.
 */
export function toReplayError(operation: string, ...candidates: unknown[]): unknown {
  const present = candidates.filter((c) => c !== undefined && c !== null);
  const quota = present.find(isQuotaError);
  if (quota !== undefined) return quota instanceof StorageFullError ? quota : new StorageFullError(operation, quota);
  const typed = present.find((c) => c instanceof ReplayError);
  return typed ?? present[0] ?? new ReplayError(`${operation} failed for an unknown reason`);
}

/** Renders an IndexedDB key for a message: JSON where it can be, else its string form. */
export function formatKey(key: IDBValidKey): string {
  try {
    return JSON.stringify(key) ?? String(key);
  } catch {
    return String(key);
  }
}

/**
 * A stored record is damaged (edited behind the store's back, written by a faulty build, or
 * half-lost): it fails its kind's validation (`src/replay/records.ts`). Thrown by reads of one
 * record; operations that walk a run skip such records and report them (`onSkip`) instead.
 * `repairStore` lists and removes them.
 */
export class CorruptRecordError extends ReplayError {
  override name = 'CorruptRecordError';
  constructor(
    /** The object store holding the record (e.g. `transitions`). */
    readonly store: string,
    /** The record's key in that store (e.g. `["run-1", 42]`). */
    readonly key: IDBValidKey,
    /** What is wrong with it, in words. */
    readonly problem: string,
  ) {
    super(`Corrupt record in store ${JSON.stringify(store)} at key ${formatKey(key)}: ${problem}`);
  }
}
