/**
 * The setup form's values and how they become a training configuration: defaults < preset <
 * the advanced fields a person filled in (a blank field keeps the preset's value); and, when the
 * experience model is a local LLM, which models to load (checked against the device's catalogue).
 */
import { ENV_NAMES, type EnvName } from '../../core/types.ts';
import { GROUNDING_MODES, MAX_RECORDED, parseTrainingConfig, PRESETS, TRAINING_MODES, type PresetName, type TrainingConfig, type TrainingConfigInput, type TrainingMode } from '../../train/config.ts';
import { SELECTION_CRITERIA } from '../../train/selection.ts';
import type { LLMSelection, ModelView } from '../state/llm-state.ts';

/**
 * The advanced fields: each a whole number from `min` to `max`, blank for the preset's value. The
 * maxima are the `dreamgym train` options' bounds (src/cli/train.ts; extra tasks, which the CLI
 * does not take, that of the offline episodes), so that a typo of a few digits is refused rather
 * than left seeding or iterating for days.
 */
export const ADVANCED_FIELDS = [
  { key: 'iterations', label: 'RL iterations', min: 0, max: 1_000_000_000 },
  { key: 'tasksPerIteration', label: 'Tasks per iteration (B)', min: 1, max: 100_000 },
  { key: 'groupSize', label: 'Rollouts per task (G)', min: 2, max: 10_000 },
  { key: 'maxSteps', label: 'Steps per episode (0: the environment’s)', min: 0, max: 100_000 },
  { key: 'expertEpisodes', label: 'Offline demonstrations', min: 1, max: 1_000_000 },
  { key: 'noisyEpisodes', label: 'Offline noisy episodes', min: 0, max: 1_000_000 },
  { key: 'extraTasks', label: 'Extra seed tasks without episodes', min: 0, max: 1_000_000 },
  // A user's log instead of the demonstrations above (see `offline.recorded`).
  { key: 'recorded', label: 'Recorded episodes of mixed quality, instead of demonstrations (0: none)', min: 0, max: MAX_RECORDED },
  { key: 'sftEpochs', label: 'Behaviour-cloning epochs', min: 1, max: 100_000 },
  { key: 'evalEpisodes', label: 'Held-out evaluation tasks', min: 1, max: 100_000 },
  { key: 'validationTasks', label: 'Simulator validation tasks (0: none)', min: 0, max: 100_000 },
  { key: 'validationEvery', label: 'Synthetic iterations between validations (0: start and end only)', min: 0, max: 100_000 },
] as const;

export type AdvancedField = (typeof ADVANCED_FIELDS)[number]['key'];

/**
 * The advanced menus: what the simulator does where its data is thin (`grounding`) and what picks
 * the policy a synthetic phase keeps (`validation.criterion`). Blank: the configuration's default,
 * which depends on the rest of the form (a recorded log grounds `auto`, a cloned start selects by
 * `recorded`); see `grounding` and `validation.criterion` in src/train/config.ts.
 */
export const ADVANCED_CHOICES = [
  {
    key: 'grounding',
    label: 'Simulator grounding',
    options: GROUNDING_MODES,
    describe: { calibrated: 'calibrated: halt where the data is thin', auto: 'auto: grounded only where it is mostly wrong', off: 'off: answer every step' },
  },
  {
    key: 'validationCriterion',
    label: 'What picks the policy a synthetic phase keeps',
    options: SELECTION_CRITERIA,
    describe: { recorded: 'recorded: following held-out recorded successes', simulator: 'simulator: success inside the simulator' },
  },
] as const;

export type AdvancedChoice = (typeof ADVANCED_CHOICES)[number]['key'];

/**
 * The GPU memory the local models may use, MB, in place of the page's estimate (which sees at
 * most the 8 GiB Chrome reports of the machine's memory). From a small GPU's 256 MB to 256 GiB.
 */
export const VRAM_BUDGET_FIELD = { key: 'vramBudgetMB', label: 'GPU memory for local models, MB', min: 256, max: 262_144 } as const;

