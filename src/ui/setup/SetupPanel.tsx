/**
 * The setup panel: environment, experience model (no download, or a local LLM from the catalogue:
 * ./LLMChoice.tsx), mode, preset, seed and the advanced knobs of a new run, with labels; Start
 * builds the configuration and the models to load (./form.ts) and hands them to the controller.
 */
import { memo } from 'preact/compat';
import { useEffect, useState } from 'preact/hooks';
import { ENV_NAMES } from '../../core/types.ts';
import { ENVIRONMENTS } from '../../envs/registry.ts';
import { PRESETS, TRAINING_MODES, type PresetName, type TrainingConfig, type TrainingMode } from '../../train/config.ts';
import type { BackendPreference } from '../../policy/backend-preference.ts';
import { BACKEND_NAMES } from '../../policy/backend-preference.ts';
import type { StartOptions } from '../train/controller.ts';
import {
  ADVANCED_FIELDS,
  configFromForm,
  defaultSetupForm,
  isRlMode,
  iterationSummary,
  llmSelectionFromForm,
  presetValue,
  recordedOf,
  SetupFormError,
  VRAM_BUDGET_FIELD,
  vramBudgetFromForm,
  type AdvancedField,
  type SetupForm,
} from './form.ts';
import { initialLLMState, type LLMSelection, type LLMViewState } from '../state/llm-state.ts';
import { defaultModel } from '../llm/models.ts';
import { LLMLoadStatus, LLMModelChoice } from './LLMChoice.tsx';

