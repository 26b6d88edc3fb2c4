/**
 * The training page's state as one plain value, and the pure reducer that the training worker's
 * events (and the page's own requests) drive. The signals store (./store.ts) wraps it; keeping
 * the logic here makes it testable without a DOM.
 */
import type { BackendReport } from '../../policy/backend.ts';
import type { IterationMetrics } from '../../train/loop.ts';
import type { TrainingEvent } from '../../../workers/training.protocol.ts';
import type { PageRunRecord, StoredRunEvaluation } from '../../train/runs/records.ts';

/** What the training view shows. */
export type TrainingStatus = 'idle' | 'starting' | 'seeding' | 'running' | 'pausing' | 'paused' | 'stopping' | 'evaluating' | 'done' | 'failed';

/** Progress of a step with a known size. */
export interface Progress {
  done: number;
  total: number;
}

/** The training view's state. */
export interface TrainingViewState {
  status: TrainingStatus;
  /** The run shown (the one training, or the last one). */
  runId: string | null;
  record: PageRunRecord | null;
  /** Completed iterations and the planned number. */
  iteration: number;
  totalIterations: number;
  /** Phase of the iteration in progress. */
  phase: IterationMetrics['phase'] | null;
  /** Metrics of every completed iteration of the run, oldest first. */
  metrics: IterationMetrics[];
  seed: Progress | null;
  /** The synthetic phase's validation inside the simulator while one runs, after `iteration` completed iterations. */
  validating: (Progress & { iteration: number }) | null;
  evaluating: Progress | null;
  evaluation: StoredRunEvaluation | null;
  backend: BackendReport | null;
  /** Whether the run continued from a stored snapshot (a reload or a resume). */
  resumed: boolean;
  error: string | null;
  /** Every run the page knows (for the comparison table), oldest first. */
  runs: PageRunRecord[];
  /**
   * Another tab (or window) trains the run shown: this one follows its progress over the live
   * channel and offers no control until that one stops.
   */
  readOnly: boolean;
  /**
   * The run this tab trains has sent no event for a while (see the training controller's
   * `stallMs`): it is not making progress, so Delete is offered for it too.
   */
  stalled: boolean;
}

/** What changes the state: a worker event, or a request of the page. */
export type TrainingAction =
  | TrainingEvent
  | { kind: 'request'; what: 'start' | 'resume'; runId: string }
  | { kind: 'request'; what: 'pause' | 'stop' }
  | { kind: 'runs'; runs: PageRunRecord[] }
  /** An unfinished run found in storage, with its stored metrics (shown before it resumes). */
  | { kind: 'found'; record: PageRunRecord; metrics: IterationMetrics[] }
  /** A run was deleted (null: all storage was cleared); the view drops it. */
  | { kind: 'forget'; runId: string | null }
  /** Another tab trains the shown run `runId`: follow it read-only. */
  | { kind: 'watch'; runId: string }
  /** The tab that trained `runId` let go of it without a last event (closed or crashed): it rests here, resumable. */
  | { kind: 'released'; runId: string }
  /** A stored run at rest, shown with its metrics, result and exports (on load, or chosen from the list of runs). */
  | { kind: 'show'; record: PageRunRecord; metrics: IterationMetrics[] }
  /** The page ended the worker of `runId`, which did not stop by itself; `record`: the run as it now rests. */
  | { kind: 'halted'; runId: string; message: string; record?: PageRunRecord }
  /** The run `runId` that this tab trains has sent no event for `sinceMs`. */
  | { kind: 'stalled'; runId: string; sinceMs: number };

/** The state of a page that has not trained yet. */
export function initialTrainingState(): TrainingViewState {
  return {
    status: 'idle',
    runId: null,
    record: null,
    iteration: 0,
    totalIterations: 0,
    phase: null,
    metrics: [],
    seed: null,
    validating: null,
    evaluating: null,
    evaluation: null,
    backend: null,
    resumed: false,
    error: null,
    runs: [],
    readOnly: false,
    stalled: false,
  };
}