/** What the setup form holds (text fields as typed). */
export interface SetupForm {
  env: EnvName;
  mode: TrainingMode;
  preset: PresetName;
  /** Behaviour cloning before RL (real, dreamgym and s2r only). */
  warmStart: boolean;
  seed: string;
  advanced: Partial<Record<AdvancedField, string>>;
  /** The experience model: retrieval (no download) or a local LLM. */
  sim: 'retrieval' | 'llm';
  /** The LLM's chat model id ('' until one is chosen). */
  llmModel: string;
  /** The policy prior from the LLM's log-probabilities (`prior: 'llm'`). */
  llmPrior: boolean;
  /** The policy's features from WebLLM's embedding model (else the hashed embedder). */
  llmEmbeddings: boolean;
  /** The embedding model id ('' until one is chosen). */
  embeddingModel: string;
  /** {@link VRAM_BUDGET_FIELD} as typed ('' for the device's estimate). */
  vramBudgetMB: string;
  /** {@link ADVANCED_CHOICES} as chosen; absent or '' for the configuration's default. */
  choices?: Partial<Record<AdvancedChoice, string>>;
}

/**
 * The form as a page shows it first: dreamgym warm-started from behaviour cloning, the setting
 * that learns most offline in a quick run (from scratch shop learns, household barely; see
 * BENCHMARKS.md, "training").
 */
export function defaultSetupForm(): SetupForm {
  return { env: ENV_NAMES[0], mode: 'dreamgym', preset: 'quick', warmStart: true, seed: '0', advanced: {}, sim: 'retrieval', llmModel: '', llmPrior: false, llmEmbeddings: false, embeddingModel: '', vramBudgetMB: '' };
}

/** Thrown for a form value that is not acceptable; `field` names the input. */
export class SetupFormError extends Error {
  override name = 'SetupFormError';
  constructor(
    readonly field: string,
    message: string,
  ) {
    super(message);
  }
}

/** Whether `mode` trains with RL (and so may be warm-started). */
export function isRlMode(mode: TrainingMode): boolean {
  return mode === 'real' || mode === 'dreamgym' || mode === 's2r';
}

/**
 * The value a blank advanced field stands for under `preset` in `env` (environments may adjust a
 * preset) with the experience model `sim` (validation runs by default with retrieval only) and
 * `recorded` episodes (a recorded log validates nothing by default).
 */
export function presetValue(preset: PresetName, key: AdvancedField, env: string = ENV_NAMES[0], sim: SetupForm['sim'] = 'retrieval', recorded = 0): number {
  const c = parseTrainingConfig({ env, mode: 'dreamgym', sim, offline: { recorded } }, preset);
  switch (key) {
    case 'expertEpisodes':
    case 'noisyEpisodes':
    case 'extraTasks':
    case 'recorded':
      return c.offline[key];
    case 'sftEpochs':
      return c.sft.epochs;
    case 'validationTasks':
      return c.validation.tasks;
    case 'validationEvery':
      return c.validation.every;
    default:
      return c[key];
  }
}

/** The recorded-episodes field as the blank fields' placeholders read it: its count while it is a valid one, else 0. */
export function recordedOf(form: Pick<SetupForm, 'advanced'>): number {
  const t = form.advanced.recorded?.trim() ?? '';
  const n = /^\d+$/.test(t) ? Number(t) : 0;
  return Number.isSafeInteger(n) && n <= MAX_RECORDED ? n : 0;
}

function wholeNumber(field: string, label: string, text: string, min?: number, max?: number): number {
  const t = text.trim();
  const n = /^-?\d+$/.test(t) ? Number(t) : Number.NaN;
  if (max !== undefined && /^\d+$/.test(t) && (!Number.isSafeInteger(n) || n > max)) {
    throw new SetupFormError(field, `${label}: at most ${max.toLocaleString('en-US')}, got ${JSON.stringify(text)}`);
  }
  if (!Number.isSafeInteger(n) || (min !== undefined && n < min)) {
    throw new SetupFormError(field, `${label}: expected a whole number${min !== undefined ? ` of at least ${min}` : ''}, got ${JSON.stringify(text)}`);
  }
  return n;
}

