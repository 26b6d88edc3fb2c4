/** The run snapshot as one replay-store checkpoint record, and metrics as plain numbers (src/train/runs/snapshot.ts). */
import { describe, expect, it } from 'vitest';
import type { CheckpointRecord } from '../src/replay/index.ts';
import type { IterationMetrics, RunSnapshot } from '../src/train/loop.ts';
import { parseTrainingConfig } from '../src/train/config.ts';
import { getEnvSpec } from '../src/envs/registry.ts';
import { metricsFromValues, metricValues, SNAPSHOT_CHECKPOINT, SnapshotFormatError, snapshotFromCheckpoint, snapshotToCheckpoint } from '../src/train/runs/snapshot.ts';

const metrics = (iteration: number, phase: IterationMetrics['phase']): IterationMetrics => ({
  iteration, phase, successRate: 0.5, meanReward: 0.25, loss: 1.5, kl: 0.01, clipFraction: 0.1, entropy: 0.7, vTauMean: 0.2, vTauPositiveShare: 0.5,
  vTauMax: 0.25, poolSize: 12, generatedTasks: 2, generatedShare: 0.5, steps: 30, syntheticSteps: 30, syntheticStepsPerSec: 100, simCalls: 31,
  realTransitions: 0, offlineTransitions: 90, updateMs: 5, rolloutMs: 7, wallMs: 13,
});

function snapshot(): RunSnapshot {
  const config = parseTrainingConfig({ env: 'shop', mode: 'dreamgym' }, 'quick');
  return {
    format: 'dreamgym-run',
    version: 1,
    config,
    iteration: 2,
    pool: getEnvSpec('shop').tasks({ split: 'train', count: 2, seed: 0 }),
    lastSeen: { 'gen-1': { iteration: 1, vTau: Number.NaN }, 'gen-2': { iteration: 0, vTau: 0.25 } },
    metrics: [metrics(0, 'sft'), metrics(1, 'synthetic')],
    realTransitions: 0,
    realResets: 0,
    syntheticSteps: 60,
    checkpoint: {
      format: 'dreamgym-checkpoint',
      version: 1,
      iteration: 7,
      config: { policy: { stateDim: 2, actionDim: 2 } },
      weights: [{ name: 'w', shape: [2], dtype: 'float32', data: new Float32Array([1, 2]) }],
      optimizer: { kind: 'adam', step: 7, slots: [{ name: 'm/w', shape: [2], dtype: 'float32', data: new Float32Array([0.5, 0.5]) }] },
    },
    wallMs: 1234,
  };
}

/** What the replay store keeps of a saved checkpoint (structured clone, as IndexedDB does). */
function asRecord(input: ReturnType<typeof snapshotToCheckpoint>): CheckpointRecord {
  return structuredClone({
    runId: 'r',
    name: input.name,
    iteration: input.iteration,
    createdAt: 1,
    tensors: [...input.tensors],
    optimizer: { tensors: [...(input.optimizer?.tensors ?? [])], config: input.optimizer?.config },
    config: input.config,
  }) as CheckpointRecord;
}

describe('run snapshot codec', () => {
  it('round-trips a snapshot through a checkpoint record, NaN and update count included', () => {
    const s = snapshot();
    const input = snapshotToCheckpoint(s);
    expect(input.name).toBe(SNAPSHOT_CHECKPOINT);
    expect(input.iteration).toBe(2);
    // Plain JSON in the config: no NaN survives JSON, so it must not be there.
    expect(JSON.stringify(input.config)).not.toContain('NaN');
    const back = snapshotFromCheckpoint(asRecord(input));
    expect(back.checkpoint.iteration).toBe(7);
    expect(back.lastSeen['gen-1']?.vTau).toBeNaN();
    expect(back.lastSeen['gen-2']?.vTau).toBe(0.25);
    expect(back.metrics).toEqual(s.metrics);
    expect(back.pool).toEqual(s.pool);
    expect(back.config).toEqual(s.config);
    expect(Array.from(back.checkpoint.weights[0]?.data ?? [])).toEqual([1, 2]);
    expect(back.checkpoint.optimizer.step).toBe(7);
  });

  it('refuses a record that is not a run snapshot, naming the problem', () => {
    const input = snapshotToCheckpoint(snapshot());
    const record = asRecord(input);
    const noRun = { ...record, config: { ...(record.config as object), run: { format: 'other' } } } as CheckpointRecord;
    expect(() => snapshotFromCheckpoint(noRun)).toThrow(SnapshotFormatError);
    expect(() => snapshotFromCheckpoint({ ...record, config: null } as CheckpointRecord)).toThrow(/not a run snapshot/);
  });

  it('turns metrics into numbers and back', () => {
    for (const phase of ['sft', 'synthetic', 'real'] as const) {
      const m = metrics(3, phase);
      const values = metricValues(m);
      expect(Object.values(values).every((v) => typeof v === 'number')).toBe(true);
      expect(metricsFromValues(values)).toEqual(m);
    }
    expect(() => metricsFromValues({ ...metricValues(metrics(0, 'sft')), phase: 9 })).toThrow(SnapshotFormatError);
    const { loss: _l, ...partial } = metricValues(metrics(0, 'sft'));
    expect(() => metricsFromValues(partial)).toThrow(/lacks loss/);
  });
});
