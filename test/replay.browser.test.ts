/**
 * The replay store in headless Chromium with the real IndexedDB, Web Locks and BroadcastChannel:
 * CRUD and retrieval, one trainer per run across a dedicated worker, change events from the
 * worker, and quota failures (a real one under a lowered quota, and stubbed ones) that surface
 * as StorageFullError with nothing written.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { Rng } from '../src/core/rng.ts';
import { CorruptRecordError, openReplayStore, repairStore, RunLockedError, StorageFullError, type ReplayEvent, type ReplayStore, type SkippedRecord } from '../src/replay/index.ts';
import { HashEmbedder, makeTask, makeTrajectory, randomUnitVector } from './fixtures/replay-data.ts';
import { editRecord } from './fixtures/replay-corrupt.ts';

/** The part of the Storage Buckets API used here (not yet in TypeScript's DOM types). */
interface StorageBucketManagerLike {
  open(name: string, options?: { quota?: number; persisted?: boolean }): Promise<{ indexedDB: IDBFactory }>;
  delete(name: string): Promise<void>;
}

const DIM = 32;
const embedder = new HashEmbedder(DIM);
const cleanup: (() => Promise<void> | void)[] = [];
let n = 0;

function dbName(): string {
  return `replay-browser-${Date.now()}-${n++}`;
}

async function storeWithRun(name = dbName(), dim = DIM): Promise<ReplayStore> {
  const store = await openReplayStore({ name });
  cleanup.push(async () => {
    await store.close();
    await new Promise<void>((resolve) => {
      const req = indexedDB.deleteDatabase(name);
      req.onsuccess = req.onerror = req.onblocked = () => resolve();
    });
  });
  await store.createRun({ id: 'run', embedding: { id: embedder.id, dim } });
  await store.putTasks('run', [makeTask('t0'), makeTask('t1')]);
  return store;
}

afterEach(async () => {
  for (const f of cleanup.splice(0).reverse()) await f();
});

/** A worker running the replay store, driven by request/response messages. */
function startWorker(): { call: (cmd: string, args?: Record<string, unknown>) => Promise<unknown>; terminate: () => void } {
  const worker = new Worker(new URL('./fixtures/replay-lock.worker.ts', import.meta.url), { type: 'module' });
  let next = 0;
  const pending = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();
  worker.onmessage = (event: MessageEvent<{ id: number; ok: boolean; value?: unknown; error?: { name: string; message: string } }>) => {
    const { id, ok, value, error } = event.data;
    const p = pending.get(id);
    pending.delete(id);
    if (!p) return;
    if (ok) p.resolve(value);
    else p.reject(Object.assign(new Error(error?.message), { name: error?.name }));
  };
  worker.onerror = (event) => {
    for (const p of pending.values()) p.reject(new Error(`worker error: ${event.message}`));
    pending.clear();
  };
  const call = (cmd: string, args: Record<string, unknown> = {}): Promise<unknown> =>
    new Promise((resolve, reject) => {
      const id = next++;
      pending.set(id, { resolve, reject });
      worker.postMessage({ id, cmd, ...args });
    });
  let terminated = false;
  const terminate = (): void => {
    if (!terminated) worker.terminate();
    terminated = true;
  };
  cleanup.push(terminate);
  return { call, terminate };
}

describe('replay store on real IndexedDB', () => {
  it('stores, reads back, retrieves and counts', async () => {
    const store = await storeWithRun();
    const trajectories = [makeTrajectory('a', 't0', 'offline', 3), makeTrajectory('b', 't1', 'synthetic', 4, 0)];
    await store.putTrajectories('run', trajectories, { embedder });
    expect(await store.getTrajectories({ runId: 'run' })).toEqual(trajectories);
    expect((await store.counts('run')).transitions).toBe(7);
    const [stored] = await store.getTransitions({ runId: 'run', trajectoryId: 'b' });
    expect(stored?.embedding).toBeInstanceOf(Float32Array);
    const [q] = await embedder.embed([`${stored?.state}\n>> ${stored?.action}`]);
    const [best] = await store.retrieve(q as Float32Array, 1, { runId: 'run' });
    expect(best?.transition.seq).toBe(stored?.seq);
    expect((await store.retrievalIndex('run')).kernelName).toBe('wasm-simd');
    const sample = await store.sampleTransitions({ runId: 'run', source: 'synthetic' }, 2, { rng: new Rng(1) });
    expect(sample.map((t) => t.trajectoryId)).toEqual(['b', 'b']);
  });
});

