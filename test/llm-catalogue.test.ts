import { prebuiltAppConfig } from '@mlc-ai/web-llm';
import { describe, expect, it } from 'vitest';
import {
  DEFAULT_EMBEDDING_PREFERENCES,
  type DeviceFacts,
  NO_WEBGPU,
  describeCatalogue,
  experienceModelProblem,
  bitsPerWeight,
  embeddingBatchOf,
  estimateDownloadMB,
  estimateVramBudgetMB,
  findModel,
  needsShaderF16,
  parametersOf,
  quantizationOf,
  selectModels,
  usableModels,
} from '../src/llm/catalogue.ts';
import type { AppConfig } from '../src/llm/engine.ts';
import { LLMConfigError, LLMUnavailableError } from '../src/llm/errors.ts';

/** Headless Chromium's SwiftShader adapter, as measured on these machines. */
const swiftShader: DeviceFacts = { webgpu: true, shaderF16: false, isFallbackAdapter: true, maxStorageBufferBindingSize: 1 << 30 };
/** A discrete GPU with f16 and 16 GiB of system memory reported. */
const gpu: DeviceFacts = { webgpu: true, shaderF16: true, isFallbackAdapter: false, deviceMemoryGB: 16, maxStorageBufferBindingSize: 2 ** 31 };

const tiny: AppConfig = {
  model_list: [
    { model: 'https://example.invalid/a', model_id: 'Tiny-q4f16_1-MLC', model_lib: 'x', vram_required_MB: 500 },
    { model: 'https://example.invalid/b', model_id: 'Tiny-q4f32_1-MLC', model_lib: 'x', vram_required_MB: 700 },
    { model: 'https://example.invalid/c', model_id: 'Big-q4f32_1-MLC', model_lib: 'x', vram_required_MB: 9000 },
    { model: 'https://example.invalid/d', model_id: 'Decl-q4f32_1-MLC', model_lib: 'x', vram_required_MB: 100, required_features: ['shader-f16'] },
    { model: 'https://example.invalid/e', model_id: 'emb-q0f32-MLC-b4', model_lib: 'x', vram_required_MB: 200, model_type: 1 },
  ],
};

describe('model facts', () => {
  it('reads quantisation and f16 needs from ids and features', () => {
    expect(quantizationOf('Llama-3.2-1B-Instruct-q4f16_1-MLC')).toBe('q4f16_1');
    expect(quantizationOf('SmolLM2-360M-Instruct-q0f32-MLC')).toBe('q0f32');
    expect(quantizationOf('snowflake-arctic-embed-s-q0f32-MLC-b4')).toBe('q0f32');
    expect(quantizationOf('no-quant-here')).toBeNull();
    expect(needsShaderF16(findModel(tiny, 'Tiny-q4f16_1-MLC'))).toBe(true);
    expect(needsShaderF16(findModel(tiny, 'Tiny-q4f32_1-MLC'))).toBe(false);
    expect(needsShaderF16(findModel(tiny, 'Decl-q4f32_1-MLC'))).toBe(true);
    expect(embeddingBatchOf('snowflake-arctic-embed-s-q0f32-MLC-b32')).toBe(32);
    expect(embeddingBatchOf('Tiny-q4f32_1-MLC')).toBeNull();
  });

  it('estimates a memory budget from the device', () => {
    expect(estimateVramBudgetMB(NO_WEBGPU)).toBe(0);
    expect(estimateVramBudgetMB(swiftShader)).toBe(1024);
    expect(estimateVramBudgetMB(gpu)).toBe(8192);
    expect(estimateVramBudgetMB({ webgpu: true, shaderF16: true, isFallbackAdapter: false })).toBe(4096);
    expect(estimateVramBudgetMB({ webgpu: true, shaderF16: true, isFallbackAdapter: false, deviceMemoryGB: 2 })).toBe(2048);
    expect(estimateVramBudgetMB({ webgpu: true, shaderF16: true, isFallbackAdapter: false, deviceMemoryGB: 4 })).toBe(2048);
    // Chrome caps deviceMemory at 8: a machine that reports 8 may have 64 GB, so 5-8 GB models stay offered.
    const capped: DeviceFacts = { webgpu: true, shaderF16: true, isFallbackAdapter: false, deviceMemoryGB: 8 };
    expect(estimateVramBudgetMB(capped)).toBe(8192);
    const big = describeCatalogue(prebuiltAppConfig, capped).filter((e) => e.kind === 'chat' && (e.vramMB ?? 0) > 5000 && (e.vramMB ?? 0) <= 8192);
    expect(big.length).toBeGreaterThan(0);
    expect(big.every((e) => e.usable)).toBe(true);
  });

  it('names an unknown model and similar ones', () => {
    expect(() => findModel(prebuiltAppConfig, 'Llama-9')).toThrow(LLMConfigError);
    expect(() => findModel(prebuiltAppConfig, 'Llama-9')).toThrow(/Unknown model "Llama-9".*similar: Llama-/);
  });
});

