/**
 * The model catalogue: which of WebLLM's models can run on this device, and which to use by
 * default. Pure functions over an `AppConfig` and the adapter's facts, so they are unit-tested
 * in Node; the browser-only part (asking WebGPU for those facts) is {@link detectDevice}.
 */
import type { AppConfig, ModelRecord } from './engine.ts';
import { LLMConfigError, LLMUnavailableError } from './errors.ts';

/** What the WebGPU adapter (and the browser) report about the device. */
export interface DeviceFacts {
  /** Whether WebGPU exists and an adapter was found. */
  webgpu: boolean;
  /** Whether the adapter offers the `shader-f16` feature (needed by f16 models). */
  shaderF16: boolean;
  /** A software adapter (e.g. SwiftShader): correct but very slow. */
  isFallbackAdapter: boolean;
  /** `adapter.limits.maxStorageBufferBindingSize`, bytes. */
  maxStorageBufferBindingSize?: number;
  /** `adapter.limits.maxBufferSize`, bytes. */
  maxBufferSize?: number;
  /** `navigator.deviceMemory`, GiB (Chrome rounds it and caps it at 8). */
  deviceMemoryGB?: number;
  /** `adapter.info.vendor`, when reported. */
  vendor?: string;
  /** `adapter.info.architecture`, when reported. */
  architecture?: string;
}

/** Facts of a machine without WebGPU. */
export const NO_WEBGPU: DeviceFacts = { webgpu: false, shaderF16: false, isFallbackAdapter: false };

/** What a model is for. */
export type ModelKind = 'chat' | 'embedding' | 'vision';

/** One model of the catalogue, with whether (and why not) it can run here. */
export interface CatalogueEntry {
  modelId: string;
  kind: ModelKind;
  /** GPU memory WebLLM says the model needs, MB (null when unknown). */
  vramMB: number | null;
  /** Weight quantisation, e.g. `q4f16_1`, `q0f32` (null when the id does not say). */
  quantization: string | null;
  /** Whether the model needs `shader-f16` (declared, or an f16 quantisation). */
  needsShaderF16: boolean;
  /** Context window in tokens, when the record overrides it. */
  contextWindow: number | null;
  /** Parameter count, from the model id (or a known figure), null when unknown. */
  parameters: number | null;
  /** An estimate of the download, MB: parameters times bits per weight (null when either is unknown). */
  downloadMB: number | null;
  /** Whether the model should run on this device. */
  usable: boolean;
  /** Why it should not, in plain words (empty when usable). */
  reasons: string[];
  /** Why its context window is too small for the experience model, in plain words (absent or null when it is not). */
  experienceModelProblem?: string | null;
}

/** Options of the catalogue filter. */
export interface CatalogueOptions {
  /** GPU memory the models may use, MB. Default: {@link estimateVramBudgetMB}. */
  vramBudgetMB?: number;
}

/** Chat model families in order of preference for the defaults (each in its f16 then f32 variant). */
export const DEFAULT_CHAT_PREFERENCES: readonly string[] = [
  'Qwen2.5-1.5B-Instruct-q4f16_1-MLC',
  'Qwen2.5-1.5B-Instruct-q4f32_1-MLC',
  'Llama-3.2-1B-Instruct-q4f16_1-MLC',
  'Llama-3.2-1B-Instruct-q4f32_1-MLC',
  'Qwen2.5-0.5B-Instruct-q4f16_1-MLC',
  'Qwen2.5-0.5B-Instruct-q4f32_1-MLC',
  'SmolLM2-360M-Instruct-q4f16_1-MLC',
  'SmolLM2-360M-Instruct-q4f32_1-MLC',
  'SmolLM2-135M-Instruct-q0f32-MLC',
];

/** Embedding models in order of preference for the default (snowflake-arctic-embed-s). */
export const DEFAULT_EMBEDDING_PREFERENCES: readonly string[] = [
  'snowflake-arctic-embed-s-q0f32-MLC-b32',
  'snowflake-arctic-embed-s-q0f32-MLC-b4',
];

/** WebLLM's `ModelType` values (its enum is not imported so that this module stays type-only). */
const MODEL_TYPE_EMBEDDING = 1;
const MODEL_TYPE_VLM = 2;

/** The weight quantisation named in a model id (`q4f16_1`, `q0f32`, `q3f16_1`), or null. */
export function quantizationOf(modelId: string): string | null {
  const m = /(?:^|-)(q\d+f\d+(?:_\d+)?)(?:-|$)/i.exec(modelId);
  return m?.[1]?.toLowerCase() ?? null;
}