describe('coordination across a dedicated worker', () => {
  it('the Web Lock refuses a second trainer while the worker trains the run, and frees it when the worker ends', async () => {
    const name = dbName();
    const store = await storeWithRun(name);
    const worker = startWorker();
    await worker.call('open', { db: name });
    expect(await worker.call('lock', { runId: 'run' })).toMatch(/run:run$/);

    const err = await store.acquireRunLock('run').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RunLockedError);
    expect((err as Error).message).toMatch(/being trained elsewhere/);
    expect(await store.isRunLocked('run')).toBe(true);

    await worker.call('release');
    const mine = await store.acquireRunLock('run');
    await expect(worker.call('lock', { runId: 'run' })).rejects.toMatchObject({ name: 'RunLockedError' });
    await mine.release();

    // A worker that dies holding the lock does not keep it.
    expect(await worker.call('lock', { runId: 'run' })).toBeTruthy();
    await expect(store.acquireRunLock('run')).rejects.toThrow(RunLockedError);
    worker.terminate();
    let lock = null;
    for (let i = 0; i < 100 && lock === null; i++) {
      lock = await store.acquireRunLock('run').catch(() => null);
      if (lock === null) await new Promise((r) => setTimeout(r, 20));
    }
    expect(lock).not.toBeNull();
    await lock?.release();
  });

  it('announces the worker’s writes over BroadcastChannel and retrieval sees them', async () => {
    const name = dbName();
    const store = await storeWithRun(name);
    await store.putTrajectories('run', [makeTrajectory('mine', 't0', 'offline', 2)], { embedder });
    const q = randomUnitVector(new Rng(3), DIM);
    expect(await store.retrieve(q, 50, { runId: 'run' })).toHaveLength(2); // index loaded
    const worker = startWorker();
    await worker.call('open', { db: name });
    const added = new Promise<ReplayEvent>((resolve) =>
      store.subscribe((e) => {
        if (e.type === 'trajectories-added') resolve(e);
      }),
    );
    expect(await worker.call('write', { runId: 'run', trajectoryId: 'theirs', taskId: 't1', dim: DIM })).toEqual(['theirs']);
    expect(await added).toMatchObject({ origin: 'remote', runId: 'run', trajectoryIds: ['theirs'], transitions: { synthetic: 3 } });
    const hits = await store.retrieve(q, 50, { runId: 'run' });
    expect(hits.map((h) => h.transition.trajectoryId).sort()).toEqual(['mine', 'mine', 'theirs', 'theirs', 'theirs']);
    await worker.call('close');
  });
});

