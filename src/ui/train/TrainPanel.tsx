/**
 * The training panel: what the run is doing (seed data, iterations, the synthetic phase's
 * validation, evaluation) with progress bars, and Pause / Resume / Stop; for a run on the local
 * LLM, its models and the requests the page's LLM served it.
 */
import type { LLMViewState } from '../state/llm-state.ts';
import type { TrainingViewState } from '../state/training-state.ts';
import { isActive } from '../state/training-state.ts';
import { isUnfinished, type PageRunRecord } from '../../train/runs/records.ts';

/** Props of {@link TrainPanel}. */
export interface TrainPanelProps {
  state: TrainingViewState;
  /** The local LLM's state (a model loading holds Resume back). */
  llm?: LLMViewState;
  onPause: () => void;
  onResume: () => void;
  onStop: () => void;
  /** Shows another stored run (the list of runs; only while none is in progress). */
  onShow?: (runId: string) => void;
}

/** A run as the list of runs names it. */
export function runLabel(r: Pick<PageRunRecord, 'id' | 'status' | 'iteration' | 'totalIterations'>): string {
  return `${r.id} (${r.status}, ${r.iteration}/${r.totalIterations})`;
}

/** One sentence on where the run stands. */
export function statusText(s: TrainingViewState): string {
  const run = s.record ? `${s.record.config.env} ${s.record.config.mode}` : 'the run';
  switch (s.status) {
    case 'idle':
      return 'No run yet: set one up and press Start training.';
    case 'starting':
      return `Starting ${run}…`;
    case 'seeding':
      return `Generating and storing the offline seed data: ${s.seed?.done ?? 0} of ${s.seed?.total ?? 0} episodes.`;
    case 'running':
      if (s.readOnly) return `Another tab is training ${run}: iteration ${Math.min(s.iteration + 1, Math.max(1, s.totalIterations))} of ${s.totalIterations}${s.phase ? ` (${s.phase})` : ''}.`;
      if (s.validating) return `Training ${run}${s.resumed ? ' (resumed)' : ''}: validating the policy inside the simulator after iteration ${s.validating.iteration} of ${s.totalIterations}: ${s.validating.done} of ${s.validating.total} tasks.`;
      return `Training ${run}${s.resumed ? ' (resumed)' : ''}: iteration ${Math.min(s.iteration + 1, s.totalIterations)} of ${s.totalIterations}${s.phase ? ` (${s.phase})` : ''}.`;
    case 'pausing':
      return 'Pausing after this iteration…';
    case 'paused':
      // A run the page had to halt says why, and what is left of it.
      return s.error ?? `Paused after iteration ${s.iteration} of ${s.totalIterations}. Resume continues from there.`;
    case 'stopping':
      return 'Stopping after this iteration, then evaluating…';
    case 'evaluating':
      return `Evaluating on held-out tasks in the real environment: ${s.evaluating?.done ?? 0} of ${s.evaluating?.total ?? 0}.`;
    case 'done':
      return `Done: ${run}, ${s.iteration} iteration${s.iteration === 1 ? '' : 's'}.`;
    case 'failed':
      return `The run failed: ${s.error ?? 'unknown error'}`;
  }
}

