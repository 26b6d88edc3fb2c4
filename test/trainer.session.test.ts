import * as tf from '@tensorflow/tfjs';
import { describe, expect, it } from 'vitest';
import { MemoryCheckpointSink, parseCheckpoint } from '../src/policy/checkpoint.ts';
import { TrainingSession } from '../src/rl/session.ts';
import { syntheticDecisions, syntheticGrpoBatch } from '../src/rl/synthetic.ts';

const dims = { stateDim: 16, actionDim: 16 };
const config = { policy: { ...dims, hiddenDim: 8, seed: 1 }, seed: 4 };
const batch = syntheticGrpoBatch({ groups: 2, groupSize: 4, maxSteps: 2, ...dims, minCandidates: 2, maxCandidates: 5, seed: 2 });
const probe = syntheticDecisions({ count: 4, ...dims, minCandidates: 2, maxCandidates: 5, seed: 3 });

describe('TrainingSession', () => {
  it('reports the backend and checkpoints every N updates to its sink', async () => {
    const sink = new MemoryCheckpointSink(5);
    const s = await TrainingSession.start({ config, backend: 'cpu', checkpointEvery: 2, sink });
    expect(s.info()).toMatchObject({ iteration: 0, backend: { backend: 'cpu', requested: 'cpu' }, recoveries: [] });
    expect(s.info().parameters).toBeGreaterThan(0);
    expect(sink.size).toBe(1);
    await s.grpo(batch);
    expect(sink.size).toBe(1);
    await s.grpo(batch);
    expect(sink.size).toBe(2);
    expect((await sink.loadLatest())?.iteration).toBe(2);
    s.dispose();
  });

  it('recovers from a lost device: new backend, latest checkpoint reloaded, the call runs again', async () => {
    const sink = new MemoryCheckpointSink();
    const s = await TrainingSession.start({ config, backend: 'wasm', checkpointEvery: 2, sink });
    await s.grpo(batch);
    await s.grpo(batch); // checkpoint at iteration 2
    await s.grpo(batch); // iteration 3, not checkpointed
    const saved = await sink.loadLatest();
    s.markDeviceLost('simulated');
    const m = await s.grpo(batch);
    expect(Number.isFinite(m.loss)).toBe(true);
    expect(m.iteration).toBe(3); // resumed from iteration 2, then this update
    expect(s.info().recoveries).toEqual([{ reason: 'simulated', from: 'wasm', to: 'wasm', iteration: 2, fresh: false }]);
    const restoredLogits = await s.logits(probe);
    expect(restoredLogits.every(Number.isFinite)).toBe(true);
    expect(saved?.iteration).toBe(2);
    s.dispose();
  });

  it('samples reproducibly with a seed, and round-trips checkpoint files', async () => {
    const s = await TrainingSession.start({ config, backend: 'cpu' });
    const a = await s.act(probe, { seed: 5 });
    const b = await s.act(probe, { seed: 5 });
    expect(Array.from(a.actions)).toEqual(Array.from(b.actions));
    expect(Array.from((await s.act(probe, { greedy: true })).actions)).toEqual(Array.from((await s.act(probe, { greedy: true })).actions));
    await s.grpo(batch);
    const file = await s.exportCheckpoint();
    expect(parseCheckpoint(file).iteration).toBe(1);
    const logits = await s.logits(probe);
    await s.grpo(batch);
    const info = await s.importCheckpoint(file);
    expect(info.iteration).toBe(1);
    expect(Array.from(await s.logits(probe))).toEqual(Array.from(logits));
    const before = tf.memory().numTensors;
    s.dispose();
    expect(tf.memory().numTensors).toBeLessThan(before);
  });

  it('rejects bad options before choosing a backend', async () => {
    await expect(TrainingSession.start({ config, checkpointEvery: -1 })).rejects.toThrow(/checkpointEvery .* got -1/);
    await expect(TrainingSession.start({ config: { policy: { stateDim: 0, actionDim: 4 } } })).rejects.toThrow(/policy\.stateDim/);
  });
});
