/**
 * The replay store over fake-indexeddb: runs, tasks with lineage, trajectories and transitions,
 * filters, sampling, counts, capacity eviction and pinning, all-or-nothing batches (including a
 * quota failure midway), checkpoints, metrics, change events and closing.
 */
import { IDBObjectStore as FakeObjectStore } from 'fake-indexeddb';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { Rng } from '../src/core/rng.ts';
import type { Trajectory } from '../src/core/types.ts';
import {
  CapacityError,
  CheckpointNotFoundError,
  DuplicateTrajectoryError,
  EmbedderMismatchError,
  EmbeddingDimensionError,
  ReplayValidationError,
  RunExistsError,
  StorageFullError,
  StoreClosedError,
  UnknownRunError,
  UnknownTaskError,
  type ReplayEvent,
  type ReplayStore,
} from '../src/replay/index.ts';
import { createMemoryIndexedDB, openNodeReplayStore } from '../src/replay/node.ts';
import { HashEmbedder, makeTask, makeTrajectory } from './fixtures/replay-data.ts';

const DIM = 16;
const embedder = new HashEmbedder(DIM);
let counter = 0;
const uniqueName = (): string => `replay-store-test-${process.pid}-${counter++}`;
const open: ReplayStore[] = [];

async function freshStore(options: Parameters<typeof openNodeReplayStore>[0] = {}): Promise<ReplayStore> {
  const store = await openNodeReplayStore({ name: uniqueName(), ...options });
  open.push(store);
  return store;
}

async function storeWithRun(options: Parameters<typeof openNodeReplayStore>[0] = {}, tasks = ['t0', 't1', 't2']): Promise<ReplayStore> {
  const store = await freshStore(options);
  await store.createRun({ id: 'run', embedding: embedder });
  await store.putTasks('run', tasks.map((id) => makeTask(id)));
  return store;
}

afterEach(async () => {
  vi.restoreAllMocks();
  await Promise.all(open.splice(0).map((s) => s.close()));
});

describe('runs', () => {
  it('creates, lists, reads and refuses a duplicate id', async () => {
    const store = await freshStore();
    const run = await store.createRun({ id: 'a', embedding: { id: 'e', dim: 8 }, name: 'first', config: { lr: 0.1 } });
    expect(run).toMatchObject({ id: 'a', embedderId: 'e', embeddingDim: 8, name: 'first', config: { lr: 0.1 } });
    await store.createRun({ id: 'b', embedding: { id: 'e', dim: 8 } });
    expect((await store.listRuns()).map((r) => r.id)).toEqual(['a', 'b']);
    expect(await store.getRun('nope')).toBeUndefined();
    await expect(store.createRun({ id: 'a', embedding: { id: 'e', dim: 8 } })).rejects.toThrow(RunExistsError);
    await expect(store.counts('nope')).rejects.toThrow(UnknownRunError);
  });

  it('checks arguments loudly, naming the bad value', async () => {
    const store = await freshStore();
    await expect(store.createRun({ id: '', embedding: { id: 'e', dim: 8 } })).rejects.toThrow(/run id.*""/);
    await expect(store.createRun({ id: 'x', embedding: { id: 'e', dim: 0 } })).rejects.toThrow(/embedding dim.*0/);
    await expect(store.createRun({ id: 'x', embedding: { id: 'e', dim: 4 }, maxTransitions: 1.5 })).rejects.toThrow(/maxTransitions.*1\.5/);
    await expect(openNodeReplayStore({ maxTransitions: -1 })).rejects.toThrow(/-1/);
  });

  it('deleteRun removes everything of one run and nothing of another', async () => {
    const store = await storeWithRun();
    await store.createRun({ id: 'other', embedding: embedder });
    await store.putTasks('other', [makeTask('t0')]);
    await store.putTrajectories('run', [makeTrajectory('a', 't0', 'offline')], { embedder });
    await store.putTrajectories('other', [makeTrajectory('a', 't0', 'offline')], { embedder });
    await store.saveCheckpoint('run', { name: 'c', iteration: 1, tensors: [] });
    await store.appendMetrics('run', [{ iteration: 0, values: { loss: 1 } }]);
    expect(await store.deleteRun('run')).toBe(true);
    expect(await store.deleteRun('run')).toBe(false);
    expect(await store.getRun('run')).toBeUndefined();
    expect(await store.getTasks('run')).toEqual([]);
    expect(await store.getTrajectoryRecords({ runId: 'run' })).toEqual([]);
    expect(await store.getTransitions({ runId: 'run' })).toEqual([]);
    expect(await store.listCheckpoints('run')).toEqual([]);
    expect(await store.readMetrics('run')).toEqual([]);
    expect((await store.counts('other')).transitions).toBe(3);
    expect(await store.getTrajectories({ runId: 'other' })).toEqual([makeTrajectory('a', 't0', 'offline')]);
  });
});