describe('model sizes', () => {
  it('reads parameter counts from ids, and a few known ones', () => {
    expect(parametersOf('Qwen2.5-1.5B-Instruct-q4f16_1-MLC')).toBe(1.5e9);
    expect(parametersOf('SmolLM2-135M-Instruct-q0f32-MLC')).toBe(135e6);
    expect(parametersOf('gemma-2-2b-it-q4f32_1-MLC')).toBe(2e9);
    expect(parametersOf('stablelm-2-zephyr-1_6b-q4f16_1-MLC')).toBeCloseTo(1.6e9);
    // A version number is not a parameter count.
    expect(parametersOf('Llama-3.2-1B-Instruct-q4f32_1-MLC')).toBe(1e9);
    expect(parametersOf('Phi-3-mini-4k-instruct-q4f16_1-MLC')).toBe(3.8e9);
    expect(parametersOf('snowflake-arctic-embed-s-q0f32-MLC-b4')).toBe(33e6);
    expect(parametersOf('Mystery-Model-q4f16_1-MLC')).toBeNull();
  });

  it('estimates downloads from parameters and bits per weight', () => {
    expect(bitsPerWeight('q4f16_1')).toBe(4.5);
    expect(bitsPerWeight('q4f32_1')).toBe(5);
    expect(bitsPerWeight('q0f32')).toBe(32);
    expect(bitsPerWeight('q0f16')).toBe(16);
    expect(bitsPerWeight(null)).toBeNull();
    expect(bitsPerWeight('int8')).toBeNull();
    expect(estimateDownloadMB('SmolLM2-135M-Instruct-q0f32-MLC')).toBe(540);
    expect(estimateDownloadMB('Qwen2.5-0.5B-Instruct-q4f16_1-MLC')).toBe(281);
    expect(estimateDownloadMB('Mystery-Model-q4f16_1-MLC')).toBeNull();
    expect(estimateDownloadMB('SmolLM2-135M-Instruct')).toBeNull();
    const entry = describeCatalogue(prebuiltAppConfig, swiftShader).find((e) => e.modelId === 'SmolLM2-360M-Instruct-q4f32_1-MLC');
    expect(entry).toMatchObject({ parameters: 360e6, downloadMB: 225 });
    // Every prebuilt chat model's download estimate is below its GPU memory need (weights plus KV cache and activations).
    for (const e of describeCatalogue(prebuiltAppConfig, swiftShader)) {
      if (e.downloadMB !== null && e.vramMB !== null && e.kind === 'chat') expect(e.downloadMB, e.modelId).toBeLessThan(e.vramMB);
    }
  });
});

describe('catalogue filter', () => {
  it('drops f16 models without shader-f16 and models over the memory budget', () => {
    const entries = describeCatalogue(tiny, swiftShader);
    const byId = new Map(entries.map((e) => [e.modelId, e]));
    expect(byId.get('Tiny-q4f16_1-MLC')?.usable).toBe(false);
    expect(byId.get('Tiny-q4f16_1-MLC')?.reasons.join()).toMatch(/shader-f16/);
    expect(byId.get('Tiny-q4f32_1-MLC')?.usable).toBe(true);
    expect(byId.get('Big-q4f32_1-MLC')?.reasons.join()).toMatch(/9000 MB.*1024 MB/);
    expect(byId.get('Decl-q4f32_1-MLC')?.usable).toBe(false);
    expect(byId.get('emb-q0f32-MLC-b4')?.kind).toBe('embedding');
    expect(describeCatalogue(tiny, gpu).find((e) => e.modelId === 'Tiny-q4f16_1-MLC')?.usable).toBe(true);
  });

  it('on SwiftShader, every usable prebuilt chat model is an f32 model that fits 1 GiB', () => {
    const chat = usableModels(prebuiltAppConfig, swiftShader, 'chat');
    expect(chat.length).toBeGreaterThan(0);
    for (const e of chat) {
      expect(e.quantization).toMatch(/f32/);
      expect(e.vramMB ?? 0).toBeLessThanOrEqual(1024);
    }
    expect(chat.map((e) => e.vramMB)).toEqual([...chat.map((e) => e.vramMB)].sort((a, b) => (a ?? 0) - (b ?? 0)));
  });

  it('rejects a bad budget loudly', () => {
    expect(() => describeCatalogue(tiny, gpu, { vramBudgetMB: -1 })).toThrow(/vramBudgetMB must be .* got -1/);
  });
});

