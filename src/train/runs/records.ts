/**
 * The page's index of training runs, in its own small IndexedDB database: one record per run
 * with its configuration, status, progress counters and, once evaluated, the held-out result.
 * The replay store (src/replay) keeps the run's data (rollouts, the resume snapshot, metrics);
 * this index is what the page lists, and what it reads on load to find an unfinished run.
 */
import type { SeedFileSummary } from './seed-file.ts';
import { wrap, type DBSchema, type IDBPDatabase } from 'idb';
import type { SimulatorGrounding, TrainingConfig } from '../../train/config.ts';
import type { Interval } from '../../train/evaluate.ts';
import type { SyntheticValidation } from '../../train/validation.ts';

/** The default database name of the run index. */
export const DEFAULT_RUN_INDEX_NAME = 'dreamgym-page-runs';

/**
 * Where a run stands:
 * - `seeding`: the offline seed data is being generated and stored;
 * - `running`: iterations are running (a record left `running` by a closed tab is unfinished);
 * - `paused`: stopped at an iteration boundary by the user, resumable;
 * - `evaluating`: training ended, the held-out evaluation runs;
 * - `done`: evaluated; `failed`: ended by an error (`error` says which).
 */
export const RUN_STATUSES = ['seeding', 'running', 'paused', 'evaluating', 'done', 'failed'] as const;
export type PageRunStatus = (typeof RUN_STATUSES)[number];

/** The held-out evaluation of a run, as stored (per-task outcomes left out). */
export interface StoredRunEvaluation {
  episodes: number;
  successRate: number;
  meanReward: number;
  /** Success rate with its bootstrap 95% interval over tasks. */
  success: Interval;
  reward: Interval;
  /** The completed training iterations the evaluated policy had. */
  iteration: number;
  wallMs: number;
}

/** One run as the page lists it. */
export interface PageRunRecord {
  id: string;
  createdAt: number;
  updatedAt: number;
  config: TrainingConfig;
  status: PageRunStatus;
  /** Completed iterations, and the planned number. */
  iteration: number;
  totalIterations: number;
  /** Online real-environment steps, and the offline transitions the run was grounded on. */
  realTransitions: number;
  offlineTransitions: number;
  trainWallMs: number;
  /** Why training ended before its planned iterations (`user`: the Stop button). */
  stoppedBy?: 'done' | 'real-budget' | 'wall-budget' | 'user';
  /** The synthetic phase's validation inside the simulator (see the training config's `validation`). */
  validation?: SyntheticValidation;
  evaluation?: StoredRunEvaluation;
  error?: string;
  /** Set for a run made from an imported checkpoint file (evaluated, never trained here). */
  imported?: { file: string; updates: number };
  /** The run's offline seed data came from this dreamgym JSONL file (not generated). */
  seedData?: SeedFileSummary;
  /** The run trains on the page's local LLM (WebLLM): it resumes only with these models loaded. */
  llm?: RunLLMModels;
  /** What its retrieval simulator does where the data is thin (synthetic runs on the retrieval model). */
  grounding?: SimulatorGrounding;
}

/** The local LLM models of a run. */
export interface RunLLMModels {
  /** The chat model: experience model, prior and task generator. */
  chatModel: string;
  /** The embedding model of the policy's features, or null for the hashed features. */
  embeddingModel: string | null;
}

/** Statuses of a run that has not reached its end. */
export function isUnfinished(record: Pick<PageRunRecord, 'status'>): boolean {
  return record.status === 'seeding' || record.status === 'running' || record.status === 'paused' || record.status === 'evaluating';
}

interface RunIndexSchema extends DBSchema {
  runs: { key: string; value: PageRunRecord };
}

/** Options of {@link RunIndex.open}. */
export interface OpenRunIndexOptions {
  /** Database name (default {@link DEFAULT_RUN_INDEX_NAME}). */
  name?: string;
  /** The IndexedDB factory (default `globalThis.indexedDB`; fake-indexeddb in Node tests). */
  indexedDB?: IDBFactory;
}

