/**
 * The training worker's logic in Node (fake-indexeddb, tfjs cpu): a tiny run from start to
 * evaluation with its events and stored data, pause at an iteration boundary and resume with the
 * metrics history intact, stop with evaluation, and refusals.
 */
import * as tf from '@tensorflow/tfjs';
import { IDBFactory } from 'fake-indexeddb';
import { describe, expect, it } from 'vitest';
import { openReplayStore } from '../src/replay/index.ts';
import { installIdbGlobals } from '../src/replay/node.ts';
import { InProcessLockManager } from '../src/replay/index.ts';
import { parseTrainingConfig, type TrainingConfigInput } from '../src/train/config.ts';
import { RunIndex } from '../src/ui/runs/records.ts';
import { SNAPSHOT_CHECKPOINT, snapshotFromCheckpoint } from '../src/ui/runs/snapshot.ts';
import { fromRecord } from '../src/policy/replay-sink.ts';
import { serializeCheckpoint } from '../src/policy/checkpoint.ts';
import { IMPORTED_CHECKPOINT, TrainingHost } from '../workers/training-host.ts';
import type { TrainingEvent } from '../workers/training.protocol.ts';

installIdbGlobals();
// No "install tfjs-node" banner from the cpu backend.
tf.env().set('PROD', true);

const TINY: TrainingConfigInput = {
  env: 'shop',
  mode: 'dreamgym',
  iterations: 3,
  tasksPerIteration: 2,
  groupSize: 2,
  maxSteps: 5,
  offline: { expertEpisodes: 6, noisyEpisodes: 4, extraTasks: 2 },
  sft: { epochs: 1 },
  evalEpisodes: 3,
  policy: { hiddenDim: 8, embeddingDim: 32 },
  curriculum: { perIteration: 1 },
};

function setup() {
  const indexedDB = new IDBFactory();
  const locks = new InProcessLockManager();
  const events: TrainingEvent[] = [];
  let onEvent: (e: TrainingEvent) => void = () => undefined;
  const host = new TrainingHost({
    post: (e) => {
      events.push(e);
      onEvent(e);
    },
    chooseBackend: null,
    indexedDB,
    locks,
  });
  return { host, events, indexedDB, locks, setOnEvent: (f: (e: TrainingEvent) => void) => (onEvent = f) };
}

const kinds = (events: readonly TrainingEvent[]) => events.map((e) => e.kind);

