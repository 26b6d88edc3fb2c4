/**
 * Corrupt records (src/replay/records.ts validators, used by every read of the store): a record
 * damaged behind the store's back is a typed `CorruptRecordError` naming its store and key when
 * it is read on its own, and is skipped and reported (`onSkip`) by every operation that walks a
 * run, so that one bad record never fails the whole run.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { Rng } from '../src/core/rng.ts';
import { CorruptRecordError, exportJsonl, validateJsonl, type ReplayStore, type SkippedRecord } from '../src/replay/index.ts';
import { createMemoryIndexedDB, openNodeReplayStore } from '../src/replay/node.ts';
import { HashEmbedder, makeTask, makeTrajectory } from './fixtures/replay-data.ts';
import { editRecord } from './fixtures/replay-corrupt.ts';

const DIM = 8;
const embedder = new HashEmbedder(DIM);
const stores: ReplayStore[] = [];
let n = 0;

afterEach(async () => {
  for (const s of stores.splice(0)) await s.close();
});

/** A run with three trajectories of 3 steps (a: seqs 0-2, b: 3-5, c: 6-8) on two tasks. */
async function setup(): Promise<{ store: ReplayStore; factory: IDBFactory; name: string }> {
  const factory = createMemoryIndexedDB();
  const name = `replay-records-${process.pid}-${n++}`;
  const store = await openNodeReplayStore({ name, indexedDB: factory });
  stores.push(store);
  await store.createRun({ id: 'run', embedding: embedder });
  await store.putTasks('run', [makeTask('t0'), makeTask('t1')]);
  await store.putTrajectories('run', [makeTrajectory('a', 't0', 'offline'), makeTrajectory('b', 't1', 'synthetic', 3, 0), makeTrajectory('c', 't0', 'real')], { embedder });
  return { store, factory, name };
}

/** A fresh store on the same database (nothing cached from before the damage). */
async function reopen(factory: IDBFactory, name: string): Promise<ReplayStore> {
  const store = await openNodeReplayStore({ name, indexedDB: factory });
  stores.push(store);
  return store;
}

const query = async (text: string): Promise<Float32Array> => (await embedder.embed([text]))[0] as Float32Array;

describe('single-record reads report CorruptRecordError with store and key', () => {
  it('a transition without its embedding', async () => {
    const { store, factory, name } = await setup();
    await editRecord(factory, name, 'transitions', ['run', 4], ({ embedding: _, ...rest }) => rest);
    const err = await store.getTransition('run', 4).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(CorruptRecordError);
    expect((err as CorruptRecordError).store).toBe('transitions');
    expect((err as CorruptRecordError).key).toEqual(['run', 4]);
    expect((err as Error).message).toMatch(/transitions/);
    expect((err as Error).message).toContain('["run",4]');
    expect((err as Error).message).toMatch(/embedding/);
    expect((await store.getTransition('run', 3))?.seq).toBe(3);
  });

  it('a run record whose embedding settings are gone, and a damaged checkpoint', async () => {
    const { store, factory, name } = await setup();
    await store.saveCheckpoint('run', { name: 'c1', iteration: 1, tensors: [{ name: 'w', dtype: 'float32', shape: [2], data: new Float32Array([1, 2]) }] });
    await editRecord(factory, name, 'checkpoints', ['run', 'c1'], (r) => ({ ...r, tensors: 'gone' }));
    const cp = await store.loadCheckpoint('run').catch((e: unknown) => e);
    expect(cp).toBeInstanceOf(CorruptRecordError);
    expect((cp as CorruptRecordError).store).toBe('checkpoints');
    expect((cp as CorruptRecordError).key).toEqual(['run', 'c1']);

    await editRecord(factory, name, 'runs', 'run', ({ embeddingDim: _, ...rest }) => rest);
    const fresh = await reopen(factory, name);
    for (const read of [() => fresh.getRun('run'), () => fresh.counts('run'), () => fresh.stats('run')]) {
      const err = await read().catch((e: unknown) => e);
      expect(err).toBeInstanceOf(CorruptRecordError);
      expect((err as CorruptRecordError).store).toBe('runs');
      expect((err as CorruptRecordError).key).toBe('run');
      expect((err as Error).message).toMatch(/runs.*"run".*embeddingDim/);
    }
    // A put refuses clearly instead of writing next to a record it cannot read.
    await expect(fresh.putTrajectories('run', [makeTrajectory('d', 't0', 'real')], { embedder })).rejects.toThrow(CorruptRecordError);
  });
});