/** Parameter counts of catalogue models whose ids do not carry one (published figures). */
const KNOWN_PARAMETERS: readonly (readonly [RegExp, number])[] = [
  [/^snowflake-arctic-embed-s-/i, 33e6],
  [/^snowflake-arctic-embed-m-/i, 109e6],
  [/^Phi-(?:3|3\.5|4)-mini-/i, 3.8e9],
  [/^phi-2-/i, 2.7e9],
  [/^phi-1_5-/i, 1.3e9],
];

/**
 * The parameter count a model id names (`Qwen2.5-1.5B-…` → 1.5e9, `SmolLM2-135M-…` → 1.35e8; a
 * rounded figure: `Llama-3.2-1B` has 1.24e9),
 * or a known figure for a few ids that name none; null otherwise.
 */
export function parametersOf(modelId: string): number | null {
  // `1_6b` (stablelm) writes the decimal point as an underscore.
  const m = /(?:^|-)(\d+(?:[._]\d+)?)([BM])(?=-|$)/i.exec(modelId);
  if (m?.[1] && m[2]) return Number(m[1].replace('_', '.')) * (m[2].toUpperCase() === 'B' ? 1e9 : 1e6);
  return KNOWN_PARAMETERS.find(([re]) => re.test(modelId))?.[1] ?? null;
}

/**
 * Stored bits per weight of a quantisation: the weight bits, plus for grouped quantisation
 * (`q4f16_1`) one scale of the float width per group of 32 weights; `q0fN` stores plain N-bit
 * floats. Null for an unknown form.
 */
export function bitsPerWeight(quantization: string | null): number | null {
  const m = quantization === null ? null : /^q(\d+)f(\d+)(?:_\d+)?$/i.exec(quantization);
  if (!m?.[1] || !m[2]) return null;
  const bits = Number(m[1]);
  const float = Number(m[2]);
  return bits === 0 ? float : bits + float / 32;
}

/**
 * An estimate of a model's download, MB: parameters × bits per weight (see {@link bitsPerWeight}).
 * WebLLM's model list does not state download sizes, so this is what the page can say before
 * the first download; null when the id names no parameter count or quantisation.
 */
export function estimateDownloadMB(modelId: string): number | null {
  const parameters = parametersOf(modelId);
  const bits = bitsPerWeight(quantizationOf(modelId));
  if (parameters === null || bits === null) return null;
  return Math.round((parameters * bits) / 8 / 1e6);
}

/** Whether a model needs `shader-f16`: it declares the feature, or its weights are f16. */
export function needsShaderF16(record: ModelRecord): boolean {
  if (record.required_features?.includes('shader-f16')) return true;
  const q = quantizationOf(record.model_id);
  return q !== null && /f16/.test(q);
}

/** What a model record is for. */
function modelKind(record: ModelRecord): ModelKind {
  const t = record.model_type as number | undefined;
  if (t === MODEL_TYPE_EMBEDDING) return 'embedding';
  if (t === MODEL_TYPE_VLM) return 'vision';
  return 'chat';
}

/** The largest `navigator.deviceMemory` Chrome reports, GiB. */
const DEVICE_MEMORY_CAP_GB = 8;

/**
 * An estimate of the GPU memory available to models, MB. WebGPU does not report memory, so this
 * is a heuristic: a software adapter gets 1024 MB (keep models tiny, it is CPU-emulated); else
 * half of `navigator.deviceMemory` when known (at least 2048 MB), all 8192 MB at Chrome's cap of
 * 8 GiB; else 4096 MB. Pass
 * `vramBudgetMB` explicitly to override it.
 */
export function estimateVramBudgetMB(facts: DeviceFacts): number {
  if (!facts.webgpu) return 0;
  if (facts.isFallbackAdapter) return 1024;
  // Chrome reports at most 8 GiB: at the cap the machine may have any amount more, so the whole 8 GiB is the estimate.
  if (facts.deviceMemoryGB !== undefined && facts.deviceMemoryGB >= DEVICE_MEMORY_CAP_GB) return DEVICE_MEMORY_CAP_GB * 1024;
  if (facts.deviceMemoryGB !== undefined && facts.deviceMemoryGB > 0) return Math.max(2048, Math.round((facts.deviceMemoryGB * 1024) / 2));
  return 4096;
}

function budgetOf(facts: DeviceFacts, options: CatalogueOptions): number {
  const budget = options.vramBudgetMB ?? estimateVramBudgetMB(facts);
  if (!(Number.isFinite(budget) && budget >= 0)) throw new LLMConfigError(`vramBudgetMB must be a finite number >= 0, got ${budget}`);
  return budget;
}