describe('tasks', () => {
  it('stores lineage with generations and keeps stats when a task is replaced', async () => {
    const store = await freshStore();
    await store.createRun({ id: 'run', embedding: embedder });
    // A child listed before its parent in the same call is fine.
    await store.putTasks('run', [makeTask('g1', { parentId: 's' }), makeTask('s')]);
    await store.putTasks('run', [makeTask('g2', { parentId: 'g1' })]);
    const tasks = await store.getTasks('run');
    expect(tasks.map((t) => [t.id, t.origin, t.parentId, t.generation])).toEqual([
      ['g1', 'generated', 's', 1],
      ['s', 'seed', undefined, 0],
      ['g2', 'generated', 'g1', 2],
    ]);
    expect((await store.getTasks('run', { origin: 'seed' })).map((t) => t.id)).toEqual(['s']);
    expect((await store.getTasks('run', { ids: ['g2', 'missing'] })).map((t) => t.id)).toEqual(['g2']);

    await store.putTrajectories('run', [makeTrajectory('a', 's', 'synthetic', 2, 1), makeTrajectory('b', 's', 'synthetic', 2, 0)], { embedder });
    const [s] = await store.getTasks('run', { ids: ['s'] });
    expect(s?.stats).toEqual({ count: 2, rewardSum: 1, rewardSumSq: 1, successes: 1 });
    await store.putTasks('run', [{ ...makeTask('s'), instruction: 'changed' }]);
    const [s2] = await store.getTasks('run', { ids: ['s'] });
    expect(s2?.task.instruction).toBe('changed');
    expect(s2?.stats.count).toBe(2);
    expect((await store.counts('run')).tasks).toBe(3);
  });

  it('refuses an unknown parent and a cycle, writing nothing', async () => {
    const store = await freshStore();
    await store.createRun({ id: 'run', embedding: embedder });
    await expect(store.putTasks('run', [makeTask('s'), makeTask('g', { parentId: 'ghost' })])).rejects.toThrow(UnknownTaskError);
    await expect(store.putTasks('run', [makeTask('a', { parentId: 'b' }), makeTask('b', { parentId: 'a' })])).rejects.toThrow(/cycle/);
    await expect(store.putTasks('run', [{ ...makeTask('x'), instruction: '' }])).rejects.toThrow(ReplayValidationError);
    expect(await store.getTasks('run')).toEqual([]);
    expect((await store.counts('run')).tasks).toBe(0);
  });
});

