/**
 * Reading the logits of single-token labels through WebLLM's `LogitProcessor` hook, for the
 * policy prior: one forward pass scores every candidate action listed as "A. ...", "B. ...".
 *
 * How it works, with public WebLLM API only:
 * - A {@link LabelCaptureProcessor} is registered for the chat model (the registry is handed to
 *   the engine before the model loads). It is idle unless armed, and then passes logits through.
 * - Calibration: the token id of each label is learned once per model by a greedy one-token
 *   request whose EBNF grammar forces exactly that label; `processSampledToken` reports its id.
 *   The same is done for the label after a space (SentencePiece's "▁A"), when one token spells it.
 * - Reading: a one-token request with the candidate list (grammar: one of the labels, bare or
 *   space-prefixed) is sent with the processor armed; on the first `processLogits` call it copies
 *   the raw logits at the label token ids; a label's two spellings are summed. WebLLM applies the grammar mask before the processor, and allowed tokens keep
 *   their raw values, so the copied values are the model's logits for the labels.
 *
 * Requests to an engine must not interleave with an armed read; {@link AsyncLock} serialises
 * them (the worker host routes every chat completion through the same lock).
 */
import type { ChatCompletionMessageParam, ChatEngine, LogitProcessor } from './engine.ts';
import { LLMConfigError, LLMRequestError } from './errors.ts';

/** Labels for candidates: single characters that are single tokens in common tokenizers. */
export const PRIOR_LABELS: readonly string[] = [...'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz'];

/** An EBNF string literal. */
export function ebnfLiteral(text: string): string {
  return `"${text.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n')}"`;
}

/** The EBNF grammar "exactly one of these labels". */
export function labelGrammar(labels: readonly string[]): string {
  if (labels.length === 0) throw new LLMConfigError('labelGrammar needs at least one label, got 0');
  return `root ::= ${labels.map(ebnfLiteral).join(' | ')}`;
}

/** Natural-log softmax of `logits` (finite in, finite out; -Infinity entries stay -Infinity). */
export function logSoftmax(logits: ArrayLike<number>): Float32Array {
  let max = -Infinity;
  for (let i = 0; i < logits.length; i++) max = Math.max(max, logits[i] as number);
  const out = new Float32Array(logits.length);
  if (!Number.isFinite(max)) return out.fill(-Math.log(Math.max(1, logits.length)));
  let sum = 0;
  for (let i = 0; i < logits.length; i++) sum += Math.exp((logits[i] as number) - max);
  const lse = max + Math.log(sum);
  for (let i = 0; i < logits.length; i++) out[i] = (logits[i] as number) - lse;
  return out;
}

/** A FIFO mutex for async work. */
export class AsyncLock {
  private tail: Promise<void> = Promise.resolve();

  /** Runs `fn` after every earlier `run` has settled; resolves or rejects with it. */
  run<T>(fn: () => Promise<T>): Promise<T> {
    const result = this.tail.then(fn);
    this.tail = result.then(
      () => undefined,
      () => undefined,
    );
    return result;
  }

  /** Holds the lock until the returned release function is called. */
  async acquire(): Promise<() => void> {
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const previous = this.tail;
    this.tail = previous.then(() => held);
    await previous;
    return release;
  }
}

type CaptureMode = { kind: 'idle' } | { kind: 'capture'; ids: readonly number[]; values: Float32Array | null } | { kind: 'sampled'; token: number | null };

/** A `LogitProcessor` that copies label logits or records the sampled token when armed; otherwise a no-op. */
export class LabelCaptureProcessor implements LogitProcessor {
  private mode: CaptureMode = { kind: 'idle' };
  /** How many `processLogits` calls it has seen (for tests and diagnostics). */
  calls = 0;

  readonly processLogits = (logits: Float32Array): Float32Array => {
    this.calls++;
    const mode = this.mode;
    if (mode.kind === 'capture' && mode.values === null) {
      const values = new Float32Array(mode.ids.length);
      mode.ids.forEach((id, i) => {
        values[i] = id >= 0 && id < logits.length ? (logits[id] as number) : Number.NaN;
      });
      mode.values = values;
    }
    return logits;
  };

  readonly processSampledToken = (token: number): void => {
    const mode = this.mode;
    if (mode.kind === 'sampled' && mode.token === null) mode.token = token;
  };

  readonly resetState = (): void => {
    // Stateless between requests: arming is per request.
  };

  /** Arms the processor to copy the logits at `ids` on the next forward pass. */
  armCapture(ids: readonly number[]): void {
    this.mode = { kind: 'capture', ids, values: null };
  }

