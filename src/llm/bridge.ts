/**
 * The LLM bridge: how the training worker reaches the local LLM that the page loaded.
 *
 * The training loop runs in the training worker; WebLLM's engine runs in the LLM worker, owned
 * by the page's LLM client (./client.ts), which loads the model once, shows its progress,
 * classifies its failures and can be unloaded. The page creates a `MessageChannel` per run,
 * serves one end with {@link serveLLMBridge} over its client and hands the other end to the
 * training worker, where an {@link LLMBridgeClient} is the run's `ChatEngine`,
 * `EmbeddingEngine` and `LabelLogitSource`. Every message is a discriminated union on `kind`
 * and structured-cloneable; errors cross as {@link BridgeErrorData} and are re-created as the
 * typed errors of ./errors.ts on the other side.
 *
 * Requests are served one at a time, in order: the engine runs one generation at a time anyway,
 * and a queue on the page's side lets a cancelled run's requests that have not started be
 * dropped instead of occupying the GPU.
 */
import type { ChatCompletion, ChatCompletionRequestNonStreaming, ChatEngine, CreateEmbeddingResponse, EmbeddingCreateParams, EmbeddingEngine } from './engine.ts';
import { LLM_UNAVAILABLE_REASONS, LLMAbortedError, LLMConfigError, LLMRequestError, LLMServerError, LLMUnavailableError, type LLMServerErrorReason } from './errors.ts';
import { LabelLogitError, type LabelLogitRequest, type LabelLogitSource } from './logits.ts';

/** One call through the bridge. */
export type BridgeCall =
  | { kind: 'chat'; request: ChatCompletionRequestNonStreaming }
  | { kind: 'embedding'; request: EmbeddingCreateParams }
  | { kind: 'label-logits'; request: LabelLogitRequest; labels: string[] };

/** What each call kind resolves to. */
export interface BridgeResults {
  chat: ChatCompletion;
  embedding: CreateEmbeddingResponse;
  'label-logits': Float32Array;
}

/** Messages from the requester (the training worker) to the provider (the page). */
export type BridgeRequest =
  | (BridgeCall & { id: number })
  /** The requester no longer waits for request `id` (its run was aborted): drop it unless it runs. */
  | { kind: 'cancel'; id: number }
  /** The requester is done with the bridge. */
  | { kind: 'close' };

/** An error as it crosses the bridge: its class name, message and typed fields. */
export interface BridgeErrorData {
  name: string;
  message: string;
  /** `LLMUnavailableError.reason` or `LLMServerError.reason`. */
  reason?: string;
  modelId?: string;
  status?: number;
  feature?: string;
  attempts?: number;
}

/** Messages from the provider to the requester. */
export type BridgeReply =
  | { kind: 'result'; id: number; result: BridgeResults[keyof BridgeResults] }
  | { kind: 'error'; id: number; error: BridgeErrorData }
  /** The provider closed the bridge (e.g. the model was unloaded): every request fails with `error`. */
  | { kind: 'closed'; error: BridgeErrorData };

/** The end of a channel the bridge talks through (a `MessagePort`, or a test double). */
export interface BridgeEndpoint {
  postMessage(message: unknown): void;
  onmessage: ((event: MessageEvent) => void) | null;
  start?(): void;
  close(): void;
}

const SERVER_REASONS: readonly LLMServerErrorReason[] = ['unreachable', 'timeout', 'dropped', 'http', 'malformed-reply', 'unsupported'];

/** The cloneable form of any thrown value, keeping the typed errors' fields. */
export function toBridgeError(error: unknown): BridgeErrorData {
  if (!(error instanceof Error)) return { name: 'Error', message: typeof error === 'string' ? error : String(error) };
  const data: BridgeErrorData = { name: error.name, message: error.message };
  if (error instanceof LLMUnavailableError) {
    data.reason = error.reason;
    if (error.modelId !== undefined) data.modelId = error.modelId;
  } else if (error instanceof LLMServerError) {
    data.reason = error.reason;
    data.attempts = error.attempts;
    if (error.status !== undefined) data.status = error.status;
    if (error.feature !== undefined) data.feature = error.feature;
  }
  return data;
}

/**
 * The typed error that `data` describes: the LLM layer's classes are re-created with their
 * fields; anything else (an engine's `TypeError`, say) becomes an {@link LLMRequestError} whose
 * message keeps the original name.
 */
export function fromBridgeError(data: BridgeErrorData): Error {
  const reason = data.reason;
  switch (data.name) {
    case 'LLMUnavailableError':
      if (LLM_UNAVAILABLE_REASONS.includes(reason as LLMUnavailableError['reason'])) {
        return new LLMUnavailableError(reason as LLMUnavailableError['reason'], data.message, data.modelId === undefined ? {} : { modelId: data.modelId });
      }
      break;
    case 'LLMServerError':
      if (SERVER_REASONS.includes(reason as LLMServerErrorReason)) {
        return new LLMServerError(reason as LLMServerErrorReason, data.message, {
          ...(data.status !== undefined ? { status: data.status } : {}),
          ...(data.feature !== undefined ? { feature: data.feature } : {}),
          ...(data.attempts !== undefined ? { attempts: data.attempts } : {}),
        });
      }
      break;
    case 'LLMConfigError':
      return new LLMConfigError(data.message);
    case 'LLMAbortedError':
      return new LLMAbortedError(data.message);
    case 'LabelLogitError':
      return new LabelLogitError(data.message);
    case 'LLMRequestError':
      return new LLMRequestError(data.message);
  }
  return new LLMRequestError(`${data.name}: ${data.message}`);
}

