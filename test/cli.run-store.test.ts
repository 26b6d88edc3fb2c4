import { execFile } from 'node:child_process';
import { readlinkSync } from 'node:fs';
import { mkdir, mkdtemp, open, readdir, readFile, realpath, rename, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { beforeEach, describe, expect, it, vi } from 'vitest';
import type { Task, Trajectory } from '../src/core/types.ts';
import { parseJsonl } from '../src/core/jsonl.ts';
import { getEnvSpec } from '../src/envs/registry.ts';
import { generateOfflineData } from '../src/envs/offline.ts';
import type { Checkpoint } from '../src/policy/checkpoint.ts';
import { parseTrainingConfig } from '../src/train/config.ts';
import type { RunSnapshot } from '../src/train/loop.ts';
import {
  CorruptRunError,
  RunBusyError,
  RunStore,
  type RunWriter,
} from '../src/cli/run-store.ts';
import { UnknownRunError } from '../src/replay/errors.ts';
import { tree } from './fixtures/cli.ts';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'dreamgym-store-'));
});

const config = parseTrainingConfig({ env: 'shop', mode: 'dreamgym', iterations: 3 });

function checkpoint(iteration: number, value: number): Checkpoint {
  return {
    format: 'dreamgym-checkpoint',
    version: 1,
    iteration,
    config: { note: 'test' },
    weights: [{ name: 'w', shape: [2, 2], dtype: 'float32', data: new Float32Array([value, 2, 3, 4]) }],
    optimizer: { kind: 'adam', step: iteration, slots: [] },
  };
}

function snapshot(iteration: number, pool: Task[]): RunSnapshot {
  return {
    format: 'dreamgym-run',
    version: 1,
    config,
    iteration,
    pool,
    lastSeen: { 'gen-1': { iteration, vTau: Number.NaN }, 'gen-2': { iteration: 0, vTau: 0.25 } },
    metrics: Array.from({ length: iteration }, (_, i) => ({
      iteration: i, phase: 'synthetic' as const, successRate: 0.5, meanReward: 0.25, loss: 0.1, kl: Number.NaN, clipFraction: 0, entropy: 1,
      vTauMean: 0, vTauPositiveShare: 0, vTauMax: 0, poolSize: pool.length, generatedTasks: 0, generatedShare: 0, steps: 10, syntheticSteps: 10,
      syntheticStepsPerSec: 100, simCalls: 10, realTransitions: 0, offlineTransitions: 50, updateMs: 1, rolloutMs: 1, wallMs: 2,
    })),
    realTransitions: 0,
    realResets: 0,
    syntheticSteps: 10 * iteration,
    checkpoint: checkpoint(iteration, iteration + 0.5),
    wallMs: 100 * iteration,
  };
}

function data(n: number): { tasks: Task[]; trajectories: Trajectory[] } {
  const pairs = [...generateOfflineData(getEnvSpec('shop'), { episodes: n, seed: 2, policy: 'noisy:0.5', split: 'train' })];
  return { tasks: pairs.map((p) => p.task), trajectories: pairs.map((p) => ({ ...p.trajectory, source: 'synthetic' as const })) };
}


async function runWithTwoIterations(store: RunStore): Promise<{ writer: RunWriter; tasks: Task[]; trajectories: Trajectory[] }> {
  const writer = await store.create(config, 3, new Date('2025-01-02T03:04:05Z'));
  const { tasks, trajectories } = data(4);
  // Iteration 1: two trajectories of task 0 and one of task 1; iteration 2: task 0 again and task 2.
  await writer.appendRollouts([trajectories[0]!, { ...trajectories[0]!, id: 'again' }, trajectories[1]!], [tasks[0]!, tasks[0]!, tasks[1]!]);
  await writer.persist(snapshot(1, tasks));
  await writer.appendRollouts([{ ...trajectories[0]!, id: 'third' }, trajectories[2]!], [tasks[0]!, tasks[2]!]);
  await writer.persist(snapshot(2, tasks));
  return { writer, tasks, trajectories };
}

