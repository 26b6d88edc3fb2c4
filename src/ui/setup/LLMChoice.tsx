/**
 * The local-LLM part of the setup panel: the device in a sentence, the chat model (each with its
 * size, download estimate, cache state; the models this device cannot run listed on request,
 * disabled, with why), the LLM prior and embedding features, and the state of loading the model
 * (WebLLM's download progress with Cancel, the model ready, or a plain-words error with the way
 * back to the no-download experience model).
 */
import { useState } from 'preact/hooks';
import type { LLMFailureReason, LLMViewState, ModelView } from '../state/llm-state.ts';
import { deviceSummary, loadTimingsText, modelFacts, modelOptionText, modelsOfKind } from '../llm/models.ts';
import type { SetupForm } from './form.ts';

/** What the LLM part can ask of the page's LLM controller. */
export interface LLMChoiceActions {
  /** Loads the models chosen (downloading them unless cached). */
  load(): void;
  cancel(): void;
  unload(): void;
}

/** Props of {@link LLMModelChoice}. */
export interface LLMModelChoiceProps {
  form: SetupForm;
  update: (patch: Partial<SetupForm>) => void;
  llm: LLMViewState;
  /** A run is active or a model loads: the choice is locked. */
  busy: boolean;
  /** The form field an error names (`llm-model`, `embedding-model`). */
  invalidField: string | null;
  actions: LLMChoiceActions;
}

/** Headings of a failed load, by reason. */
export const FAILURE_TITLES: Record<LLMFailureReason, string> = {
  'no-webgpu': 'No WebGPU in this browser',
  'no-shader-f16': 'This GPU lacks shader-f16',
  'no-network': 'The model could not be downloaded',
  'out-of-memory': 'Out of GPU memory',
  'load-failed': 'The model could not be loaded',
  cancelled: 'Loading cancelled',
  error: 'The model could not be loaded',
};

function ModelOptions({ models, showAll }: { models: readonly ModelView[]; showAll: boolean }) {
  const usable = models.filter((m) => m.usable);
  const unusable = models.filter((m) => !m.usable);
  return (
    <>
      <option value="">Choose a model…</option>
      <optgroup label="Can run on this device">
        {usable.map((m) => (
          <option key={m.modelId} value={m.modelId}>
            {modelOptionText(m)}
          </option>
        ))}
      </optgroup>
      {showAll && unusable.length > 0 && (
        <optgroup label="Cannot run on this device">
          {unusable.map((m) => (
            <option key={m.modelId} value={m.modelId} disabled>
              {modelOptionText(m)}
            </option>
          ))}
        </optgroup>
      )}
    </>
  );
}