type Pending = { resolve: (value: unknown) => void; reject: (error: Error) => void };

/** Options of {@link LLMBridgeClient}. */
export interface LLMBridgeClientOptions {
  /** Aborting it rejects every pending request with {@link LLMAbortedError} and cancels them at the provider. */
  signal?: AbortSignal;
}

/**
 * The requester's end (the training worker): a `ChatEngine`, `EmbeddingEngine` and
 * `LabelLogitSource` whose calls are answered by the provider's LLM.
 */
export class LLMBridgeClient implements ChatEngine, EmbeddingEngine, LabelLogitSource {
  /** Requests sent, by kind. */
  readonly sent: Record<BridgeCall['kind'], number> = { chat: 0, embedding: 0, 'label-logits': 0 };
  private nextId = 1;
  private readonly pending = new Map<number, Pending>();
  /** Set once the bridge cannot be used any more: every call fails with it. */
  private failure: Error | null = null;
  private readonly signal: AbortSignal | undefined;
  private readonly onAbort = (): void => {
    const why = abortText(this.signal?.reason);
    this.failAll(new LLMAbortedError(`the LLM request was given up: the run was ${why}`), true);
  };

  constructor(
    private readonly port: BridgeEndpoint,
    options: LLMBridgeClientOptions = {},
  ) {
    this.signal = options.signal;
    port.onmessage = (event: MessageEvent<BridgeReply>) => this.receive(event.data);
    port.start?.();
    if (this.signal?.aborted) this.onAbort();
    else this.signal?.addEventListener('abort', this.onAbort, { once: true });
  }

  /** Requests waiting for their reply. */
  get pendingCount(): number {
    return this.pending.size;
  }

  chatCompletion(request: ChatCompletionRequestNonStreaming): Promise<ChatCompletion> {
    return this.call('chat', { kind: 'chat', request });
  }

  embedding(request: EmbeddingCreateParams): Promise<CreateEmbeddingResponse> {
    return this.call('embedding', { kind: 'embedding', request });
  }

  labelLogits(request: LabelLogitRequest, labels: readonly string[]): Promise<Float32Array> {
    return this.call('label-logits', { kind: 'label-logits', request, labels: [...labels] });
  }

  /** Ends the bridge: pending requests reject, the provider drops what it has not started. */
  close(): void {
    if (this.failure === null) {
      this.port.postMessage({ kind: 'close' } satisfies BridgeRequest);
      this.failAll(new LLMAbortedError('the LLM bridge was closed'), false);
    }
    this.signal?.removeEventListener('abort', this.onAbort);
    this.port.onmessage = null;
    this.port.close();
  }

  private call<K extends BridgeCall['kind']>(kind: K, call: Extract<BridgeCall, { kind: K }>): Promise<BridgeResults[K]> {
    if (this.failure) return Promise.reject(this.failure);
    const id = this.nextId++;
    this.sent[kind]++;
    return new Promise<BridgeResults[K]>((resolve, reject) => {
      this.pending.set(id, { resolve: resolve as (value: unknown) => void, reject });
      this.port.postMessage({ ...call, id } satisfies BridgeRequest);
    });
  }

  private receive(reply: BridgeReply): void {
    if (reply.kind === 'closed') {
      this.failAll(fromBridgeError(reply.error), false);
      return;
    }
    const waiter = this.pending.get(reply.id);
    if (!waiter) return;
    this.pending.delete(reply.id);
    if (reply.kind === 'result') waiter.resolve(reply.result);
    else waiter.reject(fromBridgeError(reply.error));
  }

  /** Rejects every pending request with `error` (telling the provider when `cancel`); later calls fail with it too. */
  private failAll(error: Error, cancel: boolean): void {
    this.failure ??= error;
    for (const [id, waiter] of this.pending) {
      if (cancel) this.port.postMessage({ kind: 'cancel', id } satisfies BridgeRequest);
      waiter.reject(error);
    }
    this.pending.clear();
  }
}

function abortText(reason: unknown): string {
  if (reason === 'pause') return 'paused';
  if (reason === 'stop') return 'stopped';
  if (reason instanceof Error) return `aborted (${reason.message})`;
  return reason === undefined ? 'aborted' : `aborted (${String(reason)})`;
}

/** What the provider answers with: the page's LLM client, or any engines. */
export interface BridgeProvider {
  chat?: ChatEngine | null;
  embeddings?: EmbeddingEngine | null;
  labelLogits?: LabelLogitSource | null;
  /**
   * Stops the generation running now (WebLLM's `interruptGenerate`): called when the request
   * that runs is cancelled or the bridge closes under it, so the engine does not keep decoding a
   * reply nobody will read.
   */
  interrupt?: (() => void) | null;
}