/** Whether a run is in progress (the worker is busy with it). */
export function isActive(status: TrainingStatus): boolean {
  return status === 'starting' || status === 'seeding' || status === 'running' || status === 'pausing' || status === 'stopping' || status === 'evaluating';
}

function upsert(runs: readonly PageRunRecord[], record: PageRunRecord): PageRunRecord[] {
  const out = runs.filter((r) => r.id !== record.id);
  out.push(record);
  return out.sort((a, b) => a.createdAt - b.createdAt || a.id.localeCompare(b.id));
}

/** Metrics with `m` in place: one entry per iteration number, in order. */
function withMetric(metrics: readonly IterationMetrics[], m: IterationMetrics): IterationMetrics[] {
  return [...metrics.filter((x) => x.iteration !== m.iteration), m].sort((a, b) => a.iteration - b.iteration);
}

/** The next state. Events of another run than the one shown are ignored (except run lists). */
export function reduceTraining(state: TrainingViewState, action: TrainingAction): TrainingViewState {
  let next = reduceEvent(state, action);
  // Any news of the run is progress; the list of runs and the backend report are not news of it.
  if (next.stalled && (!isActive(next.status) || next.readOnly || (action.kind !== 'stalled' && action.kind !== 'runs' && action.kind !== 'backend'))) next = { ...next, stalled: false };
  if (next.validating && endsValidation(action, state, next)) next = { ...next, validating: null };
  // A run that comes to rest is no longer another tab's: this one may take it over.
  if (next.readOnly && next.runId === state.runId && !isActive(next.status)) return { ...next, readOnly: false };
  return next;
}

/** Whether `action` ends the validation on show: an iteration starts or ends, another run starts, or the run leaves training. */
function endsValidation(action: TrainingAction, before: TrainingViewState, after: TrainingViewState): boolean {
  if (action.kind === 'validating') return false;
  if (action.kind === 'iteration-start' || action.kind === 'iteration') return true;
  if (action.kind === 'request' && (action.what === 'start' || action.what === 'resume')) return true;
  return after.runId !== before.runId || !isActive(after.status) || after.status === 'evaluating';
}

