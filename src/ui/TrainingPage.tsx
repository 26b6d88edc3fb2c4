/**
 * The training page: setup, training, watch and results panels over one store (signals) that the
 * training worker's events update through the controller, and the page's local LLM (catalogue,
 * download, the bridge to the training worker) through the LLM controller.
 */
import { render } from 'preact';
import { useCallback, useMemo } from 'preact/hooks';
import type { TrainingConfig } from '../train/config.ts';
import { SetupPanel } from './setup/SetupPanel.tsx';
import { TrainPanel } from './train/TrainPanel.tsx';
import { ChartsPanel } from './charts/ChartsPanel.tsx';
import { ResultsPanel } from './results/ResultsPanel.tsx';
import { InspectPanel } from './inspect/InspectPanel.tsx';
import { DataPanel } from './data/DataPanel.tsx';
import { DataController, type DataControllerOptions } from './data/controller.ts';
import { createTrainingStore, type TrainingStore } from './state/store.ts';
import { isActive } from './state/training-state.ts';
import { TrainingController, type StartOptions, type TrainingControllerOptions } from './train/controller.ts';
import { LLMController, type LLMControllerOptions } from './llm/controller.ts';
import type { LLMSelection } from './state/llm-state.ts';
import type { SetupLLMActions } from './setup/SetupPanel.tsx';

/** Props of {@link TrainingPage}. */
export interface TrainingPageProps {
  store: TrainingStore;
  controller: TrainingController;
  data: DataController;
  llm: LLMController;
}

/** The panels of the training page. */
export function TrainingPage({ store, controller, data, llm }: TrainingPageProps) {
  const state = store.state.value;
  const dataState = store.data.value;
  const llmState = store.llm.value;
  // Stable props, so that the memoised panels skip the re-render of each worker event that does not concern them.
  const onStart = useCallback((config: TrainingConfig, extras?: StartOptions) => void controller.start(config, extras), [controller]);
  const onEvaluateCheckpoint = useCallback((config: TrainingConfig, file: File, selection?: LLMSelection) => void controller.evaluateCheckpoint(config, file, selection), [controller]);
  // The inspector and exports follow the run shown.
  const onShow = useCallback((runId: string) => void controller.show(runId).then(() => data.select(null)), [controller, data]);
  const llmActions = useMemo<SetupLLMActions>(
    () => ({
      check: () => void llm.checkCatalogue(),
      // A failed or cancelled load is in the LLM state, which the panel shows.
      load: (selection) => void llm.load(selection).catch(() => undefined),
      cancel: () => llm.cancel(),
      unload: () => void llm.unload(),
      setMemoryBudget: (mb) => llm.setMemoryBudget(mb),
    }),
    [llm],
  );
  const training = useMemo(() => ({ runId: state.runId, status: state.status, stalled: state.stalled }), [state.runId, state.status, state.stalled]);
  return (
    <div class="training-page" data-testid="training-page">
      <SetupPanel busy={isActive(state.status)} backend={controller.backendPreference} onStart={onStart} onEvaluateCheckpoint={onEvaluateCheckpoint} llm={llmState} llmActions={llmActions} />
      <TrainPanel state={state} llm={llmState} onPause={() => controller.pause()} onResume={() => void controller.resume()} onStop={() => controller.stop()} onShow={onShow} />
      <ChartsPanel metrics={state.metrics} />
      <ResultsPanel evaluation={state.evaluation} runs={state.runs} />
      <InspectPanel shownRunId={state.runId} status={state.status} runs={state.runs} data={dataState} controller={data} />
      <DataPanel training={training} data={dataState} controller={data} />
    </div>
  );
}

/** Handle returned by {@link mountTrainingPage}. */
export interface TrainingPageHandle {
  readonly element: HTMLElement;
  readonly store: TrainingStore;
  readonly controller: TrainingController;
  readonly data: DataController;
  /** The page's local LLM (catalogue, loading, the bridge to the training worker). */
  readonly llm: LLMController;
  /** Settles once stored runs are listed (and an interrupted one asked to resume). */
  readonly ready: Promise<void>;
  /** Unmounts the page and ends its worker (a run in progress stays resumable). */
  destroy(): void;
}

/** Options of {@link mountTrainingPage}. */
export type TrainingPageOptions = Omit<TrainingControllerOptions, 'llm'> &
  Pick<DataControllerOptions, 'save' | 'storageManager'> & {
    /** Options of the page's local LLM (tests pass a scripted LLM worker, a model list and device facts). */
    llm?: LLMControllerOptions;
  };

/** Mounts the training page into `root`. */
export function mountTrainingPage(root: HTMLElement, options: TrainingPageOptions = {}): TrainingPageHandle {
  const store = createTrainingStore();
  const { llm: llmOptions, ...rest } = options;
  const llm = new LLMController(store, llmOptions ?? {});
  const controller = new TrainingController(store, { ...rest, llm });
  const data = new DataController(store, {
    ...(options.storage ? { storage: options.storage } : {}),
    ...(options.save ? { save: options.save } : {}),
    ...(options.storageManager ? { storageManager: options.storageManager } : {}),
    training: { haltStalled: (runId) => controller.haltStalled(runId), showLatest: () => controller.showLatest() },
  });
  const element = document.createElement('section');
  element.className = 'training-section';
  element.setAttribute('aria-label', 'Train an agent');
  root.appendChild(element);
  render(<TrainingPage store={store} controller={controller} data={data} llm={llm} />, element);
  const ready = controller.init().catch((e: unknown) => {
    store.dispatch({ kind: 'failed', runId: '', message: `could not read the stored runs: ${e instanceof Error ? e.message : String(e)}` });
  });
  return {
    element,
    store,
    controller,
    data,
    llm,
    ready,
    destroy() {
      controller.destroy();
      llm.destroy();
      render(null, element);
      element.remove();
    },
  };
}