/** The training panel. */
export function TrainPanel({ state, llm, onPause, onResume, onStop, onShow }: TrainPanelProps) {
  const active = isActive(state.status);
  const llmLoading = llm?.load.status === 'loading';
  const runLLM = state.record?.llm;
  const loaded = llm?.load.status === 'ready' && runLLM !== undefined && llm.load.chatModel === runLLM.chatModel;
  // A run another tab trains is that tab's to control.
  const canStopOrPause = !state.readOnly && (state.status === 'running' || state.status === 'seeding' || state.status === 'starting');
  // A failed resume (e.g. another tab trains the run) may be retried while the stored run is unfinished.
  const canResume = state.status === 'paused' || (state.status === 'failed' && state.record !== null && isUnfinished(state.record));
  const b = state.backend;
  return (
    <section class="card train-panel" aria-labelledby="train-heading" data-testid="train-panel">
      <h2 id="train-heading">Training</h2>
      {state.runs.length > 0 && (
        <div class="field run-choice">
          <label for="train-run">Run shown</label>
          <select
            id="train-run"
            data-testid="train-run"
            value={state.runId ?? ''}
            disabled={active || state.readOnly || !onShow}
            onChange={(e) => onShow?.((e.currentTarget as HTMLSelectElement).value)}
          >
            {state.runId === null && <option value="">No run shown</option>}
            {state.runs
              .slice()
              .reverse()
              .map((r) => (
                <option key={r.id} value={r.id}>
                  {runLabel(r)}
                </option>
              ))}
          </select>
        </div>
      )}
      <p class="status" role="status" aria-live="polite" data-testid="train-status" data-state={state.status}>
        {statusText(state)}
      </p>
      {state.readOnly && (
        <p class="notice" data-testid="train-readonly">
          Another tab or window is training this run, so this one shows its progress read-only. When that tab pauses, stops or closes, Resume takes the run over here.
        </p>
      )}
      {state.stalled && (
        <p class="notice" data-testid="train-stalled">
          This run has sent no progress for a while. Stop ends it where it stands; Delete (under Export, import and storage) removes it.
        </p>
      )}
      {state.seed && state.status === 'seeding' && (
        <div class="progress-row">
          <label for="seed-progress">Seed data</label>
          <progress id="seed-progress" data-testid="seed-progress" max={Math.max(1, state.seed.total)} value={state.seed.done} />
        </div>
      )}
      <div class="progress-row">
        <label for="iteration-progress">Iterations</label>
        <progress id="iteration-progress" data-testid="iteration-progress" max={Math.max(1, state.totalIterations)} value={state.iteration} />
        <span class="stat" data-testid="iteration-count">
          {state.iteration} / {state.totalIterations}
        </span>
      </div>
      {state.validating && (
        <div class="progress-row">
          <label for="validation-progress">Validation</label>
          <progress id="validation-progress" data-testid="validation-progress" max={Math.max(1, state.validating.total)} value={state.validating.done} />
          <span class="stat">
            {state.validating.done} / {state.validating.total}
          </span>
        </div>
      )}
      {state.evaluating && state.status === 'evaluating' && (
        <div class="progress-row">
          <label for="eval-progress">Evaluation</label>
          <progress id="eval-progress" data-testid="eval-progress" max={Math.max(1, state.evaluating.total)} value={state.evaluating.done} />
        </div>
      )}
      <div class="train-controls">
        <button type="button" data-testid="train-pause" disabled={!canStopOrPause} onClick={onPause}>
          Pause
        </button>
        <button type="button" data-testid="train-resume" disabled={!canResume || active || llmLoading} onClick={onResume}>
          Resume
        </button>
        <button type="button" data-testid="train-stop" disabled={!canStopOrPause} onClick={onStop}>
          Stop and evaluate
        </button>
      </div>
      {runLLM && (
        <p class="help" data-testid="train-llm">
          Local LLM: {runLLM.chatModel}
          {runLLM.embeddingModel ? `, features from ${runLLM.embeddingModel}` : ''}.
          {llm ? ` Requests the page’s LLM served: ${llm.served.chat} chat, ${llm.served.embedding} embedding, ${llm.served.labelLogits} label-logit reads.` : ''}
          {canResume && !loaded && !active ? ' Resume loads the model first (from the browser’s cache, or downloads it again if the cache was cleared).' : ''}
        </p>
      )}
      {b && (
        <p class="help" data-testid="train-backend">
          tfjs backend: {b.backend}
          {b.backend === 'wasm' ? (b.threaded ? ` (${b.threads} threads)` : ' (single thread)') : ''}. {b.reason}.{' '}
          <span data-testid="train-adapter">{b.adapter ? `WebGPU adapter: ${b.adapter.description}${b.adapter.isFallbackAdapter ? ' (software fallback)' : ''}.` : 'No WebGPU adapter was asked for or found.'}</span>
        </p>
      )}
    </section>
  );
}
