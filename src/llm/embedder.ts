/**
 * {@link Embedder} on WebLLM's embedding model (snowflake-arctic-embed by default): batched
 * requests, the dimension read from the model, L2-normalised vectors. The hashed n-gram embedder
 * (src/policy/hashed-embedder.ts) remains the offline default.
 */
import type { Embedder } from '../core/embedding.ts';
import { embeddingBatchOf } from './catalogue.ts';
import type { EmbeddingEngine } from './engine.ts';
import { LLMConfigError, LLMRequestError, errorText } from './errors.ts';

/** Settings of a {@link WebLLMEmbedder}. */
export interface WebLLMEmbedderOptions {
  /** Embedding model id (must be loaded in the engine). */
  model: string;
  /** Texts per request (default: 32, or the model's batch size when its id ends in `-bN` and N is larger). */
  batchSize?: number;
  /**
   * Texts are cut to this many characters (default 1500). WebLLM refuses a whole batch when one
   * input exceeds the model's 512 tokens; the cut then shrinks for this and later batches.
   */
  maxChars?: number;
  /** Prepended to every text (e.g. arctic-embed's query prefix for asymmetric search; default none). */
  prefix?: string;
}

/** Text used to read the model's dimension. */
const PROBE_TEXT = 'dimension probe';

/** Scales `v` to unit length (a zero vector stays zero). */
export function l2Normalize(v: ArrayLike<number>): Float32Array {
  let sum = 0;
  for (let i = 0; i < v.length; i++) sum += (v[i] as number) * (v[i] as number);
  const out = new Float32Array(v.length);
  const norm = Math.sqrt(sum);
  if (norm === 0) return out;
  for (let i = 0; i < v.length; i++) out[i] = (v[i] as number) / norm;
  return out;
}

/** An {@link Embedder} on a WebLLM embedding model. Create it with {@link WebLLMEmbedder.create}. */
export class WebLLMEmbedder implements Embedder {
  readonly id: string;
  /** Requests sent so far. */
  requests = 0;

  private constructor(
    private readonly engine: EmbeddingEngine,
    readonly dim: number,
    private readonly options: Required<WebLLMEmbedderOptions>,
  ) {
    this.id = `webllm:${options.model}${options.prefix ? `:prefix=${options.prefix}` : ''}`;
  }

  /** Loads nothing: asks the (already loaded) model for one embedding to learn its dimension. */
  static async create(engine: EmbeddingEngine, options: WebLLMEmbedderOptions): Promise<WebLLMEmbedder> {
    if (typeof options?.model !== 'string' || options.model.trim() === '') throw new LLMConfigError(`WebLLMEmbedder needs a model id, got ${JSON.stringify(options?.model)}`);
    const batchSize = options.batchSize ?? Math.max(32, embeddingBatchOf(options.model) ?? 0);
    const maxChars = options.maxChars ?? 1500;
    if (!(Number.isInteger(batchSize) && batchSize >= 1)) throw new LLMConfigError(`batchSize must be an integer >= 1, got ${batchSize}`);
    if (!(Number.isInteger(maxChars) && maxChars >= 1)) throw new LLMConfigError(`maxChars must be an integer >= 1, got ${maxChars}`);
    const resolved = { model: options.model, batchSize, maxChars, prefix: options.prefix ?? '' };
    const probe = await requestBatch(engine, resolved, [PROBE_TEXT]);
    const dim = probe[0]?.length ?? 0;
    if (dim < 1) throw new LLMRequestError(`embedding model ${options.model} returned an empty vector`);
    const embedder = new WebLLMEmbedder(engine, dim, resolved);
    embedder.requests = 1;
    return embedder;
  }

  /** One batch; when the model refuses it as too long, the cut shrinks to the longest input's 3/4 and the batch goes again. */
  private async requestFitting(batch: readonly string[]): Promise<Float32Array[]> {
    for (;;) {
      try {
        this.requests++;
        return await requestBatch(this.engine, this.options, batch);
      } catch (error) {
        const longest = Math.min(this.options.maxChars, Math.max(...batch.map((t) => this.options.prefix.length + t.length)));
        if (!isEmbeddingTooLong(error) || longest <= MIN_EMBED_CHARS) throw error;
        this.options.maxChars = Math.max(MIN_EMBED_CHARS, Math.floor(longest * 0.75));
      }
    }
  }

  /** The cut in force now, characters (below `maxChars` after the model refused a batch as too long). */
  get maxChars(): number {
    return this.options.maxChars;
  }

  async embed(texts: readonly string[]): Promise<Float32Array[]> {
    if (!Array.isArray(texts)) throw new LLMConfigError(`embed needs an array of strings, got ${typeof texts}`);
    texts.forEach((t, i) => {
      if (typeof t !== 'string') throw new LLMConfigError(`embed: text ${i} is ${typeof t}, not a string`);
    });
    const out: Float32Array[] = [];
    for (let start = 0; start < texts.length; start += this.options.batchSize) {
      const batch = texts.slice(start, start + this.options.batchSize);
      const vectors = await this.requestFitting(batch);
      vectors.forEach((v, i) => {
        if (v.length !== this.dim) throw new LLMRequestError(`embedding model ${this.options.model} returned a vector of length ${v.length} for text ${start + i}, expected ${this.dim}`);
      });
      out.push(...vectors);
    }
    return out;
  }
}

/** Whether `error` is WebLLM's refusal of an embedding input longer than the model's context. */
function isEmbeddingTooLong(error: unknown): boolean {
  return /EmbeddingExceedContextWindowSizeError|only supports up to \d+ context size/i.test(errorText(error));
}

/** Shortest cut tried after refusals, characters. */
const MIN_EMBED_CHARS = 64;

async function requestBatch(engine: EmbeddingEngine, options: Required<WebLLMEmbedderOptions>, texts: readonly string[]): Promise<Float32Array[]> {
  // An empty string is not a valid embedding input; embed a single space instead.
  const input = texts.map((t) => `${options.prefix}${t}`.slice(0, options.maxChars) || ' ');
  const response = await engine.embedding({ input, model: options.model });
  const data = response?.data;
  if (!Array.isArray(data) || data.length !== texts.length) {
    throw new LLMRequestError(`embedding model ${options.model} returned ${Array.isArray(data) ? data.length : 'no'} vectors for ${texts.length} texts`);
  }
  const vectors: Float32Array[] = new Array(texts.length);
  for (const item of data) {
    const index = item.index;
    if (!(Number.isInteger(index) && index >= 0 && index < texts.length) || vectors[index] !== undefined) {
      throw new LLMRequestError(`embedding model ${options.model} returned a bad or repeated index ${index}`);
    }
    if (!item.embedding.every((x) => Number.isFinite(x))) throw new LLMRequestError(`embedding model ${options.model} returned a non-finite value for text ${index}`);
    vectors[index] = l2Normalize(item.embedding);
  }
  return vectors;
}
