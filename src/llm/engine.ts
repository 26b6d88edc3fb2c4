/**
 * The subset of WebLLM's `MLCEngineInterface` that this project depends on. Everything above
 * the engine (experience model, policy prior, task generator, embedder) takes these narrow
 * types, so that tests can inject a scripted engine and nothing above needs WebGPU.
 *
 * Only types are imported from WebLLM here; they are erased at build time.
 */
import type {
  AppConfig,
  ChatCompletion,
  ChatCompletionMessageParam,
  ChatCompletionRequestNonStreaming,
  ChatOptions,
  CreateEmbeddingResponse,
  EmbeddingCreateParams,
  InitProgressCallback,
  LogitProcessor,
  LogLevel,
} from '@mlc-ai/web-llm';

export type {
  AppConfig,
  ChatCompletion,
  ChatCompletionMessageParam,
  ChatCompletionRequestNonStreaming,
  ChatOptions,
  CreateEmbeddingResponse,
  EmbeddingCreateParams,
  InitProgressCallback,
  InitProgressReport,
  LogitProcessor,
  ModelRecord,
} from '@mlc-ai/web-llm';

/** Non-streaming OpenAI-style chat completions (`MLCEngine.chatCompletion`). */
export interface ChatEngine {
  chatCompletion(request: ChatCompletionRequestNonStreaming): Promise<ChatCompletion>;
}

/** OpenAI-style embeddings (`MLCEngine.embedding`). */
export interface EmbeddingEngine {
  embedding(request: EmbeddingCreateParams): Promise<CreateEmbeddingResponse>;
}

/**
 * What the worker host needs from the engine it wraps: the calls WebLLM's
 * `WebWorkerMLCEngineHandler` forwards for the requests our client sends, plus the logit
 * processor registry. `MLCEngine` satisfies it; so does the scripted engine of the tests.
 */
export interface HostedEngine extends ChatEngine, EmbeddingEngine {
  reload(modelId: string | string[], chatOpts?: ChatOptions | ChatOptions[]): Promise<void>;
  unload(): Promise<void>;
  resetChat(keepStats?: boolean, modelId?: string): Promise<void>;
  interruptGenerate(): void;
  runtimeStatsText(modelId?: string): Promise<string>;
  getMaxStorageBufferBindingSize(): Promise<number>;
  getGPUVendor(): Promise<string>;
  setAppConfig(appConfig: AppConfig): void;
  setLogLevel(logLevel: LogLevel): void;
  setInitProgressCallback(callback: InitProgressCallback): void;
  setLogitProcessorRegistry(registry?: Map<string, LogitProcessor>): void;
}

/**
 * The text of the first choice of a completion, or null when there is none (no choices, no
 * message, or content that is not text: a malformed completion is an unusable reply, not a crash).
 */
export function completionText(completion: ChatCompletion): string | null {
  const content = (completion as Partial<ChatCompletion> | null | undefined)?.choices?.[0]?.message?.content;
  return typeof content === 'string' ? content : null;
}

/** Total characters of the text content of `messages` (a cheap proxy for prompt size). */
export function messageChars(messages: readonly ChatCompletionMessageParam[]): number {
  let n = 0;
  for (const m of messages) {
    const c = m.content;
    if (typeof c === 'string') n += c.length;
    else if (Array.isArray(c)) for (const part of c) if (part.type === 'text') n += part.text.length;
  }
  return n;
}
