/**
 * Coordination in Node: the in-process stand-in for Web Locks (one trainer per run) and the
 * change channel between stores. The real Web Locks across a worker are tested in
 * replay.browser.test.ts.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { toJsonl } from '../src/core/jsonl.ts';
import { importJsonl, InProcessLockManager, RunLockedError, runLockName, type ReplayStore } from '../src/replay/index.ts';
import { createMemoryIndexedDB, openNodeReplayStore } from '../src/replay/node.ts';
import { HashEmbedder, makeTask, makeTrajectory } from './fixtures/replay-data.ts';

const embedder = new HashEmbedder(4);
const stores: ReplayStore[] = [];
let n = 0;

async function twoStores(): Promise<[ReplayStore, ReplayStore]> {
  const factory = createMemoryIndexedDB();
  const name = `replay-coord-${process.pid}-${n++}`;
  const a = await openNodeReplayStore({ name, indexedDB: factory });
  const b = await openNodeReplayStore({ name, indexedDB: factory });
  stores.push(a, b);
  await a.createRun({ id: 'run', embedding: embedder });
  return [a, b];
}

afterEach(async () => {
  await Promise.all(stores.splice(0).map((s) => s.close()));
});

describe('InProcessLockManager', () => {
  it('grants one holder, answers null to ifAvailable requests, and queues waiters in order', async () => {
    const locks = new InProcessLockManager();
    const order: string[] = [];
    let releaseFirst: () => void = () => undefined;
    const first = locks.request('x', {}, async (lock) => {
      order.push(`first:${lock?.name}`);
      await new Promise<void>((r) => (releaseFirst = r));
    });
    await Promise.resolve();
    expect(await locks.request('x', { ifAvailable: true }, (lock) => lock)).toBeNull();
    expect(await locks.request('y', { ifAvailable: true }, (lock) => lock?.name)).toBe('y');
    const second = locks.request('x', {}, (lock) => order.push(`second:${lock?.name}`));
    expect((await locks.query()).held.map((l) => l.name)).toEqual(['x']);
    releaseFirst();
    await Promise.all([first, second]);
    expect(order).toEqual(['first:x', 'second:x']);
    expect((await locks.query()).held).toEqual([]);
    await expect(locks.request('', {}, () => 1)).rejects.toThrow(/non-empty/);
    await expect(locks.request('z', { mode: 'shared' as never }, () => 1)).rejects.toThrow(/"shared"/);
  });
});

describe('run locks', () => {
  it('every write to a run locked by another context is refused, and changes nothing; the holder still writes', async () => {
    const [a, b] = await twoStores();
    const lock = await a.acquireRunLock('run');
    await a.putTasks('run', [makeTask('s0')]);
    await a.putTrajectories('run', [makeTrajectory('t0', 's0', 'offline')], { embedder });
    const before = { counts: await b.counts('run'), tasks: await b.getTasks('run') };
    const writes: [string, () => Promise<unknown>][] = [
      ['putTasks', () => b.putTasks('run', [makeTask('s1')])],
      ['putTrajectories', () => b.putTrajectories('run', [makeTrajectory('t1', 's0', 'offline')], { embedder })],
      ['deleteTrajectories', () => b.deleteTrajectories('run', ['t0'])],
      ['evictTrajectories', () => b.evictTrajectories('run', ['t0'])],
      ['deleteTasks', () => b.deleteTasks('run', ['s0'])],
      ['saveCheckpoint', () => b.saveCheckpoint('run', { name: 'c', iteration: 1, tensors: [] })],
      ['deleteCheckpoint', () => b.deleteCheckpoint('run', 'c')],
      ['appendMetrics', () => b.appendMetrics('run', [{ iteration: 1, values: { loss: 1 } }])],
      ['importJsonl', () => importJsonl(b, 'run', toJsonl({ tasks: [makeTask('s2')], trajectories: [] }), { embedder })],
      ['deleteRun', () => b.deleteRun('run')],
    ];
    for (const [name, write] of writes) {
      const err = await write().then(() => null, (e: unknown) => e);
      expect(err, name).toBeInstanceOf(RunLockedError);
    }
    expect({ counts: await b.counts('run'), tasks: await b.getTasks('run') }).toEqual(before);
    await lock.release();
    await b.putTasks('run', [makeTask('s1')]);
    expect((await b.getTasks('run')).map((t) => t.id).sort()).toEqual(['s0', 's1']);
  });

  it('a second trainer of the same run is refused with a clear error until the first releases', async () => {
    const [a, b] = await twoStores();
    const lock = await a.acquireRunLock('run');
    expect(lock.name).toBe(runLockName(a.name, 'run'));
    const err = await b.acquireRunLock('run').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RunLockedError);
    expect((err as Error).message).toBe('Run "run" is being trained elsewhere (another tab, window or worker holds its lock)');
    await expect(a.acquireRunLock('run')).rejects.toThrow(RunLockedError); // not re-entrant either
    expect(await b.isRunLocked('run')).toBe(true);
    // Another run is independent.
    const other = await b.acquireRunLock('other');
    await other.release();

    // Deleting a run that another context trains is refused too.
    await expect(b.deleteRun('run')).rejects.toThrow(RunLockedError);

    await lock.release();
    expect(lock.released).toBe(true);
    expect(await b.isRunLocked('run')).toBe(false);
    const taken = await b.acquireRunLock('run');
    await expect(a.acquireRunLock('run')).rejects.toThrow(RunLockedError);
    // Closing a store releases its locks.
    await b.close();
    const again = await a.acquireRunLock('run');
    await again.release();
    expect(taken.released).toBe(true);
  });

  it('locks are per database', async () => {
    const [a] = await twoStores();
    const [c] = await twoStores();
    const l1 = await a.acquireRunLock('run');
    const l2 = await c.acquireRunLock('run');
    await Promise.all([l1.release(), l2.release()]);
  });
});