describe('trajectories and transitions', () => {
  it('round-trips trajectories exactly and stores one transition per step', async () => {
    const store = await storeWithRun();
    const trajectories = [makeTrajectory('a', 't0', 'offline', 3), makeTrajectory('b', 't1', 'synthetic', 2, 0), makeTrajectory('c', 't0', 'real', 1)];
    const result = await store.putTrajectories('run', trajectories, { embedder });
    expect(result).toEqual({ added: ['a', 'b', 'c'], skipped: [], transitions: 6, evicted: { trajectoryIds: [], transitions: 0 } });
    expect(await store.getTrajectories({ runId: 'run' })).toEqual(trajectories);

    const transitions = await store.getTransitions({ runId: 'run', trajectoryId: 'a' });
    expect(transitions.map((t) => [t.step, t.state.split('\n')[0], t.action, t.nextState?.split('\n')[0] ?? null, t.done])).toEqual([
      [0, 'page 0 of a', 'click[0]', 'page 1 of a', false],
      [1, 'page 1 of a', 'click[1]', 'page 2 of a', false],
      [2, 'page 2 of a', 'click[2]', null, true],
    ]);
    const [first] = transitions;
    expect(first?.embedding).toBeInstanceOf(Float32Array);
    expect(first?.embedding.length).toBe(DIM);
    const [expected] = await embedder.embed([`${trajectories[0]?.steps[0]?.observation.text}\n>> click[0]`]);
    expect(Array.from(first?.embedding ?? [])).toEqual(Array.from(expected ?? []));
    expect(first?.reasoning).toBe('start of a');
    expect(transitions[1]).not.toHaveProperty('reasoning');

    const counts = await store.counts('run');
    expect(counts).toEqual({
      tasks: 3,
      trajectories: 3,
      transitions: 6,
      bySource: { offline: { trajectories: 1, transitions: 3 }, synthetic: { trajectories: 1, transitions: 2 }, real: { trajectories: 1, transitions: 1 } },
      evicted: { trajectories: 0, transitions: 0 },
    });
    const stats = await store.stats('run');
    expect(stats.rewards.synthetic).toEqual({ meanReward: 0, successRate: 0 });
    expect(stats.rewards.offline).toEqual({ meanReward: 1, successRate: 1 });
    expect(stats).toMatchObject({ embedderId: embedder.id, embeddingDim: DIM, maxTransitions: 1_000_000 });
  });

  it('filters by source, task, ids and limit', async () => {
    const store = await storeWithRun();
    await store.putTrajectories(
      'run',
      [makeTrajectory('a', 't0', 'offline'), makeTrajectory('b', 't1', 'synthetic'), makeTrajectory('c', 't0', 'synthetic'), makeTrajectory('d', 't2', 'real')],
      { embedder },
    );
    const ids = async (f: Parameters<ReplayStore['getTrajectoryRecords']>[0]): Promise<string[]> => (await store.getTrajectoryRecords(f)).map((h) => h.id);
    expect(await ids({ runId: 'run' })).toEqual(['a', 'b', 'c', 'd']);
    expect(await ids({ runId: 'run', source: 'synthetic' })).toEqual(['b', 'c']);
    expect(await ids({ runId: 'run', source: ['offline', 'real'] })).toEqual(['a', 'd']);
    expect(await ids({ runId: 'run', taskId: 't0' })).toEqual(['a', 'c']);
    expect(await ids({ runId: 'run', taskId: 't0', source: 'synthetic' })).toEqual(['c']);
    expect(await ids({ runId: 'run', taskId: ['t1', 't2'] })).toEqual(['b', 'd']);
    expect(await ids({ runId: 'run', ids: ['d', 'a', 'zz'] })).toEqual(['a', 'd']);
    expect(await ids({ runId: 'run', limit: 2 })).toEqual(['a', 'b']);
    expect((await store.getTransitions({ runId: 'run', source: 'synthetic' })).map((t) => t.trajectoryId)).toEqual(['b', 'b', 'b', 'c', 'c', 'c']);
    expect((await store.getTransitions({ runId: 'run', taskId: 't2' })).map((t) => t.source)).toEqual(['real', 'real', 'real']);
    expect(await store.getTransitions({ runId: 'run', limit: 4 })).toHaveLength(4);
    expect((await store.getTrajectories({ runId: 'run', source: 'real' })).map((t) => t.id)).toEqual(['d']);
    await expect(store.getTrajectoryRecords({ runId: 'run', source: 'fake' as never })).rejects.toThrow(/unknown trajectory source "fake"/);
  });

  it('samples distinct transitions and trajectories within the filter, reproducibly', async () => {
    const store = await storeWithRun();
    const trajectories = Array.from({ length: 10 }, (_, i) => makeTrajectory(`x${i}`, `t${i % 3}`, i < 4 ? 'offline' : 'synthetic', 1 + (i % 4)));
    await store.putTrajectories('run', trajectories, { embedder });
    const all = await store.getTransitions({ runId: 'run' });
    const synthetic = all.filter((t) => t.source === 'synthetic');

    const sample = await store.sampleTransitions({ runId: 'run', source: 'synthetic' }, 5, { rng: new Rng(1) });
    expect(sample).toHaveLength(5);
    expect(new Set(sample.map((t) => t.seq)).size).toBe(5);
    for (const t of sample) expect(t.source).toBe('synthetic');
    const again = await store.sampleTransitions({ runId: 'run', source: 'synthetic' }, 5, { rng: new Rng(1) });
    expect(again.map((t) => t.seq)).toEqual(sample.map((t) => t.seq));
    const everything = await store.sampleTransitions({ runId: 'run', source: 'synthetic' }, 1000, { rng: new Rng(2) });
    expect(everything.map((t) => t.seq).sort((a, b) => a - b)).toEqual(synthetic.map((t) => t.seq));

    // Uniform over transitions, not over trajectories: every transition of a task filter can come up.
    const seen = new Set<number>();
    const rng = new Rng(3);
    for (let i = 0; i < 200; i++) for (const t of await store.sampleTransitions({ runId: 'run', taskId: 't1' }, 1, { rng })) seen.add(t.seq);
    expect([...seen].sort((a, b) => a - b)).toEqual(all.filter((t) => t.taskId === 't1').map((t) => t.seq));

    const trajSample = await store.sampleTrajectories({ runId: 'run', source: 'offline' }, 3, { rng: new Rng(4) });
    expect(trajSample).toHaveLength(3);
    expect(new Set(trajSample.map((t) => t.id)).size).toBe(3);
    for (const t of trajSample) expect(trajectories).toContainEqual(t);
    expect(await store.sampleTrajectories({ runId: 'run', source: 'real' }, 3)).toEqual([]);
  });

  it('refuses unknown tasks, duplicates, env mismatches and bad embeddings, writing nothing', async () => {
    const store = await storeWithRun();
    await store.putTrajectories('run', [makeTrajectory('a', 't0', 'offline')], { embedder });
    const before = await store.counts('run');
    // The unknown task is on the second trajectory: the first must not be written either.
    await expect(store.putTrajectories('run', [makeTrajectory('b', 't0', 'synthetic'), makeTrajectory('c', 'ghost', 'synthetic')], { embedder })).rejects.toThrow(UnknownTaskError);
    await expect(store.putTrajectories('run', [makeTrajectory('b', 't0', 'synthetic'), makeTrajectory('a', 't0', 'synthetic')], { embedder })).rejects.toThrow(DuplicateTrajectoryError);
    await expect(store.putTrajectories('run', [makeTrajectory('b', 't0', 'synthetic'), makeTrajectory('b', 't1', 'synthetic')], { embedder })).rejects.toThrow(DuplicateTrajectoryError);
    await expect(store.putTrajectories('run', [{ ...makeTrajectory('b', 't0', 'synthetic'), env: 'household' }], { embedder })).rejects.toThrow(/env household/);
    await expect(store.putTrajectories('run', [makeTrajectory('b', 't0', 'synthetic')], { embedder: new HashEmbedder(DIM, 'other') })).rejects.toThrow(EmbedderMismatchError);
    await expect(store.putTrajectories('run', [makeTrajectory('b', 't0', 'synthetic')], { embedder: new HashEmbedder(DIM + 1, embedder.id) })).rejects.toThrow(EmbeddingDimensionError);
    const wrongDim = [[new Float32Array(DIM), new Float32Array(DIM + 2), new Float32Array(DIM)]];
    await expect(store.putTrajectories('run', [makeTrajectory('b', 't0', 'synthetic')], { embeddings: wrongDim })).rejects.toThrow(EmbeddingDimensionError);
    const nan = [[new Float32Array(DIM), new Float32Array(DIM).fill(Number.NaN), new Float32Array(DIM)]];
    await expect(store.putTrajectories('run', [makeTrajectory('b', 't0', 'synthetic')], { embeddings: nan })).rejects.toThrow(/NaN/);
    await expect(store.putTrajectories('run', [makeTrajectory('b', 't0', 'synthetic')])).rejects.toThrow(/embedder or options.embeddings/);
    await expect(store.putTrajectories('run', [{ ...makeTrajectory('b', 't0', 'synthetic'), reward: Number.NaN }], { embedder })).rejects.toThrow(ReplayValidationError);
    await expect(store.putTrajectories('nope', [makeTrajectory('b', 't0', 'synthetic')], { embedder })).rejects.toThrow(UnknownRunError);
    expect(await store.counts('run')).toEqual(before);
    expect((await store.getTrajectoryRecords({ runId: 'run' })).map((h) => h.id)).toEqual(['a']);
    expect(await store.getTransitions({ runId: 'run' })).toHaveLength(3);
    expect((await store.getTasks('run', { ids: ['t0'] }))[0]?.stats.count).toBe(1);

    const skip = await store.putTrajectories('run', [makeTrajectory('a', 't0', 'offline'), makeTrajectory('b', 't0', 'synthetic')], { embedder, onDuplicate: 'skip' });
    expect(skip.added).toEqual(['b']);
    expect(skip.skipped).toEqual(['a']);
  });

  it('accepts precomputed embeddings and stores a compact copy of views', async () => {
    const store = await storeWithRun();
    const big = new Float32Array(DIM * 10).map((_, i) => i + 1);
    const views = [0, 1, 2].map((i) => big.subarray(i * DIM, (i + 1) * DIM));
    await store.putTrajectories('run', [makeTrajectory('a', 't0', 'synthetic')], { embeddings: [views] });
    const stored = await store.getTransitions({ runId: 'run' });
    expect(stored.map((t) => t.embedding.buffer.byteLength)).toEqual([DIM * 4, DIM * 4, DIM * 4]);
    expect(Array.from(stored[2]?.embedding ?? [])).toEqual(Array.from(views[2] ?? []));
  });

  it('deleteTrajectories reverts counters and task stats', async () => {
    const store = await storeWithRun();
    await store.putTrajectories('run', [makeTrajectory('a', 't0', 'synthetic', 2, 1), makeTrajectory('b', 't0', 'synthetic', 3, 0)], { embedder });
    expect(await store.deleteTrajectories('run', ['a', 'zz'])).toEqual(['a']);
    expect((await store.counts('run')).bySource.synthetic).toEqual({ trajectories: 1, transitions: 3 });
    expect((await store.getTasks('run', { ids: ['t0'] }))[0]?.stats).toEqual({ count: 1, rewardSum: 0, rewardSumSq: 0, successes: 0 });
    expect((await store.getTransitions({ runId: 'run' })).map((t) => t.trajectoryId)).toEqual(['b', 'b', 'b']);
    await expect(store.deleteTasks('run', ['t0'])).rejects.toThrow(/still has 1 stored trajectories/);
    expect(await store.deleteTasks('run', ['t2'])).toEqual(['t2']);
    expect((await store.counts('run')).tasks).toBe(2);
  });
});