  /** Arms the processor to record the next sampled token. */
  armSampled(): void {
    this.mode = { kind: 'sampled', token: null };
  }

  /** Disarms and returns what was captured (null when nothing was). */
  disarm(): { values: Float32Array | null; token: number | null } {
    const mode = this.mode;
    this.mode = { kind: 'idle' };
    return {
      values: mode.kind === 'capture' ? mode.values : null,
      token: mode.kind === 'sampled' ? mode.token : null,
    };
  }
}

/**
 * The logit processor registry handed to the engine: a {@link LabelCaptureProcessor} for each
 * model named in `captureModels` (set before the model loads; WebLLM reads the registry at load).
 * Models not named get no processor, so their generation pays no CPU copy of the logits.
 */
export class CaptureRegistry extends Map<string, LogitProcessor> {
  private readonly wanted = new Set<string>();
  private readonly processors = new Map<string, LabelCaptureProcessor>();

  /** Names the models that get a processor from now on. */
  setCaptureModels(modelIds: readonly string[]): void {
    this.wanted.clear();
    for (const id of modelIds) this.wanted.add(id);
  }

  override has(modelId: string): boolean {
    return this.wanted.has(modelId);
  }

  override get(modelId: string): LabelCaptureProcessor | undefined {
    if (!this.wanted.has(modelId)) return undefined;
    let p = this.processors.get(modelId);
    if (!p) {
      p = new LabelCaptureProcessor();
      this.processors.set(modelId, p);
    }
    return p;
  }
}

/** What a label-logit read needs: the prompt and the model. */
export interface LabelLogitRequest {
  messages: ChatCompletionMessageParam[];
  /** Model id (required when the engine hosts several models). */
  model?: string;
}

/** Anything that returns the raw logits of single-token labels after a prompt. */
export interface LabelLogitSource {
  /** Raw logits of `labels` (in order) at the first generated position after `request`. */
  labelLogits(request: LabelLogitRequest, labels: readonly string[]): Promise<Float32Array>;
}

/** Thrown when label logits cannot be read (no processor, calibration failed, values missing). */
export class LabelLogitError extends LLMRequestError {
  override name = 'LabelLogitError';
}

/**
 * Reads label logits from an engine whose registry holds a {@link LabelCaptureProcessor} for the
 * model. `processorFor(model)` returns that processor (or undefined when there is none).
 */
export class LabelLogitReader implements LabelLogitSource {
  private readonly tokenIds = new Map<string, number>();
  private readonly spacedIds = new Map<string, number | null>();
  private readonly lock: AsyncLock;

  constructor(
    private readonly engine: ChatEngine,
    private readonly processorFor: (modelId: string) => LabelCaptureProcessor | undefined,
    options: { lock?: AsyncLock } = {},
  ) {
    this.lock = options.lock ?? new AsyncLock();
  }

  /** Token ids learned so far, keyed by `model\u0000label`. */
  get calibrated(): ReadonlyMap<string, number> {
    return this.tokenIds;
  }

  labelLogits(request: LabelLogitRequest, labels: readonly string[]): Promise<Float32Array> {
    return this.lock.run(() => this.readUnlocked(request, labels));
  }

  /** The read without taking the lock (the caller holds it). */
  async readUnlocked(request: LabelLogitRequest, labels: readonly string[]): Promise<Float32Array> {
    if (labels.length === 0) throw new LLMConfigError('labelLogits needs at least one label, got 0');
    if (new Set(labels).size !== labels.length) throw new LLMConfigError(`labelLogits needs distinct labels, got ${JSON.stringify(labels)}`);
    const model = request.model ?? '';
    const processor = this.processorFor(model);
    if (!processor) throw new LabelLogitError(`no logit processor is registered for model ${JSON.stringify(model)}; register one before loading the model, or use the logprobs prior`);
    const ids: number[] = [];
    for (const label of labels) ids.push(await this.tokenId(model, label, processor));
    // SentencePiece tokenizers also spell a label as one space-prefixed token ("▁A"), often the likelier one.
    const spaced: (number | null)[] = [];
    for (const label of labels) spaced.push(await this.spacedTokenId(model, label, processor, ids));
    const all = [...ids, ...spaced.filter((id): id is number => id !== null)];
    if (new Set(all).size !== all.length) throw new LabelLogitError(`labels ${JSON.stringify(labels)} do not map to distinct tokens (${all.join(', ')})`);
    processor.armCapture(all);
    let raw: Float32Array | null;
    try {
      await this.engine.chatCompletion({
        messages: request.messages,
        ...(request.model !== undefined ? { model: request.model } : {}),
        max_tokens: 1,
        temperature: 1,
        top_p: 1,
        response_format: { type: 'grammar', grammar: labelGrammar([...labels, ...labels.filter((_, i) => spaced[i] !== null).map((l) => ` ${l}`)]) },
      });
    } finally {
      raw = processor.disarm().values;
    }
    if (raw === null) throw new LabelLogitError(`the logit processor of ${JSON.stringify(model)} saw no forward pass; is it registered with the engine?`);
    const bad = [...raw].findIndex((v) => !Number.isFinite(v));
    if (bad >= 0) throw new LabelLogitError(`the logit of label ${JSON.stringify(bad < labels.length ? labels[bad] : 'a space-prefixed label')} (token ${all[bad]}) is ${raw[bad]}`);
    // A label's logit is the log of the summed weight of its spellings.
    const values = new Float32Array(labels.length);
    let next = labels.length;
    for (let i = 0; i < labels.length; i++) {
      const a = raw[i] as number;
      if (spaced[i] === null) values[i] = a;
      else {
        const b = raw[next++] as number;
        const m = Math.max(a, b);
        values[i] = m + Math.log(Math.exp(a - m) + Math.exp(b - m));
      }
    }
    return values;
  }