/** Thrown when an update names a run the index does not hold. */
export class UnknownPageRunError extends Error {
  override name = 'UnknownPageRunError';
}

/** The page's run index (see the module comment). */
export class RunIndex {
  private constructor(private readonly db: IDBPDatabase<RunIndexSchema>) {}

  /** Opens (creating when needed) the run index. */
  static async open(options: OpenRunIndexOptions = {}): Promise<RunIndex> {
    const factory = options.indexedDB ?? (globalThis as { indexedDB?: IDBFactory }).indexedDB;
    if (!factory) throw new TypeError('No IndexedDB in this context: pass options.indexedDB');
    const name = options.name ?? DEFAULT_RUN_INDEX_NAME;
    const raw = await new Promise<IDBDatabase>((resolve, reject) => {
      const request = factory.open(name, 1);
      request.onupgradeneeded = () => {
        request.result.createObjectStore('runs', { keyPath: 'id' });
      };
      request.onsuccess = () => resolve(request.result);
      request.onerror = () => reject(request.error ?? new Error(`could not open ${JSON.stringify(name)}`));
    });
    // Another tab upgrading the schema must not wait on this connection.
    raw.onversionchange = () => raw.close();
    return new RunIndex(wrap(raw) as unknown as IDBPDatabase<RunIndexSchema>);
  }

  /** Stores (or replaces) a record. */
  async put(record: PageRunRecord): Promise<void> {
    await this.db.put('runs', record);
  }

  /** The record of `id`, or undefined. */
  async get(id: string): Promise<PageRunRecord | undefined> {
    return this.db.get('runs', id);
  }

  /** Every run, oldest first. */
  async list(): Promise<PageRunRecord[]> {
    const all = await this.db.getAll('runs');
    return all.sort((a, b) => a.createdAt - b.createdAt || a.id.localeCompare(b.id));
  }

  /** Merges `patch` into the record of `id` in one transaction and returns the result. */
  async update(id: string, patch: Partial<Omit<PageRunRecord, 'id' | 'createdAt'>>): Promise<PageRunRecord> {
    const tx = this.db.transaction('runs', 'readwrite');
    const old = await tx.store.get(id);
    if (!old) {
      tx.abort();
      await tx.done.catch(() => undefined);
      throw new UnknownPageRunError(`no run ${JSON.stringify(id)} in the page's run index`);
    }
    const next: PageRunRecord = { ...old, ...patch, id: old.id, createdAt: old.createdAt, updatedAt: Date.now() };
    await tx.store.put(next);
    await tx.done;
    return next;
  }

  /** Removes a record; returns whether it existed. */
  async delete(id: string): Promise<boolean> {
    const tx = this.db.transaction('runs', 'readwrite');
    const existed = (await tx.store.getKey(id)) !== undefined;
    if (existed) await tx.store.delete(id);
    await tx.done;
    return existed;
  }

  /** The most recent unfinished run, if any. */
  async latestUnfinished(): Promise<PageRunRecord | undefined> {
    return (await this.list()).filter(isUnfinished).at(-1);
  }

  close(): void {
    this.db.close();
  }
}

/** A new run id: time-sortable, readable, unique enough for one origin. */
export function newRunId(config: Pick<TrainingConfig, 'env' | 'mode' | 'seed'>, now: Date = new Date(), random: () => number = Math.random): string {
  const pad = (n: number, w = 2): string => String(n).padStart(w, '0');
  const stamp = `${now.getUTCFullYear()}${pad(now.getUTCMonth() + 1)}${pad(now.getUTCDate())}-${pad(now.getUTCHours())}${pad(now.getUTCMinutes())}${pad(now.getUTCSeconds())}`;
  const suffix = Math.floor(random() * 36 ** 4).toString(36).padStart(4, '0');
  return `${stamp}-${config.env}-${config.mode}-s${config.seed}-${suffix}`;
}