describe('capacity', () => {
  it('evicts the oldest synthetic trajectories first, then real ones, and never pinned offline data', async () => {
    const store = await storeWithRun({ maxTransitions: 12 });
    const put = (t: Trajectory): Promise<unknown> => store.putTrajectories('run', [t], { embedder });
    await put(makeTrajectory('off1', 't0', 'offline', 3));
    await put(makeTrajectory('syn1', 't0', 'synthetic', 2));
    await put(makeTrajectory('real1', 't0', 'real', 2));
    await put(makeTrajectory('syn2', 't1', 'synthetic', 2));
    await put(makeTrajectory('off2', 't1', 'offline', 3));
    expect((await store.counts('run')).transitions).toBe(12);

    // +2 -> evicts syn1 (oldest synthetic).
    const r1 = await store.putTrajectories('run', [makeTrajectory('syn3', 't2', 'synthetic', 2)], { embedder });
    expect(r1.evicted).toEqual({ trajectoryIds: ['syn1'], transitions: 2 });
    // +3 -> evicts syn2, then syn3 (synthetic before the older real1).
    const r2 = await store.putTrajectories('run', [makeTrajectory('syn4', 't2', 'synthetic', 3)], { embedder });
    expect(r2.evicted.trajectoryIds).toEqual(['syn2', 'syn3']);
    expect((await store.getTrajectoryRecords({ runId: 'run' })).map((h) => h.id)).toEqual(['off1', 'real1', 'off2', 'syn4']);
    // +5 -> no synthetic except syn4 (3): evicts syn4, then real1.
    const r3 = await store.putTrajectories('run', [makeTrajectory('real2', 't2', 'real', 5)], { embedder });
    expect(r3.evicted.trajectoryIds).toEqual(['syn4', 'real1']);
    expect((await store.getTrajectoryRecords({ runId: 'run' })).map((h) => h.id)).toEqual(['off1', 'off2', 'real2']);

    const counts = await store.counts('run');
    expect(counts.transitions).toBe(11);
    expect(counts.evicted).toEqual({ trajectories: 5, transitions: 11 });
    expect((await store.getTransitions({ runId: 'run' })).map((t) => t.trajectoryId)).toEqual([...Array(3).fill('off1'), ...Array(3).fill('off2'), ...Array(5).fill('real2')]);
    // Lifetime task statistics are not reduced by eviction.
    expect((await store.getTasks('run', { ids: ['t0'] }))[0]?.stats.count).toBe(3);
  });

  it('throws CapacityError (writing nothing) when pinned data alone would not fit', async () => {
    const store = await storeWithRun({ maxTransitions: 5 });
    await store.putTrajectories('run', [makeTrajectory('off1', 't0', 'offline', 3), makeTrajectory('syn1', 't0', 'synthetic', 2)], { embedder });
    const before = await store.getTrajectoryRecords({ runId: 'run' });
    await expect(store.putTrajectories('run', [makeTrajectory('off2', 't0', 'offline', 3)], { embedder })).rejects.toThrow(CapacityError);
    expect(await store.getTrajectoryRecords({ runId: 'run' })).toEqual(before);
    // An explicitly pinned synthetic trajectory is never evicted either.
    const store2 = await storeWithRun({ maxTransitions: 4 });
    await store2.putTrajectories('run', [makeTrajectory('p', 't0', 'synthetic', 2)], { embedder, pinned: true });
    await store2.putTrajectories('run', [makeTrajectory('q', 't0', 'synthetic', 2)], { embedder });
    const r = await store2.putTrajectories('run', [makeTrajectory('r', 't0', 'synthetic', 2)], { embedder });
    expect(r.evicted.trajectoryIds).toEqual(['q']);
  });

  it('honours a per-run capacity', async () => {
    const store = await freshStore();
    await store.createRun({ id: 'small', embedding: embedder, maxTransitions: 3 });
    await store.putTasks('small', [makeTask('t0')]);
    await store.putTrajectories('small', [makeTrajectory('a', 't0', 'synthetic', 3)], { embedder });
    const r = await store.putTrajectories('small', [makeTrajectory('b', 't0', 'synthetic', 3)], { embedder });
    expect(r.evicted.trajectoryIds).toEqual(['a']);
    expect((await store.stats('small')).maxTransitions).toBe(3);
  });

  it('refuses a duplicate id even when the stored trajectory with that id would be evicted by the same write', async () => {
    const store = await storeWithRun({ maxTransitions: 3 });
    await store.putTrajectories('run', [makeTrajectory('a', 't0', 'synthetic', 3)], { embedder });
    const before = await store.getTrajectories({ runId: 'run' });
    // Adding 'a' again needs room, and the only victim is the old 'a': without the check the
    // delete and the add in one transaction would silently replace it.
    await expect(store.putTrajectories('run', [makeTrajectory('a', 't1', 'synthetic', 2)], { embedder })).rejects.toThrow(DuplicateTrajectoryError);
    expect(await store.getTrajectories({ runId: 'run' })).toEqual(before);
    expect((await store.counts('run')).evicted).toEqual({ trajectories: 0, transitions: 0 });
    // 'skip' still skips it without evicting anything.
    const r = await store.putTrajectories('run', [makeTrajectory('a', 't1', 'synthetic', 2)], { embedder, onDuplicate: 'skip' });
    expect(r).toMatchObject({ added: [], skipped: ['a'], evicted: { trajectoryIds: [] } });
  });
});

