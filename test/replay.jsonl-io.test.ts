/**
 * Streaming JSONL import/export: exact round trip, every kind of input, progress, and
 * all-or-nothing: a malformed or inconsistent file writes nothing, and a write failure midway
 * removes what the import had written.
 */
import { Readable } from 'node:stream';
import { IDBObjectStore as FakeObjectStore } from 'fake-indexeddb';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { JsonlError, taskLine, toJsonl, trajectoryLine } from '../src/core/jsonl.ts';
import type { Task, Trajectory } from '../src/core/types.ts';
import { exportJsonl, exportJsonlToString, importJsonl, validateJsonl, StorageFullError, type ImportProgress, type ReplayStore } from '../src/replay/index.ts';
import { createMemoryIndexedDB, openNodeReplayStore } from '../src/replay/node.ts';
import { HashEmbedder, makeTask, makeTrajectory } from './fixtures/replay-data.ts';

const embedder = new HashEmbedder(12);
const stores: ReplayStore[] = [];
let n = 0;

async function storeWithRun(): Promise<ReplayStore> {
  const store = await openNodeReplayStore({ name: `replay-jsonl-${process.pid}-${n++}` });
  stores.push(store);
  await store.createRun({ id: 'run', embedding: embedder });
  return store;
}

afterEach(async () => {
  vi.restoreAllMocks();
  await Promise.all(stores.splice(0).map((s) => s.close()));
});

function dataset(count: number): { tasks: Task[]; trajectories: Trajectory[] } {
  const tasks = [makeTask('s0'), makeTask('s1'), makeTask('g0', { parentId: 's0' })];
  const trajectories = Array.from({ length: count }, (_, i) => makeTrajectory(`tr${i}`, (tasks[i % 3] as Task).id, i % 2 === 0 ? 'offline' : 'synthetic', 1 + (i % 4), i % 3 === 0 ? 1 : 0));
  return { tasks, trajectories };
}

async function snapshot(store: ReplayStore): Promise<unknown> {
  return {
    counts: await store.counts('run'),
    tasks: await store.getTasks('run'),
    trajectories: await store.getTrajectories({ runId: 'run' }),
  };
}