/** The GPU memory budget the form sets, MB, or null (blank: the device's estimate); throws {@link SetupFormError} on `vramBudgetMB`. */
export function vramBudgetFromForm(form: Pick<SetupForm, 'vramBudgetMB'>): number | null {
  const text = form.vramBudgetMB ?? '';
  if (text.trim() === '') return null;
  const { key, label, min, max } = VRAM_BUDGET_FIELD;
  return wholeNumber(key, label, text, min, max);
}

/** The training configuration of a filled-in form; throws {@link SetupFormError} naming the bad field. */
export function configFromForm(form: SetupForm): TrainingConfig {
  if (!ENV_NAMES.includes(form.env)) throw new SetupFormError('env', `unknown environment ${JSON.stringify(form.env)}`);
  if (!TRAINING_MODES.includes(form.mode)) throw new SetupFormError('mode', `unknown mode ${JSON.stringify(form.mode)}`);
  if (!(form.preset in PRESETS)) throw new SetupFormError('preset', `unknown preset ${JSON.stringify(form.preset)}`);
  if (form.sim !== 'retrieval' && form.sim !== 'llm') throw new SetupFormError('sim', `unknown experience model ${JSON.stringify(form.sim)}`);
  const input: TrainingConfigInput = { env: form.env, mode: form.mode, sim: form.sim, seed: wholeNumber('seed', 'Seed', form.seed) };
  if (form.sim === 'llm' && form.llmPrior) input.prior = 'llm';
  if (form.warmStart && isRlMode(form.mode)) input.warmStart = 'sft';
  const offline: NonNullable<TrainingConfigInput['offline']> = {};
  const validation: NonNullable<TrainingConfigInput['validation']> = {};
  for (const { key, label, min, max } of ADVANCED_FIELDS) {
    const text = form.advanced[key];
    if (text === undefined || text.trim() === '') continue;
    const n = wholeNumber(key, label, text, min, max);
    if (key === 'expertEpisodes' || key === 'noisyEpisodes' || key === 'extraTasks' || key === 'recorded') offline[key] = n;
    else if (key === 'sftEpochs') input.sft = { epochs: n };
    else if (key === 'validationTasks') validation.tasks = n;
    else if (key === 'validationEvery') validation.every = n;
    else input[key] = n;
  }
  for (const { key, label, options } of ADVANCED_CHOICES) {
    const value = form.choices?.[key] ?? '';
    if (value === '') continue;
    if (!(options as readonly string[]).includes(value)) throw new SetupFormError(key, `${label}: expected one of ${options.join(', ')} (or the default), got ${JSON.stringify(value)}`);
    if (key === 'grounding') input.grounding = value as (typeof GROUNDING_MODES)[number];
    else validation.criterion = value as (typeof SELECTION_CRITERIA)[number];
  }
  if (Object.keys(offline).length > 0) input.offline = offline;
  if (Object.keys(validation).length > 0) input.validation = validation;
  return parseTrainingConfig(input, form.preset);
}

/**
 * Whether an {@link ADVANCED_CHOICES} menu acts on the run `form` sets up: both concern a
 * synthetic phase (`dreamgym`, `s2r`), and grounding the no-download simulator only.
 */
export function choiceApplies(form: Pick<SetupForm, 'mode' | 'sim'>, key: AdvancedChoice): boolean {
  const synthetic = form.mode === 'dreamgym' || form.mode === 's2r';
  return key === 'grounding' ? synthetic && form.sim === 'retrieval' : synthetic;
}

/** What the blank {@link ADVANCED_CHOICES} menus stand for with the rest of `form` as it is. */
export function choiceDefaults(form: SetupForm): Record<AdvancedChoice, string> {
  const c = configWhileTyping({ ...form, choices: {} });
  return { grounding: c.grounding, validationCriterion: c.validation.criterion };
}

/**
 * The form's configuration or, while a field is being typed (not yet valid), the preset's with the
 * form's mode, warm start and recorded log.
 */
