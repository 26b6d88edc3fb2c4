/**
 * Retrieval: the blocked matrix scan equals a brute-force cosine ranking (random vectors,
 * several k, filters, ties, removals), and the store's index stays in sync with writes,
 * evictions and other stores' writes.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { Rng } from '../src/core/rng.ts';
import type { TrajectorySource } from '../src/core/types.ts';
import { EmbeddingDimensionError, RetrievalIndex, type ReplayStore, type SearchHit } from '../src/replay/index.ts';
import { IndexCache } from '../src/replay/index-cache.ts';
import type { TransitionRecord } from '../src/replay/schema.ts';
import { wasmScanAvailable } from '../src/replay/kernel.ts';
import { createMemoryIndexedDB, openNodeReplayStore } from '../src/replay/node.ts';
import { HashEmbedder, makeTask, makeTrajectory, randomUnitVector } from './fixtures/replay-data.ts';

interface RefRow {
  seq: number;
  source: TrajectorySource;
  taskId: string;
  vector: Float32Array;
}

/** The reference: cosine of every row in plain float64, sorted by score then seq. */
function bruteForce(rows: readonly RefRow[], query: Float32Array, k: number, filter: { sources?: TrajectorySource[]; taskIds?: string[] } = {}): SearchHit[] {
  const norm = (v: Float32Array): number => Math.sqrt(v.reduce((s, x) => s + x * x, 0));
  const qn = norm(query);
  return rows
    .filter((r) => (!filter.sources || filter.sources.includes(r.source)) && (!filter.taskIds || filter.taskIds.includes(r.taskId)))
    .map((r) => {
      let dot = 0;
      for (let i = 0; i < query.length; i++) dot += (query[i] as number) * (r.vector[i] as number);
      const rn = norm(r.vector);
      return { seq: r.seq, score: rn === 0 ? 0 : dot / (qn * rn) };
    })
    .sort((a, b) => b.score - a.score || a.seq - b.seq)
    .slice(0, k);
}

function expectSameHits(actual: SearchHit[], expected: SearchHit[]): void {
  expect(actual.map((h) => h.seq)).toEqual(expected.map((h) => h.seq));
  actual.forEach((h, i) => expect(h.score).toBeCloseTo((expected[i] as SearchHit).score, 6));
}

const SOURCES: TrajectorySource[] = ['offline', 'synthetic', 'real'];

function randomRows(rng: Rng, n: number, dim: number): RefRow[] {
  return Array.from({ length: n }, (_, i) => ({
    seq: i * 2 + 1,
    source: SOURCES[i % 3] as TrajectorySource,
    taskId: `t${rng.int(0, 9)}`,
    // Not normalised: the index must normalise.
    vector: randomUnitVector(rng, dim).map((x) => x * (0.5 + rng.next() * 3)),
  }));
}

