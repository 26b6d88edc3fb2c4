/**
 * The replay benchmark, runnable wherever the store runs (Node over fake-indexeddb, or a page
 * over Chromium's IndexedDB): insert throughput, top-k retrieval latency at two buffer sizes,
 * and the scan's memory-bandwidth bound. No Node imports here: the browser page
 * (src/bench/replay-page.ts) imports it too. The CLI suites are in replay-node.ts (`replay`) and
 * replay-browser.ts (`replay-browser`).
 */
import { Rng } from '../core/rng.ts';
import type { Task, Trajectory } from '../core/types.ts';
import type { RetrievalIndex } from '../replay/retrieval.ts';
import { openReplayStore, type ReplayStore } from '../replay/store.ts';
import type { BenchRow } from './types.ts';

/** One measured figure (the CLI's BenchRow). */
export type ReplayBenchRow = BenchRow;

/** Options of `benchReplay`. */
export interface ReplayBenchOptions {
  /** The IndexedDB factory to measure. */
  indexedDB: IDBFactory;
  /** Prefix of every row name, e.g. `node/fake-indexeddb` or `chromium/IndexedDB`. */
  label: string;
  /** Embedding dimension (default 384). */
  dim?: number;
  /** Transitions inserted in total (default 100,000). */
  transitions?: number;
  /** Buffer sizes at which retrieval is measured (default 10,000 and the total). */
  retrievalSizes?: number[];
  /** Transitions per transaction (default 1,000). */
  batchTransitions?: number;
  /** Steps per trajectory (default 10). */
  stepsPerTrajectory?: number;
  /** Retrieval queries per size (default 50). */
  queries?: number;
  /** k of top-k (default 8). */
  k?: number;
  /** Progress lines. */
  log?: (line: string) => void;
}

/** The sizes both variants accept (defaults: 100k inserts, 384 dims, retrieval at 10k and 100k). */
export type ReplayBenchSizes = Omit<ReplayBenchOptions, 'indexedDB' | 'label' | 'log'>;

const TASKS = 100;

function quantile(sorted: readonly number[], q: number): number {
  if (sorted.length === 0) return Number.NaN;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1));
  return sorted[i] as number;
}

function median(xs: readonly number[]): number {
  return quantile([...xs].sort((a, b) => a - b), 0.5);
}

function fmt(n: number): string {
  return n.toLocaleString('en-US');
}

/** Random (roughly Gaussian) vectors; not normalised, like a real embedder's raw output would not need to be. */
function randomVector(rng: Rng, dim: number): Float32Array {
  const v = new Float32Array(dim);
  for (let i = 0; i < dim; i++) v[i] = rng.next() + rng.next() + rng.next() - 1.5;
  return v;
}

function makeBatch(rng: Rng, first: number, trajectories: number, steps: number, dim: number): { trajectories: Trajectory[]; embeddings: Float32Array[][] } {
  const out: Trajectory[] = [];
  const embeddings: Float32Array[][] = [];
  for (let i = 0; i < trajectories; i++) {
    const id = first + i;
    const task = `bench-task-${id % TASKS}`;
    out.push({
      id: `bench-${id}`,
      taskId: task,
      env: 'shop',
      source: id % 5 === 0 ? 'offline' : 'synthetic',
      steps: Array.from({ length: steps }, (_, s) => ({
        observation: { text: `[${s}] search results for ${task}: item ${(id * 7 + s) % 997}, item ${(id * 13 + s) % 991}`, actions: [`click[item ${s}]`, 'back', 'next'] },
        action: `click[item ${s}]`,
        reward: s === steps - 1 ? 1 : 0,
        done: s === steps - 1,
        valid: true,
      })),
      reward: 1,
      success: true,
    });
    embeddings.push(Array.from({ length: steps }, () => randomVector(rng, dim)));
  }
  return { trajectories: out, embeddings };
}

/**
 * The engine's own ceiling: raw IndexedDB puts (no store logic) of `count` records, `batch` per
 * transaction, into a scratch database. Returns records per second.
 */
