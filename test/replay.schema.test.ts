/**
 * Schema versions: a database written at version 1 opens at version 2 with every record kept
 * (and migrated); the blocked / versionchange handshake does not hang; a newer database is a
 * typed error.
 */
import { wrap, type IDBPDatabase, type IDBPTransaction } from 'idb';
import { describe, expect, it } from 'vitest';
import { transitionText } from '../src/core/embedding.ts';
import type { Trajectory } from '../src/core/types.ts';
import { DatabaseBlockedError, SCHEMA_VERSION, SchemaTooNewError, StoreClosedError } from '../src/replay/index.ts';
import { createMemoryIndexedDB, openNodeReplayStore } from '../src/replay/node.ts';
import { toTransitionRecords } from '../src/replay/records.ts';
import { upgradeDatabase, type ReplayDB, type ReplayStoreName, type RunRecordV1, type TaskRecordV1, type TrajectoryRecordV1 } from '../src/replay/schema.ts';
import { HashEmbedder, makeTask, makeTrajectory } from './fixtures/replay-data.ts';

const DIM = 8;
const embedder = new HashEmbedder(DIM);

function request<T>(req: IDBRequest<T>): Promise<T> {
  return new Promise((resolve, reject) => {
    req.onsuccess = () => resolve(req.result);
    req.onerror = () => reject(req.error);
  });
}

/** Opens the database at an explicit version with the upgrade steps up to it (what an old build did). */
function openAtVersion(factory: IDBFactory, name: string, version: number): Promise<IDBDatabase> {
  return new Promise((resolve, reject) => {
    const req = factory.open(name, version);
    req.onupgradeneeded = (event) => {
      const db = wrap(req.result) as unknown as IDBPDatabase<ReplayDB>;
      const tx = wrap(req.transaction as IDBTransaction) as unknown as IDBPTransaction<ReplayDB, ReplayStoreName[], 'versionchange'>;
      void upgradeDatabase(db, tx, event.oldVersion, version);
    };
    req.onsuccess = () => resolve(req.result);
    req.onerror = () => reject(req.error);
  });
}

/** Writes what version 1 of the store wrote for a small run. */
async function writeVersion1(db: IDBDatabase, runId: string): Promise<{ trajectories: Trajectory[] }> {
  const trajectories = [makeTrajectory('off', 't0', 'offline', 3, 1), makeTrajectory('syn', 't1', 'synthetic', 2, 0), makeTrajectory('real', 't0', 'real', 2, 1)];
  const tx = db.transaction(['runs', 'tasks', 'trajectories', 'transitions', 'checkpoints', 'metrics'], 'readwrite');
  const run: RunRecordV1 = {
    id: runId,
    createdAt: 1,
    updatedAt: 2,
    embedderId: embedder.id,
    embeddingDim: DIM,
    next: { task: 2, trajectory: 3, transition: 7 },
    latestCheckpoint: 'c1',
  };
  tx.objectStore('runs').put(run);
  ['t0', 't1'].forEach((id, seq) => {
    const task: TaskRecordV1 = { runId, id, seq, task: makeTask(id), origin: 'seed', generation: 0, stats: { count: 1, rewardSum: 1, rewardSumSq: 1, successes: 1 }, createdAt: 1 };
    tx.objectStore('tasks').put(task);
  });
  let step = 0;
  for (const [seq, t] of trajectories.entries()) {
    const header: TrajectoryRecordV1 = {
      runId,
      id: t.id,
      seq,
      taskId: t.taskId,
      env: t.env,
      source: t.source,
      reward: t.reward,
      success: t.success,
      length: t.steps.length,
      firstStep: step,
      createdAt: 1,
    };
    tx.objectStore('trajectories').put(header);
    const vectors = await embedder.embed(t.steps.map((s) => transitionText(s.observation.text, s.action)));
    for (const r of toTransitionRecords(runId, t, step, vectors)) tx.objectStore('transitions').put(r);
    step += t.steps.length;
  }
  tx.objectStore('checkpoints').put({ runId, name: 'c1', iteration: 5, createdAt: 1, tensors: [{ name: 'w', dtype: 'float32', shape: [2], data: new Float32Array([1, 2]) }], optimizer: { tensors: [] } });
  tx.objectStore('metrics').put({ runId, iteration: 0, time: 1, values: { loss: 1 } });
  await new Promise<void>((resolve, reject) => {
    tx.oncomplete = () => resolve();
    tx.onerror = () => reject(tx.error);
  });
  return { trajectories };
}

