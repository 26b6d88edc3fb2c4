/**
 * The setup panel: environment, experience model (no download, or a local LLM from the catalogue:
 * ./LLMChoice.tsx), mode, preset, seed and the advanced knobs of a new run, with labels; Start
 * builds the configuration and the models to load (./form.ts) and hands them to the controller.
 */
import { memo } from 'preact/compat';
import type { BackendPreference } from '../../policy/backend-preference.ts';
import type { TrainingConfig } from '../../train/config.ts';
import type { StartOptions } from '../train/controller.ts';
import { initialLLMState, type LLMSelection, type LLMViewState } from '../state/llm-state.ts';
import { AdvancedSettings, BackendField, CheckpointField, RunFields, SeedFileField } from './SetupFields.tsx';
import { useSetupForm } from './useSetupForm.ts';

/** Props of {@link SetupPanel}. */
export interface SetupPanelProps {
  /** Whether a run is in progress (Start is disabled then). */
  busy: boolean;
  /** Starts a run, with the chosen seed file (dreamgym JSONL) and tfjs backend. */
  onStart: (config: TrainingConfig, extras: StartOptions) => void;
  /** The tfjs backend chosen at first (the page's `?backend=`; default `auto`). */
  backend?: BackendPreference;
  /** Evaluates a checkpoint file with these settings (its environment, prior, features, evaluation tasks, and LLM models if any). */
  onEvaluateCheckpoint?: (config: TrainingConfig, file: File, llm?: LLMSelection) => void;
  /** The local LLM's state (catalogue, loading). */
  llm?: LLMViewState;
  /** What the panel asks of the page's local LLM. */
  llmActions?: SetupLLMActions;
}

/** The page's local-LLM controller, as the setup panel uses it. */
export interface SetupLLMActions {
  /** Reads the device and the model catalogue (once). */
  check(): void;
  load(selection: LLMSelection): void;
  cancel(): void;
  unload(): void;
  /** Sets the GPU memory the local models may use, MB (null: the device's estimate). */
  setMemoryBudget?(mb: number | null): void;
}

const NO_LLM: LLMViewState = initialLLMState();

/** The setup panel (re-rendered only when its props change, not on every worker event). */
export const SetupPanel = memo(function SetupPanel({ busy: running, onStart, onEvaluateCheckpoint, backend: initialBackend = 'auto', llm = NO_LLM, llmActions }: SetupPanelProps) {
  const model = useSetupForm({ running, onStart, onEvaluateCheckpoint, initialBackend, llm, llmActions });
  const { error, busy } = model;
  return (
    <form class="card setup-panel" data-testid="setup-form" aria-labelledby="setup-heading" onSubmit={model.submit}>
      <h2 id="setup-heading">Set up a training run</h2>
      <RunFields model={model} llm={llm} running={running} />
      <AdvancedSettings model={model} />
      <BackendField backend={model.backend} setBackend={model.setBackend} running={running} />
      <SeedFileField model={model} />
      {error && (
        <p class="message" role="alert" data-kind="error" data-testid="setup-error">
          {error.message}
        </p>
      )}
      <button type="submit" class="primary" data-testid="train-start" disabled={busy}>
        Start training
      </button>
      {onEvaluateCheckpoint && <CheckpointField model={model} />}
    </form>
  );
});