describe('quota failures', () => {
  async function expectNothingWritten(store: ReplayStore, before: unknown): Promise<void> {
    expect({ counts: await store.counts('run'), ids: (await store.getTrajectoryRecords({ runId: 'run' })).map((h) => h.id) }).toEqual(before);
  }

  it('a real QuotaExceededError (a storage bucket with a small quota) becomes StorageFullError, rolled back', async () => {
    // Chromium enforces a Storage Bucket's own quota on IndexedDB commits, so this is the
    // engine's real failure, not a stub; the bucket's IDBFactory is injected into the store.
    const buckets = (navigator as unknown as { storageBuckets?: StorageBucketManagerLike }).storageBuckets;
    expect(buckets, 'Storage Buckets API').toBeDefined();
    const bucketName = `replay-quota-${Date.now()}`;
    const bucket = await (buckets as StorageBucketManagerLike).open(bucketName, { quota: 2 * 1024 * 1024 });
    cleanup.push(() => (buckets as StorageBucketManagerLike).delete(bucketName));
    const dim = 1024; // 4 KiB per vector
    const big = new HashEmbedder(dim, embedder.id);
    const store = await openReplayStore({ name: dbName(), indexedDB: bucket.indexedDB });
    cleanup.push(() => store.close());
    await store.createRun({ id: 'run', embedding: big });
    await store.putTasks('run', [makeTask('t0'), makeTask('t1')]);
    await store.putTrajectories('run', [makeTrajectory('small', 't0', 'offline', 2)], { embedder: big });
    const before = { counts: await store.counts('run'), ids: ['small'] };

    // About 2.5 MB of (incompressible, random) vectors in one batch: over the bucket's 2 MiB.
    const batch = Array.from({ length: 20 }, (_, i) => makeTrajectory(`big${i}`, 't1', 'synthetic', 30));
    const err = await store.putTrajectories('run', batch, { embedder: big }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(StorageFullError);
    expect(((err as StorageFullError).cause as DOMException).name).toBe('QuotaExceededError');
    await expectNothingWritten(store, before);
    // Reads still work (the page can show what is stored while it tells the user). Chromium keeps
    // counting the aborted transaction's bytes in the bucket's usage, so further writes to this
    // bucket fail until space is freed: the caller must pause, which is what the error asks for.
    expect((await store.getTrajectories({ runId: 'run' })).map((t) => t.id)).toEqual(['small']);
  });

  it('a put that throws QuotaExceededError midway, or a transaction aborted with it, leaves nothing', async () => {
    const store = await storeWithRun();
    await store.putTrajectories('run', [makeTrajectory('old', 't0', 'offline', 2)], { embedder });
    const before = { counts: await store.counts('run'), ids: ['old'] };
    const original = IDBObjectStore.prototype.put;
    cleanup.push(() => {
      IDBObjectStore.prototype.put = original;
    });
    for (const mode of ['throw', 'abort'] as const) {
      let calls = 0;
      IDBObjectStore.prototype.put = function (this: IDBObjectStore, value: unknown, key?: IDBValidKey) {
        if (this.name === 'transitions' && ++calls === 5) {
          const quota = new DOMException('Quota exceeded (stub)', 'QuotaExceededError');
          if (mode === 'throw') throw quota;
          const request = original.call(this, value, key);
          const tx = this.transaction;
          Object.defineProperty(tx, 'error', { value: quota, configurable: true });
          tx.abort();
          return request;
        }
        return original.call(this, value, key);
      };
      const batch = [makeTrajectory('a', 't0', 'synthetic', 3), makeTrajectory('b', 't1', 'synthetic', 3)];
      const err = await store.putTrajectories('run', batch, { embedder }).catch((e: unknown) => e);
      IDBObjectStore.prototype.put = original;
      expect(err, mode).toBeInstanceOf(StorageFullError);
      expect(calls, mode).toBeGreaterThanOrEqual(5); // 'abort': the next put finds the transaction inactive
      await expectNothingWritten(store, before);
    }
  });
});

describe('corrupt records in real IndexedDB', () => {
  it('a damaged embedding, a deleted step and a run without counters: reads go on, repairStore removes them, the store recovers', async () => {
    const name = dbName();
    const store = await storeWithRun(name);
    await store.putTrajectories('run', [makeTrajectory('a', 't0', 'offline', 3), makeTrajectory('b', 't1', 'synthetic', 3, 0), makeTrajectory('c', 't0', 'real', 3)], { embedder });
    // Edited behind the store's back, as in devtools: b's step 1 loses its embedding, c's step 0 goes, the run its counters.
    await editRecord(indexedDB, name, 'transitions', ['run', 4], ({ embedding: _, ...rest }) => rest);
    await editRecord(indexedDB, name, 'transitions', ['run', 6], () => undefined);
    await editRecord(indexedDB, name, 'runs', 'run', ({ counters: _, ...rest }) => rest);
    const fresh = await openReplayStore({ name });
    cleanup.push(() => fresh.close());
    const skipped: SkippedRecord[] = [];
    const onSkip = (r: SkippedRecord): number => skipped.push(r);
    await expect(fresh.getTransition('run', 4)).rejects.toThrow(CorruptRecordError);
    const hits = await fresh.retrieve(await embedder.embed(['page 1 of b']).then((v) => v[0] as Float32Array), 20, { runId: 'run' }, { onSkip });
    expect(hits.map((h) => h.transition.seq)).not.toContain(4);
    expect((await fresh.getTrajectories({ runId: 'run' }, { onSkip })).map((t) => t.id)).toEqual(['a']);
    expect(skipped.map((r) => `${r.store} ${JSON.stringify(r.key)}`)).toEqual(['transitions ["run",4]', 'transitions ["run",4]', 'trajectories ["run","c"]']);
    expect(await fresh.counts('run')).toMatchObject({ trajectories: 3, transitions: 9 });

    const dry = await repairStore(fresh, { dryRun: true });
    expect(dry.removed.length).toBeGreaterThan(0);
    const report = await repairStore(fresh);
    expect(report.removed.map((r) => `${r.store} ${JSON.stringify(r.key)}`).sort()).toEqual(
      ['trajectories ["run","b"]', 'trajectories ["run","c"]', 'transitions ["run",3]', 'transitions ["run",4]', 'transitions ["run",5]', 'transitions ["run",7]', 'transitions ["run",8]'].sort(),
    );
    const after: SkippedRecord[] = [];
    expect((await fresh.getTrajectories({ runId: 'run' }, { onSkip: (r) => after.push(r) })).map((t) => t.id)).toEqual(['a']);
    expect(await fresh.retrieve(randomUnitVector(new Rng(1), DIM), 20, { runId: 'run' }, { onSkip: (r) => after.push(r) })).toHaveLength(3);
    expect(after).toEqual([]);
    expect(await fresh.counts('run')).toMatchObject({ trajectories: 1, transitions: 3 });
    await fresh.putTrajectories('run', [makeTrajectory('d', 't1', 'real', 2)], { embedder });
    expect((await fresh.counts('run')).transitions).toBe(5);
  });
});
