/**
 * repairStore (src/replay/repair.ts): lists every corrupt record of the replay database (store,
 * key, why) and removes it, with a dry run that lists only; afterwards the run reads whole
 * again with nothing to skip, and its counters match its records.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { repairStore, type ReplayStore, type SkippedRecord } from '../src/replay/index.ts';
import { createMemoryIndexedDB, openNodeReplayStore } from '../src/replay/node.ts';
import { HashEmbedder, makeTask, makeTrajectory } from './fixtures/replay-data.ts';
import { allRecords, editRecord } from './fixtures/replay-corrupt.ts';

const DIM = 8;
const embedder = new HashEmbedder(DIM);
const stores: ReplayStore[] = [];
let n = 0;

afterEach(async () => {
  for (const s of stores.splice(0)) await s.close();
});

/** a (t0, seqs 0-2), b (t1, 3-5), c (t0, 6-8), d (t2, 9-11), then damage of every kind. */
async function damagedStore(): Promise<{ store: ReplayStore; factory: IDBFactory; name: string }> {
  const factory = createMemoryIndexedDB();
  const name = `replay-repair-${process.pid}-${n++}`;
  const store = await openNodeReplayStore({ name, indexedDB: factory });
  stores.push(store);
  await store.createRun({ id: 'run', embedding: embedder });
  await store.createRun({ id: 'other', embedding: embedder });
  await store.putTasks('run', [makeTask('t0'), makeTask('t1'), makeTask('t2')]);
  await store.putTrajectories('run', [makeTrajectory('a', 't0', 'offline'), makeTrajectory('b', 't1', 'synthetic'), makeTrajectory('c', 't0', 'real'), makeTrajectory('d', 't2', 'real')], { embedder });
  await store.appendMetrics('run', [{ iteration: 0, values: { loss: 1 } }, { iteration: 1, values: { loss: 2 } }]);
  await store.saveCheckpoint('run', { name: 'c1', iteration: 1, tensors: [] });
  await editRecord(factory, name, 'transitions', ['run', 1], ({ embedding: _, ...rest }) => rest); // a: a step without embedding
  await editRecord(factory, name, 'trajectories', ['run', 'c'], (r) => ({ ...r, length: 1000 })); // c: a wrong length
  await editRecord(factory, name, 'tasks', ['run', 't2'], (r) => ({ ...r, task: 'lost' })); // d's task
  await editRecord(factory, name, 'metrics', ['run', 0], (r) => ({ ...r, values: null }));
  await editRecord(factory, name, 'checkpoints', ['run', 'c1'], (r) => ({ ...r, tensors: 7 }));
  await editRecord(factory, name, 'runs', 'run', ({ counters: _, ...rest }) => rest);
  // A transition no trajectory owns, and a task of a run that does not exist.
  const stray = await editRecord(factory, name, 'transitions', ['run', 4], (r) => r);
  const db = await new Promise<IDBDatabase>((resolve) => {
    const req = factory.open(name);
    req.onsuccess = () => resolve(req.result);
  });
  await new Promise<void>((resolve) => {
    const tx = db.transaction(['transitions', 'tasks'], 'readwrite');
    tx.objectStore('transitions').put({ ...stray, seq: 500, trajectoryId: 'nobody' });
    tx.objectStore('tasks').put({ runId: 'ghost', id: 'x', seq: 0, task: makeTask('x'), origin: 'seed', generation: 0, stats: { count: 0, rewardSum: 0, rewardSumSq: 0, successes: 0 }, createdAt: 1 });
    tx.oncomplete = () => resolve();
  });
  db.close();
  return { store, factory, name };
}

const keysOf = (findings: readonly { store: string; key: IDBValidKey }[]): string[] => findings.map((f) => `${f.store} ${JSON.stringify(f.key)}`).sort();

