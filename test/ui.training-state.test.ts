/** The training view's reducer (src/ui/state/training-state.ts): worker events and page requests. */
import { describe, expect, it } from 'vitest';
import { parseTrainingConfig } from '../src/train/config.ts';
import type { IterationMetrics } from '../src/train/loop.ts';
import type { PageRunRecord, StoredRunEvaluation } from '../src/train/runs/records.ts';
import { initialTrainingState, isActive, reduceTraining, type TrainingAction, type TrainingViewState } from '../src/ui/state/training-state.ts';

const config = parseTrainingConfig({ env: 'shop', mode: 'dreamgym', iterations: 3 });
const record = (id: string, patch: Partial<PageRunRecord> = {}): PageRunRecord => ({
  id, createdAt: 1, updatedAt: 1, config, status: 'running', iteration: 0, totalIterations: 3, realTransitions: 0, offlineTransitions: 50, trainWallMs: 0, ...patch,
});
const m = (iteration: number): IterationMetrics => ({
  iteration, phase: 'synthetic', successRate: 0.5, meanReward: 0.5, loss: 1, kl: 0, clipFraction: 0, entropy: 1, vTauMean: 0, vTauPositiveShare: 0, vTauMax: 0,
  poolSize: 10, generatedTasks: 0, generatedShare: 0, steps: 4, syntheticSteps: 4, syntheticStepsPerSec: 10, simCalls: 4, realTransitions: 0,
  offlineTransitions: 50, updateMs: 1, rolloutMs: 1, wallMs: 2,
});
const evaluation: StoredRunEvaluation = { episodes: 3, successRate: 1 / 3, meanReward: 0.5, success: { mean: 1 / 3, low: 0, high: 1 }, reward: { mean: 0.5, low: 0, high: 1 }, iteration: 3, wallMs: 5 };
const run = (actions: readonly TrainingAction[], from: TrainingViewState = initialTrainingState()) => actions.reduce(reduceTraining, from);