describe('RetrievalIndex', () => {
  it('uses the WebAssembly SIMD kernel in Node', () => {
    expect(wasmScanAvailable()).toBe(true);
    expect(new RetrievalIndex(8).kernelName).toBe('wasm-simd');
    expect(new RetrievalIndex(8, { kernel: 'js' }).kernelName).toBe('js');
  });

  for (const [dim, kernel] of [
    [7, 'auto'],
    [64, 'auto'],
    [384, 'auto'],
    [7, 'js'],
    [384, 'js'],
  ] as const) {
    it(`equals brute force for random ${dim}-dim vectors at several k (${kernel} kernel)`, () => {
      const rng = new Rng(dim);
      const rows = randomRows(rng, dim === 384 ? 1500 : 3000, dim);
      const index = new RetrievalIndex(dim, { initialRows: 16, kernel }); // small start: exercises growth by doubling
      for (const r of rows) index.add(r);
      expect(index.size).toBe(rows.length);
      const queries = Array.from({ length: 5 }, () => randomUnitVector(rng, dim));
      for (const k of [1, 8, 50, rows.length + 10]) {
        const results = index.search(queries, k);
        queries.forEach((q, i) => expectSameHits(results[i] as SearchHit[], bruteForce(rows, q, k)));
      }
    });
  }

  it('scores every row within 1e-7 of the float64 cosine (float32 storage and products)', () => {
    const rng = new Rng(21);
    const rows = randomRows(rng, 5000, 384);
    const index = new RetrievalIndex(384);
    for (const r of rows) index.add(r);
    const q = randomUnitVector(rng, 384);
    const [all] = index.search([q], rows.length);
    const reference = new Map(bruteForce(rows, q, rows.length).map((h) => [h.seq, h.score]));
    let worst = 0;
    for (const h of all ?? []) worst = Math.max(worst, Math.abs(h.score - (reference.get(h.seq) as number)));
    expect(all).toHaveLength(rows.length);
    expect(worst).toBeLessThan(1e-7);
  });

  it('applies source and task filters exactly like the reference', () => {
    const rng = new Rng(11);
    const rows = randomRows(rng, 2000, 32);
    const index = new RetrievalIndex(32, { initialRows: 100 });
    for (const r of rows) index.add(r);
    const q = randomUnitVector(rng, 32);
    const filters = [{ sources: ['real' as const] }, { taskIds: ['t3', 't7', 'not-there'] }, { sources: ['offline' as const, 'synthetic' as const], taskIds: ['t1'] }, { taskIds: [] }];
    for (const f of filters) {
      const [hits] = index.search([q], 10, f);
      expectSameHits(hits as SearchHit[], bruteForce(rows, q, 10, f));
    }
  });

  it('breaks ties by the smaller seq, deterministically', () => {
    const v = new Float32Array([1, 2, 3, 4, 5]);
    const index = new RetrievalIndex(5);
    for (const seq of [10, 3, 7].sort((a, b) => a - b)) index.add({ seq, source: 'real', taskId: 't', vector: v.map((x) => x * seq) });
    index.add({ seq: 20, source: 'real', taskId: 't', vector: new Float32Array([5, 4, 3, 2, 1]) });
    const [hits] = index.search([v], 2);
    expect(hits?.map((h) => h.seq)).toEqual([3, 7]);
    expect(hits?.[0]?.score).toBeCloseTo(1, 6);
  });

  it('removes ranges (tombstones, then compaction) and still equals brute force', () => {
    const rng = new Rng(5);
    let rows = randomRows(rng, 1000, 24);
    const index = new RetrievalIndex(24);
    for (const r of rows) index.add(r);
    const q = randomUnitVector(rng, 24);
    // Remove 10% (tombstones only), then 40% more (triggers compaction).
    for (const [from, to] of [
      [1, 200],
      [401, 1200],
    ] as const) {
      const expected = rows.filter((r) => r.seq >= from && r.seq <= to).length;
      expect(index.removeRange(from, to)).toBe(expected);
      rows = rows.filter((r) => r.seq < from || r.seq > to);
      expect(index.size).toBe(rows.length);
      const [hits] = index.search([q], 25);
      expectSameHits(hits as SearchHit[], bruteForce(rows, q, 25));
    }
    expect(index.removeRange(1, 200)).toBe(0);
    // Appending after removals keeps working; a seq not above the last is ignored.
    const extra = { seq: 5000, source: 'real' as const, taskId: 'x', vector: q };
    expect(index.add(extra)).toBe(true);
    expect(index.add({ ...extra, seq: 4999 })).toBe(false);
    expect(index.search([q], 1)[0]?.[0]?.seq).toBe(5000);
  });

  it('refuses bad arguments loudly', () => {
    const index = new RetrievalIndex(4);
    expect(() => index.add({ seq: 1, source: 'real', taskId: 't', vector: new Float32Array(3) })).toThrow(/3 components, the index holds 4/);
    expect(() => index.add({ seq: 1, source: 'bogus' as never, taskId: 't', vector: new Float32Array(4) })).toThrow(/"bogus"/);
    expect(() => index.add({ seq: 1, source: 'real', taskId: 't', vector: new Float32Array([0, Number.NaN, 0, 0]) })).toThrow(/NaN/);
    expect(() => index.search([new Float32Array(4)], 1)).toThrow(/zero vector/);
    expect(() => index.search([new Float32Array([1, 0, 0, 0])], 0)).toThrow(/k must be a positive integer, got 0/);
    expect(() => new RetrievalIndex(0)).toThrow(/got 0/);
    expect(() => new RetrievalIndex(4, { kernel: 'gpu' as never })).toThrow(/"gpu"/);
  });

  it('answers a batch larger than the query slots like one query at a time', () => {
    const rng = new Rng(8);
    const rows = randomRows(rng, 500, 20);
    const index = new RetrievalIndex(20);
    for (const r of rows) index.add(r);
    const qs = Array.from({ length: 70 }, () => randomUnitVector(rng, 20));
    const batch = index.search(qs, 5);
    expect(batch).toHaveLength(70);
    qs.forEach((q, i) => expect(batch[i]).toEqual(index.search([q], 5)[0]));
  });
});