/** Whether `record` should run on `facts` within `budgetMB`, and why not. */
function judge(record: ModelRecord, facts: DeviceFacts, budgetMB: number): string[] {
  const reasons: string[] = [];
  if (!facts.webgpu) reasons.push('WebGPU is not available');
  if (needsShaderF16(record) && !facts.shaderF16) reasons.push('needs shader-f16, which this GPU does not offer');
  const vram = record.vram_required_MB;
  if (vram !== undefined && vram > budgetMB) reasons.push(`needs ${Math.round(vram)} MB of GPU memory, more than the ${Math.round(budgetMB)} MB available`);
  const buf = record.buffer_size_required_bytes;
  if (buf !== undefined && facts.maxStorageBufferBindingSize !== undefined && buf > facts.maxStorageBufferBindingSize) {
    reasons.push(`needs storage buffers of ${buf} bytes, the GPU allows ${facts.maxStorageBufferBindingSize}`);
  }
  return reasons;
}

/** Tokens of the experience model's reply (its `maxTokens` default). */
const EXPERIENCE_REPLY_TOKENS = 768;
/** Tokens the chat template adds around the messages (role markers, system wrapper), an upper estimate. */
export const CHAT_TEMPLATE_TOKENS = 64;
/** The shortest prompt the experience model can work with, tokens: the system prompt, the task, a state, the action. */
const EXPERIENCE_MIN_PROMPT_TOKENS = 1024;

/**
 * Why a chat model with a `contextWindow`-token window cannot serve as the experience model
 * (null when it can, or when the window is unknown): the window must hold the shortest usable
 * prompt and the reply. WebLLM refuses a longer prompt outright (`ContextWindowSizeExceededError`).
 */
export function experienceModelProblem(contextWindow: number | null, replyTokens: number = EXPERIENCE_REPLY_TOKENS): string | null {
  if (contextWindow === null) return null;
  const needed = EXPERIENCE_MIN_PROMPT_TOKENS + replyTokens + CHAT_TEMPLATE_TOKENS;
  if (contextWindow >= needed) return null;
  return `its context window of ${contextWindow} tokens is too small for the experience model, which needs at least ${needed} (a prompt of about ${EXPERIENCE_MIN_PROMPT_TOKENS} tokens and a reply of up to ${replyTokens}); choose a variant with a larger window`;
}

/** Every model of `appConfig` with whether it can run on `facts`. */
export function describeCatalogue(appConfig: AppConfig, facts: DeviceFacts, options: CatalogueOptions = {}): CatalogueEntry[] {
  const budget = budgetOf(facts, options);
  return appConfig.model_list.map((record) => {
    const reasons = judge(record, facts, budget);
    const kind = modelKind(record);
    return {
      modelId: record.model_id,
      kind,
      vramMB: record.vram_required_MB ?? null,
      quantization: quantizationOf(record.model_id),
      needsShaderF16: needsShaderF16(record),
      contextWindow: record.overrides?.context_window_size ?? null,
      parameters: parametersOf(record.model_id),
      downloadMB: estimateDownloadMB(record.model_id),
      usable: reasons.length === 0,
      reasons,
      experienceModelProblem: kind === 'chat' ? experienceModelProblem(record.overrides?.context_window_size ?? null) : null,
    };
  });
}

/** The usable models of one kind, smallest first. */
export function usableModels(appConfig: AppConfig, facts: DeviceFacts, kind: ModelKind, options: CatalogueOptions = {}): CatalogueEntry[] {
  return describeCatalogue(appConfig, facts, options)
    .filter((e) => e.kind === kind && e.usable)
    .sort((a, b) => (a.vramMB ?? Infinity) - (b.vramMB ?? Infinity) || a.modelId.localeCompare(b.modelId));
}

/** The record of `modelId` in `appConfig`, or an {@link LLMConfigError} naming close matches. */
export function findModel(appConfig: AppConfig, modelId: string): ModelRecord {
  const record = appConfig.model_list.find((r) => r.model_id === modelId);
  if (record) return record;
  const stem = modelId.toLowerCase().split(/[-_]/)[0] ?? '';
  const similar = appConfig.model_list.filter((r) => stem !== '' && r.model_id.toLowerCase().startsWith(stem)).slice(0, 5).map((r) => r.model_id);
  throw new LLMConfigError(
    `Unknown model ${JSON.stringify(modelId)}: it is not in the app config's model list${similar.length ? ` (similar: ${similar.join(', ')})` : ''}`,
  );
}

