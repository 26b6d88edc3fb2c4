/** How the setup panel words the catalogue (src/ui/llm/models.ts): facts, option texts, order, the first offer, the device. */
import { describe, expect, it } from 'vitest';
import { defaultModel, deviceSummary, formatMB, formatParameters, loadTimingsText, modelFacts, modelOptionText, modelsOfKind } from '../src/ui/llm/models.ts';
import type { ModelView } from '../src/ui/state/llm-state.ts';

const model = (modelId: string, patch: Partial<ModelView> = {}): ModelView => ({
  modelId, kind: 'chat', vramMB: 1060.2, quantization: 'q4f32_1', needsShaderF16: false, contextWindow: null, parameters: 5e8, downloadMB: 313, usable: true, reasons: [], cached: false, ...patch,
});

describe('catalogue wording', () => {
  it('formats sizes', () => {
    expect(formatMB(313)).toBe('313 MB');
    expect(formatMB(1060.2)).toBe('1.1 GB');
    expect(formatParameters(1.5e9)).toBe('1.5B');
    expect(formatParameters(7e9)).toBe('7B');
    expect(formatParameters(135e6)).toBe('135M');
  });

  it('says each model’s size, download and cache state, and why it cannot run', () => {
    expect(modelFacts(model('Qwen2.5-0.5B-Instruct-q4f32_1-MLC'))).toBe('500M parameters, 1.1 GB GPU memory, download about 313 MB');
    expect(modelFacts(model('x', { cached: true }))).toBe('500M parameters, 1.1 GB GPU memory, cached, no download');
    expect(modelFacts(model('x', { parameters: null, downloadMB: null, vramMB: null }))).toBe('GPU memory unknown, download size unknown');
    const blocked = model('Big-q4f16_1-MLC', { usable: false, reasons: ['needs shader-f16, which this GPU does not offer', 'needs 9000 MB of GPU memory'] });
    expect(modelOptionText(blocked)).toBe('Big-q4f16_1-MLC (500M parameters, 1.1 GB GPU memory, download about 313 MB): cannot run here, needs shader-f16, which this GPU does not offer; needs 9000 MB of GPU memory');
    expect(modelOptionText(model('ok'))).not.toMatch(/cannot run/);
  });

  it('lists usable models first, smallest first', () => {
    const list = modelsOfKind([model('c', { vramMB: 50, usable: false }), model('b', { vramMB: 900 }), model('a', { vramMB: 300 }), model('e', { kind: 'embedding' })], 'chat');
    expect(list.map((m) => m.modelId)).toEqual(['a', 'b', 'c']);
  });

  it('offers a cached model first, then the preferred one, then the smallest; none when nothing runs', () => {
    const preferred = model('Qwen2.5-0.5B-Instruct-q4f32_1-MLC', { vramMB: 1000 });
    const small = model('Tiny-q4f32_1-MLC', { vramMB: 100 });
    expect(defaultModel([small, preferred], 'chat')).toBe('Qwen2.5-0.5B-Instruct-q4f32_1-MLC');
    expect(defaultModel([small, model('Other-q4f32_1-MLC', { vramMB: 500 })], 'chat')).toBe('Tiny-q4f32_1-MLC');
    expect(defaultModel([small, preferred, model('Cached-q4f32_1-MLC', { vramMB: 800, cached: true })], 'chat')).toBe('Cached-q4f32_1-MLC');
    // A cached model that cannot run here is not offered.
    expect(defaultModel([small, model('CachedBig', { cached: true, usable: false })], 'chat')).toBe('Tiny-q4f32_1-MLC');
    expect(defaultModel([model('x', { usable: false })], 'chat')).toBe('');
    expect(defaultModel([model('snowflake-arctic-embed-m-q0f32-MLC-b4', { kind: 'embedding', vramMB: 500 }), model('snowflake-arctic-embed-s-q0f32-MLC-b4', { kind: 'embedding', vramMB: 900 })], 'embedding')).toBe('snowflake-arctic-embed-s-q0f32-MLC-b4');
  });

  it('describes the device', () => {
    expect(deviceSummary({ webgpu: false, shaderF16: false, isFallbackAdapter: false })).toMatch(/no WebGPU.*no-download/);
    expect(deviceSummary({ webgpu: true, shaderF16: false, isFallbackAdapter: true })).toBe('WebGPU adapter (a software fallback: models run, but very slowly), without shader-f16 (only f32 models, q4f32 or q0f32, can run).');
    expect(deviceSummary({ webgpu: true, shaderF16: true, isFallbackAdapter: false, vendor: 'nvidia', architecture: 'ada' })).toBe('WebGPU adapter nvidia ada, with shader-f16 (f16 models can run).');
  });

  it('says where a load spent its time, leaving out phases that took none', () => {
    expect(loadTimingsText({ fetchMs: 9800, cacheLoadMs: 1100, shaderMs: 3000, setupMs: 200, loadMs: 4200, totalMs: 14_200 })).toBe(
      'Loaded in 14.2 s: download 9.8 s, loading from the cache 1.1 s, compiling GPU shaders 3.0 s, setup and the rest 0.3 s.',
    );
    expect(loadTimingsText({ fetchMs: 0, cacheLoadMs: 500, shaderMs: 300, setupMs: 50, loadMs: 850, totalMs: 900 })).toBe('Loaded in 0.9 s: loading from the cache 0.5 s, compiling GPU shaders 0.3 s, setup and the rest 0.1 s.');
  });
});
