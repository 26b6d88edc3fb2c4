/**
 * The setup panel's state and handlers: the form, the error it shows, the seed file and tfjs
 * backend chosen, and what Start, "evaluate a checkpoint" and the LLM buttons do with them.
 */
import { useEffect, useState } from 'preact/hooks';
import type { BackendPreference } from '../../policy/backend-preference.ts';
import { defaultModel } from '../llm/models.ts';
import type { LLMViewState, MemoryBudget } from '../state/llm-state.ts';
import type { LLMChoiceActions } from './LLMChoice.tsx';
import type { SetupLLMActions, SetupPanelProps } from './SetupPanel.tsx';
import { configFromForm, defaultSetupForm, llmSelectionFromForm, SetupFormError, VRAM_BUDGET_FIELD, vramBudgetFromForm, type AdvancedField, type SetupForm } from './form.ts';

/** The error shown under the form, and the field it names (`form` when none). */
export interface SetupError {
  field: string;
  message: string;
}

/** What {@link useSetupForm} gives the panel's parts. */
export interface SetupFormModel {
  form: SetupForm;
  update: (patch: Partial<SetupForm>) => void;
  setAdvanced: (key: AdvancedField, value: string) => void;
  error: SetupError | null;
  seedFile: File | null;
  setSeedFile: (file: File | null) => void;
  backend: BackendPreference;
  setBackend: (backend: BackendPreference) => void;
  /** A run is active or a model loads: nothing new starts. */
  busy: boolean;
  /** The device's GPU-memory budget, once the catalogue is read. */
  budget: MemoryBudget | undefined;
  chooseSim: (sim: SetupForm['sim']) => void;
  /** Applies a typed GPU-memory figure; reports a bad one only when `report`. */
  applyBudget: (text: string, report: boolean) => void;
  submit: (event: Event) => void;
  evaluateFile: (event: Event) => void;
  llmChoiceActions: LLMChoiceActions;
}

/** Options of {@link useSetupForm}: the panel's props, with the LLM state defaulted. */
export type SetupFormOptions = Pick<SetupPanelProps, 'onStart' | 'onEvaluateCheckpoint'> & {
  running: boolean;
  initialBackend: BackendPreference;
  llm: LLMViewState;
  llmActions: SetupLLMActions | undefined;
};

/** The setup panel's state and the handlers that act on it. */
export function useSetupForm({ running, onStart, onEvaluateCheckpoint, initialBackend, llm, llmActions }: SetupFormOptions): SetupFormModel {
  const [form, setForm] = useState<SetupForm>(defaultSetupForm);
  const [error, setError] = useState<SetupError | null>(null);
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

  const llmChoiceActions: LLMChoiceActions = {
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

  return { form, update, setAdvanced, error, seedFile, setSeedFile, backend, setBackend, busy, budget, chooseSim, applyBudget, submit, evaluateFile, llmChoiceActions };
}