/** A model choice: `undefined` = the default, `null` = none, or a model id. */
export type ModelChoice = string | null | undefined;

/** The chat and embedding models to load. */
export interface ModelSelection {
  chat: string | null;
  embedding: string | null;
  /** Notes about the choice (e.g. a requested model that may not fit), in plain words. */
  warnings: string[];
}

/**
 * Resolves the models to load. A requested model must exist; a requested f16 model on a GPU
 * without `shader-f16` is refused at once with reason `no-shader-f16`; a requested model over the
 * memory budget is kept with a warning (the budget is an estimate). A default is the first
 * preferred model that fits; if none fits the error says so (`out-of-memory`).
 */
export function selectModels(
  appConfig: AppConfig,
  facts: DeviceFacts,
  request: { chat?: ModelChoice; embedding?: ModelChoice },
  options: CatalogueOptions = {},
): ModelSelection {
  if (!facts.webgpu) {
    throw new LLMUnavailableError(
      'no-webgpu',
      'WebGPU is not available in this browser, so no local LLM can run. Use a browser with WebGPU enabled (recent Chrome or Edge), or the retrieval experience model, which needs no GPU.',
    );
  }
  const budget = budgetOf(facts, options);
  const warnings: string[] = [];
  const pick = (choice: ModelChoice, kind: 'chat' | 'embedding', preferences: readonly string[]): string | null => {
    if (choice === null) return null;
    if (choice !== undefined) {
      if (typeof choice !== 'string' || choice.trim() === '') throw new LLMConfigError(`${kind} model must be a model id, null or undefined, got ${JSON.stringify(choice)}`);
      const record = findModel(appConfig, choice);
      const kindOf = modelKind(record);
      if (kindOf !== kind && !(kind === 'chat' && kindOf === 'vision')) {
        throw new LLMConfigError(`Model ${choice} is ${kindOf === 'embedding' ? 'an embedding' : 'a ' + kindOf} model and cannot be the ${kind} model`);
      }
      if (needsShaderF16(record) && !facts.shaderF16) {
        const alt = appConfig.model_list.find((r) => r.model_id === choice.replace(/q(\d)f16(_\d)?/i, (_m, bits: string) => `q${bits}f32${bits === '0' ? '' : '_1'}`));
        throw new LLMUnavailableError(
          'no-shader-f16',
          `Model ${choice} needs the WebGPU feature shader-f16, which this GPU or browser does not offer.${alt ? ` Use ${alt.model_id} instead.` : ' Choose a q4f32 or q0f32 model instead.'}`,
          { modelId: choice },
        );
      }
      const vram = record.vram_required_MB;
      if (vram !== undefined && vram > budget) warnings.push(`${choice} needs about ${Math.round(vram)} MB of GPU memory; the estimate for this device is ${Math.round(budget)} MB, so loading may run out of memory.`);
      return choice;
    }
    const usable = new Set(usableModels(appConfig, facts, kind, { vramBudgetMB: budget }).map((e) => e.modelId));
    const preferred = preferences.find((id) => usable.has(id));
    if (preferred !== undefined) return preferred;
    const smallest = usableModels(appConfig, facts, kind, { vramBudgetMB: budget })[0];
    if (smallest) return smallest.modelId;
    throw new LLMUnavailableError('out-of-memory', `No ${kind} model in the catalogue fits this device (about ${Math.round(budget)} MB of GPU memory${facts.shaderF16 ? '' : ', no shader-f16'}). Pass vramBudgetMB to override the estimate, or use the retrieval experience model.`);
  };
  const chat = pick(request.chat, 'chat', DEFAULT_CHAT_PREFERENCES);
  const embedding = pick(request.embedding, 'embedding', DEFAULT_EMBEDDING_PREFERENCES);
  if (chat !== null && embedding !== null) {
    const total = (findModel(appConfig, chat).vram_required_MB ?? 0) + (findModel(appConfig, embedding).vram_required_MB ?? 0);
    if (total > budget) warnings.push(`${chat} and ${embedding} together need about ${Math.round(total)} MB of GPU memory; the estimate for this device is ${Math.round(budget)} MB.`);
  }
  return { chat, embedding, warnings };
}

/** The embedding batch size encoded in a WebLLM embedding model id (`...-b32` → 32), or null. */
export function embeddingBatchOf(modelId: string): number | null {
  const m = /-b(\d+)$/.exec(modelId);
  return m ? Number(m[1]) : null;
}
