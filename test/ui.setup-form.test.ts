/** The setup form's values as a training configuration (src/ui/setup/form.ts). */
import { describe, expect, it } from 'vitest';
import { ENV_PRESETS, PRESETS, VALIDATION_EVERY, VALIDATION_TASKS } from '../src/train/config.ts';
import { ADVANCED_FIELDS, choiceApplies, choiceDefaults, configFromForm, defaultSetupForm, iterationSummary, llmSelectionFromForm, presetValue, recordedOf, SetupFormError, vramBudgetFromForm, type AdvancedField } from '../src/ui/setup/form.ts';
import type { ModelView } from '../src/ui/state/llm-state.ts';
import { experienceModelProblem } from '../src/llm/catalogue.ts';

const model = (modelId: string, patch: Partial<ModelView> = {}): ModelView => ({
  modelId, kind: 'chat', vramMB: 100, quantization: 'q4f32_1', needsShaderF16: false, contextWindow: null, parameters: 1e8, downloadMB: 60, usable: true, reasons: [], cached: false, ...patch,
});
const catalogue = [model('chat-a'), model('chat-f16', { usable: false, reasons: ['needs shader-f16, which this GPU does not offer'] }), model('embed-a', { kind: 'embedding' })];

/** The error `f` throws (or null). */
function thrown(f: () => unknown): SetupFormError | null {
  try {
    f();
  } catch (e) {
    return e as SetupFormError;
  }
  return null;
}

