/**
 * The training page's one store: signals holding {@link TrainingViewState} (training, worker
 * events), {@link DataViewState} (inspector, exports, storage) and {@link LLMViewState} (the
 * local LLM's catalogue and loading), changed only by
 * {@link TrainingStore.dispatch} through the pure reducers, and read by every panel; Preact
 * components that read them re-render when they change.
 */
import { signal, type ReadonlySignal } from '@preact/signals';
import { initialDataState, isDataAction, reduceData, type DataAction, type DataViewState } from './data-state.ts';
import { initialLLMState, isLLMAction, reduceLLM, type LLMAction, type LLMViewState } from './llm-state.ts';
import { initialTrainingState, reduceTraining, type TrainingAction, type TrainingViewState } from './training-state.ts';

/** Everything the page's store takes. */
export type PageAction = TrainingAction | DataAction | LLMAction;

/** The store of the training page. */
export interface TrainingStore {
  readonly state: ReadonlySignal<TrainingViewState>;
  readonly data: ReadonlySignal<DataViewState>;
  readonly llm: ReadonlySignal<LLMViewState>;
  dispatch(action: PageAction): void;
}

/** A new store in the initial state. */
export function createTrainingStore(): TrainingStore {
  const state = signal<TrainingViewState>(initialTrainingState());
  const data = signal<DataViewState>(initialDataState());
  const llm = signal<LLMViewState>(initialLLMState());
  return {
    state,
    data,
    llm,
    dispatch(action) {
      if (isDataAction(action)) data.value = reduceData(data.value, action);
      else if (isLLMAction(action)) llm.value = reduceLLM(llm.value, action);
      else state.value = reduceTraining(state.value, action);
    },
  };
}
