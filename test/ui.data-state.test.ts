/**
 * The data side of the page's store (src/ui/state/data-state.ts) and its routing in the store.
 */
import { describe, expect, it } from 'vitest';
import type { Trajectory } from '../src/core/types.ts';
import type { TrajectoryRecord } from '../src/replay/index.ts';
import { initialDataState, reduceData } from '../src/ui/state/data-state.ts';
import { createTrainingStore } from '../src/ui/state/store.ts';

const header = (id: string): TrajectoryRecord => ({ runId: 'r', id, seq: 0, taskId: 't', env: 'shop', source: 'synthetic', reward: 0, success: false, length: 1, firstStep: 0, pinned: false, createdAt: 0 });
const trajectory = (id: string): Trajectory => ({ id, taskId: 't', env: 'shop', source: 'synthetic', steps: [], reward: 0, success: false });

describe('reduceData', () => {
  it('keeps the opened trajectory while it is still listed, and drops stale loads', () => {
    let s = reduceData(initialDataState(), { kind: 'data/select', runId: 'r' });
    s = reduceData(s, { kind: 'data/opened', trajectory: trajectory('a') });
    s = reduceData(s, { kind: 'data/loaded', runId: 'r', trajectories: [header('a'), header('b')], curriculum: [] });
    expect(s.opened?.id).toBe('a');
    s = reduceData(s, { kind: 'data/loaded', runId: 'r', trajectories: [header('b')], curriculum: [] });
    expect(s.opened).toBeNull();
    const stale = reduceData(s, { kind: 'data/loaded', runId: 'other', trajectories: [], curriculum: [] });
    expect(stale.trajectories?.map((t) => t.id)).toEqual(['b']);
  });

  it('reports busy, done and error in turn, and forgets a deleted run', () => {
    let s = reduceData(initialDataState(), { kind: 'data/busy', what: 'Exporting' });
    expect(s.busy).toBe('Exporting');
    s = reduceData(s, { kind: 'data/error', message: 'line 2: bad' });
    expect([s.busy, s.error]).toEqual([null, 'line 2: bad']);
    s = reduceData(s, { kind: 'data/done', notice: 'ok' });
    expect([s.error, s.notice]).toEqual([null, 'ok']);
    s = reduceData(s, { kind: 'data/select', runId: 'r' });
    s = reduceData(s, { kind: 'data/forgotten', runId: 'other' });
    expect(s.selectedRunId).toBe('r');
    s = reduceData(s, { kind: 'data/forgotten', runId: 'r' });
    expect(s.selectedRunId).toBeNull();
  });
});

describe('the page store', () => {
  it('routes data actions to the data state and training actions to the training state', () => {
    const store = createTrainingStore();
    store.dispatch({ kind: 'data/select', runId: 'x' });
    store.dispatch({ kind: 'request', what: 'start', runId: 'y' });
    expect(store.data.value.selectedRunId).toBe('x');
    expect(store.state.value.runId).toBe('y');
    store.dispatch({ kind: 'forget', runId: 'y' });
    expect(store.state.value.runId).toBeNull();
    expect(store.state.value.status).toBe('idle');
  });
});
