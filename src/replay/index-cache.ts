/**
 * The store's retrieval indexes, one per run: loaded lazily from the database, updated in place
 * by this store's committed writes and evictions, and brought up to date with other contexts'
 * writes (announced over BroadcastChannel) before the next search.
 */
import { transitionProblem } from './records.ts';
import { RetrievalIndex } from './retrieval.ts';
import type { TransitionRecord } from './schema.ts';
import type { SkippedRecord } from './types.ts';

/** What the cache reads from the database. */
export interface IndexSource {
  /** The run's embedding dimension and its current number of transitions (throws for an unknown run). */
  describe(runId: string): Promise<{ dim: number; transitions: number }>;
  /** The run's transitions with seq in [from, to], in seq order, at most `limit`. */
  read(runId: string, from: number, to: number, limit?: number): Promise<TransitionRecord[]>;
}

interface IndexState {
  index: RetrievalIndex | null;
  loading: Promise<RetrievalIndex> | null;
  /** Changes committed while the index was loading, applied once it is loaded. */
  pending: ((index: RetrievalIndex) => void)[];
  /** Seq ranges other contexts added since the index was loaded, fetched before the next search. */
  missing: [number, number][];
  syncing: Promise<void> | null;
  /** Damaged transitions left out of the index (reported with every search). */
  skipped: SkippedRecord[];
}

/** Records fetched per request when loading an index. */
const LOAD_PAGE = 4096;

/**
 * Adds a stored transition to the index. A damaged one (no embedding, a wrong length, a NaN, an
 * unknown source) is left out and recorded instead of failing the whole index; it counts as
 * handled (true) so that loading goes on.
 */
function addRecord(index: RetrievalIndex, r: TransitionRecord, state: IndexState): boolean {
  const problem = transitionProblem(r, index.dim);
  if (problem !== null) {
    state.skipped.push({ store: 'transitions', key: [r.runId, r.seq], problem });
    return true;
  }
  return index.add({ seq: r.seq, source: r.source, taskId: r.taskId, vector: r.embedding });
}

/** Lazily loaded, incrementally synced retrieval indexes by run. */
export class IndexCache {
  private readonly states = new Map<string, IndexState>();

  constructor(private readonly source: IndexSource) {}

  /** The run's index, loading it or fetching other contexts' additions first when needed. */
  async get(runId: string): Promise<RetrievalIndex> {
    let state = this.states.get(runId);
    if (state?.index) {
      if (state.missing.length > 0 || state.syncing) await this.sync(runId, state);
      if (this.states.get(runId) === state && state.index) return state.index;
      state = undefined; // Dropped while syncing: load afresh.
    }
    if (!state) {
      const fresh: IndexState = { index: null, loading: null, pending: [], missing: [], syncing: null, skipped: [] };
      this.states.set(runId, fresh);
      fresh.loading = this.load(runId, fresh);
      state = fresh;
    }
    return state.index ?? (state.loading as Promise<RetrievalIndex>);
  }

  /** Applies a change this store committed, if the run's index is loaded (queued while it loads). */
  apply(runId: string, change: (index: RetrievalIndex) => void): void {
    const state = this.states.get(runId);
    if (!state) return;
    if (state.index) change(state.index);
    else state.pending.push(change);
  }

  /** Another context added transitions with these seq ranges. */
  remoteAdded(runId: string, ranges: readonly [number, number][]): void {
    const state = this.states.get(runId);
    if (state?.index) state.missing.push(...ranges);
    else this.states.delete(runId);
  }

  /** Another context removed transitions with these seq ranges. */
  remoteRemoved(runId: string, ranges: readonly [number, number][]): void {
    const state = this.states.get(runId);
    if (!state?.index) {
      this.states.delete(runId);
      return;
    }
    // Ranges announced as added but not fetched yet may be among these: fetching them then finds nothing.
    for (const [from, to] of ranges) state.index.removeRange(from, to);
  }

  /** The damaged transitions the run's loaded index left out (empty when it is not loaded). */
  skipped(runId: string): readonly SkippedRecord[] {
    return this.states.get(runId)?.skipped ?? [];
  }

  /** Forgets a run's index (it reloads on next use). */
  drop(runId: string): void {
    this.states.delete(runId);
  }

  clear(): void {
    this.states.clear();
  }

  private async load(runId: string, state: IndexState): Promise<RetrievalIndex> {
    try {
      const { dim, transitions } = await this.source.describe(runId);
      const index = new RetrievalIndex(dim, { initialRows: Math.max(1024, transitions) });
      let from = 0;
      for (;;) {
        const page = await this.source.read(runId, from, Number.POSITIVE_INFINITY, LOAD_PAGE);
        for (const r of page) addRecord(index, r, state);
        const last = page[page.length - 1];
        if (page.length < LOAD_PAGE || last === undefined) break;
        from = last.seq + 1;
      }
      for (const change of state.pending) change(index);
      state.pending = [];
      state.index = index;
      return index;
    } catch (err) {
      if (this.states.get(runId) === state) this.states.delete(runId);
      throw err;
    } finally {
      state.loading = null;
    }
  }

  /**
   * Fetches what other contexts added since the index was loaded. Appends it when it comes after
   * everything indexed; otherwise (out of order) drops the index so that the next use reloads it.
   */
  private sync(runId: string, state: IndexState): Promise<void> {
    if (state.syncing) return state.syncing;
    const run = async (): Promise<void> => {
      while (state.missing.length > 0 && this.states.get(runId) === state && state.index) {
        const ranges = state.missing.splice(0).sort((a, b) => a[0] - b[0]);
        const index = state.index;
        for (const [from, to] of ranges) {
          if (to <= index.lastSeq && (index.has(from) || index.has(to))) continue; // Already indexed.
          if (from <= index.lastSeq) {
            this.states.delete(runId);
            return;
          }
          for (const r of await this.source.read(runId, from, to)) {
            // This store's own commits may have appended later seqs while the read was pending:
            // an earlier row can no longer go in order, so reload instead of losing it.
            if (!addRecord(index, r, state) && !index.has(r.seq)) {
              if (this.states.get(runId) === state) this.states.delete(runId);
              return;
            }
          }
        }
      }
    };
    state.syncing = run().finally(() => {
      state.syncing = null;
    });
    return state.syncing;
  }
}
