/**
 * The local-LLM side of the page's store: the device and the model catalogue (each model's size,
 * whether it can run here and why not, whether it is cached), the state of loading a model (its
 * download progress, the model ready, or why it failed) and the requests served to the training
 * worker, as one plain value and a pure reducer, like ./training-state.ts.
 */
import type { CatalogueEntry, DeviceFacts } from '../../llm/catalogue.ts';
import type { LLMUnavailableReason } from '../../llm/errors.ts';
import type { LoadTimings } from '../../llm/load-timings.ts';

/** A model of the catalogue as the page lists it. */
export interface ModelView extends CatalogueEntry {
  /** Whether WebLLM's cache holds the model (loading it downloads nothing). */
  cached: boolean;
}

/** The GPU memory the catalogue allows models, MB: the page's estimate for this device, or the person's figure. */
export interface MemoryBudget {
  mb: number;
  estimateMB: number;
  /** Whether `mb` is the person's figure rather than the estimate. */
  overridden: boolean;
}

/** The device and catalogue, once asked for. */
export type CatalogueState =
  | { status: 'unknown' }
  | { status: 'checking' }
  | { status: 'ready'; device: DeviceFacts; models: ModelView[]; budget?: MemoryBudget }
  | { status: 'failed'; message: string };

/**
 * Why a load did not give a model: the typed reasons of `LLMUnavailableError`, `cancelled` (the
 * person pressed Cancel) or `error` (anything else, e.g. a bad model id).
 */
export type LLMFailureReason = LLMUnavailableReason | 'cancelled' | 'error';

/** The models asked for: a chat model, and an embedding model for the policy's features or none. */
export interface LLMSelection {
  chatModel: string;
  embeddingModel: string | null;
  /**
   * The run's LLM prior reads label logits, so the chat model gets a logit processor when it
   * loads (WebLLM reads the registry then; the processor copies every sampled token's logits to the CPU).
   */
  priorLogits?: boolean;
}

/** Where loading the local LLM stands. */
export type LLMLoadState =
  | { status: 'idle' }
  | ({ status: 'loading'; progress: number; text: string; elapsedS: number } & LLMSelection)
  | ({ status: 'ready'; labelLogits: boolean; warnings: string[]; timings: LoadTimings | null } & LLMSelection)
  | { status: 'failed'; reason: LLMFailureReason; message: string; chatModel: string | null };

/** Requests the page's LLM served to the training worker (all runs of this page). */
export interface ServedCounts {
  chat: number;
  embedding: number;
  labelLogits: number;
}

/** The local-LLM view state. */
export interface LLMViewState {
  catalogue: CatalogueState;
  load: LLMLoadState;
  served: ServedCounts;
}

/** What changes it. */
export type LLMAction =
  | { kind: 'llm/checking' }
  | { kind: 'llm/catalogue'; device: DeviceFacts; models: ModelView[]; budget?: MemoryBudget }
  | { kind: 'llm/catalogue-failed'; message: string }
  | ({ kind: 'llm/loading' } & LLMSelection)
  /** WebLLM's `InitProgressReport` (progress 0-1, seconds elapsed, its text). */
  | { kind: 'llm/progress'; progress: number; timeElapsed: number; text: string }
  /** `timings`: where the load's time went (download, cache load, shader compilation). */
  | ({ kind: 'llm/ready'; labelLogits: boolean; warnings: string[]; timings?: LoadTimings } & LLMSelection)
  | { kind: 'llm/failed'; reason: LLMFailureReason; message: string; chatModel: string | null }
  | { kind: 'llm/unloaded' }
  /** Requests served since the last report (added to the counts). */
  | ({ kind: 'llm/served' } & ServedCounts);

/** The state of a page that has not asked about the LLM yet. */
export function initialLLMState(): LLMViewState {
  return { catalogue: { status: 'unknown' }, load: { status: 'idle' }, served: { chat: 0, embedding: 0, labelLogits: 0 } };
}

/** Whether `action` is an LLM action (the store routes on it). */
export function isLLMAction(action: { kind: string }): action is LLMAction {
  return action.kind.startsWith('llm/');
}

/** Whether a model is being loaded (the page starts nothing else meanwhile). */
export function isLoading(state: LLMViewState): boolean {
  return state.load.status === 'loading';
}

/** The catalogue with `ids` marked cached. */
function markCached(catalogue: CatalogueState, ids: readonly (string | null)[]): CatalogueState {
  if (catalogue.status !== 'ready') return catalogue;
  const set = new Set(ids.filter((id): id is string => id !== null));
  return { ...catalogue, models: catalogue.models.map((m) => (set.has(m.modelId) && !m.cached ? { ...m, cached: true } : m)) };
}

/** The next state. */
export function reduceLLM(state: LLMViewState, action: LLMAction): LLMViewState {
  switch (action.kind) {
    case 'llm/checking':
      return { ...state, catalogue: { status: 'checking' } };
    case 'llm/catalogue':
      return { ...state, catalogue: { status: 'ready', device: action.device, models: action.models.slice(), ...(action.budget ? { budget: { ...action.budget } } : {}) } };
    case 'llm/catalogue-failed':
      return { ...state, catalogue: { status: 'failed', message: action.message } };
    case 'llm/loading':
      return { ...state, load: { status: 'loading', chatModel: action.chatModel, embeddingModel: action.embeddingModel, progress: 0, text: 'Starting the LLM worker…', elapsedS: 0 } };
    case 'llm/progress': {
      if (state.load.status !== 'loading') return state;
      const progress = Number.isFinite(action.progress) ? Math.min(1, Math.max(0, action.progress)) : state.load.progress;
      return { ...state, load: { ...state.load, progress, text: action.text, elapsedS: action.timeElapsed } };
    }
    case 'llm/ready':
      // WebLLM cached whatever it downloaded to load the models.
      return {
        ...state,
        catalogue: markCached(state.catalogue, [action.chatModel, action.embeddingModel]),
        load: { status: 'ready', chatModel: action.chatModel, embeddingModel: action.embeddingModel, labelLogits: action.labelLogits, warnings: action.warnings.slice(), timings: action.timings ?? null },
      };
    case 'llm/failed':
      return { ...state, load: { status: 'failed', reason: action.reason, message: action.message, chatModel: action.chatModel } };
    case 'llm/unloaded':
      return { ...state, load: { status: 'idle' } };
    case 'llm/served':
      return {
        ...state,
        served: { chat: state.served.chat + action.chat, embedding: state.served.embedding + action.embedding, labelLogits: state.served.labelLogits + action.labelLogits },
      };
  }
}