describe('the experience model and the context window', () => {
  it("marks every prebuilt 1k-context chat model unfit for the experience model, with the reason, and no 4k one", () => {
    const entries = describeCatalogue(prebuiltAppConfig, gpu).filter((e) => e.kind === 'chat');
    const small = entries.filter((e) => e.contextWindow !== null && e.contextWindow <= 1024);
    expect(small.length).toBeGreaterThan(0);
    for (const e of small) expect(e.experienceModelProblem).toMatch(new RegExp(`context window of ${e.contextWindow} tokens is too small for the experience model`));
    for (const e of entries.filter((x) => (x.contextWindow ?? 0) >= 4096)) expect(e.experienceModelProblem ?? null).toBeNull();
    expect(experienceModelProblem(null)).toBeNull();
    expect(experienceModelProblem(2048, 1024)).toMatch(/needs at least 2112/);
  });
});

describe('selectModels', () => {
  it('picks small defaults: f32 on SwiftShader, a bigger f16 model on a GPU, arctic-embed-s for embeddings', () => {
    const soft = selectModels(prebuiltAppConfig, swiftShader, {});
    expect(soft.chat).toBe('SmolLM2-360M-Instruct-q4f32_1-MLC');
    expect(DEFAULT_EMBEDDING_PREFERENCES).toContain(soft.embedding);
    const hard = selectModels(prebuiltAppConfig, gpu, {});
    expect(hard.chat).toBe('Qwen2.5-1.5B-Instruct-q4f16_1-MLC');
    expect(hard.embedding).toBe('snowflake-arctic-embed-s-q0f32-MLC-b32');
    expect(hard.warnings).toEqual([]);
  });

  it('honours explicit choices and null', () => {
    const s = selectModels(prebuiltAppConfig, gpu, { chat: 'Llama-3.2-1B-Instruct-q4f16_1-MLC', embedding: null });
    expect(s).toEqual({ chat: 'Llama-3.2-1B-Instruct-q4f16_1-MLC', embedding: null, warnings: [] });
  });

  it('refuses an f16 model without shader-f16 at once, naming the f32 variant', () => {
    let error: unknown;
    try {
      selectModels(prebuiltAppConfig, swiftShader, { chat: 'Llama-3.2-1B-Instruct-q4f16_1-MLC' });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(LLMUnavailableError);
    expect((error as LLMUnavailableError).reason).toBe('no-shader-f16');
    expect((error as LLMUnavailableError).message).toContain('Llama-3.2-1B-Instruct-q4f32_1-MLC');
  });

  it('warns (but loads) when a requested model may not fit', () => {
    const s = selectModels(tiny, swiftShader, { chat: 'Big-q4f32_1-MLC', embedding: null });
    expect(s.chat).toBe('Big-q4f32_1-MLC');
    expect(s.warnings.join()).toMatch(/9000 MB/);
  });

  it('fails with plain-words typed errors', () => {
    expect(() => selectModels(tiny, NO_WEBGPU, {})).toThrow(expect.objectContaining({ reason: 'no-webgpu' }));
    expect(() => selectModels(tiny, swiftShader, {}, { vramBudgetMB: 10 })).toThrow(expect.objectContaining({ reason: 'out-of-memory' }));
    expect(() => selectModels(tiny, gpu, { chat: 'nope' })).toThrow(LLMConfigError);
    expect(() => selectModels(tiny, gpu, { chat: 'emb-q0f32-MLC-b4' })).toThrow(/is an embedding model and cannot be the chat model/);
    expect(() => selectModels(tiny, gpu, { embedding: 'Tiny-q4f32_1-MLC' })).toThrow(/cannot be the embedding model/);
    expect(() => selectModels(tiny, gpu, { chat: '' })).toThrow(/got ""/);
  });
});