describe('ReplayStore.retrieve', () => {
  const DIM = 24;
  const embedder = new HashEmbedder(DIM);
  const stores: ReplayStore[] = [];
  let n = 0;
  afterEach(async () => {
    await Promise.all(stores.splice(0).map((s) => s.close()));
  });

  async function setup(options: { maxTransitions?: number } = {}): Promise<{ store: ReplayStore; factory: IDBFactory; name: string }> {
    const factory = createMemoryIndexedDB();
    const name = `replay-retrieval-${process.pid}-${n++}`;
    const store = await openNodeReplayStore({ name, indexedDB: factory, ...options });
    stores.push(store);
    await store.createRun({ id: 'run', embedding: embedder });
    await store.putTasks('run', ['t0', 't1', 't2'].map((id) => makeTask(id)));
    return { store, factory, name };
  }

  async function reference(store: ReplayStore, query: Float32Array, k: number, filter: { sources?: TrajectorySource[]; taskIds?: string[] } = {}): Promise<SearchHit[]> {
    const rows = (await store.getTransitions({ runId: 'run' })).map((t) => ({ seq: t.seq, source: t.source, taskId: t.taskId, vector: t.embedding }));
    return bruteForce(rows, query, k, filter);
  }

  it('returns the stored transitions ranked as brute force does, for several k and filters', async () => {
    const { store } = await setup();
    const trajectories = Array.from({ length: 40 }, (_, i) => makeTrajectory(`x${i}`, `t${i % 3}`, SOURCES[i % 3] as TrajectorySource, 1 + (i % 5)));
    for (let i = 0; i < trajectories.length; i += 10) await store.putTrajectories('run', trajectories.slice(i, i + 10), { embedder });
    const rng = new Rng(9);
    for (const k of [1, 8, 30]) {
      const q = randomUnitVector(rng, DIM);
      const hits = await store.retrieve(q, k, { runId: 'run' });
      expectSameHits(
        hits.map((h) => ({ seq: h.transition.seq, score: h.score })),
        await reference(store, q, k),
      );
      const filtered = await store.retrieve(q, k, { runId: 'run', source: ['offline', 'real'], taskId: 't1' });
      expectSameHits(
        filtered.map((h) => ({ seq: h.transition.seq, score: h.score })),
        await reference(store, q, k, { sources: ['offline', 'real'], taskIds: ['t1'] }),
      );
    }
    // Querying with a stored transition's own text finds it first with similarity 1.
    const [target] = await store.getTransitions({ runId: 'run', trajectoryId: 'x17' });
    expect(target?.trajectoryId).toBe('x17');
    const [q] = await embedder.embed([`${target?.state}\n>> ${target?.action}`]);
    const [best] = await store.retrieve(q as Float32Array, 1, { runId: 'run' });
    expect(best?.transition.seq).toBe(target?.seq);
    expect(best?.score).toBeCloseTo(1, 6);
    // A batch of queries equals one call each.
    const qs = [randomUnitVector(rng, DIM), randomUnitVector(rng, DIM)];
    const batch = await store.retrieveBatch(qs, 5, { runId: 'run' });
    for (let i = 0; i < qs.length; i++) expect(batch[i]).toEqual(await store.retrieve(qs[i] as Float32Array, 5, { runId: 'run' }));
  });

  it('throws EmbeddingDimensionError for a query of the wrong dimension', async () => {
    const { store } = await setup();
    await expect(store.retrieve(new Float32Array(DIM + 1).fill(1), 3, { runId: 'run' })).rejects.toThrow(EmbeddingDimensionError);
    await expect(store.retrieve(new Float32Array(DIM + 1).fill(1), 3, { runId: 'run' })).rejects.toThrow(/stores 24-dim vectors, the query has 25/);
  });

  it('keeps the index in sync with writes and evictions', async () => {
    const { store } = await setup({ maxTransitions: 10 });
    await store.putTrajectories('run', [makeTrajectory('off', 't0', 'offline', 4), makeTrajectory('s1', 't1', 'synthetic', 3)], { embedder });
    const q = randomUnitVector(new Rng(1), DIM);
    expect(await store.retrieve(q, 100, { runId: 'run' })).toHaveLength(7);
    const index = await store.retrievalIndex('run');
    await store.putTrajectories('run', [makeTrajectory('s2', 't2', 'synthetic', 3)], { embedder }); // 10: fits
    await store.putTrajectories('run', [makeTrajectory('s3', 't2', 'synthetic', 2)], { embedder }); // evicts s1
    expect(await store.retrievalIndex('run')).toBe(index); // updated in place, not reloaded
    const hits = await store.retrieve(q, 100, { runId: 'run' });
    expect(new Set(hits.map((h) => h.transition.trajectoryId))).toEqual(new Set(['off', 's2', 's3']));
    expectSameHits(
      hits.map((h) => ({ seq: h.transition.seq, score: h.score })),
      await reference(store, q, 100),
    );
    await store.deleteTrajectories('run', ['s2']);
    expect((await store.retrieve(q, 100, { runId: 'run' })).map((h) => h.transition.trajectoryId).sort()).toEqual(['off', 'off', 'off', 'off', 's3', 's3']);
  });

  it('loads the index lazily from the database and follows another store’s writes', async () => {
    const { store: writer, factory, name } = await setup({ maxTransitions: 12 });
    await writer.putTrajectories('run', [makeTrajectory('a', 't0', 'offline', 4), makeTrajectory('b', 't1', 'synthetic', 4)], { embedder });
    const reader = await openNodeReplayStore({ name, indexedDB: factory });
    stores.push(reader);
    const q = randomUnitVector(new Rng(2), DIM);
    expect(await reader.retrieve(q, 100, { runId: 'run' })).toHaveLength(8);
    const index = await reader.retrievalIndex('run');

    const events: string[] = [];
    const settled = new Promise<void>((resolve) =>
      reader.subscribe((e) => {
        events.push(`${e.type}:${e.origin}`);
        if (e.type === 'trajectories-added') resolve();
      }),
    );
    await writer.putTrajectories('run', [makeTrajectory('c', 't2', 'synthetic', 4), makeTrajectory('d', 't2', 'synthetic', 2)], { embedder }); // evicts b
    await settled;
    expect(events).toEqual(['trajectories-removed:remote', 'trajectories-added:remote']);
    const hits = await reader.retrieve(q, 100, { runId: 'run' });
    expect(await reader.retrievalIndex('run')).toBe(index); // synced incrementally
    expect(new Set(hits.map((h) => h.transition.trajectoryId))).toEqual(new Set(['a', 'c', 'd']));
    expectSameHits(
      hits.map((h) => ({ seq: h.transition.seq, score: h.score })),
      await reference(reader, q, 100),
    );
  });
});