describe('training host', () => {
  it('runs a tiny run to its evaluation and stores what it did', async () => {
    const { host, events, indexedDB, locks } = setup();
    const config = parseTrainingConfig(TINY);
    await host.handle({ kind: 'start', runId: 'r1', config });

    const k = kinds(events);
    expect(k[0]).toBe('backend');
    expect(k).toContain('seed');
    expect(k.filter((x) => x === 'iteration')).toHaveLength(3);
    expect(k.at(-1)).toBe('finished');
    const seed = events.filter((e): e is Extract<TrainingEvent, { kind: 'seed' }> => e.kind === 'seed');
    expect(seed.at(-1)?.done).toBe(seed.at(-1)?.total);
    expect(seed.at(-1)?.total).toBeGreaterThan(0);
    const finished = events.at(-1) as Extract<TrainingEvent, { kind: 'finished' }>;
    expect(finished.evaluation.episodes).toBe(3);
    expect(finished.evaluation.success.low).toBeLessThanOrEqual(finished.evaluation.success.mean);
    expect(finished.record).toMatchObject({ status: 'done', iteration: 3, totalIterations: 3, realTransitions: 0, stoppedBy: 'done' });

    const index = await RunIndex.open({ indexedDB });
    expect(await index.get('r1')).toMatchObject({ status: 'done', iteration: 3 });
    index.close();
    const replay = await openReplayStore({ indexedDB, locks });
    const counts = await replay.counts('r1');
    expect(counts.bySource.offline.trajectories).toBeGreaterThan(0);
    expect(counts.bySource.synthetic.trajectories).toBeGreaterThan(0);
    expect(counts.bySource.real.trajectories).toBe(0);
    expect((await replay.readMetrics('r1')).map((m) => m.iteration)).toEqual([0, 1, 2]);
    const snap = snapshotFromCheckpoint(await replay.loadCheckpoint('r1', SNAPSHOT_CHECKPOINT));
    expect(snap.iteration).toBe(3);
    expect(await replay.isRunLocked('r1')).toBe(false);
    await replay.close();
  });

  it('pauses at an iteration boundary and resumes with its metrics history', async () => {
    const { host, events, setOnEvent } = setup();
    const config = parseTrainingConfig(TINY);
    setOnEvent((e) => {
      if (e.kind === 'iteration' && e.iteration === 1) void host.handle({ kind: 'pause' });
    });
    await host.handle({ kind: 'start', runId: 'r2', config });
    expect(events.at(-1)).toMatchObject({ kind: 'paused', record: { status: 'paused', iteration: 1 } });
    expect(kinds(events)).not.toContain('finished');
    const first = events.filter((e) => e.kind === 'iteration');
    expect(first).toHaveLength(1);

    setOnEvent(() => undefined);
    events.length = 0;
    await host.handle({ kind: 'resume', runId: 'r2' });
    const started = events.find((e) => e.kind === 'started') as Extract<TrainingEvent, { kind: 'started' }>;
    expect(started.metrics.map((m) => m.iteration)).toEqual([0]);
    expect(started.record.iteration).toBe(1);
    expect(kinds(events)).not.toContain('seed');
    const later = events.filter((e): e is Extract<TrainingEvent, { kind: 'iteration' }> => e.kind === 'iteration');
    expect(later.map((e) => e.metrics.iteration)).toEqual([1, 2]);
    expect(events.at(-1)).toMatchObject({ kind: 'finished', record: { status: 'done', iteration: 3 } });
  });

  it('stops early and evaluates the policy as it stands', async () => {
    const { host, events, setOnEvent } = setup();
    setOnEvent((e) => {
      if (e.kind === 'iteration' && e.iteration === 1) void host.handle({ kind: 'stop' });
    });
    await host.handle({ kind: 'start', runId: 'r3', config: parseTrainingConfig(TINY) });
    expect(events.at(-1)).toMatchObject({ kind: 'finished', record: { status: 'done', iteration: 1, stoppedBy: 'user' }, evaluation: { iteration: 1 } });
  });

  it('refuses to resume a finished or unknown run, and a second run while one trains', async () => {
    const { host, events } = setup();
    await host.handle({ kind: 'resume', runId: 'nope' });
    expect(events.at(-1)).toMatchObject({ kind: 'failed', runId: 'nope' });
    expect((events.at(-1) as { message: string }).message).toMatch(/no run "nope"/);

    const running = host.handle({ kind: 'start', runId: 'r4', config: parseTrainingConfig({ ...TINY, iterations: 1 }) });
    await host.handle({ kind: 'start', runId: 'r5', config: parseTrainingConfig(TINY) });
    expect(events.at(-1)).toMatchObject({ kind: 'failed', runId: 'r5' });
    await running;
    expect(events.at(-1)).toMatchObject({ kind: 'finished' });
    await host.handle({ kind: 'resume', runId: 'r4' });
    expect((events.at(-1) as { message: string }).message).toMatch(/is done: nothing to resume/);
  });

  it('evaluates an imported checkpoint file as a new run with the result of the run it came from', async () => {
    const { host, events, indexedDB, locks } = setup();
    const config = parseTrainingConfig(TINY);
    await host.handle({ kind: 'start', runId: 'src', config });
    const original = events.at(-1) as Extract<TrainingEvent, { kind: 'finished' }>;
    expect(original.kind).toBe('finished');
    const replay = await openReplayStore({ indexedDB, locks });
    const snapshot = snapshotFromCheckpoint(await replay.loadCheckpoint('src', SNAPSHOT_CHECKPOINT));
    const file = serializeCheckpoint(snapshot.checkpoint);
    await replay.close();

    events.length = 0;
    await host.handle({ kind: 'evaluate-checkpoint', runId: 'imp', config, checkpoint: file, fileName: 'p.dgckpt' });
    const finished = events.at(-1) as Extract<TrainingEvent, { kind: 'finished' }>;
    expect(kinds(events)).toEqual(expect.arrayContaining(['backend', 'started', 'evaluating', 'finished']));
    expect(finished.kind).toBe('finished');
    expect(finished.record.imported).toEqual({ file: 'p.dgckpt', updates: snapshot.checkpoint.iteration });
    expect(finished.evaluation.success).toEqual(original.evaluation.success);
    expect(finished.evaluation.meanReward).toBe(original.evaluation.meanReward);
    // The imported policy is kept with the new run, weight for weight.
    const again = await openReplayStore({ indexedDB, locks });
    const kept = fromRecord(await again.loadCheckpoint('imp', IMPORTED_CHECKPOINT));
    expect(kept.weights.map((w) => Array.from(w.data))).toEqual(snapshot.checkpoint.weights.map((w) => Array.from(w.data)));
    await again.close();
  });

  it('refuses a corrupt checkpoint file and a feature-width mismatch without leaving a run', async () => {
    const { host, events, indexedDB } = setup();
    const config = parseTrainingConfig(TINY);
    await host.handle({ kind: 'evaluate-checkpoint', runId: 'bad', config, checkpoint: new Uint8Array([1, 2, 3]), fileName: 'junk.bin' });
    const failed = events.at(-1) as Extract<TrainingEvent, { kind: 'failed' }>;
    expect(failed.kind).toBe('failed');
    expect(failed.message).toMatch(/bad magic/);

    await host.handle({ kind: 'start', runId: 'src', config });
    const replay = await openReplayStore({ indexedDB });
    const file = serializeCheckpoint(snapshotFromCheckpoint(await replay.loadCheckpoint('src', SNAPSHOT_CHECKPOINT)).checkpoint);
    await replay.close();
    const wider = parseTrainingConfig({ ...TINY, policy: { hiddenDim: 8, embeddingDim: 64 } });
    await host.handle({ kind: 'evaluate-checkpoint', runId: 'wide', config: wider, checkpoint: file, fileName: 'p.dgckpt' });
    const mismatch = events.at(-1) as Extract<TrainingEvent, { kind: 'failed' }>;
    expect(mismatch.kind).toBe('failed');
    expect(mismatch.message).toMatch(/state\/action features of width/);
    const index = await RunIndex.open({ indexedDB });
    expect((await index.list()).map((r) => r.id)).toEqual(['src']);
    index.close();
  });
});
