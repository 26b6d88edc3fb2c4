import { describe, expect, it } from 'vitest';
import type { CreateEmbeddingResponse, EmbeddingCreateParams, EmbeddingEngine } from '../src/llm/engine.ts';
import { LLMConfigError, LLMRequestError } from '../src/llm/errors.ts';
import { WebLLMEmbedder, l2Normalize } from '../src/llm/embedder.ts';
import { ScriptedEngine, toyEmbedding } from './fixtures/scripted-engine.ts';

const MODEL = 'snowflake-arctic-embed-s-q0f32-MLC-b4';

function norm(v: Float32Array): number {
  return Math.sqrt([...v].reduce((s, x) => s + x * x, 0));
}

describe('WebLLMEmbedder', () => {
  it('reads the dimension from the model and returns unit vectors in order', async () => {
    const engine = new ScriptedEngine();
    const e = await WebLLMEmbedder.create(engine, { model: MODEL });
    expect(e.dim).toBe(8);
    expect(e.id).toBe(`webllm:${MODEL}`);
    const texts = ['click[buy now]', 'go to fridge 1', 'click[buy now]'];
    const v = await e.embed(texts);
    expect(v).toHaveLength(3);
    for (const x of v) expect(norm(x)).toBeCloseTo(1, 5);
    expect([...(v[0] as Float32Array)]).toEqual([...(v[2] as Float32Array)]);
    expect([...(v[1] as Float32Array)]).toEqual([...l2Normalize(toyEmbedding('go to fridge 1'))]);
    expect(engine.embeddingRequests.every((r) => r.model === MODEL)).toBe(true);
  });

  it('batches requests', async () => {
    const engine = new ScriptedEngine();
    const e = await WebLLMEmbedder.create(engine, { model: MODEL, batchSize: 4 });
    await e.embed(Array.from({ length: 10 }, (_, i) => `text ${i}`));
    // probe + ceil(10 / 4)
    expect(engine.embeddingRequests.map((r) => (r.input as string[]).length)).toEqual([1, 4, 4, 2]);
    expect(e.requests).toBe(4);
    expect(await e.embed([])).toEqual([]);
  });

  it('cuts long texts, replaces empty ones, and adds the prefix', async () => {
    const engine = new ScriptedEngine();
    const e = await WebLLMEmbedder.create(engine, { model: MODEL, maxChars: 10, prefix: 'q: ' });
    await e.embed(['x'.repeat(50), '']);
    const input = engine.embeddingRequests[1]?.input as string[];
    expect(input[0]).toBe(`q: ${'x'.repeat(7)}`);
    expect(input[1]).toBe('q: ');
    expect(e.id).toContain('prefix=q: ');
  });

  it("shortens its cut when WebLLM refuses a batch with an input over the model's 512 tokens, and keeps it", async () => {
    // A dense tokenizer: 2 characters per token, so the default cut of 1,500 characters is 750 tokens.
    const engine = new ScriptedEngine({ charsPerToken: 2 });
    const embedder = await WebLLMEmbedder.create(engine, { model: 'scripted-model' });
    const vectors = await embedder.embed(['short', 'x'.repeat(3000)]);
    expect(vectors).toHaveLength(2);
    expect(embedder.maxChars).toBeLessThanOrEqual(1024);
    const refused = engine.embeddingRequests.length;
    await embedder.embed(['y'.repeat(3000)]);
    // The learned cut holds: no refusal this time.
    expect(engine.embeddingRequests.length).toBe(refused + 1);
    for (const r of engine.embeddingRequests.slice(-1)) for (const t of r.input as string[]) expect(t.length).toBeLessThanOrEqual(1024);
  });

  it('puts vectors back in input order even when the engine answers out of order', async () => {
    const inner = new ScriptedEngine();
    const shuffled: EmbeddingEngine = {
      embedding: async (r: EmbeddingCreateParams): Promise<CreateEmbeddingResponse> => {
        const res = await inner.embedding(r);
        return { ...res, data: [...res.data].reverse() };
      },
    };
    const e = await WebLLMEmbedder.create(shuffled, { model: MODEL });
    const [a, b] = await e.embed(['alpha', 'beta']);
    expect([...(a as Float32Array)]).toEqual([...l2Normalize(toyEmbedding('alpha'))]);
    expect([...(b as Float32Array)]).toEqual([...l2Normalize(toyEmbedding('beta'))]);
  });

  it('fails with typed errors on bad answers and bad arguments', async () => {
    await expect(WebLLMEmbedder.create(new ScriptedEngine(), { model: '' })).rejects.toThrow(LLMConfigError);
    await expect(WebLLMEmbedder.create(new ScriptedEngine(), { model: MODEL, batchSize: 0 })).rejects.toThrow(/batchSize must be an integer >= 1, got 0/);
    const short: EmbeddingEngine = { embedding: async () => ({ object: 'list', model: MODEL, data: [], usage: { prompt_tokens: 0, total_tokens: 0, extra: { prefill_tokens_per_s: 0 } } }) };
    await expect(WebLLMEmbedder.create(short, { model: MODEL })).rejects.toThrow(LLMRequestError);
    let dim = 8;
    const changing = new ScriptedEngine({ embed: () => new Array(dim).fill(1) });
    const e = await WebLLMEmbedder.create(changing, { model: MODEL });
    dim = 4;
    await expect(e.embed(['x'])).rejects.toThrow(/length 4 .* expected 8/);
    const nan = new ScriptedEngine({ embed: () => [1, Number.NaN] });
    await expect(WebLLMEmbedder.create(nan, { model: MODEL })).rejects.toThrow(/non-finite/);
    await expect(e.embed([3 as unknown as string])).rejects.toThrow(/text 0 is number/);
  });
});