describe('importJsonl / exportJsonl', () => {
  it('round-trips a file exactly, in batches, reporting progress', async () => {
    const store = await storeWithRun();
    const data = dataset(25);
    const text = toJsonl(data);
    const progress: ImportProgress[] = [];
    const summary = await importJsonl(store, 'run', text, { embedder, batchSize: 4, onProgress: (p) => progress.push(p) });
    expect(summary).toEqual({ tasks: 3, trajectories: 25, transitions: data.trajectories.reduce((s, t) => s + t.steps.length, 0), skipped: [], evicted: 0 });
    expect(await exportJsonlToString(store, 'run')).toBe(text);
    expect((await store.getTasks('run', { ids: ['g0'] }))[0]?.generation).toBe(1);
    expect((await store.counts('run')).bySource.offline.trajectories).toBe(13);

    const writes = progress.filter((p) => p.phase === 'write');
    expect(writes.map((p) => p.written)).toEqual([4, 8, 12, 16, 20, 24, 25]);
    expect(writes.every((p) => p.totalTrajectories === 25 && p.totalBytes === text.length)).toBe(true);
    expect(progress.some((p) => p.phase === 'validate' && p.bytes === text.length)).toBe(true);

    // Export streams line by line, and can filter by source.
    const lines: string[] = [];
    for await (const line of exportJsonl(store, 'run', { source: 'synthetic', includeTasks: false, pageSize: 5 })) lines.push(line);
    expect(lines).toEqual(data.trajectories.filter((t) => t.source === 'synthetic').map((t) => `${trajectoryLine(t)}\n`));
  });

  it('reads Blobs, web streams, Node streams of bytes split mid-character, and CRLF', async () => {
    const data = dataset(6);
    data.trajectories[0] = { ...(data.trajectories[0] as Trajectory), steps: [{ observation: { text: 'café 🍵 ünïcode', actions: ['a'] }, action: 'a', reward: 1, done: true, valid: true }] };
    const text = toJsonl(data);
    const bytes = new TextEncoder().encode(text.replace(/\n/g, '\r\n'));
    const pieces = (size: number): Uint8Array[] => Array.from({ length: Math.ceil(bytes.length / size) }, (_, i) => bytes.subarray(i * size, (i + 1) * size));
    const inputs = [
      () => new Blob([bytes]),
      () => new ReadableStream<Uint8Array>({ start: (c) => (pieces(7).forEach((p) => c.enqueue(p)), c.close()) }),
      () => Readable.from(pieces(3).map((p) => Buffer.from(p))),
      () => () => Readable.from(pieces(5).map((p) => Buffer.from(p))), // re-openable factory
    ];
    for (const make of inputs) {
      const store = await storeWithRun();
      await importJsonl(store, 'run', make(), { embedder, batchSize: 2 });
      expect(await exportJsonlToString(store, 'run')).toBe(text);
    }
  });

  it('a file with any bad line writes nothing and names every bad line', async () => {
    const store = await storeWithRun();
    await importJsonl(store, 'run', toJsonl({ tasks: [makeTask('s0')], trajectories: [makeTrajectory('old', 's0', 'offline')] }), { embedder });
    const before = await snapshot(store);
    const good = dataset(9);
    const lines = toJsonl(good).trimEnd().split('\n');
    const bad = [...lines];
    bad[5] = bad[5]?.replace('"reward":0', '"reward":"zero"') ?? '';
    bad.splice(9, 0, '{"v":1,"type":"trajectory","trajectory":{"id":"x"');
    const err = await importJsonl(store, 'run', `${bad.join('\n')}\n`, { embedder, batchSize: 2 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(JsonlError);
    const issues = (err as JsonlError).issues;
    expect(issues.map((i) => i.line)).toEqual([6, 10]);
    expect(issues[0]?.field).toMatch(/^trajectory\.(reward|steps\.\d+\.reward)$/);
    expect(issues[1]?.message).toMatch(/not valid JSON/);
    expect(await snapshot(store)).toEqual(before);
  });

  it('references, duplicates and env mismatches are checked against the file and the run before writing', async () => {
    const store = await storeWithRun();
    await importJsonl(store, 'run', toJsonl({ tasks: [makeTask('s0')], trajectories: [makeTrajectory('old', 's0', 'offline')] }), { embedder });
    const before = await snapshot(store);
    // Each file starts with a good task line (line 1), which must not be written either.
    const cases: [string, RegExp][] = [
      [trajectoryLine(makeTrajectory('a', 'ghost', 'offline')), /line 2, field trajectory.taskId: unknown task "ghost"/],
      [taskLine(makeTask('g', { parentId: 'ghost' })), /line 2, field task.parentId: unknown parent task "ghost"/],
      [`${trajectoryLine(makeTrajectory('a', 's0', 'offline'))}\n${trajectoryLine(makeTrajectory('a', 's0', 'real'))}`, /line 3, field trajectory.id: duplicate trajectory id "a" \(first on line 2\)/],
      [`${taskLine(makeTask('n'))}\n${taskLine(makeTask('n'))}`, /line 3, field task.id: duplicate task id "n"/],
      [trajectoryLine(makeTrajectory('old', 's0', 'offline')), /line 2, field trajectory.id: run "run" already has trajectory "old"/],
      [trajectoryLine({ ...makeTrajectory('h', 's0', 'offline'), env: 'household' }), /line 2, field trajectory.env: trajectory is in env household but task "s0" is in shop/],
      ['{"v":2,"type":"task","task":{}}', /line 2, field v: unsupported format version 2/],
    ];
    for (const [text, message] of cases) {
      const err = await importJsonl(store, 'run', `${taskLine(makeTask('fresh'))}\n${text}\n`, { embedder }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(JsonlError);
      expect((err as Error).message).toMatch(message);
      expect(await snapshot(store)).toEqual(before);
    }
    // With onDuplicate: 'skip', the stored id is skipped and the rest imported.
    const summary = await importJsonl(store, 'run', `${trajectoryLine(makeTrajectory('old', 's0', 'offline'))}\n${trajectoryLine(makeTrajectory('b', 's0', 'real'))}\n`, { embedder, onDuplicate: 'skip' });
    expect(summary).toMatchObject({ trajectories: 1, skipped: ['old'] });
  });

  it('a write failure midway removes what the import wrote, restoring replaced tasks', async () => {
    const store = await storeWithRun();
    await importJsonl(store, 'run', toJsonl({ tasks: [makeTask('s0')], trajectories: [makeTrajectory('old', 's0', 'offline')] }), { embedder });
    const before = await snapshot(store);
    const data = dataset(12);
    data.tasks[0] = { ...makeTask('s0'), instruction: 'replaced instruction' };
    // Fail the third trajectory batch's first transition put with a quota error.
    const original = FakeObjectStore.prototype.put;
    let transitionPuts = 0;
    const failAt = data.trajectories.slice(0, 8).reduce((s, t) => s + t.steps.length, 0) + 1;
    vi.spyOn(FakeObjectStore.prototype, 'put').mockImplementation(function (this: IDBObjectStore, value: unknown, key?: IDBValidKey) {
      if (this.name === 'transitions' && ++transitionPuts === failAt) throw new DOMException('full', 'QuotaExceededError');
      return original.call(this, value, key);
    });
    const err = await importJsonl(store, 'run', toJsonl(data), { embedder, batchSize: 4 }).catch((e: unknown) => e);
    vi.restoreAllMocks();
    expect(err).toBeInstanceOf(StorageFullError);
    expect(transitionPuts).toBeGreaterThanOrEqual(failAt);
    expect(await snapshot(store)).toEqual(before);
  });

  describe('a failure in a later batch leaves the store exactly as it was, including what earlier batches would have evicted', () => {
    /** A run at its capacity of 12 transitions: old0..old3, 3 synthetic steps each. */
    async function fullRun(): Promise<ReplayStore> {
      const store = await openNodeReplayStore({ name: `replay-jsonl-${process.pid}-${n++}`, maxTransitions: 12 });
      stores.push(store);
      await store.createRun({ id: 'run', embedding: embedder });
      await store.putTasks('run', [makeTask('s0')]);
      await store.putTrajectories('run', ['old0', 'old1', 'old2', 'old3'].map((id) => makeTrajectory(id, 's0', 'synthetic', 3)), { embedder });
      return store;
    }
    // 4 trajectories of 2 steps in batches of 2: the first batch alone evicts old0 and old1.
    const incoming = ['new0', 'new1', 'new2', 'new3'].map((id) => makeTrajectory(id, 's0', 'real', 2));
    const file = toJsonl({ tasks: [makeTask('s1')], trajectories: incoming });

    const failures: [string, (store: ReplayStore) => { input: string | (() => Iterable<string>); options: Partial<Parameters<typeof importJsonl>[3]> }, unknown][] = [
      [
        'a quota failure (StorageFullError)',
        () => {
          // The 5th transition put is the second batch's first.
          const original = FakeObjectStore.prototype.put;
          let transitionPuts = 0;
          vi.spyOn(FakeObjectStore.prototype, 'put').mockImplementation(function (this: IDBObjectStore, value: unknown, key?: IDBValidKey) {
            if (this.name === 'transitions' && ++transitionPuts === 5) throw new DOMException('full', 'QuotaExceededError');
            return original.call(this, value, key);
          });
          return { input: file, options: {} };
        },
        StorageFullError,
      ],
      [
        'a bad record in the second batch (the input changed while importing)',
        () => {
          let reads = 0;
          const broken = file.replace(`${trajectoryLine(incoming[3] as Trajectory)}\n`, '{"v":1,"type":"trajectory"}\n');
          return { input: () => [reads++ === 0 ? file : broken], options: {} };
        },
        JsonlError,
      ],
      [
        'a trajectory of the second batch with another length when read again',
        () => {
          let reads = 0;
          const longer = file.replace(trajectoryLine(incoming[3] as Trajectory), trajectoryLine(makeTrajectory('new3', 's0', 'real', 3)));
          return { input: () => [reads++ === 0 ? file : longer], options: {} };
        },
        JsonlError,
      ],
      [
        'an abort after the first batch',
        () => {
          const controller = new AbortController();
          const onProgress = (p: ImportProgress): void => {
            if (p.phase === 'write' && p.written === 2) controller.abort(new Error('stop'));
          };
          return { input: file, options: { signal: controller.signal, onProgress } };
        },
        Error,
      ],
    ];

    for (const [name, arrange, errorType] of failures) {
      it(name, async () => {
        const store = await fullRun();
        const index = await store.retrievalIndex('run');
        const before = await snapshot(store);
        const beforeTransitions = await store.getTransitions({ runId: 'run' });
        expect(index.size).toBe(12);

        const { input, options } = arrange(store);
        const err = await importJsonl(store, 'run', input, { embedder, batchSize: 2, ...options }).catch((e: unknown) => e);
        vi.restoreAllMocks();
        expect(err).toBeInstanceOf(errorType);

        expect((await store.getTrajectoryRecords({ runId: 'run' })).map((h) => h.id)).toEqual(['old0', 'old1', 'old2', 'old3']);
        expect(await snapshot(store)).toEqual(before);
        expect(await store.getTransitions({ runId: 'run' })).toEqual(beforeTransitions);
        // The in-memory index matches the database: every old transition is found again.
        expect(index.size).toBe(12);
        const hits = await store.retrieveBatch(beforeTransitions.map((t) => t.embedding), 1, { runId: 'run' });
        expect(hits.map((h) => h[0]?.transition.seq)).toEqual(beforeTransitions.map((t) => t.seq));

        // The same import then succeeds, evicting what sequential batches would have.
        const summary = await importJsonl(store, 'run', file, { embedder, batchSize: 2 });
        expect(summary).toMatchObject({ trajectories: 4, transitions: 8, evicted: 3 });
        expect((await store.getTrajectoryRecords({ runId: 'run' })).map((h) => h.id)).toEqual(['old3', 'new0', 'new1', 'new2', 'new3']);
        expect((await store.counts('run')).evicted).toEqual({ trajectories: 3, transitions: 9 });
        expect(index.size).toBe(11);
      });
    }

    it('refuses with CapacityError before writing anything when pinned data would not fit', async () => {
      const store = await fullRun();
      const before = await snapshot(store);
      const pinned = toJsonl({ tasks: [makeTask('s1')], trajectories: ['p0', 'p1', 'p2'].map((id) => makeTrajectory(id, 's0', 'offline', 5)) });
      const puts = vi.spyOn(store, 'putTrajectories');
      await expect(importJsonl(store, 'run', pinned, { embedder, batchSize: 2 })).rejects.toThrow(/holds at most 12 transitions, but this write needs 15/);
      expect(puts).not.toHaveBeenCalled();
      expect(await snapshot(store)).toEqual(before);
    });
  });

  it('refuses a mismatched embedder and an unknown run before reading', async () => {
    const store = await storeWithRun();
    await expect(importJsonl(store, 'run', '', { embedder: new HashEmbedder(12, 'other') })).rejects.toThrow(/embedded with "test-hash-12"/);
    await expect(importJsonl(store, 'run', '', { embedder: new HashEmbedder(13, embedder.id) })).rejects.toThrow(/stores 12-dim vectors/);
    await expect(importJsonl(store, 'nope', '', { embedder })).rejects.toThrow(/No run "nope"/);
    await expect(exportJsonlToString(store, 'nope')).rejects.toThrow(/No run "nope"/);
    expect(await importJsonl(store, 'run', '\n\n', { embedder })).toEqual({ tasks: 0, trajectories: 0, transitions: 0, skipped: [], evicted: 0 });
  });
});

describe('validateJsonl agrees with importJsonl', () => {
  const enc = new TextEncoder();
  const good = (): { tasks: Task[]; trajectories: Trajectory[] } => ({ tasks: [makeTask('s0'), makeTask('h0', { env: 'household' })], trajectories: [makeTrajectory('t0', 's0', 'offline')] });
  const lines = (...records: string[]): string => `${records.join('\n')}\n`;
  const deep = `{"v":1,"type":"task","task":{"id":"d","env":"shop","instruction":"x","goal":${'['.repeat(5000)}${']'.repeat(5000)},"split":"train","origin":"seed"}}`;
  const cases: { name: string; input: string | Uint8Array; line: number; text: RegExp }[] = [
    { name: 'an orphan trajectory', input: lines(trajectoryLine(makeTrajectory('t0', 'nowhere', 'offline'))), line: 1, text: /unknown task "nowhere"/ },
    { name: 'a duplicate trajectory id', input: lines(taskLine(makeTask('s0')), trajectoryLine(makeTrajectory('t0', 's0', 'offline')), trajectoryLine(makeTrajectory('t0', 's0', 'real'))), line: 3, text: /duplicate trajectory id "t0" \(first on line 2\)/ },
    { name: 'a duplicate task id', input: lines(taskLine(makeTask('s0')), taskLine(makeTask('s0'))), line: 2, text: /duplicate task id "s0"/ },
    { name: 'a task/trajectory env mismatch', input: lines(taskLine(makeTask('h0', { env: 'household' })), trajectoryLine(makeTrajectory('t0', 'h0', 'offline'))), line: 2, text: /trajectory is in env shop but task "h0" is in household/ },
    { name: 'empty steps', input: lines(taskLine(makeTask('s0')), trajectoryLine(makeTrajectory('t0', 's0', 'offline', 0))), line: 2, text: /at least one step/ },
    { name: 'success with a negative reward', input: lines(taskLine(makeTask('s0')), trajectoryLine({ ...makeTrajectory('t0', 's0', 'offline'), reward: -1, success: true })), line: 2, text: /cannot have a negative reward/ },
    { name: 'a goal that does not parse', input: lines(taskLine({ ...makeTask('s0'), goal: { item: 'x' } })), line: 1, text: /field task\.goal.*not a shop goal/ },
    { name: 'a household goal with an unknown object', input: lines(taskLine({ ...makeTask('h0', { env: 'household' }), goal: { layoutSeed: 0, type: 'pick_and_place', object: 'unicorn', receptacle: 'countertop' } })), line: 1, text: /unknown object type "unicorn"/ },
    { name: 'JSON nested 5,000 deep', input: lines(taskLine(makeTask('s0')), deep), line: 2, text: /nested deeper than 64 levels/ },
    { name: 'invalid UTF-8', input: new Uint8Array([...enc.encode(lines(taskLine(makeTask('s0')))), 0x7b, 0xff, 0xfe, 0x7d, 0x0a]), line: 2, text: /not valid UTF-8/ },
  ];
  for (const c of cases) {
    it(`both reject ${c.name}, naming the line`, async () => {
      const input = (): string | Blob => (typeof c.input === 'string' ? c.input : new Blob([c.input as Uint8Array<ArrayBuffer>]));
      const v = await validateJsonl(input()).then(() => null, (e: unknown) => e);
      expect(v).toBeInstanceOf(JsonlError);
      expect((v as JsonlError).message).toMatch(c.text);
      expect((v as JsonlError).issues.some((i) => i.line === c.line)).toBe(true);
      const store = await storeWithRun();
      const before = await snapshot(store);
      const imp = await importJsonl(store, 'run', input(), { embedder }).then(() => null, (e: unknown) => e);
      expect(imp).toBeInstanceOf(JsonlError);
      expect((imp as JsonlError).issues.map((i) => [i.line, i.field])).toEqual((v as JsonlError).issues.map((i) => [i.line, i.field]));
      expect(await snapshot(store)).toEqual(before);
    });
  }

  it('both accept any domain matching DOMAIN_NAME_PATTERN (its goal is any JSON), and refuse a name that breaks it', async () => {
    const task: Task = { id: 'lib0', env: 'travel-booking', instruction: 'book a train', goal: { anything: [1, 'two'] }, split: 'train', origin: 'seed' };
    const text = lines(taskLine(task), trajectoryLine({ ...makeTrajectory('t0', 'lib0', 'offline'), env: 'travel-booking' }));
    expect(await validateJsonl(text)).toMatchObject({ tasks: 1, trajectories: 1 });
    const store = await storeWithRun();
    await importJsonl(store, 'run', text, { embedder });
    expect((await store.getTasks('run')).map((t) => t.task.env)).toEqual(['travel-booking']);
    for (const bad of ['Travel', '9lives', 'a_b', '', 'x'.repeat(41)]) {
      const e = await validateJsonl(lines(taskLine({ ...task, env: bad }))).then(() => null, (err: unknown) => err);
      expect(e, bad).toBeInstanceOf(JsonlError);
      expect((e as JsonlError).message).toMatch(/task\.env.*domain name is a lower-case letter/);
    }
  });

  it('both accept a UTF-8 byte order mark, as text and as bytes', async () => {
    const text = toJsonl(good());
    for (const input of [`\ufeff${text}`, new Blob([new Uint8Array([0xef, 0xbb, 0xbf]), text])]) {
      expect(await validateJsonl(input)).toEqual({ tasks: 2, trajectories: 1, lines: 3 });
      const store = await storeWithRun();
      expect((await importJsonl(store, 'run', input, { embedder })).trajectories).toBe(1);
    }
  });

  it('a long problem list is cut at 50 and says how many there were', async () => {
    const bad = Array.from({ length: 120 }, () => 'not json').join('\n');
    const e = (await validateJsonl(bad).catch((x: unknown) => x)) as JsonlError;
    expect(e).toBeInstanceOf(JsonlError);
    expect(e.issues).toHaveLength(50);
    expect(e.total).toBe(120);
    expect(e.message).toMatch(/^Invalid dreamgym JSONL \(120 problems, the first 50 listed; nothing imported\)/);
    expect(e.issues.map((i) => i.line)).toEqual(Array.from({ length: 50 }, (_, i) => i + 1));
  });

  it('streams: a one-shot Node stream of bytes is validated without being kept', async () => {
    const text = toJsonl(good());
    const stream = Readable.from([Buffer.from(text.slice(0, 10)), Buffer.from(text.slice(10))]);
    expect(await validateJsonl(stream)).toEqual({ tasks: 2, trajectories: 1, lines: 3 });
  });
});

describe('exportJsonl skips what import would refuse', () => {
  it('a NaN reward (a damaged record) and an episode without steps are skipped and counted, never exported as null', async () => {
    const factory = createMemoryIndexedDB();
    const name = `replay-jsonl-corrupt-${process.pid}`;
    const store = await openNodeReplayStore({ name, indexedDB: factory });
    stores.push(store);
    await store.createRun({ id: 'run', embedding: embedder });
    await store.putTasks('run', [makeTask('s0')]);
    await store.putTrajectories('run', [makeTrajectory('t0', 's0', 'offline'), makeTrajectory('t1', 's0', 'offline'), makeTrajectory('t2', 's0', 'offline', 0)], { embedder });
    // Damage t1 behind the store's back, as an edit in the browser's devtools would.
    const raw = await new Promise<IDBDatabase>((done, fail) => {
      const req = factory.open(name);
      req.onsuccess = () => done(req.result);
      req.onerror = () => fail(req.error);
    });
    await new Promise<void>((done, fail) => {
      const tx = raw.transaction('trajectories', 'readwrite');
      const os = tx.objectStore('trajectories');
      const get = os.get(['run', 't1']);
      get.onsuccess = () => os.put({ ...get.result, reward: Number.NaN });
      tx.oncomplete = () => done();
      tx.onerror = () => fail(tx.error);
    });
    raw.close();
    const skippedIds: string[] = [];
    const progress: { skipped: number }[] = [];
    const parts: string[] = [];
    for await (const line of exportJsonl(store, 'run', { onSkip: (id) => skippedIds.push(id), onProgress: (p) => progress.push(p) })) parts.push(line);
    const text = parts.join('');
    expect(text).not.toContain('null');
    expect(skippedIds.sort()).toEqual(['t1', 't2']);
    expect(progress.at(-1)?.skipped).toBe(2);
    expect(await validateJsonl(text)).toEqual({ tasks: 1, trajectories: 1, lines: 2 });
  });
});