describe('repairStore', () => {
  it('a dry run lists every corrupt record with its store, key and why, and changes nothing', async () => {
    const { store, factory, name } = await damagedStore();
    const before = await Promise.all(['runs', 'tasks', 'trajectories', 'transitions', 'checkpoints', 'metrics'].map((s) => allRecords(factory, name, s)));
    const report = await repairStore(store, { dryRun: true });
    expect(report.dryRun).toBe(true);
    expect(keysOf(report.removed)).toEqual(
      [
        'checkpoints ["run","c1"]',
        'metrics ["run",0]',
        'tasks ["ghost","x"]',
        'tasks ["run","t2"]',
        'trajectories ["run","a"]',
        'trajectories ["run","c"]',
        'trajectories ["run","d"]',
        'transitions ["run",0]',
        'transitions ["run",1]',
        'transitions ["run",2]',
        'transitions ["run",500]',
        'transitions ["run",6]',
        'transitions ["run",7]',
        'transitions ["run",8]',
        'transitions ["run",9]',
        'transitions ["run",10]',
        'transitions ["run",11]',
      ].sort(),
    );
    const why = new Map(report.removed.map((f) => [`${f.store} ${JSON.stringify(f.key)}`, f.problem]));
    expect(why.get('transitions ["run",1]')).toMatch(/embedding/);
    expect(why.get('trajectories ["run","c"]')).toMatch(/stored steps, expected 1000/);
    expect(why.get('transitions ["run",9]')).toMatch(/trajectory "d"/);
    expect(why.get('transitions ["run",6]')).toMatch(/trajectory "c"/);
    expect(why.get('trajectories ["run","d"]')).toMatch(/task "t2"/);
    expect(why.get('transitions ["run",500]')).toMatch(/no trajectory/);
    expect(why.get('tasks ["ghost","x"]')).toMatch(/no run "ghost"/);
    expect(report.rebuilt.map((f) => f.key)).toEqual(['run']);
    const after = await Promise.all(['runs', 'tasks', 'trajectories', 'transitions', 'checkpoints', 'metrics'].map((s) => allRecords(factory, name, s)));
    expect(after).toEqual(before);
  });

  it('removes them: the run reads whole again, counters match, a second pass finds nothing', async () => {
    const { store } = await damagedStore();
    const report = await repairStore(store);
    expect(report.dryRun).toBe(false);
    expect(report.removed).toHaveLength(17);
    const skipped: SkippedRecord[] = [];
    const onSkip = (s: SkippedRecord): number => skipped.push(s);
    expect((await store.getTrajectories({ runId: 'run' }, { onSkip })).map((t) => t.id)).toEqual(['b']);
    expect((await store.getTasks('run', {}, { onSkip })).map((t) => t.id)).toEqual(['t0', 't1']);
    expect((await store.readMetrics('run', {}, { onSkip })).map((m) => m.iteration)).toEqual([1]);
    expect(await store.listCheckpoints('run', { onSkip })).toEqual([]);
    const hits = await store.retrieve((await embedder.embed(['x']))[0] as Float32Array, 10, { runId: 'run' }, { onSkip });
    expect(hits.map((h) => h.transition.seq).sort((x, y) => x - y)).toEqual([3, 4, 5]);
    expect(skipped).toEqual([]);
    expect(await store.counts('run')).toMatchObject({ tasks: 2, trajectories: 1, transitions: 3 });
    expect((await store.stats('run')).latestCheckpoint).toBeUndefined();
    const again = await repairStore(store);
    expect(again.removed).toEqual([]);
    expect(again.rebuilt).toEqual([]);
    // Writes work on the repaired run.
    await store.putTrajectories('run', [makeTrajectory('e', 't0', 'real')], { embedder });
    expect((await store.counts('run')).transitions).toBe(6);
  });

  it('leaves a run that another context trains alone and says so', async () => {
    const { store, factory, name } = await damagedStore();
    // Another store of this process stands for another tab: both use the process's lock manager.
    const trainer = await openNodeReplayStore({ name, indexedDB: factory });
    stores.push(trainer);
    const lock = await trainer.acquireRunLock('run');
    const report = await repairStore(store);
    expect(report.lockedRuns).toEqual(['run']);
    expect(report.removed.every((f) => Array.isArray(f.key) && f.key[0] !== 'run')).toBe(true);
    await lock.release();
  });
});