async function rawPutRate(factory: IDBFactory, count: number, batch: number, make: (i: number) => object): Promise<number> {
  const name = `dreamgym-replay-bench-raw-${Date.now()}`;
  const db = await new Promise<IDBDatabase>((resolve, reject) => {
    const req = factory.open(name, 1);
    req.onupgradeneeded = () => req.result.createObjectStore('records', { keyPath: ['runId', 'seq'] });
    req.onsuccess = () => resolve(req.result);
    req.onerror = () => reject(req.error);
  });
  let ms = 0;
  try {
    for (let first = 0; first < count; first += batch) {
      const records = Array.from({ length: Math.min(batch, count - first) }, (_, i) => make(first + i));
      const t0 = performance.now();
      await new Promise<void>((resolve, reject) => {
        const tx = db.transaction('records', 'readwrite', { durability: 'relaxed' });
        const store = tx.objectStore('records');
        for (const r of records) store.put(r);
        tx.oncomplete = () => resolve();
        tx.onabort = () => reject(tx.error);
        tx.commit?.();
      });
      ms += performance.now() - t0;
    }
  } finally {
    db.close();
    await new Promise<void>((resolve) => {
      const req = factory.deleteDatabase(name);
      req.onsuccess = req.onerror = req.onblocked = () => resolve();
    });
  }
  return count / (ms / 1000);
}

async function retrievalRows(store: ReplayStore, index: RetrievalIndex, rng: Rng, label: string, size: number, dim: number, k: number, queries: number): Promise<ReplayBenchRow[]> {
  const qs = Array.from({ length: queries }, () => randomVector(rng, dim));
  // Warm up (JIT) on a few queries first.
  for (const q of qs.slice(0, 3)) await store.retrieve(q, k, { runId: 'bench' });
  // Interleaved per query (retrieve, scan, plain read), so that load changes on a shared machine
  // hit all three alike.
  const full: number[] = [];
  const scan: number[] = [];
  const read: number[] = [];
  let sink = 0;
  for (const q of qs) {
    let t0 = performance.now();
    await store.retrieve(q, k, { runId: 'bench' });
    full.push(performance.now() - t0);
    t0 = performance.now();
    index.search([q], k);
    scan.push(performance.now() - t0);
    t0 = performance.now();
    sink += index.readAll();
    read.push(performance.now() - t0);
  }
  if (!Number.isFinite(sink)) throw new Error(`the memory-read baseline summed to ${sink}`);
  full.sort((a, b) => a - b);
  scan.sort((a, b) => a - b);
  const bytes = index.scanBytes;
  const scanMs = quantile(scan, 0.5);
  const readMs = median(read);
  const at = `${label}: top-${k} at ${fmt(size)} x ${dim}`;
  return [
    { name: `${at}, retrieve() median of ${queries}`, value: quantile(full, 0.5), unit: 'ms', note: 'scan + fetching the k records' },
    { name: `${at}, retrieve() p95 of ${queries}`, value: quantile(full, 0.95), unit: 'ms' },
    { name: `${at}, index scan only, median`, value: scanMs, unit: 'ms', note: `${index.kernelName} kernel` },
    { name: `${at}, index scan only, p95`, value: quantile(scan, 0.95), unit: 'ms' },
    { name: `${at}, bytes scanned / scan time`, value: bytes / (scanMs / 1000) / 1e9, unit: 'GB/s', note: `${fmt(bytes)} bytes per query` },
    {
      name: `${at}, memory-read bound (plain sum over the same matrix)`,
      value: bytes / (readMs / 1000) / 1e9,
      unit: 'GB/s',
      note: `${readMs.toFixed(2)} ms per pass, ${index.kernelName === 'wasm-simd' ? 'SIMD loads' : 'JavaScript loop'}`,
    },
    { name: `${at}, scan time / memory-read time`, value: scanMs / readMs, unit: 'x', note: 'target <= 2' },
  ];
}

/**
 * Inserts `transitions` transitions with `dim`-dim embeddings into a fresh database (batches of
 * `batchTransitions`, one transaction each) and measures retrieval when the buffer holds each
 * of `retrievalSizes`. Deletes its database afterwards.
 */