describe('training view reducer', () => {
  it('follows a run from start to its evaluation', () => {
    const s = run([
      { kind: 'request', what: 'start', runId: 'a' },
      { kind: 'seed', runId: 'a', done: 5, total: 10 },
    ]);
    expect(s).toMatchObject({ status: 'seeding', runId: 'a', seed: { done: 5, total: 10 } });
    const t = run([
      { kind: 'started', record: record('a'), metrics: [] },
      { kind: 'iteration-start', runId: 'a', iteration: 0, totalIterations: 3, phase: 'synthetic' },
      { kind: 'iteration', runId: 'a', iteration: 1, totalIterations: 3, metrics: m(0) },
      { kind: 'iteration', runId: 'a', iteration: 2, totalIterations: 3, metrics: m(1) },
    ], s);
    expect(t).toMatchObject({ status: 'running', iteration: 2, totalIterations: 3, phase: 'synthetic', resumed: false });
    expect(t.metrics.map((x) => x.iteration)).toEqual([0, 1]);
    expect(t.runs.map((r) => r.id)).toEqual(['a']);
    const u = run([
      { kind: 'evaluating', runId: 'a', done: 1, total: 3 },
      { kind: 'finished', record: record('a', { status: 'done', iteration: 3, evaluation }), evaluation },
    ], t);
    expect(u).toMatchObject({ status: 'done', iteration: 3, evaluation, phase: null });
    expect(u.runs).toHaveLength(1);
    expect(u.runs[0]?.status).toBe('done');
    expect(isActive(u.status)).toBe(false);
  });

  it('shows a validation inside the simulator until the next iteration event', () => {
    const s = run([
      { kind: 'request', what: 'start', runId: 'a' },
      { kind: 'started', record: record('a'), metrics: [] },
      { kind: 'iteration-start', runId: 'a', iteration: 0, totalIterations: 3, phase: 'synthetic' },
      { kind: 'validating', runId: 'a', iteration: 0, done: 0, total: 50 },
      { kind: 'validating', runId: 'b', iteration: 0, done: 9, total: 50 },
      { kind: 'validating', runId: 'a', iteration: 0, done: 20, total: 50 },
    ]);
    expect(s.validating).toEqual({ done: 20, total: 50, iteration: 0 });
    // A pause waits for the validation: it goes on showing.
    expect(run([{ kind: 'request', what: 'pause' }], s).validating).toEqual({ done: 20, total: 50, iteration: 0 });
    expect(run([{ kind: 'iteration', runId: 'a', iteration: 1, totalIterations: 3, metrics: m(0) }], s).validating).toBeNull();
    expect(run([{ kind: 'iteration-start', runId: 'a', iteration: 0, totalIterations: 3, phase: 'synthetic' }], s).validating).toBeNull();
    expect(run([{ kind: 'failed', runId: 'a', message: 'boom' }], s).validating).toBeNull();
  });

  it('keeps one metric per iteration in order, and marks a resumed run', () => {
    const s = run([
      { kind: 'request', what: 'resume', runId: 'a' },
      { kind: 'started', record: record('a', { iteration: 2 }), metrics: [m(0), m(1)] },
      { kind: 'iteration', runId: 'a', iteration: 3, totalIterations: 3, metrics: m(2) },
      { kind: 'iteration', runId: 'a', iteration: 2, totalIterations: 3, metrics: m(1) },
    ]);
    expect(s.resumed).toBe(true);
    expect(s.metrics.map((x) => x.iteration)).toEqual([0, 1, 2]);
  });

  it('pauses and stops only an active run, and ignores events of other runs', () => {
    const idle = run([{ kind: 'request', what: 'pause' }]);
    expect(idle.status).toBe('idle');
    const s = run([
      { kind: 'request', what: 'start', runId: 'a' },
      { kind: 'started', record: record('a'), metrics: [] },
      { kind: 'request', what: 'pause' },
      { kind: 'iteration', runId: 'other', iteration: 1, totalIterations: 9, metrics: m(0) },
    ]);
    expect(s).toMatchObject({ status: 'pausing', iteration: 0, metrics: [] });
    const p = run([{ kind: 'paused', record: record('a', { status: 'paused', iteration: 1 }) }], s);
    expect(p).toMatchObject({ status: 'paused', iteration: 1 });
    expect(run([{ kind: 'request', what: 'stop' }], p).status).toBe('paused');
  });

  it('shows a stored run at rest with its result, never over a run in progress; a halted run rests paused with why', () => {
    const shown = run([{ kind: 'show', record: record('a', { status: 'done', iteration: 3, evaluation }), metrics: [m(0), m(1), m(2)] }]);
    expect(shown).toMatchObject({ status: 'done', runId: 'a', iteration: 3, totalIterations: 3, evaluation });
    expect(shown.metrics).toHaveLength(3);
    // A run another tab left unfinished rests, for Resume; a failed one says why.
    expect(run([{ kind: 'show', record: record('b', { status: 'running', iteration: 1 }), metrics: [m(0)] }], shown)).toMatchObject({ status: 'paused', runId: 'b', evaluation: null });
    expect(run([{ kind: 'show', record: record('c', { status: 'failed', error: 'boom' }), metrics: [] }], shown)).toMatchObject({ status: 'failed', error: 'boom' });
    const training = run([{ kind: 'request', what: 'start', runId: 'd' }], shown);
    expect(run([{ kind: 'show', record: record('a', { status: 'done', evaluation }), metrics: [] }], training)).toBe(training);

    const stopping = run([{ kind: 'started', record: record('d'), metrics: [] }, { kind: 'request', what: 'stop' }], training);
    expect(stopping.status).toBe('stopping');
    const halted = run([{ kind: 'halted', runId: 'd', message: 'Stopped inside iteration 1', record: record('d', { status: 'paused' }) }], stopping);
    expect(halted).toMatchObject({ status: 'paused', error: 'Stopped inside iteration 1', phase: null });
    expect(isActive(halted.status)).toBe(false);
    // Halted before the run was written down: nothing to resume.
    expect(run([{ kind: 'halted', runId: 'd', message: 'Stopped' }], stopping)).toMatchObject({ status: 'failed', error: 'Stopped' });
  });

  it('marks the run training here stalled until it is heard from again; a run at rest, another run or another tab\'s is never stalled', () => {
    const training = run([{ kind: 'request', what: 'start', runId: 'a' }, { kind: 'started', record: record('a'), metrics: [] }]);
    expect(training.stalled).toBe(false);
    const stalled = run([{ kind: 'stalled', runId: 'a', sinceMs: 60_000 }], training);
    expect(stalled).toMatchObject({ status: 'running', stalled: true });
    // The list of runs and the backend report are no news of the run.
    expect(run([{ kind: 'runs', runs: [record('a')] }], stalled).stalled).toBe(true);
    expect(run([{ kind: 'iteration-start', runId: 'a', iteration: 0, totalIterations: 3, phase: 'synthetic' }], stalled).stalled).toBe(false);
    expect(run([{ kind: 'halted', runId: 'a', message: 'Ended', record: record('a', { status: 'paused' }) }], stalled).stalled).toBe(false);
    expect(run([{ kind: 'stalled', runId: 'b', sinceMs: 60_000 }], training).stalled).toBe(false);
    const paused = run([{ kind: 'paused', record: record('a', { status: 'paused' }) }], training);
    expect(run([{ kind: 'stalled', runId: 'a', sinceMs: 60_000 }], paused).stalled).toBe(false);
    const watching = run([{ kind: 'watch', runId: 'a' }], training);
    expect(run([{ kind: 'stalled', runId: 'a', sinceMs: 60_000 }], watching).stalled).toBe(false);
  });

  it('shows an unfinished run found in storage, and failures', () => {
    const found = run([{ kind: 'found', record: record('b', { status: 'paused', iteration: 2 }), metrics: [m(0), m(1)] }]);
    expect(found).toMatchObject({ status: 'paused', runId: 'b', iteration: 2 });
    expect(found.metrics).toHaveLength(2);
    const failed = run([{ kind: 'failed', runId: 'b', message: 'boom', record: record('b', { status: 'failed' }) }], found);
    expect(failed).toMatchObject({ status: 'failed', error: 'boom' });
    const crashed = run([{ kind: 'failed', runId: '', message: 'worker crashed' }], found);
    expect(crashed.status).toBe('failed');
    const elsewhere = run([{ kind: 'failed', runId: 'zzz', message: 'x' }], found);
    expect(elsewhere.status).toBe('paused');
  });

  it('follows a run another tab trains read-only until it comes to rest or is let go', () => {
    const found = run([{ kind: 'found', record: record('a', { iteration: 1 }), metrics: [m(0)] }]);
    const watching = run([{ kind: 'watch', runId: 'a' }], found);
    expect(watching).toMatchObject({ status: 'running', readOnly: true, runId: 'a' });
    // Another run's watch does not change what is shown; page requests to pause or stop are refused.
    expect(run([{ kind: 'watch', runId: 'b' }], found).readOnly).toBe(false);
    expect(run([{ kind: 'request', what: 'pause' }], watching)).toEqual(watching);
    const live = run([{ kind: 'iteration', runId: 'a', iteration: 2, totalIterations: 3, metrics: m(1) }], watching);
    expect(live).toMatchObject({ status: 'running', readOnly: true, iteration: 2 });
    expect(live.metrics.map((x) => x.iteration)).toEqual([0, 1]);
    // The other tab paused, finished or closed: this one may take over.
    expect(run([{ kind: 'paused', record: record('a', { status: 'paused', iteration: 2 }) }], live)).toMatchObject({ status: 'paused', readOnly: false });
    expect(run([{ kind: 'finished', record: record('a', { status: 'done', iteration: 3, evaluation }), evaluation }], live)).toMatchObject({ status: 'done', readOnly: false });
    expect(run([{ kind: 'released', runId: 'a' }], live)).toMatchObject({ status: 'paused', readOnly: false, iteration: 2 });
    // A release means nothing to a page that does not follow the run.
    expect(run([{ kind: 'released', runId: 'a' }], found)).toEqual(found);
    // Resuming here ends the read-only view.
    expect(run([{ kind: 'released', runId: 'a' }, { kind: 'request', what: 'resume', runId: 'a' }], live)).toMatchObject({ status: 'starting', readOnly: false });
  });
});