function reduceEvent(state: TrainingViewState, action: TrainingAction): TrainingViewState {
  switch (action.kind) {
    case 'stalled':
      if (action.runId !== state.runId || !isActive(state.status) || state.readOnly) return state;
      return { ...state, stalled: true };
    case 'watch':
      if (action.runId !== state.runId) return state;
      return { ...state, status: 'running', readOnly: true, error: null };
    case 'show': {
      // Only between runs: a run in progress stays on show.
      if (isActive(state.status)) return state;
      const r = action.record;
      // A run left unfinished by a closed tab rests here until Resume.
      const status: TrainingStatus = r.status === 'done' ? 'done' : r.status === 'failed' ? 'failed' : 'paused';
      return {
        ...state,
        status,
        runId: r.id,
        record: r,
        metrics: action.metrics.slice(),
        iteration: r.iteration,
        totalIterations: r.totalIterations,
        phase: null,
        seed: null,
        validating: null,
        evaluating: null,
        evaluation: r.status === 'done' ? (r.evaluation ?? null) : null,
        resumed: false,
        readOnly: false,
        error: r.status === 'failed' || r.status === 'paused' ? (r.error ?? null) : null,
        runs: upsert(state.runs, r),
      };
    }
    case 'halted': {
      const runs = action.record ? upsert(state.runs, action.record) : state.runs;
      if (action.runId !== state.runId) return { ...state, runs };
      const rest = action.record?.status === 'paused' ? ('paused' as const) : ('failed' as const);
      return { ...state, status: rest, phase: null, seed: null, error: action.message, runs, ...(action.record ? { record: action.record, iteration: action.record.iteration } : {}) };
    }
    case 'released':
      if (action.runId !== state.runId || !state.readOnly) return state;
      return { ...state, status: 'paused', phase: null, readOnly: false };
    case 'request':
      if (action.what === 'start' || action.what === 'resume') {
        const fresh = action.what === 'start' || action.runId !== state.runId;
        return {
          ...state,
          readOnly: false,
          status: 'starting',
          runId: action.runId,
          error: null,
          seed: null,
          evaluating: null,
          evaluation: null,
          ...(fresh && action.what === 'start' ? { record: null, metrics: [], iteration: 0, totalIterations: 0, phase: null, resumed: false } : {}),
        };
      }
      if (!isActive(state.status) || state.status === 'evaluating' || state.readOnly) return state;
      return { ...state, status: action.what === 'pause' ? 'pausing' : 'stopping' };
    case 'runs':
      return { ...state, runs: action.runs.slice() };
    case 'forget': {
      const runs = action.runId === null ? [] : state.runs.filter((r) => r.id !== action.runId);
      // Only a run at rest is deleted: the view of the shown one starts over.
      if (action.runId === null || action.runId === state.runId) return { ...initialTrainingState(), backend: state.backend, runs };
      return { ...state, runs };
    }
    case 'found':
      return {
        ...state,
        status: action.record.status === 'paused' ? 'paused' : state.status,
        // A paused run the page had to halt keeps saying why.
        ...(action.record.status === 'paused' ? { error: action.record.error ?? null } : {}),
        runId: action.record.id,
        record: action.record,
        metrics: action.metrics.slice(),
        iteration: action.record.iteration,
        totalIterations: action.record.totalIterations,
        runs: upsert(state.runs, action.record),
      };
    case 'backend':
      return { ...state, backend: action.report };
    case 'seed':
      if (action.runId !== state.runId) return state;
      return { ...state, status: 'seeding', seed: { done: action.done, total: action.total } };
    case 'started': {
      if (action.record.id !== state.runId) return state;
      const resumed = action.metrics.length > 0 || action.record.iteration > 0;
      return {
        ...state,
        status: state.status === 'pausing' || state.status === 'stopping' ? state.status : 'running',
        record: action.record,
        metrics: action.metrics.slice(),
        iteration: action.record.iteration,
        totalIterations: action.record.totalIterations,
        resumed,
        runs: upsert(state.runs, action.record),
      };
    }
    case 'iteration-start':
      if (action.runId !== state.runId) return state;
      return { ...state, phase: action.phase, totalIterations: action.totalIterations };
    case 'iteration':
      if (action.runId !== state.runId) return state;
      return { ...state, iteration: action.iteration, totalIterations: action.totalIterations, metrics: withMetric(state.metrics, action.metrics) };
    case 'validating':
      if (action.runId !== state.runId) return state;
      return { ...state, validating: { done: action.done, total: action.total, iteration: action.iteration } };
    case 'evaluating':
      if (action.runId !== state.runId) return state;
      return { ...state, status: 'evaluating', phase: null, evaluating: { done: action.done, total: action.total } };
    case 'finished':
      if (action.record.id !== state.runId) return { ...state, runs: upsert(state.runs, action.record) };
      return { ...state, status: 'done', phase: null, record: action.record, evaluation: action.evaluation, iteration: action.record.iteration, runs: upsert(state.runs, action.record) };
    case 'paused':
      if (action.record.id !== state.runId) return { ...state, runs: upsert(state.runs, action.record) };
      return { ...state, status: 'paused', phase: null, error: null, record: action.record, iteration: action.record.iteration, runs: upsert(state.runs, action.record) };
    case 'failed': {
      const runs = action.record ? upsert(state.runs, action.record) : state.runs;
      // A failure of an unrelated run (or a crashed worker, runId '') still stops what is shown.
      if (action.runId !== '' && action.runId !== state.runId) return { ...state, runs };
      return { ...state, status: 'failed', phase: null, error: action.message, runs, ...(action.record ? { record: action.record } : {}) };
    }
  }
}