function configWhileTyping(form: SetupForm): TrainingConfig {
  try {
    return configFromForm(form);
  } catch {
    return parseTrainingConfig({ env: form.env, mode: form.mode, offline: { recorded: recordedOf(form) }, ...(form.warmStart && isRlMode(form.mode) ? { warmStart: 'sft' as const } : {}) }, form.preset);
  }
}

/**
 * How many iterations the form's run counts, said as the README says it: a warm start's (or the
 * `sft` mode's) behaviour-cloning epochs are iterations too, before the RL ones. As
 * `plannedIterations` (src/train/loop.ts) counts them, without loading the training loop here.
 */
export function iterationSummary(form: SetupForm): string {
  const c = configWhileTyping(form);
  const sft = c.mode === 'sft' || (c.warmStart === 'sft' && c.mode !== 'zero-shot') ? c.sft.epochs : 0;
  const rl = isRlMode(c.mode) ? c.iterations : 0;
  const real = c.mode === 's2r' ? c.iterations : 0;
  const parts = [
    ...(sft > 0 ? [`${sft} behaviour-cloning epoch${sft === 1 ? '' : 's'}`] : []),
    ...(rl > 0 ? [c.mode === 's2r' ? `${rl} synthetic and up to ${real} real RL iterations` : `${rl} RL iteration${rl === 1 ? '' : 's'}`] : []),
  ];
  const total = sft + rl + real;
  if (parts.length === 0) return 'No training: the policy is evaluated as it starts.';
  return `${parts.join(', then ')}: ${total} iteration${total === 1 ? '' : 's'} in all.`;
}

/** A chosen model of `kind`, checked against the catalogue; throws {@link SetupFormError} on `field`. */
function checkedModel(models: readonly ModelView[], id: string, kind: 'chat' | 'embedding', field: string): string {
  const what = kind === 'chat' ? 'an LLM' : 'an embedding model';
  const ofKind = models.filter((m) => m.kind === kind);
  if (id === '' && !ofKind.some((m) => m.usable)) {
    // Say why nothing runs: the reasons every model of the kind shares (e.g. no WebGPU).
    const shared = (ofKind[0]?.reasons ?? []).filter((r) => ofKind.every((m) => m.reasons.includes(r)));
    throw new SetupFormError(field, `No ${kind} model in the catalogue can run on this device${shared.length ? ` (${shared.join('; ')})` : ''}: choose “No download” as the experience model.`);
  }
  if (id === '') throw new SetupFormError(field, `Choose ${what} to download, or choose “No download” as the experience model.`);
  const model = models.find((m) => m.modelId === id);
  if (!model) throw new SetupFormError(field, `${id} is not in the model catalogue.`);
  if (model.kind !== kind) throw new SetupFormError(field, `${id} is not ${kind === 'chat' ? 'a chat' : 'an embedding'} model.`);
  if (!model.usable) throw new SetupFormError(field, `${id} cannot run on this device: ${model.reasons.join('; ')}. Choose another model, or “No download”.`);
  if (kind === 'chat' && model.experienceModelProblem) throw new SetupFormError(field, `${id} cannot be the experience model: ${model.experienceModelProblem}.`);
  return id;
}

/**
 * The local-LLM models a form asks for, or null when its experience model is retrieval (nothing
 * to download). `models` is the device's catalogue (null while it is being checked). Throws
 * {@link SetupFormError} on `llm-model` or `embedding-model` for a missing, unknown or unusable one.
 */
export function llmSelectionFromForm(form: SetupForm, models: readonly ModelView[] | null): LLMSelection | null {
  if (form.sim !== 'llm') return null;
  if (models === null) throw new SetupFormError('llm-model', 'The model catalogue of this device is still being checked: try again in a moment.');
  const chatModel = checkedModel(models, form.llmModel, 'chat', 'llm-model');
  const embeddingModel = form.llmEmbeddings ? checkedModel(models, form.embeddingModel, 'embedding', 'embedding-model') : null;
  return { chatModel, embeddingModel, ...(form.llmPrior ? { priorLogits: true } : {}) };
}