export async function benchReplay(options: ReplayBenchOptions): Promise<ReplayBenchRow[]> {
  const dim = options.dim ?? 384;
  const total = options.transitions ?? 100_000;
  const steps = options.stepsPerTrajectory ?? 10;
  const batchTransitions = options.batchTransitions ?? 1000;
  const k = options.k ?? 8;
  const queries = options.queries ?? 50;
  const sizes = [...(options.retrievalSizes ?? [10_000, total])].sort((a, b) => a - b);
  const log = options.log ?? (() => undefined);
  const label = options.label;
  if (total % steps !== 0 || batchTransitions % steps !== 0) throw new RangeError(`transitions (${total}) and batchTransitions (${batchTransitions}) must be multiples of stepsPerTrajectory (${steps})`);
  if (sizes.some((s) => s > total || s % batchTransitions !== 0)) throw new RangeError(`retrievalSizes ${JSON.stringify(sizes)} must be multiples of ${batchTransitions} up to ${total}`);

  const name = `dreamgym-replay-bench-${Date.now()}`;
  const store = await openReplayStore({ name, indexedDB: options.indexedDB, maxTransitions: total, broadcast: false });
  const rows: ReplayBenchRow[] = [];
  try {
    await store.createRun({ id: 'bench', embedding: { id: 'bench-random', dim } });
    const tasks: Task[] = Array.from({ length: TASKS }, (_, i) => ({ id: `bench-task-${i}`, env: 'shop', instruction: `buy item ${i}`, goal: { item: i }, split: 'train', origin: 'seed' }));
    await store.putTasks('bench', tasks);
    const rng = new Rng(42);
    const perBatch = batchTransitions / steps;
    let inserted = 0;
    let insertMs = 0;
    let index: RetrievalIndex | null = null;
    for (const size of sizes) {
      while (inserted < size) {
        const batch = makeBatch(rng, inserted / steps, perBatch, steps, dim);
        const t0 = performance.now();
        await store.putTrajectories('bench', batch.trajectories, { embeddings: batch.embeddings });
        insertMs += performance.now() - t0;
        inserted += batchTransitions;
        if (inserted % 20_000 === 0) log(`${label}: inserted ${fmt(inserted)} transitions`);
      }
      if (!index) {
        const t0 = performance.now();
        index = await store.retrievalIndex('bench');
        rows.push({ name: `${label}: load the retrieval index from the database (${fmt(size)} x ${dim})`, value: performance.now() - t0, unit: 'ms', note: 'then kept in sync by the inserts' });
      }
      if (index.size !== size) throw new Error(`the retrieval index holds ${index.size} vectors, expected ${size}`);
      log(`${label}: retrieval at ${fmt(size)}`);
      rows.push(...(await retrievalRows(store, index, rng, label, size, dim, k, queries)));
    }
    // What the engine itself manages, without the store: the ceiling for one record per transition.
    const rawCount = Math.min(20_000, total);
    const rawBatch = Math.min(batchTransitions, rawCount);
    const minimal = await rawPutRate(options.indexedDB, rawCount, rawBatch, (i) => ({ runId: 'raw', seq: i }));
    rows.push({ name: `${label}: engine ceiling, raw put of ${fmt(rawCount)} minimal records {runId, seq}, ${fmt(rawBatch)} per transaction`, value: minimal, unit: 'records/s', note: 'no store logic' });
    const shaped = await rawPutRate(options.indexedDB, rawCount, rawBatch, (i) => ({
      runId: 'raw',
      seq: i,
      trajectoryId: `t${i}`,
      taskId: 'task',
      source: 'synthetic',
      step: 0,
      state: `[0] search results for bench-task-${i % TASKS}: item ${i % 997}, item ${i % 991}`,
      actions: ['click[item 0]', 'back', 'next'],
      action: 'click[item 0]',
      nextState: `[1] search results for bench-task-${i % TASKS}: item ${(i + 1) % 997}`,
      nextActions: ['click[item 1]', 'back', 'next'],
      reward: 0,
      done: false,
      valid: true,
      embedding: randomVector(rng, dim),
    }));
    rows.push({ name: `${label}: engine ceiling, raw put of ${fmt(rawCount)} transition-shaped records (${dim}-dim Float32Array), ${fmt(rawBatch)} per transaction`, value: shaped, unit: 'records/s', note: 'no store logic' });

    // A fresh store (as after a page reload) loads the whole index from the database.
    const cold = await openReplayStore({ name, indexedDB: options.indexedDB, broadcast: false });
    try {
      const t0 = performance.now();
      const loaded = await cold.retrievalIndex('bench');
      rows.push({ name: `${label}: cold load of the retrieval index (fresh store, ${fmt(loaded.size)} x ${dim})`, value: performance.now() - t0, unit: 'ms', note: 'first retrieve() after a reload' });
    } finally {
      await cold.close();
    }
    rows.unshift({
      name: `${label}: insert ${fmt(total)} transitions (${dim}-dim embeddings, ${fmt(batchTransitions)} per transaction)`,
      value: total / (insertMs / 1000),
      unit: 'transitions/s',
      note: `${(insertMs / 1000).toFixed(1)} s; includes validation and keeping the loaded index in sync`,
    });
  } finally {
    await store.close();
    await new Promise<void>((resolve) => {
      const req = options.indexedDB.deleteDatabase(name);
      req.onsuccess = req.onerror = req.onblocked = () => resolve();
    });
  }
  return rows;
}
