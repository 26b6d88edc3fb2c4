import { describe, expect, it } from 'vitest';
import { EmbedderConfigError, fnv1a, HashedEmbedder, tokenize } from '../src/policy/hashed-embedder.ts';

const dot = (a: Float32Array, b: Float32Array): number => a.reduce((s, x, i) => s + x * (b[i] as number), 0);

describe('HashedEmbedder', () => {
  it('is deterministic across instances and calls', async () => {
    const [a] = await new HashedEmbedder({ dim: 64 }).embed(['i need red running shoes, size 9']);
    const [b] = await new HashedEmbedder({ dim: 64 }).embed(['i need red running shoes, size 9']);
    expect(Array.from(a as Float32Array)).toEqual(Array.from(b as Float32Array));
  });

  it('pins its hashing (a changed hash would silently change every stored embedding)', () => {
    const [v] = new HashedEmbedder({ dim: 16 }).embedSync(['click[buy now]']);
    const rounded = Array.from(v as Float32Array, (x) => Math.round(x * 1000) / 1000);
    expect(rounded).toEqual([0, -0.108, 0, 0, -0.542, 0.108, 0, -0.108, 0, 0, -0.651, -0.217, 0, 0.108, 0, 0.434]);
  });

  it('equals hashing each feature string (w:word, b:prev word, cN:n-gram), which it does without building them', () => {
    const reference = (text: string, dim: number, ngrams: number[], [ww, bw, cw]: number[]): number[] => {
      const v = new Float32Array(dim);
      const add = (feature: string, weight: number): void => {
        if (weight === 0) return;
        const i = fnv1a(feature, 0x9e3779b9) % dim;
        v[i] = (v[i] as number) + ((fnv1a(feature, 0x7f4a7c15) & 1) === 0 ? 1 : -1) * weight;
      };
      const words = tokenize(text);
      words.forEach((w, i) => {
        add(`w:${w}`, ww as number);
        if (i > 0) add(`b:${words[i - 1] as string} ${w}`, bw as number);
        for (const n of ngrams) for (let j = 0; j + n <= w.length + 2; j++) add(`c${n}:${`<${w}>`.slice(j, j + n)}`, cw as number);
      });
      const norm = Math.sqrt(v.reduce((s, x) => s + x * x, 0));
      return Array.from(v, (x) => (norm > 0 ? Math.fround(x * (1 / norm)) : 0));
    };
    const texts = ['go to fridge 1', 'Héllo wörld 😀 $12.50', "it's B0XT8BZ2M8 click[buy now]", ''];
    for (const [dim, ngrams, weights] of [[64, [3], [1, 0.5, 0.25]], [97, [2, 4], [0, 0.5, 1]], [32, [1], [1, 0, 0]]] as [number, number[], number[]][]) {
      const e = new HashedEmbedder({ dim, charNgrams: ngrams, wordWeight: weights[0], bigramWeight: weights[1], charWeight: weights[2] });
      e.embedSync(texts).forEach((v, i) => expect(Array.from(v)).toEqual(reference(texts[i] as string, dim, ngrams, weights)));
    }
  });

  it('returns L2-normalised vectors of length dim, and zeros for a text without words', async () => {
    const e = new HashedEmbedder({ dim: 128 });
    const [v, empty] = await e.embed(['Coffee beans, kosher, 12 ounce', ' ,;- ']);
    expect(v).toBeInstanceOf(Float32Array);
    expect(v).toHaveLength(128);
    expect(dot(v as Float32Array, v as Float32Array)).toBeCloseTo(1, 5);
    expect(Array.from(empty as Float32Array).every((x) => x === 0)).toBe(true);
    expect(e.dim).toBe(128);
    expect(e.id).toContain('d128');
  });

  it('puts texts that share words closer than unrelated texts', () => {
    const e = new HashedEmbedder({ dim: 512 });
    const [q, near, far] = e.embedSync(['red running shoes', 'running shoes in red', 'kosher coffee beans']);
    expect(dot(q as Float32Array, near as Float32Array)).toBeGreaterThan(0.5);
    expect(dot(q as Float32Array, far as Float32Array)).toBeLessThan(0.2);
  });

  it('tokenizes words and decimal numbers, lower-cased', () => {
    expect(tokenize('Price: $28.50, Size 7.5 — click[Buy Now]')).toEqual(['price', '28.50', 'size', '7.5', 'click', 'buy', 'now']);
  });

  it('rejects bad settings with the value in the message', () => {
    expect(() => new HashedEmbedder({ dim: 1 })).toThrow(EmbedderConfigError);
    expect(() => new HashedEmbedder({ dim: 2.5 })).toThrow(/2\.5/);
    expect(() => new HashedEmbedder({ charNgrams: [0] })).toThrow(/got 0/);
    expect(() => new HashedEmbedder({ bigramWeight: -1 })).toThrow(/bigramWeight.*-1/);
    expect(() => new HashedEmbedder().embedSync([42 as unknown as string])).toThrow(/texts\[0\] is number/);
  });
});