describe('IndexCache', () => {
  /** A (valid: the index leaves damaged records out) transition record. */
  const record = (seq: number): TransitionRecord => ({
    runId: 'run',
    seq,
    trajectoryId: `t${seq}`,
    taskId: 'task',
    source: 'synthetic',
    step: 0,
    state: 's',
    actions: ['a'],
    action: 'a',
    nextState: null,
    nextActions: null,
    reward: 0,
    done: true,
    valid: true,
    embedding: Float32Array.from([1, seq + 1]),
  });

  it('reloads instead of losing rows when its own commit lands while a remote range is being fetched', async () => {
    // The database: seqs 0..1 at load; another context then adds 2..3; this store then commits 4.
    let rows = [record(0), record(1)];
    let releaseRead: (() => void) | null = null;
    const cache = new IndexCache({
      describe: () => Promise.resolve({ dim: 2, transitions: rows.length }),
      read: async (_runId, from, to, limit) => {
        if (releaseRead === null && from === 2) await new Promise<void>((resolve) => (releaseRead = resolve));
        return rows.filter((r) => r.seq >= from && r.seq <= to).slice(0, limit ?? Number.POSITIVE_INFINITY);
      },
    });
    expect((await cache.get('run')).size).toBe(2);
    rows = [...rows, record(2), record(3)];
    cache.remoteAdded('run', [[2, 3]]);
    const syncing = cache.get('run');
    await new Promise((r) => setTimeout(r, 0)); // the fetch of 2..3 is now pending
    expect(releaseRead).not.toBeNull();
    rows = [...rows, record(4)];
    cache.apply('run', (index) => index.add({ seq: 4, source: 'synthetic', taskId: 'task', vector: Float32Array.from([1, 5]) }));
    (releaseRead as unknown as () => void)();
    await syncing;
    // Rows 2 and 3 could not be appended after 4: the next use must see all five rows.
    const index = await cache.get('run');
    expect([0, 1, 2, 3, 4].map((s) => index.has(s))).toEqual([true, true, true, true, true]);
    expect(index.size).toBe(5);
  });
});
