import { describe, expect, it } from 'vitest';
import type { Embedder } from '../src/core/embedding.ts';
import { candidateText, Featurizer, stateText } from '../src/policy/features.ts';
import { HashedEmbedder } from '../src/policy/hashed-embedder.ts';

const results = [
  'Page: results for "cat litter" (page 1 of 5, 50 products)',
  '[B04CY8QBR3] Yopiyo Essential Cat Litter - Orthopedic, Reflective | $28.50',
  '[B0VJGJOTW1] Luhelfi Ultra Cat Litter - Durable | $25.33',
].join('\n');
const item = ['Page: item B04CY8QBR3', 'size: [10 lb] [20 lb] [40 lb] (selected: none)', 'color: [red] [blue] (selected: red)'].join('\n');

describe('state and candidate texts', () => {
  it('state text: instruction, the latest actions, then the observation', () => {
    const text = stateText(
      { instruction: 'buy cat litter', history: [{ action: 'a1' }, { action: 'a2' }, { action: 'a3' }, { action: 'a4' }], observation: { text: 'OBS', actions: [] } },
      { maxHistory: 2 },
    );
    expect(text).toBe('Instruction: buy cat litter\nPrevious actions: a3 | a4\nOBS');
    expect(stateText({ instruction: 'x', observation: { text: 'OBS', actions: [] } })).toBe('Instruction: x\nOBS');
    expect(stateText({ instruction: 'x', history: [{ action: 'a' }], observation: { text: 'O', actions: [] } }, { maxHistory: 0 })).toBe('Instruction: x\nO');
  });

  it('candidate text: the element line an action acts on, without its siblings', () => {
    expect(candidateText(results, 'click[B0VJGJOTW1]')).toBe('click[B0VJGJOTW1]\n[B0VJGJOTW1] Luhelfi Ultra Cat Litter - Durable | $25.33');
    expect(candidateText(item, 'click[20 lb]')).toBe('click[20 lb]\nsize: [20 lb] (selected: none)');
    expect(candidateText(item, 'click[blue]')).toBe('click[blue]\ncolor: [blue] (selected: red)');
    expect(candidateText(item, 'click[buy now]')).toBe('click[buy now]');
    expect(candidateText(results, 'search[]')).toBe('search[]');
  });
});

class CountingEmbedder implements Embedder {
  readonly id = 'counting';
  readonly dim = 8;
  calls: string[][] = [];
  private readonly inner = new HashedEmbedder({ dim: 8 });
  embed(texts: readonly string[]): Promise<Float32Array[]> {
    this.calls.push([...texts]);
    return this.inner.embed(texts);
  }
}

describe('Featurizer', () => {
  it('builds one decision per context with candidates in order, through a cache', async () => {
    const embedder = new CountingEmbedder();
    const f = new Featurizer(embedder, { mode: 'text' });
    const ctx = { instruction: 'buy cat litter', observation: { text: results, actions: ['click[B04CY8QBR3]', 'click[B0VJGJOTW1]'] } };
    const [d] = await f.decisions([ctx], [Float32Array.from([0.5, -0.5])]);
    expect(d?.state).toHaveLength(8);
    expect(d?.candidates).toHaveLength(2);
    expect(Array.from(d?.prior ?? [])).toEqual([0.5, -0.5]);
    const [again] = await f.decisions([ctx, ctx]);
    expect(embedder.calls).toHaveLength(1);
    expect(embedder.calls[0]).toHaveLength(3);
    expect(Array.from(again?.candidates[1] as Float32Array)).toEqual(Array.from(d?.candidates[1] as Float32Array));
    expect(Array.from(d?.candidates[0] as Float32Array)).not.toEqual(Array.from(d?.candidates[1] as Float32Array));
  });

  it('refuses a state without admissible actions', async () => {
    const f = new Featurizer(new HashedEmbedder({ dim: 8 }));
    await expect(f.decisions([{ instruction: 'x', observation: { text: 'dead end', actions: [] } }])).rejects.toThrow(/without admissible actions/);
    expect(() => new Featurizer(new HashedEmbedder({ dim: 8 }), { cacheSize: -1 })).toThrow(/got -1/);
  });
});