describe('setup form', () => {
  it('layers the preset under the fields filled in; blank fields keep the preset', () => {
    const c = configFromForm({ ...defaultSetupForm(), warmStart: false, env: 'household', mode: 's2r', preset: 'standard', seed: '7', advanced: { iterations: '4', noisyEpisodes: ' 3 ', sftEpochs: '2', groupSize: '' } });
    expect(c).toMatchObject({ env: 'household', mode: 's2r', seed: 7, iterations: 4, sim: 'retrieval', warmStart: 'none' });
    expect(c.offline.noisyEpisodes).toBe(3);
    expect(c.offline.expertEpisodes).toBe(PRESETS.standard.offline.expertEpisodes);
    expect(c.sft.epochs).toBe(2);
    expect(c.groupSize).toBe(PRESETS.standard.groupSize);
  });

  it('warm-starts RL modes only; the first form is dreamgym warm-started', () => {
    expect(defaultSetupForm()).toMatchObject({ mode: 'dreamgym', warmStart: true });
    expect(configFromForm({ ...defaultSetupForm(), mode: 'dreamgym', warmStart: true }).warmStart).toBe('sft');
    expect(configFromForm({ ...defaultSetupForm(), mode: 'sft', warmStart: true }).warmStart).toBe('none');
  });

  it('names the field of a bad value', () => {
    const bad = (patch: Parameters<typeof configFromForm>[0]) => {
      try {
        configFromForm(patch);
      } catch (e) {
        return e;
      }
      return null;
    };
    const e1 = bad({ ...defaultSetupForm(), seed: '1e3' });
    expect(e1).toBeInstanceOf(SetupFormError);
    expect((e1 as SetupFormError).field).toBe('seed');
    const e2 = bad({ ...defaultSetupForm(), advanced: { groupSize: '1' } });
    expect((e2 as SetupFormError).field).toBe('groupSize');
    expect((e2 as Error).message).toMatch(/Rollouts per task \(G\): expected a whole number of at least 2, got "1"/);
    expect(configFromForm({ ...defaultSetupForm(), seed: '-3' }).seed).toBe(-3);
  });

  it('refuses a size above its stated maximum with “at most N”, and takes the maximum itself', () => {
    const huge: Partial<Record<AdvancedField, string>> = { evalEpisodes: '99999999', noisyEpisodes: '99999999999', tasksPerIteration: '100000000', groupSize: '1'.padEnd(40, '0') };
    for (const [key, text] of Object.entries(huge) as [AdvancedField, string][]) {
      const field = ADVANCED_FIELDS.find((f) => f.key === key) as (typeof ADVANCED_FIELDS)[number];
      let error: unknown = null;
      try {
        configFromForm({ ...defaultSetupForm(), advanced: { [key]: text } });
      } catch (e) {
        error = e;
      }
      expect(error, key).toBeInstanceOf(SetupFormError);
      expect((error as SetupFormError).field).toBe(key);
      expect((error as Error).message).toContain(`at most ${field.max.toLocaleString('en-US')}`);
      expect((error as Error).message).toContain(text);
    }
    // The CLI's bounds: 100,000 held-out tasks, 1,000,000 offline episodes, 100,000 tasks per iteration.
    expect(ADVANCED_FIELDS.find((f) => f.key === 'evalEpisodes')?.max).toBe(100_000);
    expect(ADVANCED_FIELDS.find((f) => f.key === 'noisyEpisodes')?.max).toBe(1_000_000);
    expect(ADVANCED_FIELDS.find((f) => f.key === 'tasksPerIteration')?.max).toBe(100_000);
    for (const field of ADVANCED_FIELDS) expect(field.max, field.key).toBeGreaterThan(field.min);
    expect(configFromForm({ ...defaultSetupForm(), advanced: { evalEpisodes: '100000' } }).evalEpisodes).toBe(100_000);
  });

  it('takes a GPU memory budget for the local models within its bounds, blank for the estimate', () => {
    expect(vramBudgetFromForm(defaultSetupForm())).toBeNull();
    expect(vramBudgetFromForm({ vramBudgetMB: ' 24576 ' })).toBe(24_576);
    expect(vramBudgetFromForm({ vramBudgetMB: '256' })).toBe(256);
    expect(vramBudgetFromForm({ vramBudgetMB: '262144' })).toBe(262_144);
    const huge = thrown(() => vramBudgetFromForm({ vramBudgetMB: '999999' }));
    expect(huge).toBeInstanceOf(SetupFormError);
    expect(huge).toMatchObject({ field: 'vramBudgetMB', message: 'GPU memory for local models, MB: at most 262,144, got "999999"' });
    expect(thrown(() => vramBudgetFromForm({ vramBudgetMB: '100' }))?.message).toBe('GPU memory for local models, MB: expected a whole number of at least 256, got "100"');
    expect(thrown(() => vramBudgetFromForm({ vramBudgetMB: '8 GB' }))?.field).toBe('vramBudgetMB');
  });

  it('says how many iterations a run counts, behaviour-cloning epochs included, as the README does', () => {
    // The first form: quick, warm-started dreamgym.
    expect(iterationSummary(defaultSetupForm())).toBe('20 behaviour-cloning epochs, then 45 RL iterations: 65 iterations in all.');
    expect(iterationSummary({ ...defaultSetupForm(), warmStart: false })).toBe('45 RL iterations: 45 iterations in all.');
    expect(iterationSummary({ ...defaultSetupForm(), mode: 'sft', advanced: { sftEpochs: '3' } })).toBe('3 behaviour-cloning epochs: 3 iterations in all.');
    expect(iterationSummary({ ...defaultSetupForm(), mode: 's2r', warmStart: false, advanced: { iterations: '4' } })).toBe('4 synthetic and up to 4 real RL iterations: 8 iterations in all.');
    expect(iterationSummary({ ...defaultSetupForm(), mode: 'zero-shot' })).toMatch(/^No training/);
    // A field being typed falls back on the preset.
    expect(iterationSummary({ ...defaultSetupForm(), advanced: { iterations: '4x' } })).toBe('20 behaviour-cloning epochs, then 45 RL iterations: 65 iterations in all.');
  });

  it('shows the preset values as the placeholders of blank fields', () => {
    expect(presetValue('quick', 'iterations')).toBe(PRESETS.quick.iterations);
    expect(presetValue('standard', 'expertEpisodes', 'household')).toBe(PRESETS.standard.offline.expertEpisodes);
    // An environment's own adjustment of every preset shows too (shop records more demonstrations).
    expect(presetValue('standard', 'expertEpisodes', 'shop')).toBe(ENV_PRESETS.shop?.offline?.expertEpisodes);
    expect(ENV_PRESETS.shop?.offline?.expertEpisodes).not.toBe(PRESETS.standard.offline.expertEpisodes);
    expect(configFromForm({ ...defaultSetupForm(), env: 'shop', advanced: { expertEpisodes: '30' } }).offline.expertEpisodes).toBe(30);
    expect(presetValue('quick', 'sftEpochs')).toBe(PRESETS.quick.sft.epochs);
  });

  it('takes recorded episodes of a user\'s kind instead of the demonstrations (blank or 0: none), within the CLI\'s bound', () => {
    expect(presetValue('quick', 'recorded', 'shop')).toBe(0);
    expect(configFromForm(defaultSetupForm()).offline.recorded).toBe(0);
    expect(configFromForm({ ...defaultSetupForm(), advanced: { recorded: '25' } }).offline.recorded).toBe(25);
    expect(() => configFromForm({ ...defaultSetupForm(), advanced: { recorded: '-2' } })).toThrow(/Recorded episodes.*got "-2"/);
    // A recorded log validates no synthetic phase unless asked: the placeholder says so.
    expect(presetValue('quick', 'validationTasks', 'shop', 'retrieval', recordedOf({ advanced: { recorded: '25' } }))).toBe(0);
    expect(recordedOf({ advanced: { recorded: '2x' } })).toBe(0);
    expect(configFromForm({ ...defaultSetupForm(), advanced: { recorded: '25' } }).validation.tasks).toBe(0);
    expect(configFromForm({ ...defaultSetupForm(), advanced: { recorded: '25', validationTasks: '10' } }).validation.tasks).toBe(10);
    expect(() => configFromForm({ ...defaultSetupForm(), advanced: { recorded: '2000000' } })).toThrow(/at most 1,000,000, got "2000000"/);
  });

  it('sets the simulator validation: tasks (placeholder 50 with retrieval, 0 with an LLM) and how often', () => {
    expect(presetValue('quick', 'validationTasks')).toBe(VALIDATION_TASKS);
    expect(presetValue('quick', 'validationTasks', 'shop', 'llm')).toBe(0);
    expect(presetValue('quick', 'validationEvery')).toBe(VALIDATION_EVERY);
    // The form starts warm, so the recorded criterion picks the kept policy, on 50 held-out recorded successes; from scratch the simulator's figure does.
    const chosen = { criterion: 'recorded', recorded: VALIDATION_TASKS };
    expect(configFromForm({ ...defaultSetupForm(), warmStart: false }).validation).toEqual({ tasks: VALIDATION_TASKS, every: VALIDATION_EVERY, criterion: 'simulator', recorded: VALIDATION_TASKS });
    expect(configFromForm(defaultSetupForm()).validation).toEqual({ tasks: VALIDATION_TASKS, every: VALIDATION_EVERY, ...chosen });
    expect(configFromForm({ ...defaultSetupForm(), advanced: { validationTasks: '0', validationEvery: '2' } }).validation).toEqual({ tasks: 0, every: 2, ...chosen });
    expect(configFromForm({ ...defaultSetupForm(), advanced: { validationEvery: '3' } }).validation).toEqual({ tasks: VALIDATION_TASKS, every: 3, ...chosen });
    expect(() => configFromForm({ ...defaultSetupForm(), advanced: { validationTasks: '-1' } })).toThrow(/Simulator validation tasks \(0: none\): expected a whole number of at least 0/);
  });

  it('chooses the simulator\'s grounding and what picks the kept policy; blank is the default the rest of the form implies', () => {
    const warm = defaultSetupForm();
    const log = { ...warm, advanced: { recorded: '25' } };
    // A preset's demonstrations answer every step, a recorded log grounds `auto`; a cloned start is picked by `recorded`, a recorded log's by the simulator.
    expect(choiceDefaults(warm)).toEqual({ grounding: 'off', validationCriterion: 'recorded' });
    expect(choiceDefaults(log)).toEqual({ grounding: 'auto', validationCriterion: 'simulator' });
    expect(choiceDefaults({ ...warm, warmStart: false }).validationCriterion).toBe('simulator');
    // A field being typed does not hide the default: the preset's, with the form's recorded log.
    expect(choiceDefaults({ ...log, advanced: { recorded: '25', groupSize: '1' } }).grounding).toBe('auto');
    expect(configFromForm({ ...warm, choices: { grounding: '', validationCriterion: '' } })).toEqual(configFromForm(warm));
    const chosen = configFromForm({ ...warm, choices: { grounding: 'calibrated', validationCriterion: 'simulator' } });
    expect(chosen.grounding).toBe('calibrated');
    expect(chosen.validation.criterion).toBe('simulator');
    expect(configFromForm({ ...log, choices: { grounding: 'off' } }).grounding).toBe('off');
    const e = thrown(() => configFromForm({ ...warm, choices: { grounding: 'sometimes' } }));
    expect(e).toBeInstanceOf(SetupFormError);
    expect(e?.field).toBe('grounding');
    expect(e?.message).toMatch(/Simulator grounding: expected one of calibrated, auto, off \(or the default\), got "sometimes"/);
    expect(thrown(() => configFromForm({ ...warm, choices: { validationCriterion: 'best' } }))?.field).toBe('validationCriterion');
    // Both act on a synthetic phase only; grounding on the no-download simulator only.
    expect(choiceApplies(warm, 'grounding')).toBe(true);
    expect(choiceApplies({ ...warm, mode: 's2r' }, 'validationCriterion')).toBe(true);
    expect(choiceApplies({ ...warm, mode: 'real' }, 'validationCriterion')).toBe(false);
    expect(choiceApplies({ ...warm, mode: 'sft' }, 'grounding')).toBe(false);
    expect(choiceApplies({ ...warm, sim: 'llm' }, 'grounding')).toBe(false);
    expect(choiceApplies({ ...warm, sim: 'llm' }, 'validationCriterion')).toBe(true);
  });

  it('no download by default: retrieval, no LLM to load', () => {
    const form = defaultSetupForm();
    expect(form.sim).toBe('retrieval');
    expect(configFromForm(form)).toMatchObject({ sim: 'retrieval', prior: 'lexical' });
    expect(llmSelectionFromForm(form, null)).toBeNull();
    // LLM choices left over from an earlier pick do not leak into a retrieval run.
    expect(configFromForm({ ...form, llmPrior: true }).prior).toBe('lexical');
  });

  it('the local LLM: its experience model, the LLM prior when asked, and the models to load', () => {
    const form = { ...defaultSetupForm(), sim: 'llm' as const, llmModel: 'chat-a', embeddingModel: 'embed-a' };
    expect(configFromForm(form)).toMatchObject({ sim: 'llm', prior: 'lexical' });
    expect(configFromForm({ ...form, llmPrior: true }).prior).toBe('llm');
    expect(llmSelectionFromForm(form, catalogue)).toEqual({ chatModel: 'chat-a', embeddingModel: null });
    expect(llmSelectionFromForm({ ...form, llmEmbeddings: true }, catalogue)).toEqual({ chatModel: 'chat-a', embeddingModel: 'embed-a' });
    // Only a run with the LLM prior has the chat model load with a logit processor.
    expect(llmSelectionFromForm({ ...form, llmPrior: true }, catalogue)).toEqual({ chatModel: 'chat-a', embeddingModel: null, priorLogits: true });
  });

  it('refuses a missing, unknown, wrong-kind or unusable model, naming the field', () => {
    const form = { ...defaultSetupForm(), sim: 'llm' as const, llmModel: 'chat-a' };
    expect(thrown(() => llmSelectionFromForm(form, null))).toMatchObject({ field: 'llm-model', message: expect.stringMatching(/still being checked/) });
    expect(thrown(() => llmSelectionFromForm({ ...form, llmModel: '' }, catalogue))).toMatchObject({ field: 'llm-model', message: expect.stringMatching(/Choose an LLM to download, or choose “No download”/) });
    expect(thrown(() => llmSelectionFromForm({ ...form, llmModel: 'nope' }, catalogue))?.message).toMatch(/not in the model catalogue/);
    expect(thrown(() => llmSelectionFromForm({ ...form, llmModel: 'embed-a' }, catalogue))?.message).toMatch(/is not a chat model/);
    expect(thrown(() => llmSelectionFromForm({ ...form, llmModel: 'chat-f16' }, catalogue))?.message).toBe('chat-f16 cannot run on this device: needs shader-f16, which this GPU does not offer. Choose another model, or “No download”.');
    expect(thrown(() => llmSelectionFromForm({ ...form, llmEmbeddings: true, embeddingModel: '' }, catalogue))).toMatchObject({ field: 'embedding-model' });
    // A model whose context window cannot hold the experience model's prompt and reply.
    const small = [...catalogue, model('chat-1k', { contextWindow: 1024, experienceModelProblem: experienceModelProblem(1024) })];
    expect(thrown(() => llmSelectionFromForm({ ...form, llmModel: 'chat-1k' }, small))).toMatchObject({ field: 'llm-model', message: expect.stringMatching(/^chat-1k cannot be the experience model: its context window of 1024 tokens is too small/) });
    expect(thrown(() => llmSelectionFromForm({ ...form, llmEmbeddings: true, embeddingModel: 'chat-a' }, catalogue))?.message).toMatch(/is not an embedding model/);
    expect(thrown(() => configFromForm({ ...form, sim: 'gpt' as 'llm' }))).toMatchObject({ field: 'sim' });
    // Nothing can run here (no WebGPU): said plainly, with the way out.
    const none = ['WebGPU is not available'];
    const blocked = [model('chat-a', { usable: false, reasons: none }), model('chat-b', { usable: false, reasons: [...none, 'needs shader-f16, which this GPU does not offer'] })];
    expect(thrown(() => llmSelectionFromForm({ ...form, llmModel: '' }, blocked))?.message).toBe('No chat model in the catalogue can run on this device (WebGPU is not available): choose “No download” as the experience model.');
  });
});