async function dumpAll(db: IDBDatabase): Promise<Record<string, unknown[]>> {
  const names = [...db.objectStoreNames];
  const tx = db.transaction(names, 'readonly');
  const out: Record<string, unknown[]> = {};
  for (const name of names) out[name] = await request(tx.objectStore(name).getAll());
  return out;
}

let n = 0;
const uniqueName = (): string => `replay-schema-${process.pid}-${n++}`;

describe('schema upgrade', () => {
  it('is at version 3', () => {
    expect(SCHEMA_VERSION).toBe(3);
  });

  it('opens a version-1 database at the current version keeping every record', async () => {
    const factory = createMemoryIndexedDB();
    const name = uniqueName();
    const v1 = await openAtVersion(factory, name, 1);
    expect(v1.version).toBe(1);
    expect([...v1.transaction('trajectories').objectStore('trajectories').indexNames]).not.toContain('by-evict');
    const { trajectories } = await writeVersion1(v1, 'run');
    await writeVersion1(v1, 'run2');
    const before = await dumpAll(v1);
    v1.close();

    const store = await openNodeReplayStore({ name, indexedDB: factory, maxTransitions: 8 });
    expect(store.version).toBe(3);
    // Every version-1 record is still there, field for field (version 2 only adds fields).
    const raw = await openAtVersion(factory, name, 3);
    const after = await dumpAll(raw);
    raw.close();
    expect(after.quarantine).toEqual([]);
    for (const [storeName, records] of Object.entries(before)) {
      expect(after[storeName]).toHaveLength(records.length);
      records.forEach((record, i) => expect(after[storeName]?.[i]).toMatchObject(record as object));
    }
    // Migrated fields: pinning, eviction rank, counters.
    const headers = await store.getTrajectoryRecords({ runId: 'run' });
    expect(headers.map((h) => [h.id, h.pinned, h.evictRank])).toEqual([
      ['off', true, undefined],
      ['syn', false, 0],
      ['real', false, 1],
    ]);
    expect(await store.counts('run')).toEqual({
      tasks: 2,
      trajectories: 3,
      transitions: 7,
      bySource: { offline: { trajectories: 1, transitions: 3 }, synthetic: { trajectories: 1, transitions: 2 }, real: { trajectories: 1, transitions: 2 } },
      evicted: { trajectories: 0, transitions: 0 },
    });
    expect((await store.stats('run')).rewards.offline).toEqual({ meanReward: 1, successRate: 1 });
    expect(await store.getTrajectories({ runId: 'run' })).toEqual(trajectories);
    expect((await store.getTasks('run', { origin: 'seed' })).map((t) => t.id)).toEqual(['t0', 't1']); // new index
    expect((await store.loadCheckpoint('run')).tensors[0]?.data).toEqual(new Float32Array([1, 2]));
    expect(await store.readMetrics('run')).toHaveLength(1);

    // The new eviction index works on migrated data: +2 synthetic with capacity 8 evicts 'syn'.
    await store.putTasks('run', [makeTask('t2')]);
    const r = await store.putTrajectories('run', [makeTrajectory('new', 't2', 'synthetic', 2)], { embedder });
    expect(r.evicted.trajectoryIds).toEqual(['syn']);
    // Sequence numbers continue after the migrated ones.
    expect((await store.getTrajectoryRecords({ runId: 'run', ids: ['new'] }))[0]?.firstStep).toBe(7);
    await store.close();
  });

  it('an upgrade that meets a bad record quarantines it (with its steps) and completes; later opens work', async () => {
    const factory = createMemoryIndexedDB();
    const name = uniqueName();
    const v1 = await openAtVersion(factory, name, 1);
    const { trajectories } = await writeVersion1(v1, 'run');
    // An unknown source on 'syn' (seqs 3-4) used to fail the upgrade, and with it every later open.
    await new Promise<void>((resolve, reject) => {
      const tx = v1.transaction('trajectories', 'readwrite');
      const os = tx.objectStore('trajectories');
      const get = os.get(['run', 'syn']);
      get.onsuccess = () => os.put({ ...get.result, source: 'dreamt' });
      tx.oncomplete = () => resolve();
      tx.onerror = () => reject(tx.error);
    });
    v1.close();

    const store = await openNodeReplayStore({ name, indexedDB: factory });
    expect(store.version).toBe(SCHEMA_VERSION);
    expect((await store.getTrajectories({ runId: 'run' })).map((t) => t.id)).toEqual(['off', 'real']);
    expect(await store.getTrajectories({ runId: 'run' })).toEqual([trajectories[0], trajectories[2]]);
    expect(await store.counts('run')).toMatchObject({ trajectories: 2, transitions: 5 });
    const quarantined = await store.listQuarantine();
    expect(quarantined.map((q) => [q.store, q.key])).toEqual([
      ['trajectories', ['run', 'syn']],
      ['transitions', ['run', 3]],
      ['transitions', ['run', 4]],
    ]);
    expect(quarantined[0]?.problem).toMatch(/source/);
    expect(quarantined[0]?.record).toMatchObject({ id: 'syn', source: 'dreamt' });
    expect(quarantined[0]?.version).toBe(2);
    expect((await store.getTransitions({ runId: 'run' })).map((t) => t.seq)).toEqual([0, 1, 2, 5, 6]);
    await store.close();
    // Later opens work (the database is at the current version).
    const again = await openNodeReplayStore({ name, indexedDB: factory });
    expect((await again.counts('run')).trajectories).toBe(2);
    await again.close();
  });

  it('a database from a newer build is a typed error', async () => {
    const factory = createMemoryIndexedDB();
    const name = uniqueName();
    const future = await openAtVersion(factory, name, SCHEMA_VERSION + 1);
    future.close();
    await expect(openNodeReplayStore({ name, indexedDB: factory })).rejects.toThrow(SchemaTooNewError);
  });
});

