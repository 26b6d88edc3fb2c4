/** The local-LLM view reducer (src/ui/state/llm-state.ts): catalogue, loading with progress, failure, served counts. */
import { describe, expect, it } from 'vitest';
import { initialLLMState, isLLMAction, isLoading, reduceLLM, type LLMAction, type LLMViewState, type ModelView } from '../src/ui/state/llm-state.ts';

const model = (modelId: string, patch: Partial<ModelView> = {}): ModelView => ({
  modelId, kind: 'chat', vramMB: 100, quantization: 'q4f32_1', needsShaderF16: false, contextWindow: null, parameters: 1e8, downloadMB: 60, usable: true, reasons: [], cached: false, ...patch,
});
const device = { webgpu: true, shaderF16: false, isFallbackAdapter: true };
const run = (actions: readonly LLMAction[], from: LLMViewState = initialLLMState()) => actions.reduce(reduceLLM, from);

describe('LLM view reducer', () => {
  it('reads the catalogue once asked', () => {
    expect(initialLLMState().catalogue.status).toBe('unknown');
    expect(run([{ kind: 'llm/checking' }]).catalogue.status).toBe('checking');
    const s = run([{ kind: 'llm/checking' }, { kind: 'llm/catalogue', device, models: [model('a'), model('b', { cached: true })] }]);
    expect(s.catalogue).toMatchObject({ status: 'ready', device });
    expect(run([{ kind: 'llm/catalogue-failed', message: 'no cache' }]).catalogue).toEqual({ status: 'failed', message: 'no cache' });
  });

  it('follows a load from progress to ready, and marks what it loaded as cached', () => {
    const s = run([
      { kind: 'llm/catalogue', device, models: [model('a'), model('e', { kind: 'embedding' }), model('b')] },
      { kind: 'llm/loading', chatModel: 'a', embeddingModel: 'e' },
    ]);
    expect(isLoading(s)).toBe(true);
    expect(s.load).toMatchObject({ status: 'loading', chatModel: 'a', embeddingModel: 'e', progress: 0 });
    const p = run([{ kind: 'llm/progress', progress: 0.4, timeElapsed: 3, text: 'Fetching param cache[3/10]' }], s);
    expect(p.load).toMatchObject({ status: 'loading', progress: 0.4, elapsedS: 3, text: 'Fetching param cache[3/10]' });
    // Progress outside [0, 1] is clamped; a non-number keeps the last.
    expect(run([{ kind: 'llm/progress', progress: 7, timeElapsed: 4, text: 't' }], p).load).toMatchObject({ progress: 1 });
    expect(run([{ kind: 'llm/progress', progress: Number.NaN, timeElapsed: 4, text: 't' }], p).load).toMatchObject({ progress: 0.4 });
    const timings = { fetchMs: 900, cacheLoadMs: 200, shaderMs: 300, setupMs: 50, loadMs: 550, totalMs: 1500 };
    const r = run([{ kind: 'llm/ready', chatModel: 'a', embeddingModel: 'e', labelLogits: true, warnings: ['w'], timings }], p);
    expect(r.load).toEqual({ status: 'ready', chatModel: 'a', embeddingModel: 'e', labelLogits: true, warnings: ['w'], timings });
    expect(run([{ kind: 'llm/ready', chatModel: 'a', embeddingModel: null, labelLogits: false, warnings: [] }], p).load).toMatchObject({ timings: null });
    expect(isLoading(r)).toBe(false);
    const models = r.catalogue.status === 'ready' ? r.catalogue.models : [];
    expect(models.map((m) => [m.modelId, m.cached])).toEqual([['a', true], ['e', true], ['b', false]]);
    expect(run([{ kind: 'llm/unloaded' }], r).load).toEqual({ status: 'idle' });
  });

  it('keeps why a load failed, and ignores progress when nothing loads', () => {
    const f = run([{ kind: 'llm/loading', chatModel: 'a', embeddingModel: null }, { kind: 'llm/failed', reason: 'no-network', message: 'could not be downloaded', chatModel: 'a' }]);
    expect(f.load).toEqual({ status: 'failed', reason: 'no-network', message: 'could not be downloaded', chatModel: 'a' });
    expect(run([{ kind: 'llm/progress', progress: 0.5, timeElapsed: 1, text: 'late' }], f)).toBe(f);
  });

  it('adds up the requests served to the training worker', () => {
    const s = run([
      { kind: 'llm/served', chat: 3, embedding: 1, labelLogits: 2 },
      { kind: 'llm/served', chat: 1, embedding: 0, labelLogits: 0 },
    ]);
    expect(s.served).toEqual({ chat: 4, embedding: 1, labelLogits: 2 });
  });

  it('routes on the llm/ prefix', () => {
    expect(isLLMAction({ kind: 'llm/served' })).toBe(true);
    expect(isLLMAction({ kind: 'failed' })).toBe(false);
    expect(isLLMAction({ kind: 'data/select' })).toBe(false);
  });
});
