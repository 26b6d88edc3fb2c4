/**
 * The setup panel's parts: the run's main choices, the experience model, the advanced knobs, the
 * tfjs backend, the seed data and the checkpoint to evaluate. Each reads and changes the form
 * through the model of ./useSetupForm.ts.
 */
import { ENV_NAMES } from '../../core/types.ts';
import { ENVIRONMENTS } from '../../envs/registry.ts';
import { BACKEND_NAMES, type BackendPreference } from '../../policy/backend-preference.ts';
import { PRESETS, TRAINING_MODES, type PresetName, type TrainingMode } from '../../train/config.ts';
import type { LLMViewState } from '../state/llm-state.ts';
import { ADVANCED_CHOICES, ADVANCED_FIELDS, choiceApplies, choiceDefaults, isRlMode, iterationSummary, presetValue, recordedOf, VRAM_BUDGET_FIELD, type SetupForm } from './form.ts';
import { LLMLoadStatus, LLMModelChoice } from './LLMChoice.tsx';
import type { SetupFormModel } from './useSetupForm.ts';

/** What each mode does, in a sentence. */
const MODE_DESCRIPTIONS: Record<TrainingMode, string> = {
  'zero-shot': 'the untrained policy (no update): the baseline',
  sft: 'behaviour cloning on the offline demonstrations',
  real: 'GRPO in the real environment (uses real transitions)',
  dreamgym: 'GRPO in the synthetic environment only (0 real transitions)',
  s2r: 'DreamGym first, then GRPO in the real environment within a small budget',
};

/** Props of the parts that only read and change the form. */
export interface SetupPartProps {
  model: SetupFormModel;
}

/** Props of the parts that also show the local LLM's state. */
export interface SetupLLMPartProps extends SetupPartProps {
  llm: LLMViewState;
  /** Whether a run is in progress. */
  running: boolean;
}

/** Environment, mode, experience model, preset, seed and warm start. */
export function RunFields({ model, llm, running }: SetupLLMPartProps) {
  const { form, update, error } = model;
  return (
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
      <SimChoice model={model} llm={llm} running={running} />
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
  );
}

/** The experience model: no download, or a local LLM with its model choice and load state. */
export function SimChoice({ model, llm, running }: SetupLLMPartProps) {
  const { form, update, error, busy, chooseSim, llmChoiceActions } = model;
  return (
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
  );
}

/** The advanced knobs (blank: the preset's value) and the GPU memory for local models. */
export function AdvancedSettings({ model }: SetupPartProps) {
  const { form, update, setAdvanced, error, busy, budget, applyBudget } = model;
  const vram = VRAM_BUDGET_FIELD;
  const defaults = choiceDefaults(form);
  return (
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
        {ADVANCED_CHOICES.map(({ key, label, options, describe }) => {
          const applies = choiceApplies(form, key);
          return (
            <div class="field" key={key}>
              <label for={`setup-${key}`}>{label}</label>
              <select
                id={`setup-${key}`}
                data-testid={`advanced-${key}`}
                value={form.choices?.[key] ?? ''}
                disabled={busy || !applies}
                aria-invalid={error?.field === key}
                aria-describedby={applies ? undefined : `setup-${key}-help`}
                onChange={(e) => update({ choices: { ...form.choices, [key]: (e.currentTarget as HTMLSelectElement).value } })}
              >
                <option value="">{`Default (${defaults[key]})`}</option>
                {options.map((o) => (
                  <option key={o} value={o}>
                    {describe[o as keyof typeof describe]}
                  </option>
                ))}
              </select>
              {!applies && (
                <span class="help" id={`setup-${key}-help`} data-testid={`advanced-${key}-help`}>
                  {key === 'grounding' ? 'Only for dreamgym and s2r on the no-download simulator.' : 'Only for dreamgym and s2r.'}
                </span>
              )}
            </div>
          );
        })}
        <div class="field">
          <label for={`setup-${vram.key}`}>{vram.label}</label>
          <input
            id={`setup-${vram.key}`}
            data-testid={`advanced-${vram.key}`}
            type="text"
            inputMode="numeric"
            autoComplete="off"
            size={7}
            placeholder={budget ? String(budget.estimateMB) : ''}
            value={form.vramBudgetMB}
            disabled={busy}
            aria-invalid={error?.field === vram.key}
            aria-describedby={`setup-${vram.key}-range`}
            onInput={(e) => {
              const text = (e.currentTarget as HTMLInputElement).value;
              update({ vramBudgetMB: text });
              applyBudget(text, false);
            }}
            // onBlur, not onChange: preact/compat (loaded for memo) makes a text input's onChange an input handler.
            onBlur={(e) => applyBudget((e.currentTarget as HTMLInputElement).value, true)}
          />
          <span class="help" id={`setup-${vram.key}-range`} data-testid={`advanced-${vram.key}-range`}>
            {`${vram.min.toLocaleString('en-US')} to at most ${vram.max.toLocaleString('en-US')}. Blank: the estimate for this device${budget ? ` (${budget.estimateMB.toLocaleString('en-US')} MB)` : ''}. Browsers report at most 8 GiB of the machine’s memory, so give a larger GPU’s figure here; local models that need more are listed as unable to run.`}
          </span>
        </div>
      </div>
    </details>
  );
}

/** The tfjs backend menu (locked while a run is in progress). */
export function BackendField({ backend, setBackend, running }: { backend: BackendPreference; setBackend: (b: BackendPreference) => void; running: boolean }) {
  return (
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
  );
}

/** The seed data: a dreamgym JSONL file, or none (the environment generates it). */
export function SeedFileField({ model }: SetupPartProps) {
  const { seedFile, setSeedFile, busy } = model;
  return (
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
  );
}

/** A checkpoint file to evaluate with the settings above. */
export function CheckpointField({ model }: SetupPartProps) {
  return (
    <div class="field file-field">
      <label for="setup-checkpoint">Or evaluate a checkpoint file with these settings</label>
      <input id="setup-checkpoint" data-testid="setup-checkpoint" type="file" accept=".dgckpt,application/octet-stream" disabled={model.busy} onChange={model.evaluateFile} aria-describedby="setup-checkpoint-help" />
      <span class="help" id="setup-checkpoint-help">
        A policy checkpoint (.dgckpt, as exported below) becomes a new run, evaluated on the held-out tasks of the environment, prior and sizes set above.
      </span>
    </div>
  );
}