/** The model choice (shown when the experience model is the local LLM). */
export function LLMModelChoice({ form, update, llm, busy, invalidField, actions }: LLMModelChoiceProps) {
  const [showAll, setShowAll] = useState(false);
  const catalogue = llm.catalogue;
  if (catalogue.status === 'unknown' || catalogue.status === 'checking') {
    return (
      <p class="help llm-checking" role="status" data-testid="llm-checking">
        Checking this device’s GPU and the model cache…
      </p>
    );
  }
  if (catalogue.status === 'failed') {
    return (
      <p class="message" data-kind="error" role="alert" data-testid="llm-catalogue-error">
        {catalogue.message}
      </p>
    );
  }
  const chat = modelsOfKind(catalogue.models, 'chat');
  const embedding = modelsOfKind(catalogue.models, 'embedding');
  const unusable = chat.filter((m) => !m.usable).length + embedding.filter((m) => !m.usable).length;
  const selected = chat.find((m) => m.modelId === form.llmModel);
  const selectedEmbedding = embedding.find((m) => m.modelId === form.embeddingModel);
  const load = llm.load;
  const loaded = load.status === 'ready' && load.chatModel === form.llmModel && (!form.llmEmbeddings || load.embeddingModel === form.embeddingModel);
  const allCached = (selected?.cached ?? false) && (!form.llmEmbeddings || (selectedEmbedding?.cached ?? false));
  return (
    <div class="llm-choice" data-testid="llm-choice">
      <p class="help" data-testid="llm-device">
        {deviceSummary(catalogue.device)}
        {catalogue.budget
          ? ` Models may use ${catalogue.budget.mb.toLocaleString('en-US')} MB of GPU memory (${catalogue.budget.overridden ? 'set under Advanced settings' : 'an estimate: Advanced settings can change it'}).`
          : ''}
      </p>
      <div class="llm-field">
        <label for="setup-llm-model">Model</label>
        <select
          id="setup-llm-model"
          data-testid="setup-llm-model"
          value={form.llmModel}
          disabled={busy}
          aria-invalid={invalidField === 'llm-model'}
          aria-describedby="setup-llm-model-facts"
          onChange={(e) => update({ llmModel: (e.currentTarget as HTMLSelectElement).value })}
        >
          <ModelOptions models={chat} showAll={showAll} />
        </select>
        <span class="help" id="setup-llm-model-facts" data-testid="llm-model-facts">
          {selected
            ? `${modelFacts(selected)}.${selected.needsShaderF16 ? ' Its f16 weights need a GPU with shader-f16.' : ''} It plays the environment (experience model) and writes new task variations.`
            : chat.some((m) => m.usable)
              ? 'Choose the model that plays the environment. Smaller models download faster and run faster; larger ones simulate better.'
              : 'No chat model in the catalogue can run on this device.'}
        </span>
      </div>
      {unusable > 0 && (
        <label class="llm-toggle">
          <input type="checkbox" data-testid="setup-llm-show-all" checked={showAll} onChange={(e) => setShowAll((e.currentTarget as HTMLInputElement).checked)} />
          Also list the {unusable} models this device cannot run, with why
        </label>
      )}
      <label class="llm-toggle">
        <input type="checkbox" data-testid="setup-llm-prior" checked={form.llmPrior} disabled={busy} aria-describedby="setup-llm-prior-help" onChange={(e) => update({ llmPrior: (e.currentTarget as HTMLInputElement).checked })} />
        Policy prior from the LLM
      </label>
      <span class="help" id="setup-llm-prior-help">
        The frozen model’s log-probability of each candidate action is added to the policy’s scores: one extra model pass per decision, in training and in evaluation.
      </span>
      <label class="llm-toggle">
        <input
          type="checkbox"
          data-testid="setup-llm-embeddings"
          checked={form.llmEmbeddings}
          disabled={busy}
          aria-describedby="setup-llm-embeddings-help"
          onChange={(e) => update({ llmEmbeddings: (e.currentTarget as HTMLInputElement).checked })}
        />
        Policy features from an embedding model
      </label>
      <span class="help" id="setup-llm-embeddings-help">
        Off: the hashed n-gram features, no download. On: the embedding model below is downloaded and loaded too.
      </span>
      {form.llmEmbeddings && (
        <div class="llm-field">
          <label for="setup-embedding-model">Embedding model</label>
          <select
            id="setup-embedding-model"
            data-testid="setup-embedding-model"
            value={form.embeddingModel}
            disabled={busy}
            aria-invalid={invalidField === 'embedding-model'}
            onChange={(e) => update({ embeddingModel: (e.currentTarget as HTMLSelectElement).value })}
          >
            <ModelOptions models={embedding} showAll={showAll} />
          </select>
        </div>
      )}
      <div class="llm-actions">
        <button type="button" data-testid="llm-load" disabled={busy || loaded || !selected?.usable} onClick={actions.load}>
          {loaded ? 'Loaded' : allCached ? 'Load from the cache now' : 'Download and load now'}
        </button>
        <span class="help">Or press Start training: the model loads first. Downloads come from huggingface.co (weights) and raw.githubusercontent.com (the model’s WebGPU library), once; then the browser’s cache serves them offline.</span>
      </div>
    </div>
  );
}

/** Props of {@link LLMLoadStatus}. */
export interface LLMLoadStatusProps {
  llm: LLMViewState;
  /** A run is active (the model cannot be unloaded under it). */
  running: boolean;
  actions: LLMChoiceActions;
  /** Switches the experience model back to the no-download one. */
  onUseRetrieval: () => void;
}

/** Where loading the local LLM stands: progress with Cancel, ready with Unload, or why it failed. */
export function LLMLoadStatus({ llm, running, actions, onUseRetrieval }: LLMLoadStatusProps) {
  const load = llm.load;
  switch (load.status) {
    case 'idle':
      return null;
    case 'loading': {
      const pct = Math.round(100 * load.progress);
      return (
        <div class="llm-status" data-testid="llm-loading">
          <div class="progress-row">
            <label for="llm-progress">Loading the model</label>
            <progress id="llm-progress" data-testid="llm-progress" max={1} value={load.progress} aria-valuetext={`${pct}%`} />
            <button type="button" data-testid="llm-cancel" onClick={actions.cancel}>
              Cancel
            </button>
          </div>
          <p class="help llm-progress-text" role="status" aria-live="polite" data-testid="llm-progress-text">
            {load.chatModel}
            {load.embeddingModel ? ` and ${load.embeddingModel}` : ''}: {pct}%. {load.text}
          </p>
        </div>
      );
    }
    case 'ready':
      return (
        <div class="llm-status" data-testid="llm-ready">
          <p class="notice">
            Loaded: {load.chatModel}
            {load.embeddingModel ? ` and ${load.embeddingModel}` : ''}.{load.warnings.length > 0 ? ` ${load.warnings.join(' ')}` : ''}
          </p>
          {load.timings && (
            <p class="help" data-testid="llm-load-timings">
              {loadTimingsText(load.timings)}
            </p>
          )}
          <button type="button" data-testid="llm-unload" disabled={running} onClick={actions.unload}>
            Unload the model
          </button>
        </div>
      );
    case 'failed':
      return (
        <div class="message llm-error" data-kind={load.reason === 'cancelled' ? 'notice' : 'error'} role={load.reason === 'cancelled' ? 'status' : 'alert'} data-testid="llm-error" data-reason={load.reason}>
          <p>
            <strong>{FAILURE_TITLES[load.reason]}.</strong> {load.message}
          </p>
          <button type="button" data-testid="llm-use-retrieval" onClick={onUseRetrieval}>
            Use “No download” instead
          </button>
        </div>
      );
  }
}
