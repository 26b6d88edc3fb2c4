/**
 * The data side of the page's store: what the inspector shows (the selected run, the buffer
 * filter, the listed trajectories, the opened one, the curriculum) and the state of the
 * export / import / delete actions and of storage use, as one plain value and a pure reducer,
 * like ./training-state.ts.
 */
import type { Trajectory } from '../../core/types.ts';
import type { TrajectoryRecord } from '../../replay/index.ts';
import type { CurriculumRow } from '../inspect/curriculum.ts';
import type { BufferFilter, StorageUse } from '../data/run-data.ts';

/** What the inspector and the data panel show. */
export interface DataViewState {
  /** The run inspected and exported (null: the run the training view shows). */
  selectedRunId: string | null;
  filter: BufferFilter;
  /** Trajectory headers of the selected run that match the filter (null until loaded). */
  trajectories: TrajectoryRecord[] | null;
  /** The trajectory opened for reading, with its steps. */
  opened: Trajectory | null;
  curriculum: CurriculumRow[] | null;
  /** The action in progress (a sentence), or null. */
  busy: string | null;
  /** The last action's outcome. */
  notice: string | null;
  error: string | null;
  storage: StorageUse | null;
}

/** What changes it. */
export type DataAction =
  | { kind: 'data/select'; runId: string | null }
  | { kind: 'data/filter'; filter: BufferFilter }
  | { kind: 'data/loaded'; runId: string | null; trajectories: TrajectoryRecord[]; curriculum: CurriculumRow[] }
  | { kind: 'data/opened'; trajectory: Trajectory | null }
  | { kind: 'data/busy'; what: string }
  | { kind: 'data/done'; notice: string }
  | { kind: 'data/error'; message: string }
  | { kind: 'data/storage'; storage: StorageUse }
  /** Everything of `runId` is gone (deleted; null: all storage cleared). */
  | { kind: 'data/forgotten'; runId: string | null };

/** The initial data state. */
export function initialDataState(): DataViewState {
  return { selectedRunId: null, filter: {}, trajectories: null, opened: null, curriculum: null, busy: null, notice: null, error: null, storage: null };
}

/** Whether `action` is a data action (the store routes on it). */
export function isDataAction(action: { kind: string }): action is DataAction {
  return action.kind.startsWith('data/');
}

/** The next data state. */
export function reduceData(state: DataViewState, action: DataAction): DataViewState {
  switch (action.kind) {
    case 'data/select':
      if (action.runId === state.selectedRunId) return state;
      return { ...state, selectedRunId: action.runId, trajectories: null, opened: null, curriculum: null, filter: {} };
    case 'data/filter':
      return { ...state, filter: { ...action.filter } };
    case 'data/loaded':
      // A load of a run no longer selected is stale.
      if (state.selectedRunId !== null && action.runId !== state.selectedRunId) return state;
      return {
        ...state,
        trajectories: action.trajectories,
        curriculum: action.curriculum,
        // The opened trajectory stays open while it is still listed.
        opened: state.opened && action.trajectories.some((t) => t.id === state.opened?.id) ? state.opened : null,
      };
    case 'data/opened':
      return { ...state, opened: action.trajectory };
    case 'data/busy':
      return { ...state, busy: action.what, error: null, notice: null };
    case 'data/done':
      return { ...state, busy: null, notice: action.notice, error: null };
    case 'data/error':
      return { ...state, busy: null, error: action.message, notice: null };
    case 'data/storage':
      return { ...state, storage: action.storage };
    case 'data/forgotten':
      if (action.runId === null || state.selectedRunId === action.runId || state.selectedRunId === null) {
        return { ...state, selectedRunId: null, trajectories: null, opened: null, curriculum: null, filter: {} };
      }
      return state;
  }
}