/** Requests a provider served, by kind (and those dropped because their requester gave up). */
export interface BridgeServerStats {
  chat: number;
  embedding: number;
  'label-logits': number;
  cancelled: number;
  failed: number;
}

/** Options of {@link serveLLMBridge}. */
export interface ServeLLMBridgeOptions {
  /** Called after each request is answered (or fails), with the stats so far. */
  onServed?: (stats: Readonly<BridgeServerStats>) => void;
  /** Called once when the bridge closes (by either end). */
  onClose?: () => void;
}

/** The provider's end, as {@link serveLLMBridge} returns it. */
export interface LLMBridgeServer {
  readonly stats: Readonly<BridgeServerStats>;
  /** Whether the bridge is closed. */
  readonly closed: boolean;
  /**
   * Closes the bridge. With `error` (e.g. the model was unloaded), the requester's pending and
   * later requests fail with it at once.
   */
  close(error?: Error): void;
}

/**
 * Serves the requests arriving at `port` with `provider`, one at a time in arrival order. A
 * request of a kind the provider lacks (no embedding model loaded, say) fails with an
 * {@link LLMConfigError}; a cancelled request that has not started is dropped; a chat request
 * cancelled while it runs is interrupted and its reply is not sent.
 */
export function serveLLMBridge(port: BridgeEndpoint, provider: BridgeProvider, options: ServeLLMBridgeOptions = {}): LLMBridgeServer {
  const stats: BridgeServerStats = { chat: 0, embedding: 0, 'label-logits': 0, cancelled: 0, failed: 0 };
  const queue: (BridgeCall & { id: number })[] = [];
  let running: number | null = null;
  let runningKind: BridgeCall['kind'] | null = null;
  let runningCancelled = false;
  let closed = false;

  const send = (reply: BridgeReply): void => {
    if (!closed) port.postMessage(reply);
  };

  const execute = (call: BridgeCall): Promise<BridgeResults[keyof BridgeResults]> => {
    switch (call.kind) {
      case 'chat':
        if (!provider.chat) throw new LLMConfigError('the local LLM has no chat model loaded');
        return provider.chat.chatCompletion(call.request);
      case 'embedding':
        if (!provider.embeddings) throw new LLMConfigError('the local LLM has no embedding model loaded');
        return provider.embeddings.embedding(call.request);
      case 'label-logits':
        if (!provider.labelLogits) throw new LLMConfigError('the local LLM reads no label logits (its logit processor is off)');
        return provider.labelLogits.labelLogits(call.request, call.labels);
    }
  };

  const pump = async (): Promise<void> => {
    if (running !== null) return;
    for (let next = queue.shift(); next !== undefined && !closed; next = queue.shift()) {
      running = next.id;
      runningKind = next.kind;
      runningCancelled = false;
      let reply: BridgeReply;
      try {
        reply = { kind: 'result', id: next.id, result: await execute(next) };
        stats[next.kind]++;
      } catch (error) {
        reply = { kind: 'error', id: next.id, error: toBridgeError(error) };
        stats.failed++;
      }
      if (!runningCancelled) send(reply);
      running = null;
      runningKind = null;
      options.onServed?.(stats);
    }
  };

  /** Interrupts the running generation, if there is one (label-logit reads are a single token). */
  const interruptRunning = (): void => {
    if (running !== null && runningKind === 'chat') provider.interrupt?.();
  };

  const shut = (): void => {
    if (closed) return;
    closed = true;
    interruptRunning();
    stats.cancelled += queue.length;
    queue.length = 0;
    port.onmessage = null;
    port.close();
    options.onClose?.();
  };

  port.onmessage = (event: MessageEvent<BridgeRequest>) => {
    const msg = event.data;
    switch (msg.kind) {
      case 'cancel': {
        const at = queue.findIndex((q) => q.id === msg.id);
        if (at >= 0) {
          queue.splice(at, 1);
          stats.cancelled++;
        } else if (running === msg.id) {
          runningCancelled = true;
          interruptRunning();
        }
        return;
      }
      case 'close':
        shut();
        return;
      case 'chat':
      case 'embedding':
      case 'label-logits':
        queue.push(msg);
        void pump();
        return;
      default:
        // A request of a kind this version does not know: answer it, so the requester does not wait forever.
        if (typeof (msg as { id?: unknown }).id === 'number') {
          send({ kind: 'error', id: (msg as { id: number }).id, error: { name: 'LLMConfigError', message: `unknown LLM bridge request kind ${JSON.stringify((msg as { kind?: unknown }).kind)}` } });
        }
    }
  };
  port.start?.();

  return {
    stats,
    get closed() {
      return closed;
    },
    close(error?: Error) {
      if (closed) return;
      if (error) send({ kind: 'closed', error: toBridgeError(error) });
      shut();
    },
  };
}