describe('blocked and versionchange', () => {
  it('an open store closes itself when a newer version opens elsewhere, and says so', async () => {
    const factory = createMemoryIndexedDB();
    const name = uniqueName();
    const reasons: string[] = [];
    const store = await openNodeReplayStore({ name, indexedDB: factory, onClosed: (r) => reasons.push(r) });
    await store.createRun({ id: 'run', embedding: embedder });
    const newer = await openAtVersion(factory, name, SCHEMA_VERSION + 1); // would hang if the store kept its connection
    expect(newer.version).toBe(SCHEMA_VERSION + 1);
    expect(store.closed).toBe(true);
    expect(reasons).toHaveLength(1);
    expect(reasons[0]).toMatch(/newer version/);
    await expect(store.counts('run')).rejects.toThrow(StoreClosedError);
    newer.close();
  });

  it('an upgrade blocked by an old connection that never closes gives up with DatabaseBlockedError', async () => {
    const factory = createMemoryIndexedDB();
    const name = uniqueName();
    const old = await openAtVersion(factory, name, 1); // an old tab without a versionchange handler
    await writeVersion1(old, 'run');
    const blocked: { oldVersion: number; newVersion: number | null }[] = [];
    const started = Date.now();
    const err = await openNodeReplayStore({ name, indexedDB: factory, blockedTimeoutMs: 150, onBlocked: (info) => blocked.push(info) }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(DatabaseBlockedError);
    expect(Date.now() - started).toBeGreaterThanOrEqual(140);
    expect(blocked).toEqual([{ oldVersion: 1, newVersion: 3 }]);
    // The old tab goes away: the abandoned open completes in the background and closes itself,
    // so a new attempt is not blocked by it.
    old.close();
    const store = await openNodeReplayStore({ name, indexedDB: factory, blockedTimeoutMs: 1000 });
    expect(store.version).toBe(3);
    expect((await store.counts('run')).transitions).toBe(7);
    await store.close();
  });
});