describe('RunStore', () => {
  it('creates a run, appends rollouts with each task once, and reads back the snapshot it persisted', async () => {
    const store = new RunStore(join(dir, 'store'));
    expect(await store.ids()).toEqual([]);
    const { writer, tasks, trajectories } = await runWithTwoIterations(store);
    expect(writer.id).toBe('20250102-030405-shop-dreamgym-s0');
    expect(await store.ids()).toEqual([writer.id]);
    const files = (await readdir(store.runDir(writer.id))).sort();
    expect(files).toEqual(['checkpoint.bin', 'lock', 'rollouts.jsonl', 'run.json', 'snapshot.json']);
    await writer.release();
    expect(await readdir(store.runDir(writer.id))).not.toContain('lock');

    const text = await readFile(join(store.runDir(writer.id), 'rollouts.jsonl'), 'utf8');
    const parsed = parseJsonl(text);
    expect(parsed.tasks.map((t) => t.id)).toEqual([tasks[0]!.id, tasks[1]!.id, tasks[2]!.id]);
    expect(parsed.trajectories).toHaveLength(5);
    // The same trajectory id twice (one task chosen twice in an iteration) gets a suffix.
    expect(parsed.trajectories.map((t) => t.id)).toEqual([trajectories[0]!.id, 'again', trajectories[1]!.id, 'third', trajectories[2]!.id]);
    const streamed = [];
    for await (const r of store.rollouts(writer.id)) streamed.push(r);
    expect(streamed).toHaveLength(8);

    const saved = await store.readSnapshot(writer.id);
    const expected = snapshot(2, tasks);
    expect(saved?.rolloutsBytes).toBe(Buffer.byteLength(text));
    expect(saved?.snapshot.checkpoint.weights[0]!.data).toEqual(expected.checkpoint.weights[0]!.data);
    // NaN goes through JSON as null and comes back as NaN.
    expect(saved?.snapshot.lastSeen['gen-1']!.vTau).toBeNaN();
    expect(saved?.snapshot.metrics[0]!.kl).toBeNaN();
    const { checkpoint: _a, ...rest } = saved!.snapshot;
    const { checkpoint: _b, ...want } = expected;
    expect(rest).toEqual(want);

    const record = await store.readRecord(writer.id);
    expect(record).toMatchObject({ id: writer.id, status: 'running', config, iteration: 0, totalIterations: 3, evaluation: null });
    expect((await store.list()).map((l) => l.id)).toEqual([writer.id]);
  });

  it('unknown run ids list the known ones; ids that are paths are unknown', async () => {
    const store = new RunStore(join(dir, 'store'));
    await expect(store.readRecord('nope')).rejects.toThrow(/^unknown run "nope" in .*: the store has no runs$/);
    const { writer } = await runWithTwoIterations(store);
    await writer.release();
    for (const id of ['nope', '../store', '.', 'runs/x']) {
      const e = await store.readRecord(id).catch((x: unknown) => x);
      expect(e).toBeInstanceOf(UnknownRunError);
      expect((e as Error).message).toContain(`known runs: ${writer.id}`);
    }
  });

  it('reports corrupt files by name and what is wrong, and reading changes nothing', async () => {
    const store = new RunStore(join(dir, 'store'));
    const { writer } = await runWithTwoIterations(store);
    await writer.release();
    const runDir = store.runDir(writer.id);
    const runJson = join(runDir, 'run.json');
    const good = await readFile(runJson, 'utf8');
    const cases: [string, string, RegExp][] = [
      ['run.json', '{"format":"dreamgym-cli-run", trunc', /run\.json: not valid JSON/],
      ['run.json', good.replace('"status": "running"', '"status": "sleeping"'), /run\.json: field status: /],
      ['run.json', good.replace(`"id": "${writer.id}"`, '"id": "other"'), /names run "other"/],
      ['snapshot.json', '[]', /snapshot\.json: /],
      ['checkpoint.bin', 'garbage', /checkpoint\.bin: missing, or not the checkpoint snapshot\.json names/],
    ];
    for (const [file, content, message] of cases) {
      const path = join(runDir, file);
      const original = await readFile(path);
      await writeFile(path, content);
      const before = await tree(store.root);
      const err = await (async () => {
        await store.readRecord(writer.id);
        await store.readSnapshot(writer.id);
      })().catch((e: unknown) => e);
      expect(err, file).toBeInstanceOf(CorruptRunError);
      expect((err as CorruptRunError).file).toBe(path);
      expect((err as Error).message).toMatch(message);
      expect((err as Error).message).not.toContain('\n');
      if (file === 'run.json') expect((await store.list())[0]!.problem).toMatch(message);
      expect(await tree(store.root)).toEqual(before);
      await writeFile(path, original);
    }
    // rollouts.jsonl shorter than the snapshot says
    await writeFile(join(runDir, 'rollouts.jsonl'), 'x');
    await expect(async () => {
      for await (const _ of store.rollouts(writer.id)) void _;
    }).rejects.toThrow(/rollouts\.jsonl: 1 bytes, but snapshot\.json says it holds/);
  });

  it('a write cut off between the snapshot and the checkpoint rename still reads the checkpoint the snapshot names', async () => {
    const store = new RunStore(join(dir, 'store'));
    const { writer, tasks } = await runWithTwoIterations(store);
    const runDir = store.runDir(writer.id);
    // Persist iteration 3, then put the old checkpoint back as checkpoint.bin and the new one as checkpoint.next.bin.
    const old = await readFile(join(runDir, 'checkpoint.bin'));
    await writer.persist(snapshot(3, tasks));
    await rename(join(runDir, 'checkpoint.bin'), join(runDir, 'checkpoint.next.bin'));
    await writeFile(join(runDir, 'checkpoint.bin'), old);
    const saved = await store.readSnapshot(writer.id);
    expect(saved?.snapshot.iteration).toBe(3);
    expect(saved?.snapshot.checkpoint.iteration).toBe(3);
    expect(saved?.snapshot.checkpoint.weights[0]!.data[0]).toBe(3.5);
    await writer.release();
  });

  it('resume cuts rollouts appended after the last snapshot and keeps writing each task once', async () => {
    const store = new RunStore(join(dir, 'store'));
    const { writer, tasks, trajectories } = await runWithTwoIterations(store);
    const file = join(store.runDir(writer.id), 'rollouts.jsonl');
    const committed = await readFile(file, 'utf8');
    // A killed iteration appended rollouts but never saved its snapshot.
    await writer.appendRollouts([trajectories[3]!], [tasks[3]!]);
    await writer.releaseSync();
    const expected = await store.readSnapshot(writer.id);
    const { writer: resumed, saved } = await store.resume(writer.id, expected);
    expect(saved?.snapshot.iteration).toBe(2);
    expect(await readFile(file, 'utf8')).toBe(committed);
    await resumed.appendRollouts([trajectories[3]!, { ...trajectories[1]!, id: 'fourth' }, trajectories[0]!, trajectories[0]!], [tasks[3]!, tasks[1]!, tasks[0]!]);
    const parsed = parseJsonl(await readFile(file, 'utf8'));
    expect(parsed.tasks.map((t) => t.id)).toEqual([tasks[0]!.id, tasks[1]!.id, tasks[2]!.id, tasks[3]!.id]);
    expect(parsed.trajectories.map((t) => t.id).slice(-4)).toEqual([trajectories[3]!.id, 'fourth', `${trajectories[0]!.id}#2`, `${trajectories[0]!.id}#3`]);
    await resumed.release();
  });

  it('one writer at a time: a live holder makes the run busy, a dead one is taken over', async () => {
    const store = new RunStore(join(dir, 'store'));
    const { writer } = await runWithTwoIterations(store);
    const expected = await store.readSnapshot(writer.id);
    await expect(store.resume(writer.id, expected)).rejects.toThrow(RunBusyError);
    await expect(store.resume(writer.id, expected)).rejects.toThrow(new RegExp(`being trained by process ${process.pid}`));
    expect(await store.isActive(writer.id)).toBe(true);
    await writer.release();
    // A lock left by a process that is gone.
    const { stdout } = await promisify(execFile)(process.execPath, ['-e', 'console.log(process.pid)']);
    const deadPid = Number(stdout.trim());
    const { hostname } = await import('node:os');
    await writeFile(join(store.runDir(writer.id), 'lock'), JSON.stringify({ pid: deadPid, host: hostname() }));
    expect(await store.isActive(writer.id)).toBe(false);
    const { writer: taken } = await store.resume(writer.id, expected);
    expect(JSON.parse(await readFile(join(store.runDir(writer.id), 'lock'), 'utf8'))).toMatchObject({ pid: process.pid });
    await taken.release();
  });

  it('syncs appended rollouts before the snapshot that commits them, and the directory after each rename', async () => {
    const store = new RunStore(join(dir, 'store'));
    const writer = await store.create(config, 3, new Date('2025-01-02T03:04:05Z'));
    const runDir = await realpath(store.runDir(writer.id));
    const { tasks, trajectories } = data(2);
    // Which file each sync reaches, in order (the descriptor's path, read from /proc).
    const probe = await open(join(dir, 'probe'), 'w');
    const proto = Object.getPrototypeOf(probe) as { sync: () => Promise<void>; datasync: () => Promise<void> };
    await probe.close();
    const synced: string[] = [];
    const record = function (this: { fd: number }): void {
      synced.push(readlinkSync(`/proc/self/fd/${this.fd}`));
    };
    const realSync = proto.sync;
    const realDatasync = proto.datasync;
    const sync = vi.spyOn(proto, 'sync').mockImplementation(function (this: { fd: number }) {
      record.call(this);
      return realSync.call(this);
    });
    const datasync = vi.spyOn(proto, 'datasync').mockImplementation(function (this: { fd: number }) {
      record.call(this);
      return realDatasync.call(this);
    });
    try {
      await writer.appendRollouts(trajectories, tasks);
      await writer.persist(snapshot(1, tasks));
    } finally {
      sync.mockRestore();
      datasync.mockRestore();
      await writer.release();
    }
    const rollouts = synced.indexOf(join(runDir, 'rollouts.jsonl'));
    const snapshotTemp = synced.findIndex((p) => p.startsWith(join(runDir, 'snapshot.json.partial-')));
    expect(rollouts, synced.join('\n')).toBeGreaterThanOrEqual(0);
    expect(snapshotTemp).toBeGreaterThan(rollouts);
    // The run directory is synced after the snapshot's rename and after the checkpoint's.
    const dirSyncs = synced.map((p, i) => (p === runDir ? i : -1)).filter((i) => i >= 0);
    expect(dirSyncs.some((i) => i > snapshotTemp)).toBe(true);
    expect(synced.at(-1)).toBe(runDir);
  });

  it('a run without snapshot.json that committed iterations has lost it: readers throw, resume cuts nothing; a run that never committed has none yet', async () => {
    const store = new RunStore(join(dir, 'store'));
    const fresh = await store.create(config, 3, new Date('2025-01-02T03:04:05Z'));
    await fresh.appendRollouts(data(1).trajectories, data(1).tasks);
    await fresh.release();
    // Killed before its first snapshot: no resume point yet, and the uncommitted rollouts are not committed.
    expect(await store.readSnapshot(fresh.id)).toBeNull();
    expect((await store.list())[0]?.record).toBeDefined();

    const { writer } = await runWithTwoIterations(store);
    await writer.update({ iteration: 2 });
    await writer.release();
    const file = join(store.runDir(writer.id), 'rollouts.jsonl');
    const bytes = await readFile(file);
    await rm(join(store.runDir(writer.id), 'snapshot.json'));
    await expect(store.readSnapshot(writer.id)).rejects.toThrow(CorruptRunError);
    await expect(store.readSnapshot(writer.id)).rejects.toThrow(/snapshot\.json: missing, though run\.json records 2 completed iterations/);
    await expect((async () => {
      for await (const _ of store.rollouts(writer.id)) {
        // reading
      }
    })()).rejects.toThrow(/snapshot\.json: missing/);
    await expect(store.resume(writer.id, null)).rejects.toThrow(/snapshot\.json: missing/);
    expect((await store.list()).find((l) => l.id === writer.id)?.problem).toMatch(/snapshot\.json: missing/);
    expect(await readFile(file)).toEqual(bytes);
  });

  it('rebuild commits every complete line of a run whose snapshot.json is lost, leaves the file as it is, and marks the snapshot', async () => {
    const store = new RunStore(join(dir, 'store'));
    const { writer } = await runWithTwoIterations(store);
    await writer.update({ iteration: 2 });
    await writer.release();
    const file = join(store.runDir(writer.id), 'rollouts.jsonl');
    // A blank line between committed lines reads as nothing and must stay inside the committed length.
    const text = (await readFile(file, 'utf8')).replace('\n', '\n\n');
    await writeFile(file, text);
    await rm(join(store.runDir(writer.id), 'snapshot.json'));
    await expect(store.rebuild(writer.id, new Date('2025-02-03T04:05:06Z'))).resolves.toMatchObject({ tasks: 3, trajectories: 5, bytes: Buffer.byteLength(text), droppedCount: 0, original: null });
    expect(await readFile(file, 'utf8')).toBe(text);
    const saved = await store.readSnapshot(writer.id);
    expect(saved).toMatchObject({ rolloutsBytes: Buffer.byteLength(text), rebuilt: { at: '2025-02-03T04:05:06.000Z' } });
    expect(saved?.snapshot.iteration).toBe(2);
    let read = 0;
    for await (const _ of store.rollouts(writer.id)) read++;
    expect(read).toBe(8);
    expect((await store.readRecord(writer.id)).status).toBe('stopped');
    await expect(store.rebuild(writer.id)).rejects.toThrow(/has its resume point \(snapshot\.json reads back\): nothing to rebuild/);
  });
});