  /**
   * The id of the single token that spells `label` with a leading space, or null when the
   * tokenizer has none (the forced reply then starts with a bare space, or the engine finds no
   * token). Learned once per model and label, greedily, like {@link tokenId}.
   */
  private async spacedTokenId(model: string, label: string, processor: LabelCaptureProcessor, labelIds: readonly number[]): Promise<number | null> {
    const key = `${model}\u0000 ${label}`;
    const known = this.spacedIds.get(key);
    if (known !== undefined) return known;
    processor.armSampled();
    let token: number | null = null;
    let spelled: string | null = null;
    try {
      const completion = await this.engine.chatCompletion({
        messages: [{ role: 'user', content: `Reply with a space and then the single character ${label}` }],
        ...(model !== '' ? { model } : {}),
        max_tokens: 1,
        temperature: 0,
        top_p: 1,
        logprobs: true,
        top_logprobs: 1,
        response_format: { type: 'grammar', grammar: labelGrammar([` ${label}`]) },
      });
      const entry = completion.choices?.[0]?.logprobs?.content?.[0];
      spelled = entry ? (entry.bytes ? new TextDecoder().decode(new Uint8Array(entry.bytes)) : entry.token) : null;
    } catch {
      // No token spells it: the grammar admits nothing in one token.
    } finally {
      token = processor.disarm().token;
    }
    // Decoding one SentencePiece token drops its leading space, so " A" may come back as "A".
    const ok = token !== null && Number.isInteger(token) && token >= 0 && !labelIds.includes(token) && (spelled === ` ${label}` || spelled === label);
    const id = ok ? (token as number) : null;
    this.spacedIds.set(key, id);
    return id;
  }

  private async tokenId(model: string, label: string, processor: LabelCaptureProcessor): Promise<number> {
    const key = `${model}\u0000${label}`;
    const known = this.tokenIds.get(key);
    if (known !== undefined) return known;
    processor.armSampled();
    let token: number | null;
    let completion: Awaited<ReturnType<ChatEngine['chatCompletion']>>;
    try {
      // Greedy: the grammar also admits byte-fallback spellings of the label, which sampling could pick.
      completion = await this.engine.chatCompletion({
        messages: [{ role: 'user', content: `Reply with the single character ${label}` }],
        ...(model !== '' ? { model } : {}),
        max_tokens: 1,
        temperature: 0,
        top_p: 1,
        logprobs: true,
        top_logprobs: 1,
        response_format: { type: 'grammar', grammar: labelGrammar([label]) },
      });
    } finally {
      token = processor.disarm().token;
    }
    if (token === null || !Number.isInteger(token) || token < 0) throw new LabelLogitError(`calibrating label ${JSON.stringify(label)} of ${JSON.stringify(model)} reported no sampled token`);
    // The one token must spell the whole label: a byte-fallback or partial token would be the wrong logit to read.
    const spelled = completion.choices?.[0]?.logprobs?.content?.[0];
    if (spelled) {
      const text = spelled.bytes ? new TextDecoder().decode(new Uint8Array(spelled.bytes)) : spelled.token;
      if (text !== label) throw new LabelLogitError(`calibrating label ${JSON.stringify(label)} of ${JSON.stringify(model)}: the model's token spells ${JSON.stringify(text)} (${JSON.stringify(spelled.token)}), not the label`);
    }
    this.tokenIds.set(key, token);
    return token;
  }
}