/** What each mode does, in a sentence. */
export const MODE_DESCRIPTIONS: Record<TrainingMode, string> = {
  'zero-shot': 'the untrained policy (no update): the baseline',
  sft: 'behaviour cloning on the offline demonstrations',
  real: 'GRPO in the real environment (uses real transitions)',
  dreamgym: 'GRPO in the synthetic environment only (0 real transitions)',
  s2r: 'DreamGym first, then GRPO in the real environment within a small budget',
};

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
  const [form, setForm] = useState<SetupForm>(defaultSetupForm);
  const [error, setError] = useState<{ field: string; message: string } | null>(null);
  const [seedFile, setSeedFile] = useState<File | null>(null);
  const [backend, setBackend] = useState<BackendPreference>(initialBackend);
  const update = (patch: Partial<SetupForm>): void => setForm((f) => ({ ...f, ...patch }));
  const setAdvanced = (key: AdvancedField, value: string): void => setForm((f) => ({ ...f, advanced: { ...f.advanced, [key]: value } }));
  // Nothing new starts while a model loads.
  const busy = running || llm.load.status === 'loading';
  const models = llm.catalogue.status === 'ready' ? llm.catalogue.models : null;

  // Once the catalogue is known, offer a model that runs here (a cached one first).
  useEffect(() => {
    if (models === null) return;
    setForm((f) => ({
      ...f,
      llmModel: f.llmModel === '' ? defaultModel(models, 'chat') : f.llmModel,
      embeddingModel: f.embeddingModel === '' ? defaultModel(models, 'embedding') : f.embeddingModel,
    }));
  }, [models]);

  const fail = (e: unknown): void => setError({ field: e instanceof SetupFormError ? e.field : 'form', message: e instanceof Error ? e.message : String(e) });

  const chooseSim = (sim: SetupForm['sim']): void => {
    update({ sim });
    setError(null);
    if (sim === 'llm') llmActions?.check();
  };

  const budget = llm.catalogue.status === 'ready' ? llm.catalogue.budget : undefined;
  // A valid figure applies as it is typed; a bad one is reported once the field is left: "1" on the way to "1024" is no error.
  const applyBudget = (text: string, report: boolean): void => {
    let mb: number | null;
    try {
      mb = vramBudgetFromForm({ vramBudgetMB: text });
    } catch (e) {
      if (report) fail(e);
      return;
    }
    setError((e) => (e?.field === VRAM_BUDGET_FIELD.key ? null : e));
    llmActions?.setMemoryBudget?.(mb);
  };

  const submit = (event: Event): void => {
    event.preventDefault();
    try {
      vramBudgetFromForm(form);
      const config = configFromForm(form);
      const selection = llmSelectionFromForm(form, models);
      setError(null);
      onStart(config, { backend, ...(seedFile ? { seedFile } : {}), ...(selection ? { llm: selection } : {}) });
    } catch (e) {
      fail(e);
    }
  };

  const llmChoiceActions = {
    load: () => {
      try {
        vramBudgetFromForm(form);
        const selection = llmSelectionFromForm(form, models);
        setError(null);
        if (selection) llmActions?.load(selection);
      } catch (e) {
        fail(e);
      }
    },
    cancel: () => llmActions?.cancel(),
    unload: () => llmActions?.unload(),
  };

  const evaluateFile = (event: Event): void => {
    const input = event.currentTarget as HTMLInputElement;
    const file = input.files?.[0];
    // Cleared, so that choosing the same file again is a new change.
    input.value = '';
    if (!file || !onEvaluateCheckpoint) return;
    try {
      const config = configFromForm(form);
      const selection = llmSelectionFromForm(form, models);
      setError(null);
      onEvaluateCheckpoint(config, file, selection ?? undefined);
    } catch (e) {
      fail(e);
    }
  };

  return (
    <form class="card setup-panel" data-testid="setup-form" aria-labelledby="setup-heading" onSubmit={submit}>
      <h2 id="setup-heading">Set up a training run</h2>
      <div class="setup-grid">
        <div class="field">
          <label for="setup-env">Environment</label>
          <select id="setup-env" data-testid="setup-env" value={form.env} onChange={(e) => update({ env: (e.currentTarget as HTMLSelectElement).value as SetupForm['env'] })}>
            {ENV_NAMES.map((name) => (
              <option value={name} key={name}>
                {name}: {ENVIRONMENTS[name].description}
              </option>
            ))}
          </select>
        </div>
        <div class="field">
          <label for="setup-mode">Mode</label>
          <select id="setup-mode" data-testid="setup-mode" value={form.mode} aria-describedby="setup-mode-help" onChange={(e) => update({ mode: (e.currentTarget as HTMLSelectElement).value as TrainingMode })}>
            {TRAINING_MODES.map((mode) => (
              <option value={mode} key={mode}>
                {mode}
              </option>
            ))}
          </select>
          <span class="help" id="setup-mode-help">
            {MODE_DESCRIPTIONS[form.mode]}
          </span>
        </div>
        <fieldset class="field sim-choice" data-testid="setup-sim">
          <legend>Experience model</legend>
          <label>
            <input type="radio" name="setup-sim" value="retrieval" data-testid="setup-sim-retrieval" checked={form.sim === 'retrieval'} disabled={busy} onChange={() => chooseSim('retrieval')} />
            No download: retrieval from real transitions
          </label>
          <label>
            <input type="radio" name="setup-sim" value="llm" data-testid="setup-sim-llm" checked={form.sim === 'llm'} disabled={busy} aria-describedby="setup-llm-help" onChange={() => chooseSim('llm')} />
            Local LLM (WebLLM)
          </label>
          <span class="help" id="setup-llm-help">
            A model from WebLLM’s catalogue plays the environment on your GPU (WebGPU; f16 models also need shader-f16). It is downloaded once (hundreds of MB to several GB) and cached by the browser; nothing else leaves or enters the machine.
          </span>
          {form.sim === 'llm' && <LLMModelChoice form={form} update={update} llm={llm} busy={busy} invalidField={error?.field ?? null} actions={llmChoiceActions} />}
          {/* A failed load concerns the LLM choice; progress and the loaded model show whichever is chosen (a resume loads its run's model). */}
          {(form.sim === 'llm' || llm.load.status !== 'failed') && <LLMLoadStatus llm={llm} running={running} actions={llmChoiceActions} onUseRetrieval={() => chooseSim('retrieval')} />}
        </fieldset>
        <div class="field">
          <label for="setup-preset">Preset</label>
          <select id="setup-preset" data-testid="setup-preset" value={form.preset} aria-describedby="setup-preset-iterations" onChange={(e) => update({ preset: (e.currentTarget as HTMLSelectElement).value as PresetName })}>
            {(Object.keys(PRESETS) as PresetName[]).map((p) => (
              <option value={p} key={p}>
                {p}
              </option>
            ))}
          </select>
          <span class="help" id="setup-preset-iterations" data-testid="setup-iterations">
            {iterationSummary(form)}
          </span>
        </div>
        <div class="field">
          <label for="setup-seed">Seed</label>
          <input
            id="setup-seed"
            data-testid="setup-seed"
            type="text"
            inputMode="numeric"
            autoComplete="off"
            size={6}
            value={form.seed}
            aria-invalid={error?.field === 'seed'}
            onInput={(e) => update({ seed: (e.currentTarget as HTMLInputElement).value })}
          />
        </div>
        <div class="field checkbox">
          <label>
            <input
              type="checkbox"
              data-testid="setup-warm-start"
              checked={form.warmStart && isRlMode(form.mode)}
              disabled={!isRlMode(form.mode)}
              onChange={(e) => update({ warmStart: (e.currentTarget as HTMLInputElement).checked })}
            />
            Warm start from behaviour cloning
          </label>
        </div>
      </div>
      <details class="advanced" data-testid="setup-advanced">
        <summary>Advanced settings (blank: the preset’s value)</summary>
        <div class="setup-grid">
          {ADVANCED_FIELDS.map(({ key, label, min, max }) => (
            <div class="field" key={key}>
              <label for={`setup-${key}`}>{label}</label>
              <input
                id={`setup-${key}`}
                data-testid={`advanced-${key}`}
                type="text"
                inputMode="numeric"
                autoComplete="off"
                size={6}
                placeholder={String(presetValue(form.preset, key, form.env, form.sim, recordedOf(form)))}
                value={form.advanced[key] ?? ''}
                aria-invalid={error?.field === key}
                aria-describedby={`setup-${key}-range`}
                onInput={(e) => setAdvanced(key, (e.currentTarget as HTMLInputElement).value)}
              />
              <span class="help" id={`setup-${key}-range`} data-testid={`advanced-${key}-range`}>
                {`${min.toLocaleString('en-US')} to at most ${max.toLocaleString('en-US')}`}
              </span>
            </div>
          ))}
          <div class="field">
            <label for={`setup-${VRAM_BUDGET_FIELD.key}`}>{VRAM_BUDGET_FIELD.label}</label>
            <input
              id={`setup-${VRAM_BUDGET_FIELD.key}`}
              data-testid={`advanced-${VRAM_BUDGET_FIELD.key}`}
              type="text"
              inputMode="numeric"
              autoComplete="off"
              size={7}
              placeholder={budget ? String(budget.estimateMB) : ''}
              value={form.vramBudgetMB}
              disabled={busy}
              aria-invalid={error?.field === VRAM_BUDGET_FIELD.key}
              aria-describedby={`setup-${VRAM_BUDGET_FIELD.key}-range`}
              onInput={(e) => {
                const text = (e.currentTarget as HTMLInputElement).value;
                update({ vramBudgetMB: text });
                applyBudget(text, false);
              }}
              // onBlur, not onChange: preact/compat (loaded for memo) makes a text input's onChange an input handler.
              onBlur={(e) => applyBudget((e.currentTarget as HTMLInputElement).value, true)}
            />
            <span class="help" id={`setup-${VRAM_BUDGET_FIELD.key}-range`} data-testid={`advanced-${VRAM_BUDGET_FIELD.key}-range`}>
              {`${VRAM_BUDGET_FIELD.min.toLocaleString('en-US')} to at most ${VRAM_BUDGET_FIELD.max.toLocaleString('en-US')}. Blank: the estimate for this device${budget ? ` (${budget.estimateMB.toLocaleString('en-US')} MB)` : ''}. Browsers report at most 8 GiB of the machine’s memory, so give a larger GPU’s figure here; local models that need more are listed as unable to run.`}
            </span>
          </div>
        </div>
      </details>
      <div class="field">
        <label for="setup-backend">tfjs backend</label>
        <select id="setup-backend" data-testid="setup-backend" value={backend} disabled={running} aria-describedby="setup-backend-help" onChange={(e) => setBackend((e.currentTarget as HTMLSelectElement).value as BackendPreference)}>
          {(['auto', ...BACKEND_NAMES] as const).map((name) => (
            <option key={name} value={name}>
              {name}
            </option>
          ))}
        </select>
        <span class="help" id="setup-backend-help">
          Where the policy trains. auto: WebGPU on a hardware GPU adapter, else WebAssembly (threaded when the page is cross-origin isolated), else plain JavaScript. The backend chosen, the adapter and why are shown under Training once the run starts.
        </span>
      </div>
      <div class="field file-field">
        <label for="setup-seed-file">Seed data</label>
        <input
          id="setup-seed-file"
          data-testid="setup-seed-file"
          type="file"
          accept=".jsonl,.ndjson,application/x-ndjson,text/plain"
          disabled={busy}
          onChange={(e) => setSeedFile((e.currentTarget as HTMLInputElement).files?.[0] ?? null)}
          aria-describedby="setup-seed-help"
        />
        <span class="help" id="setup-seed-help" data-testid="setup-seed-help">
          {seedFile
            ? `The run seeds its replay buffer with ${seedFile.name} (dreamgym JSONL of this environment, recorded episodes), checked whole first.`
            : 'None chosen: the environment’s expert and noisy policies generate the offline episodes at the start of the run. Or choose a dreamgym JSONL file of this environment.'}
        </span>
        {seedFile && (
          <button type="button" data-testid="setup-seed-clear" onClick={() => setSeedFile(null)}>
            Generate the seed data instead
          </button>
        )}
      </div>
      {error && (
        <p class="message" role="alert" data-kind="error" data-testid="setup-error">
          {error.message}
        </p>
      )}
      <button type="submit" class="primary" data-testid="train-start" disabled={busy}>
        Start training
      </button>
      {onEvaluateCheckpoint && (
        <div class="field file-field">
          <label for="setup-checkpoint">Or evaluate a checkpoint file with these settings</label>
          <input id="setup-checkpoint" data-testid="setup-checkpoint" type="file" accept=".dgckpt,application/octet-stream" disabled={busy} onChange={evaluateFile} aria-describedby="setup-checkpoint-help" />
          <span class="help" id="setup-checkpoint-help">
            A policy checkpoint (.dgckpt, as exported below) becomes a new run, evaluated on the held-out tasks of the environment, prior and sizes set above.
          </span>
        </div>
      )}
    </form>
  );
});