describe('evictions planned up front and done at commit (multi-transaction writes)', () => {
  const planned = (batches: readonly Trajectory[][]): { id: string; source: Trajectory['source']; length: number }[][] =>
    batches.map((batch) => batch.map((t) => ({ id: t.id, source: t.source, length: t.steps.length })));

  it('planEvictions evicts exactly what putTrajectories would, batch by batch, and refuses what cannot fit', async () => {
    const rng = new Rng(8);
    const sources = ['offline', 'synthetic', 'real'] as const;
    let planErrors = 0;
    let ownEvicted = 0;
    for (let scenario = 0; scenario < 40; scenario++) {
      const max = rng.int(8, 20);
      let id = 0;
      const make = (): Trajectory => makeTrajectory(`t${id++}`, 't0', sources[rng.int(0, 2)] as Trajectory['source'], rng.int(0, 4));
      const initial = Array.from({ length: rng.int(0, 6) }, make).filter((t) => t.source !== 'offline' || rng.chance(0.3));
      const batches = Array.from({ length: rng.int(1, 4) }, () => Array.from({ length: rng.int(1, 3) }, make).filter((t) => t.source !== 'offline' || rng.chance(0.3)));
      const sequential = await storeWithRun({ maxTransitions: max });
      const deferred = await storeWithRun({ maxTransitions: max });
      for (const store of [sequential, deferred]) {
        for (const t of initial) await store.putTrajectories('run', [t], { embedder }).catch((e: unknown) => expect(e).toBeInstanceOf(CapacityError));
      }

      // The reference: one putTrajectories per batch, evicting as it goes.
      const expected: string[] = [];
      let expectedError: unknown;
      for (const batch of batches) {
        const r = await sequential.putTrajectories('run', batch, { embedder }).catch((e: unknown) => e);
        if (r instanceof Error) {
          expectedError = r;
          break;
        }
        expected.push(...(r as { evicted: { trajectoryIds: string[] } }).evicted.trajectoryIds);
      }

      const plan = await deferred.planEvictions('run', planned(batches)).catch((e: unknown) => e);
      if (expectedError !== undefined) {
        expect(plan).toBeInstanceOf(CapacityError);
        expect((plan as Error).message).toBe((expectedError as Error).message);
        planErrors++;
        continue;
      }
      expect((plan as { trajectoryIds: string[] }).trajectoryIds).toEqual(expected);
      const index = await deferred.retrievalIndex('run');
      for (const batch of batches) await deferred.putTrajectories('run', batch, { embedder, evict: false });
      await deferred.evictTrajectories('run', (plan as { trajectoryIds: string[] }).trajectoryIds);
      ownEvicted += expected.filter((e) => batches.flat().some((t) => t.id === e)).length;

      expect((await deferred.getTrajectoryRecords({ runId: 'run' })).map((h) => h.id)).toEqual((await sequential.getTrajectoryRecords({ runId: 'run' })).map((h) => h.id));
      expect(await deferred.counts('run')).toEqual(await sequential.counts('run'));
      const stats = async (store: ReplayStore): Promise<unknown> => (await store.getTasks('run')).map((t) => [t.id, t.stats]);
      expect(await stats(deferred)).toEqual(await stats(sequential));
      expect(index.size).toBe((await deferred.counts('run')).transitions);
      await Promise.all([sequential.close(), deferred.close()]);
    }
    // The scenarios cover both refusals and a write evicting its own earlier batches.
    expect(planErrors).toBeGreaterThan(0);
    expect(ownEvicted).toBeGreaterThan(0);
  });

  it('honours pinned: true in the plan, like putTrajectories', async () => {
    const store = await storeWithRun({ maxTransitions: 6 });
    await store.putTrajectories('run', [makeTrajectory('off', 't0', 'offline', 2)], { embedder });
    const batches = planned([[makeTrajectory('a', 't0', 'synthetic', 3)], [makeTrajectory('b', 't0', 'synthetic', 2)]]);
    // Unpinned, the write's own 'a' is evicted for 'b'; pinned, nothing can go and 'b' does not fit.
    expect(await store.planEvictions('run', batches)).toEqual({ trajectoryIds: ['a'], transitions: 3 });
    await expect(store.planEvictions('run', batches, { pinned: true })).rejects.toThrow(/at most 6 transitions, but this write needs 7/);
    expect((await store.counts('run')).transitions).toBe(2);
    await expect(store.planEvictions('run', [[{ id: 'x', source: 'nope' as 'real', length: 1 }]])).rejects.toThrow(/source.*"nope"/);
    await expect(store.planEvictions('run', [[{ id: 'x', source: 'real', length: -1 }]])).rejects.toThrow(/length.*-1/);
  });

  it('evictTrajectories counts evictions, keeps task statistics and the index in sync, ignores unknown ids and refuses pinned ones', async () => {
    const store = await storeWithRun({ maxTransitions: 4 });
    await store.putTrajectories('run', [makeTrajectory('off', 't0', 'offline', 2), makeTrajectory('syn', 't0', 'synthetic', 2)], { embedder });
    const index = await store.retrievalIndex('run');
    // evict: false writes beyond capacity and evicts nothing.
    const r = await store.putTrajectories('run', [makeTrajectory('new', 't1', 'real', 2)], { embedder, evict: false });
    expect(r.evicted).toEqual({ trajectoryIds: [], transitions: 0 });
    expect((await store.counts('run')).transitions).toBe(6);
    await expect(store.putTrajectories('run', [], { embedder, evict: 'no' as unknown as boolean })).rejects.toThrow(/options.evict.*"no"/);

    await expect(store.evictTrajectories('run', ['syn', 'off'])).rejects.toThrow(/"off".*pinned/);
    expect((await store.counts('run')).transitions).toBe(6);
    const events: ReplayEvent[] = [];
    store.subscribe((e) => events.push(e));
    expect(await store.evictTrajectories('run', ['gone', 'syn'])).toEqual({ trajectoryIds: ['syn'], transitions: 2 });
    const counts = await store.counts('run');
    expect(counts).toMatchObject({ transitions: 4, evicted: { trajectories: 1, transitions: 2 } });
    expect((await store.getTasks('run', { ids: ['t0'] }))[0]?.stats.count).toBe(2);
    expect(index.size).toBe(4);
    expect(events).toContainEqual(expect.objectContaining({ type: 'trajectories-removed', trajectoryIds: ['syn'], reason: 'evicted' }));
  });
});

