/**
 * A deterministic text embedder that needs no download: signed feature hashing of word
 * unigrams, word bigrams and character n-grams, L2-normalised. Two texts that share words
 * share coordinates, so the elementwise product of a state vector and an action vector measures
 * their word overlap, which is what the policy head's interaction term learns from.
 */
import type { Embedder } from '../core/embedding.ts';

/** Settings of a {@link HashedEmbedder}. */
export interface HashedEmbedderOptions {
  /** Length of every vector (a power of two is not required). Default 512. */
  dim?: number;
  /** Character n-gram sizes taken inside each word (with `<` `>` boundary marks). Default [3]. */
  charNgrams?: readonly number[];
  /** Weight of word unigrams. Default 1. */
  wordWeight?: number;
  /** Weight of word bigrams. Default 0.5. */
  bigramWeight?: number;
  /** Weight of character n-grams. Default 0.25. */
  charWeight?: number;
}

/** Thrown for invalid embedder settings. */
export class EmbedderConfigError extends RangeError {
  override name = 'EmbedderConfigError';
}

const INDEX_SEED = 0x9e3779b9;
const SIGN_SEED = 0x7f4a7c15;

/** FNV-1a's state before any character, for a seed. */
const fnvStart = (seed: number): number => (0x811c9dc5 ^ seed) >>> 0;

/** FNV-1a's state after `text[from, to)`, continuing from `h` (so a feature's hash can skip building its string). */
function fnvUpdate(h: number, text: string, from = 0, to = text.length): number {
  for (let i = from; i < to; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h;
}

/** Final avalanche (murmur3 fmix32): FNV's low bits are weak for short keys. */
function fmix32(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

/** FNV-1a 32-bit with a seed, so that the index hash and the sign hash are independent. */
export function fnv1a(text: string, seed: number): number {
  return fmix32(fnvUpdate(fnvStart(seed), text));
}

/** Lower-cased word tokens: runs of letters and digits (keeps `$12.50`-style numbers as `12.50`). */
export function tokenize(text: string): string[] {
  return text.toLowerCase().match(/[\p{L}\p{N}]+(?:[.'][\p{L}\p{N}]+)*/gu) ?? [];
}

/** Deterministic hashed n-gram embedder (no model, no download). Same text, same vector, everywhere. */
export class HashedEmbedder implements Embedder {
  readonly id: string;
  readonly dim: number;
  private readonly charNgrams: readonly number[];
  private readonly wordWeight: number;
  private readonly bigramWeight: number;
  private readonly charWeight: number;
  /** FNV-1a states (index seed, sign seed) after each feature kind's prefix: `w:`, `b:`, and `cN:` per n-gram size N. */
  private readonly prefixStates: { word: readonly [number, number]; bigram: readonly [number, number]; chars: readonly (readonly [number, number, number])[] };

  constructor(options: HashedEmbedderOptions = {}) {
    const dim = options.dim ?? 512;
    if (!Number.isInteger(dim) || dim < 2) throw new EmbedderConfigError(`HashedEmbedder dim must be an integer >= 2, got ${dim}`);
    const charNgrams = options.charNgrams ?? [3];
    for (const n of charNgrams) {
      if (!Number.isInteger(n) || n < 1 || n > 8) throw new EmbedderConfigError(`HashedEmbedder charNgrams must be integers in [1, 8], got ${n}`);
    }
    const weights = {
      wordWeight: options.wordWeight ?? 1,
      bigramWeight: options.bigramWeight ?? 0.5,
      charWeight: options.charWeight ?? 0.25,
    };
    for (const [key, w] of Object.entries(weights)) {
      if (!(Number.isFinite(w) && w >= 0)) throw new EmbedderConfigError(`HashedEmbedder ${key} must be a finite number >= 0, got ${w}`);
    }
    this.dim = dim;
    this.charNgrams = [...charNgrams];
    this.wordWeight = weights.wordWeight;
    this.bigramWeight = weights.bigramWeight;
    this.charWeight = weights.charWeight;
    const after = (prefix: string): readonly [number, number] => [fnvUpdate(fnvStart(INDEX_SEED), prefix), fnvUpdate(fnvStart(SIGN_SEED), prefix)];
    this.prefixStates = { word: after('w:'), bigram: after('b:'), chars: this.charNgrams.map((n) => [n, ...after(`c${n}:`)] as const) };
    this.id = `hashed-v1:d${dim}:c${this.charNgrams.join(',')}:w${this.wordWeight},${this.bigramWeight},${this.charWeight}`;
  }

  /** One L2-normalised vector per text (the zero vector for a text without any word). */
  embed(texts: readonly string[]): Promise<Float32Array[]> {
    return Promise.resolve(this.embedSync(texts));
  }

  /** Synchronous form of {@link embed}, for callers that are not async. */
  embedSync(texts: readonly string[]): Float32Array[] {
    if (!Array.isArray(texts)) throw new TypeError(`HashedEmbedder.embed needs an array of strings, got ${typeof texts}`);
    return texts.map((text, i) => {
      if (typeof text !== 'string') throw new TypeError(`HashedEmbedder.embed: texts[${i}] is ${typeof text}, not a string`);
      return this.embedOne(text);
    });
  }

  /**
   * Adds the feature whose FNV-1a states (index seed, sign seed) are `hi` and `hs` before the
   * final mix; equal to hashing the feature's whole string (`w:word`, `b:prev word`, `c3:<wo`),
   * without building it.
   */
  private addHashed(v: Float32Array, hi: number, hs: number, weight: number): void {
    const index = fmix32(hi) % this.dim;
    const sign = (fmix32(hs) & 1) === 0 ? 1 : -1;
    v[index] = (v[index] ?? 0) + sign * weight;
  }

  private embedOne(text: string): Float32Array {
    const v = new Float32Array(this.dim);
    const words = tokenize(text);
    const { word, bigram, chars } = this.prefixStates;
    for (let i = 0; i < words.length; i++) {
      const w = words[i] as string;
      if (this.wordWeight !== 0) this.addHashed(v, fnvUpdate(word[0], w), fnvUpdate(word[1], w), this.wordWeight);
      if (i > 0 && this.bigramWeight !== 0) {
        const prev = `${words[i - 1] as string} `;
        this.addHashed(v, fnvUpdate(fnvUpdate(bigram[0], prev), w), fnvUpdate(fnvUpdate(bigram[1], prev), w), this.bigramWeight);
      }
      if (this.charWeight === 0) continue;
      const marked = `<${w}>`;
      for (let c = 0; c < chars.length; c++) {
        const [n, ci, cs] = chars[c] as readonly [number, number, number];
        for (let j = 0; j + n <= marked.length; j++) this.addHashed(v, fnvUpdate(ci, marked, j, j + n), fnvUpdate(cs, marked, j, j + n), this.charWeight);
      }
    }
    let norm = 0;
    for (let i = 0; i < v.length; i++) norm += (v[i] as number) ** 2;
    if (norm > 0) {
      const inv = 1 / Math.sqrt(norm);
      for (let i = 0; i < v.length; i++) v[i] = (v[i] as number) * inv;
    }
    return v;
  }
}