describe('whole-run operations skip and count corrupt records', () => {
  it('retrieve skips a transition without an embedding (it used to throw TypeError)', async () => {
    const { factory, name } = await setup();
    await editRecord(factory, name, 'transitions', ['run', 4], ({ embedding: _, ...rest }) => rest);
    const store = await reopen(factory, name);
    const skipped: SkippedRecord[] = [];
    const hits = await store.retrieve(await query('page 1 of b'), 20, { runId: 'run' }, { onSkip: (s) => skipped.push(s) });
    expect(hits.map((h) => h.transition.seq).sort((x, y) => x - y)).toEqual([0, 1, 2, 3, 5, 6, 7, 8]);
    expect(skipped).toHaveLength(1);
    expect(skipped[0]).toMatchObject({ store: 'transitions', key: ['run', 4] });
    expect(skipped[0]?.problem).toMatch(/embedding/);
    // An embedding of the wrong length or with a NaN is skipped the same way.
    await editRecord(factory, name, 'transitions', ['run', 7], (r) => ({ ...r, embedding: new Float32Array(DIM).fill(Number.NaN) }));
    const again = await reopen(factory, name);
    const later: SkippedRecord[] = [];
    expect(await again.retrieve(await query('page 1 of b'), 20, { runId: 'run' }, { onSkip: (s) => later.push(s) })).toHaveLength(7);
    expect(later.map((s) => s.key)).toEqual([['run', 4], ['run', 7]]);
  });

  it('one deleted transition loses its trajectory only: getTrajectories, getTransitions, sampleTrajectories and export go on', async () => {
    const { factory, name } = await setup();
    await editRecord(factory, name, 'transitions', ['run', 4], () => undefined);
    const store = await reopen(factory, name);
    const skipped: SkippedRecord[] = [];
    const onSkip = (s: SkippedRecord): number => skipped.push(s);
    const all = await store.getTrajectories({ runId: 'run' }, { onSkip });
    expect(all.map((t) => t.id)).toEqual(['a', 'c']);
    expect(skipped).toEqual([{ store: 'trajectories', key: ['run', 'b'], problem: expect.stringMatching(/2 stored steps, expected 3/) as unknown as string }]);
    expect((await store.sampleTrajectories({ runId: 'run' }, 5, { rng: new Rng(1), onSkip })).map((t) => t.id).sort()).toEqual(['a', 'c']);
    expect((await store.getTransitions({ runId: 'run' }, { onSkip })).map((t) => t.seq)).toEqual([0, 1, 2, 6, 7, 8]);
    const exportSkips: [string, string][] = [];
    const parts: string[] = [];
    for await (const line of exportJsonl(store, 'run', { onSkip: (id, why) => exportSkips.push([id, why]) })) parts.push(line);
    expect(exportSkips.map(([id]) => id)).toEqual(['b']);
    expect(exportSkips[0]?.[1]).toMatch(/2 stored steps, expected 3/);
    expect(await validateJsonl(parts.join(''))).toEqual({ tasks: 2, trajectories: 2, lines: 4 });
  });

  it('a trajectory or task record without its seq is reported by export, not dropped silently', async () => {
    const { factory, name } = await setup();
    await editRecord(factory, name, 'trajectories', ['run', 'b'], ({ seq: _, ...rest }) => rest);
    await editRecord(factory, name, 'tasks', ['run', 't1'], ({ seq: _, ...rest }) => rest);
    const store = await reopen(factory, name);
    const records: SkippedRecord[] = [];
    const trajectories: string[] = [];
    const parts: string[] = [];
    for await (const line of exportJsonl(store, 'run', { onSkipRecord: (r) => records.push(r), onSkip: (id) => trajectories.push(id) })) parts.push(line);
    expect(records.map((r) => [r.store, r.key])).toEqual([['tasks', ['run', 't1']], ['trajectories', ['run', 'b']]]);
    expect(records.every((r) => /seq/.test(r.problem))).toBe(true);
    expect(trajectories).toContain('b');
    expect(await validateJsonl(parts.join(''))).toEqual({ tasks: 1, trajectories: 2, lines: 3 });
  });

  it('a wrong trajectory length: sampleTransitions reports it and samples the rest (it returned [] silently)', async () => {
    const { factory, name } = await setup();
    await editRecord(factory, name, 'trajectories', ['run', 'a'], (r) => ({ ...r, length: 1000 }));
    const store = await reopen(factory, name);
    const skipped: SkippedRecord[] = [];
    const sample = await store.sampleTransitions({ runId: 'run' }, 6, { rng: new Rng(3), onSkip: (s) => skipped.push(s) });
    expect(sample.map((t) => t.seq).sort((x, y) => x - y)).toEqual([3, 4, 5, 6, 7, 8]);
    expect(skipped.map((s) => [s.store, s.key])).toEqual([['trajectories', ['run', 'a']]]);
    // A length that is not a count at all is caught by the header's own validation.
    await editRecord(factory, name, 'trajectories', ['run', 'c'], (r) => ({ ...r, length: 'three' }));
    const later: SkippedRecord[] = [];
    expect(await store.sampleTransitions({ runId: 'run' }, 6, { rng: new Rng(3), onSkip: (s) => later.push(s) })).toHaveLength(3);
    expect(later.map((s) => s.key)).toContainEqual(['run', 'c']);
    // Headers alone: 'c' is not a header any more; 'a' looks sound until its steps are read.
    expect((await store.getTrajectoryRecords({ runId: 'run' })).map((h) => h.id)).toEqual(['a', 'b']);
  });

  it('corrupt tasks, metrics and checkpoints are left out of the lists', async () => {
    const { store, factory, name } = await setup();
    await store.appendMetrics('run', [{ iteration: 0, values: { loss: 1 } }, { iteration: 1, values: { loss: 2 } }]);
    await store.saveCheckpoint('run', { name: 'c1', iteration: 1, tensors: [] });
    await store.saveCheckpoint('run', { name: 'c2', iteration: 2, tensors: [] });
    await editRecord(factory, name, 'tasks', ['run', 't1'], (r) => ({ ...r, task: null, stats: null }));
    await editRecord(factory, name, 'metrics', ['run', 0], (r) => ({ ...r, values: 'x' }));
    await editRecord(factory, name, 'checkpoints', ['run', 'c1'], (r) => ({ ...r, iteration: -1 }));
    const skipped: SkippedRecord[] = [];
    const onSkip = (s: SkippedRecord): number => skipped.push(s);
    expect((await store.getTasks('run', {}, { onSkip })).map((t) => t.id)).toEqual(['t0']);
    expect((await store.readMetrics('run', {}, { onSkip })).map((m) => m.iteration)).toEqual([1]);
    expect((await store.listCheckpoints('run', { onSkip })).map((c) => c.name)).toEqual(['c2']);
    expect(skipped.map((s) => s.store)).toEqual(['tasks', 'metrics', 'checkpoints']);
    // Putting the task again replaces the damaged record (it is not kept as the "existing" one).
    await store.putTasks('run', [makeTask('t1')]);
    const later: SkippedRecord[] = [];
    expect((await store.getTasks('run', {}, { onSkip: (s) => later.push(s) })).map((t) => t.id)).toEqual(['t0', 't1']);
    expect(later).toEqual([]);
  });
});

describe('a run record without counters', () => {
  it('is repaired from the data: counts, stats, retrieve and puts work again', async () => {
    const { store: first, factory, name } = await setup();
    const expected = await first.counts('run');
    const stats = await first.stats('run');
    await editRecord(factory, name, 'runs', 'run', ({ counters: _, ...rest }) => rest);
    const store = await reopen(factory, name);
    expect(await store.counts('run')).toEqual(expected);
    expect((await store.stats('run')).rewards).toEqual(stats.rewards);
    expect(await store.retrieve(await query('page 0 of a'), 1, { runId: 'run' })).toHaveLength(1);
    await store.putTrajectories('run', [makeTrajectory('d', 't1', 'real')], { embedder });
    expect((await store.counts('run')).transitions).toBe(12);
    // Bad counters (a string where a count should be) are rebuilt the same way, by a write too.
    await editRecord(factory, name, 'runs', 'run', (r) => ({ ...r, counters: { tasks: 'many' } }));
    const again = await reopen(factory, name);
    await again.putTasks('run', [makeTask('t2')]);
    expect(await again.counts('run')).toMatchObject({ tasks: 3, trajectories: 4, transitions: 12 });
  });
});
