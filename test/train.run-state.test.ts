import { describe, expect, it } from 'vitest';
import { parseTrainingConfig } from '../src/train/config.ts';
import type { IterationMetrics } from '../src/train/loop.ts';
import { decodeRunState, encodeRunState, RunStateFormatError, type RunState } from '../src/train/run-state.ts';

function metrics(iteration: number, over: Partial<IterationMetrics> = {}): IterationMetrics {
  const zero = { iteration, phase: 'synthetic' as const };
  const numbers = ['successRate', 'meanReward', 'loss', 'kl', 'clipFraction', 'entropy', 'vTauMean', 'vTauPositiveShare', 'vTauMax', 'poolSize', 'generatedTasks', 'generatedShare', 'steps', 'syntheticSteps', 'syntheticStepsPerSec', 'simCalls', 'realTransitions', 'offlineTransitions', 'updateMs', 'rolloutMs', 'wallMs'];
  return { ...zero, ...Object.fromEntries(numbers.map((k, i) => [k, i / 10])), ...over } as IterationMetrics;
}

const state: RunState = {
  format: 'dreamgym-run',
  version: 1,
  config: parseTrainingConfig({ env: 'shop', mode: 'dreamgym' }, 'quick'),
  iteration: 2,
  pool: [{ id: 'g1', env: 'shop', instruction: 'a red mug', goal: { hidden: true }, split: 'train', origin: 'generated', parentId: 't0', generation: 1 }],
  lastSeen: { g1: { iteration: 1, vTau: Number.NaN }, g2: { iteration: 0, vTau: 0.25 } },
  metrics: [metrics(0), metrics(1, { kl: Number.NaN })],
  realTransitions: 0,
  realResets: 0,
  syntheticSteps: 40,
  wallMs: 1234,
};

describe('run state codec', () => {
  it('writes NaN as null (JSON has no NaN) and reads it back as NaN', () => {
    const json = encodeRunState(state) as { lastSeen: Record<string, { vTau: unknown }>; metrics: Record<string, unknown>[] };
    expect(json.lastSeen['g1']?.vTau).toBeNull();
    expect(json.metrics[1]?.['kl']).toBeNull();
    const back = decodeRunState(JSON.parse(JSON.stringify(json)));
    expect(Number.isNaN(back.lastSeen['g1']?.vTau)).toBe(true);
    expect(back.lastSeen['g2']?.vTau).toBe(0.25);
    expect(Number.isNaN(back.metrics[1]?.kl)).toBe(true);
    expect(back.metrics[0]).toEqual(state.metrics[0]);
    expect(back.pool).toEqual(state.pool);
    expect(back.config).toEqual(state.config);
  });

  it('leaves out a snapshot checkpoint and keeps fields a newer loop added', () => {
    const json = encodeRunState({ ...state, checkpoint: { weights: {} } } as unknown as RunState) as Record<string, unknown>;
    expect(json).not.toHaveProperty('checkpoint');
    const back = decodeRunState({ ...json, addedLater: 7 }) as RunState & { addedLater?: number };
    expect(back.addedLater).toBe(7);
  });

  it('keeps a synthetic phase validation with its checks in between', () => {
    const validation = { tasks: 50, start: 0.02, between: [{ iteration: 5, success: 0.76 }, { iteration: 10, success: 0.5 }], best: { iteration: 5, success: 0.76 }, end: 0.62, kept: 'between' as const };
    const back = decodeRunState(JSON.parse(JSON.stringify(encodeRunState({ ...state, validation }))));
    expect(back.validation).toEqual(validation);
    expect(() => decodeRunState({ ...(encodeRunState(state) as object), validation: { ...validation, kept: 'middle' } })).toThrow(/validation\.kept/);
  });

  it("reads a config stored before the noisy episodes' source existed as the expert's (what it was recorded with), and keeps a stored one", () => {
    const json = encodeRunState(state) as { config: { offline: Record<string, unknown> } };
    expect(state.config.offline.noisySource).toBe('demonstrator');
    const { noisySource: _noisySource, ...older } = json.config.offline;
    expect(decodeRunState({ ...json, config: { ...json.config, offline: older } }).config.offline.noisySource).toBe('expert');
    expect(decodeRunState(JSON.parse(JSON.stringify(json))).config.offline.noisySource).toBe('demonstrator');
    expect(() => decodeRunState({ ...json, config: { ...json.config, offline: { ...older, noisySource: 'oracle' } } })).toThrow(/config\.offline\.noisySource/);
  });

  it('names the first bad field', () => {
    const json = encodeRunState(state) as Record<string, unknown>;
    expect(() => decodeRunState({ ...json, iteration: -1 })).toThrow(RunStateFormatError);
    expect(() => decodeRunState({ ...json, iteration: -1 })).toThrow(/iteration/);
    expect(() => decodeRunState({ ...json, metrics: [{ iteration: 0, phase: 'dreaming' }] })).toThrow(/metrics\.0\.phase/);
    expect(() => decodeRunState(null)).toThrow(RunStateFormatError);
  });
});
