/**
 * The real trainer worker (workers/trainer.worker.ts) in Chromium, over its comlink RPC:
 * start, forward (act and logits), update, checkpoint export/import, device-loss recovery inside
 * the worker, errors.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { parseCheckpoint } from '../src/policy/checkpoint.ts';
import { openReplayStore } from '../src/replay/index.ts';
import { syntheticDecisions, syntheticGrpoBatch } from '../src/rl/synthetic.ts';
import { startTrainerWorker } from '../workers/trainer.client.ts';

const dims = { stateDim: 16, actionDim: 16 };
const config = { policy: { ...dims, hiddenDim: 8, seed: 2 }, optimizer: { learningRate: 1e-2 } };
const decisions = syntheticDecisions({ count: 6, ...dims, minCandidates: 2, maxCandidates: 5, seed: 7 });
const batch = syntheticGrpoBatch({ groups: 2, groupSize: 4, maxSteps: 2, ...dims, minCandidates: 2, maxCandidates: 5, seed: 8 });

const worker = startTrainerWorker();
afterAll(() => worker.terminate());

describe('trainer worker RPC', () => {
  it('round-trips init, a forward pass, an update and a checkpoint', async () => {
    const { api } = worker;
    const info = await api.init({ config, backend: 'wasm', checkpointEvery: 1 });
    expect(info.backend.backend).toBe('wasm');
    expect(info.iteration).toBe(0);

    const logits = await api.logits(decisions);
    expect(logits).toBeInstanceOf(Float32Array);
    const k = Math.max(...decisions.map((d) => d.candidates.length));
    expect(logits).toHaveLength(decisions.length * k);
    const acted = await api.act(decisions, { seed: 1 });
    expect(acted.actions).toHaveLength(decisions.length);
    acted.actions.forEach((a, i) => expect(a).toBeLessThan(decisions[i]?.candidates.length as number));

    const m = await api.grpo(batch);
    expect(m).toMatchObject({ algorithm: 'grpo', iteration: 1, skipped: false });
    expect(Number.isFinite(m.loss) && Number.isFinite(m.gradNorm)).toBe(true);
    const after = await api.logits(decisions);
    expect(Array.from(after)).not.toEqual(Array.from(logits));

    const file = await api.exportCheckpoint();
    expect(parseCheckpoint(file).iteration).toBe(1);
    await api.grpo(batch);
    expect((await api.importCheckpoint(file)).iteration).toBe(1);
    expect(Array.from(await api.logits(decisions))).toEqual(Array.from(after));
  });

  it('recovers inside the worker when its WebGPU device is lost', async () => {
    const { api } = worker;
    const info = await api.init({ config, backend: 'webgpu', checkpointEvery: 1 });
    expect(info.backend.backend).toBe('webgpu');
    await api.grpo(batch);
    expect(await api.loseDevice()).toBe(true);
    const m = await api.grpo(batch);
    expect(m.iteration).toBe(2);
    expect(Number.isFinite(m.loss)).toBe(true);
    expect((await api.info()).recoveries).toMatchObject([{ from: 'webgpu', iteration: 1, fresh: false }]);
  });

  it('checkpoints into a replay-store run from inside the worker and resumes from it', async () => {
    const { api } = worker;
    const name = `policy-worker-${Date.now()}`;
    const store = await openReplayStore({ name });
    await store.createRun({ id: 'run', embedding: { id: 'hashed', dim: 16 } });
    try {
      await api.init({ config, backend: 'wasm', checkpointEvery: 1, checkpointRun: { runId: 'run', store: name } });
      await api.grpo(batch);
      const saved = (await store.listCheckpoints('run')).map((c) => c.name).sort();
      expect(saved).toEqual(['policy-iter000000', 'policy-iter000001']);
      const resumed = await api.init({ config, backend: 'wasm', checkpointRun: { runId: 'run', store: name } });
      expect(resumed.iteration).toBe(1);
      await api.dispose();
    } finally {
      await store.close();
    }
  });

  it('rejects bad calls with the error message from the worker', async () => {
    const { api } = worker;
    await expect(api.grpo(batch)).rejects.toThrow(/call init\(\) first/);
    await api.init({ config, backend: 'wasm' });
    const bad = { groupSize: 3, trajectories: batch.trajectories };
    await expect(api.grpo(bad)).rejects.toThrow(/8 rewards do not split into groups of 3/);
    await expect(api.init({ config: { policy: { stateDim: 0, actionDim: 2 } } })).rejects.toThrow(/stateDim/);
  });
});