describe('failures midway roll back the whole batch', () => {
  const quota = (): DOMException => new DOMException('The quota has been exceeded.', 'QuotaExceededError');

  /** Fails the `n`-th put on a transitions store from now on, by `mode`. */
  function failNthTransitionPut(n: number, mode: 'throw' | 'abort'): void {
    const original = FakeObjectStore.prototype.put;
    let calls = 0;
    vi.spyOn(FakeObjectStore.prototype, 'put').mockImplementation(function (this: IDBObjectStore, value: unknown, key?: IDBValidKey) {
      if (this.name === 'transitions' && ++calls === n) {
        if (mode === 'throw') throw quota();
        // As a real engine reports a quota failure: the transaction aborts with QuotaExceededError.
        const request = original.call(this, value, key);
        (this.transaction as unknown as { _abort(name: string): void })._abort('QuotaExceededError');
        return request;
      }
      return original.call(this, value, key);
    });
  }

  for (const mode of ['throw', 'abort'] as const) {
    it(`a quota failure (${mode}) on the 7th transition yields StorageFullError and leaves no partial trajectory`, async () => {
      const store = await storeWithRun({ maxTransitions: 20 });
      await store.putTrajectories('run', [makeTrajectory('old', 't0', 'synthetic', 4)], { embedder });
      // Warm the retrieval index so we can check it is not touched either.
      const index = await store.retrievalIndex('run');
      const beforeCounts = await store.counts('run');
      const beforeTasks = await store.getTasks('run');
      const beforeTransitions = await store.getTransitions({ runId: 'run' });

      failNthTransitionPut(7, mode);
      const batch = [makeTrajectory('a', 't0', 'synthetic', 5), makeTrajectory('b', 't1', 'synthetic', 5), makeTrajectory('c', 't1', 'synthetic', 5)];
      // 4 + 17 > 20: the failing transaction also evicts 'old', which the rollback must restore.
      const err = await store.putTrajectories('run', [...batch, makeTrajectory('d', 't2', 'synthetic', 2)], { embedder }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(StorageFullError);
      expect((err as StorageFullError).message).toMatch(/rolled back/);
      expect(((err as StorageFullError).cause as DOMException).name).toBe('QuotaExceededError');
      vi.restoreAllMocks();

      expect(await store.counts('run')).toEqual(beforeCounts);
      expect(await store.getTasks('run')).toEqual(beforeTasks);
      expect(await store.getTransitions({ runId: 'run' })).toEqual(beforeTransitions);
      expect((await store.getTrajectoryRecords({ runId: 'run' })).map((h) => h.id)).toEqual(['old']);
      expect(index.size).toBe(4);

      // And the store still works afterwards.
      await store.putTrajectories('run', batch, { embedder });
      expect((await store.counts('run')).transitions).toBe(19);
    });
  }

  it('maps a quota failure on a small write (metrics) too', async () => {
    const store = await storeWithRun();
    vi.spyOn(FakeObjectStore.prototype, 'put').mockImplementation(() => {
      throw quota();
    });
    await expect(store.appendMetrics('run', [{ iteration: 1, values: { loss: 1 } }])).rejects.toThrow(StorageFullError);
    vi.restoreAllMocks();
    expect(await store.readMetrics('run')).toEqual([]);
  });
});

describe('checkpoints and metrics', () => {
  it('saves and loads named tensors, optimizer state and config; tracks the latest', async () => {
    const store = await storeWithRun();
    const w = new Float32Array([1, 2, 3, 4, 5, 6]);
    const steps = new Int32Array([7]);
    const mask = new Uint8Array([1, 0]);
    const info = await store.saveCheckpoint('run', {
      name: 'it-1',
      iteration: 1,
      tensors: [
        { name: 'dense/kernel', dtype: 'float32', shape: [2, 3], data: w },
        { name: 'mask', dtype: 'bool', shape: [2], data: mask },
      ],
      optimizer: { tensors: [{ name: 'iter', dtype: 'int32', shape: [], data: steps }], config: { lr: 0.001, beta1: 0.9 } },
      config: { hidden: 64 },
    });
    expect(info).toMatchObject({ name: 'it-1', iteration: 1, tensorCount: 2, bytes: 24 + 2 + 4 });
    await store.saveCheckpoint('run', { name: 'it-2', iteration: 2, tensors: [{ name: 'dense/kernel', dtype: 'float32', shape: [2, 3], data: w.map((x) => x * 2) }] });

    const latest = await store.loadCheckpoint('run');
    expect(latest.name).toBe('it-2');
    expect(Array.from(latest.tensors[0]?.data ?? [])).toEqual([2, 4, 6, 8, 10, 12]);
    const first = await store.loadCheckpoint('run', 'it-1');
    expect(first.tensors[0]?.data).toBeInstanceOf(Float32Array);
    expect(first.tensors[1]?.data).toBeInstanceOf(Uint8Array);
    expect(first.optimizer.tensors[0]?.data).toBeInstanceOf(Int32Array);
    expect(first.optimizer.config).toEqual({ lr: 0.001, beta1: 0.9 });
    expect(first.config).toEqual({ hidden: 64 });
    expect((await store.listCheckpoints('run')).map((c) => [c.name, c.iteration])).toEqual([
      ['it-1', 1],
      ['it-2', 2],
    ]);
    expect((await store.stats('run')).latestCheckpoint).toBe('it-2');
    expect(await store.deleteCheckpoint('run', 'it-2')).toBe(true);
    await expect(store.loadCheckpoint('run')).rejects.toThrow(CheckpointNotFoundError);
    await expect(store.loadCheckpoint('run', 'it-9')).rejects.toThrow(/no checkpoint "it-9"/);
  });

  it('refuses tensors whose data does not match dtype or shape', async () => {
    const store = await storeWithRun();
    await expect(store.saveCheckpoint('run', { name: 'x', iteration: 0, tensors: [{ name: 'w', dtype: 'float32', shape: [2, 2], data: new Float32Array(3) }] })).rejects.toThrow(/\[2,2\] holds 4 values, data has 3/);
    await expect(store.saveCheckpoint('run', { name: 'x', iteration: 0, tensors: [{ name: 'w', dtype: 'int32', shape: [1], data: new Float32Array(1) }] })).rejects.toThrow(/needs a Int32Array/);
    await expect(store.saveCheckpoint('nope', { name: 'x', iteration: 0, tensors: [] })).rejects.toThrow(UnknownRunError);
  });

  it('appends and reads per-iteration metrics in order, replacing a repeated iteration', async () => {
    const store = await storeWithRun();
    await store.appendMetrics('run', [
      { iteration: 2, time: 20, values: { loss: 0.5 } },
      { iteration: 0, time: 0, values: { loss: 1 } },
    ]);
    await store.appendMetrics('run', [{ iteration: 1, time: 10, values: { loss: 0.7, success: 0.1 } }]);
    await store.appendMetrics('run', [{ iteration: 2, time: 21, values: { loss: 0.4 } }]);
    expect((await store.readMetrics('run')).map((m) => [m.iteration, m.values['loss']])).toEqual([
      [0, 1],
      [1, 0.7],
      [2, 0.4],
    ]);
    expect((await store.readMetrics('run', { from: 1, to: 1 })).map((m) => m.iteration)).toEqual([1]);
    await expect(store.appendMetrics('run', [{ iteration: -1, values: {} }])).rejects.toThrow(/iteration.*-1/);
    await expect(store.appendMetrics('run', [{ iteration: 3, values: { loss: 'x' as unknown as number } }])).rejects.toThrow(/values.loss must be a number/);
    await expect(store.appendMetrics('nope', [{ iteration: 0, values: {} }])).rejects.toThrow(UnknownRunError);
  });
});

describe('events and lifecycle', () => {
  it('delivers local change events and, across stores on one database, remote ones', async () => {
    const factory = createMemoryIndexedDB();
    const name = uniqueName();
    const a = await freshStore({ name, indexedDB: factory });
    const b = await freshStore({ name, indexedDB: factory });
    const seenA: ReplayEvent[] = [];
    const seenB: ReplayEvent[] = [];
    a.subscribe((e) => seenA.push(e));
    const remote = new Promise<ReplayEvent>((resolve) =>
      b.subscribe((e) => {
        seenB.push(e);
        if (e.type === 'trajectories-added') resolve(e);
      }),
    );
    await a.createRun({ id: 'run', embedding: embedder });
    await a.putTasks('run', [makeTask('t0')]);
    await a.putTrajectories('run', [makeTrajectory('x', 't0', 'synthetic', 2)], { embedder });
    const event = await remote;
    expect(event).toMatchObject({ type: 'trajectories-added', origin: 'remote', runId: 'run', trajectoryIds: ['x'], transitions: { synthetic: 2 } });
    expect(seenA.map((e) => `${e.type}:${e.origin}`)).toEqual(['run-created:local', 'tasks-put:local', 'trajectories-added:local']);
    expect(seenB.every((e) => e.origin === 'remote')).toBe(true);
  });

  it('a closed store refuses every call', async () => {
    const store = await storeWithRun();
    await store.close();
    expect(store.closed).toBe(true);
    await expect(store.counts('run')).rejects.toThrow(StoreClosedError);
    await expect(store.putTrajectories('run', [makeTrajectory('a', 't0', 'offline')], { embedder })).rejects.toThrow(StoreClosedError);
    await store.close();
  });
});
