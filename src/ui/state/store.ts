/**
 * The training page's one store: a signal holding {@link TrainingViewState}, changed only by
 * {@link TrainingStore.dispatch} (worker events and page requests through the pure reducer), and
 * read by every panel; Preact components that read it re-render when it changes.
 */
import { signal, type ReadonlySignal } from '@preact/signals';
import { initialTrainingState, reduceTraining, type TrainingAction, type TrainingViewState } from './training-state.ts';

/** The store of the training page. */
export interface TrainingStore {
  readonly state: ReadonlySignal<TrainingViewState>;
  dispatch(action: TrainingAction): void;
}

/** A new store in the initial state. */
export function createTrainingStore(): TrainingStore {
  const state = signal<TrainingViewState>(initialTrainingState());
  return {
    state,
    dispatch(action) {
      state.value = reduceTraining(state.value, action);
    },
  };
}
