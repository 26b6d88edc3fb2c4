/**
 * The body of the LLM worker: WebLLM's `WebWorkerMLCEngineHandler` (one engine hosting the chat
 * model and the embedding model), a logit processor registry for the policy prior, and the typed
 * side channel of {@link SideChannelClient}. `workers/llm.worker.ts` runs it with WebLLM's
 * `MLCEngine`; tests run it with a scripted engine injected in its place.
 */
import { WebWorkerMLCEngineHandler, type MLCEngine } from '@mlc-ai/web-llm';
import type { ChatCompletionRequestNonStreaming, HostedEngine } from './engine.ts';
import { AsyncLock, CaptureRegistry, LabelLogitReader } from './logits.ts';
import { CONNECT_KIND, serveSideChannel } from './protocol.ts';

/** The worker global scope, as far as the host uses it. */
export interface WorkerScope {
  onmessage: ((event: MessageEvent) => void) | null;
}

/** Options of {@link hostLLMWorker}. */
export interface LLMWorkerHostOptions {
  /** An engine to host instead of WebLLM's `MLCEngine` (tests). */
  engine?: HostedEngine;
}

/** What {@link hostLLMWorker} set up, for tests and extensions. */
export interface LLMWorkerHost {
  handler: WebWorkerMLCEngineHandler;
  engine: HostedEngine;
  registry: CaptureRegistry;
  reader: LabelLogitReader;
  lock: AsyncLock;
}

type AnyCompletion = (request: ChatCompletionRequestNonStreaming) => Promise<unknown>;

function isAsyncIterable(value: unknown): value is AsyncIterable<unknown> {
  return typeof value === 'object' && value !== null && Symbol.asyncIterator in value;
}

/** Wraps `fn` so that each call holds `lock` until its result (or its whole stream) is done. */
function serialised(lock: AsyncLock, fn: AnyCompletion): AnyCompletion {
  return async (request) => {
    const release = await lock.acquire();
    let result: unknown;
    try {
      result = await fn(request);
    } catch (error) {
      release();
      throw error;
    }
    if (!isAsyncIterable(result)) {
      release();
      return result;
    }
    const source = result;
    async function* stream(): AsyncGenerator<unknown, void, undefined> {
      try {
        yield* source;
      } finally {
        release();
      }
    }
    return stream();
  };
}

/**
 * Installs the LLM worker on `scope` (the worker's `self`). Every chat or text completion the
 * engine runs goes through one lock, so that an armed label-logit read never sees another
 * request's logits.
 */
export function hostLLMWorker(scope: WorkerScope, options: LLMWorkerHostOptions = {}): LLMWorkerHost {
  const handler = new WebWorkerMLCEngineHandler();
  if (options.engine) {
    handler.engine = options.engine as unknown as MLCEngine;
    options.engine.setInitProgressCallback((report) => handler.postMessage({ kind: 'initProgressCallback', uuid: '', content: report }));
  }
  const engine = handler.engine as unknown as HostedEngine & { completion?: AnyCompletion };
  const registry = new CaptureRegistry();
  handler.setLogitProcessorRegistry(registry);

  const lock = new AsyncLock();
  const rawChat = engine.chatCompletion.bind(engine) as AnyCompletion;
  (engine as { chatCompletion: AnyCompletion }).chatCompletion = serialised(lock, rawChat);
  if (typeof engine.completion === 'function') engine.completion = serialised(lock, engine.completion.bind(engine));
  const reader = new LabelLogitReader(
    { chatCompletion: rawChat as HostedEngine['chatCompletion'] },
    (modelId) => registry.get(modelId),
    { lock },
  );

  scope.onmessage = (event: MessageEvent) => {
    const data: unknown = event.data;
    if (typeof data === 'object' && data !== null && (data as { kind?: unknown }).kind === CONNECT_KIND) {
      const port = event.ports[0];
      if (port) {
        serveSideChannel(port, {
          ping: async () => ({ engine: options.engine ? 'injected' : 'webllm' }),
          configure: async (msg) => {
            registry.setCaptureModels(msg.captureModels);
            return { captureModels: [...msg.captureModels] };
          },
          'label-logits': (msg) => reader.labelLogits(msg.request, msg.labels),
        });
      }
      return;
    }
    handler.onmessage(event);
  };
  return { handler, engine, registry, reader, lock };
}
