import { afterAll, describe, expect, it } from 'vitest';
import { CheckpointError } from '../src/policy/checkpoint.ts';
import { ReplayCheckpointSink } from '../src/policy/replay-sink.ts';
import { openNodeReplayStore } from '../src/replay/node.ts';
import type { ReplayStore } from '../src/replay/index.ts';
import { TrainingSession } from '../src/rl/session.ts';
import { syntheticDecisions, syntheticGrpoBatch } from '../src/rl/synthetic.ts';

const dims = { stateDim: 8, actionDim: 8 };
const stores: ReplayStore[] = [];
afterAll(async () => {
  await Promise.all(stores.map((s) => s.close()));
});

async function store(): Promise<ReplayStore> {
  const s = await openNodeReplayStore({ name: `policy-sink-${process.pid}-${stores.length}` });
  stores.push(s);
  await s.createRun({ id: 'run', embedding: { id: 'hashed', dim: 8 } });
  return s;
}

describe('ReplayCheckpointSink', () => {
  it('saves session checkpoints into the replay store and recovers from the latest', async () => {
    const replay = await store();
    const sink = new ReplayCheckpointSink(replay, 'run');
    expect(await sink.loadLatest()).toBeUndefined();
    const session = await TrainingSession.start({ config: { policy: { ...dims, hiddenDim: 4 } }, backend: 'cpu', checkpointEvery: 1, sink });
    const batch = syntheticGrpoBatch({ groups: 2, groupSize: 2, maxSteps: 2, ...dims, minCandidates: 2, maxCandidates: 3, seed: 1 });
    await session.grpo(batch);
    await session.grpo(batch);
    const names = (await replay.listCheckpoints('run')).map((c) => c.name).sort();
    expect(names).toEqual(['policy-iter000000', 'policy-iter000001', 'policy-iter000002']);
    const latest = await sink.loadLatest();
    expect(latest?.iteration).toBe(2);
    expect(latest?.optimizer.step).toBe(2);
    const probe = syntheticDecisions({ count: 3, ...dims, minCandidates: 2, maxCandidates: 3, seed: 2 });
    const before = await session.logits(probe);
    session.markDeviceLost('test');
    expect(Array.from(await session.logits(probe))).toEqual(Array.from(before));
    expect(session.info().recoveries[0]).toMatchObject({ iteration: 2, fresh: false });
    session.dispose();
  });

  it('refuses a run checkpoint that is not a policy checkpoint', async () => {
    const replay = await store();
    await replay.saveCheckpoint('run', { name: 'other', iteration: 1, tensors: [], config: { format: 'something-else' } });
    await expect(new ReplayCheckpointSink(replay, 'run').loadLatest()).rejects.toThrow(CheckpointError);
    await expect(new ReplayCheckpointSink(replay, 'run').loadLatest()).rejects.toThrow(/not a policy checkpoint/);
  });
});
