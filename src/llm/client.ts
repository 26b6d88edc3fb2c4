/**
 * The page's handle on the local LLM: detects the GPU, picks models from the catalogue, starts
 * `workers/llm.worker.ts` through WebLLM's `WebWorkerMLCEngine`, reports download progress, and
 * turns every way loading can fail into an {@link LLMUnavailableError}. Also lists and deletes
 * cached models. Browser only (WebLLM cannot run in Node); the rest of `src/llm` is not.
 */
import {
  WebWorkerMLCEngine,
  deleteChatConfigInCache,
  deleteModelAllInfoInCache,
  deleteModelWasmInCache,
  hasModelInCache,
  prebuiltAppConfig,
} from '@mlc-ai/web-llm';
import { type CatalogueEntry, type DeviceFacts, type ModelChoice, NO_WEBGPU, describeCatalogue, findModel, selectModels } from './catalogue.ts';
import type {
  AppConfig,
  ChatCompletion,
  ChatCompletionRequestNonStreaming,
  ChatEngine,
  ChatOptions,
  CreateEmbeddingResponse,
  EmbeddingCreateParams,
  EmbeddingEngine,
  InitProgressReport,
} from './engine.ts';
import { LLMAbortedError, LLMConfigError, LLMRequestError, LLMUnavailableError, classifyLoadError, errorText } from './errors.ts';
import { WebLLMEmbedder, type WebLLMEmbedderOptions } from './embedder.ts';
import type { LabelLogitSource } from './logits.ts';
import { LLMPrior, type LLMPriorConfig } from './prior.ts';
import { SideChannelClient } from './protocol.ts';
import { LoadTimer, type LoadTimings } from './load-timings.ts';

export { loadPhase, type LoadTimings } from './load-timings.ts';

/** How long {@link LLMClient.dispose} waits for the models to unload before it stops the worker anyway, ms. */
const DISPOSE_TIMEOUT_MS = 5000;

/** Where WebLLM caches downloaded models. */
export type CacheBackend = NonNullable<AppConfig['cacheBackend']>;

/** Options of {@link createLLMClient}. Every field is optional. */
export interface LLMClientOptions {
  /** Chat model id; `undefined` = the catalogue's default for this device; `null` = none. */
  chatModel?: ModelChoice;
  /** Embedding model id; `undefined` = snowflake-arctic-embed-s; `null` = none. */
  embeddingModel?: ModelChoice;
  /** Model list (default: WebLLM's `prebuiltAppConfig`). */
  appConfig?: AppConfig;
  /** Where models are cached (default WebLLM's: the Cache API). */
  cacheBackend?: CacheBackend;
  /** GPU memory the models may use, MB (default: an estimate, see `estimateVramBudgetMB`). */
  vramBudgetMB?: number;
  /** Context window of the chat model, tokens (default: the model's). */
  contextWindowSize?: number;
  /** Receives WebLLM's download and load progress. */
  onProgress?: (report: InitProgressReport) => void;
  /** Fail with `load-failed` when loading from the cache or compiling shaders reports no progress for this long (default 120 000 ms). */
  stallTimeoutMs?: number;
  /**
   * The same while the weights download (default 600 000 ms). WebLLM reports once per finished
   * weight shard with four in flight, so on a slow link minutes pass between healthy reports.
   */
  fetchStallTimeoutMs?: number;
  /**
   * Register the label-logit processor for the chat model (the LLM prior's one-pass readout; default
   * false). WebLLM copies every sampled token's logits to the CPU for a model with a processor.
   */
  logitCapture?: boolean;
  /** Creates the worker (default: `workers/llm.worker.ts`). Tests inject a scripted worker. */
  createWorker?: () => Worker;
  /** Device facts (default: asked from WebGPU by {@link detectDevice}). */
  device?: DeviceFacts;
  /** Aborting it cancels the load: the worker (and its downloads) stop, the promise rejects with {@link LLMAbortedError}. */
  signal?: AbortSignal;
}

/** Defaults of {@link LLMClientOptions}. */
const DEFAULT_LLM_CLIENT_OPTIONS = {
  stallTimeoutMs: 120_000,
  fetchStallTimeoutMs: 600_000,
  logitCapture: false,
} as const;

interface GpuAdapterLike {
  features: { has(feature: string): boolean };
  limits: { maxStorageBufferBindingSize?: number; maxBufferSize?: number };
  info?: { vendor?: string; architecture?: string; isFallbackAdapter?: boolean };
  isFallbackAdapter?: boolean;
}
interface GpuLike {
  requestAdapter(options?: { powerPreference?: 'high-performance' | 'low-power' }): Promise<GpuAdapterLike | null>;
}

/** Asks WebGPU about the device. Never throws: a missing WebGPU gives {@link NO_WEBGPU}. */
export async function detectDevice(): Promise<DeviceFacts> {
  const nav = (globalThis as { navigator?: { gpu?: GpuLike; deviceMemory?: number } }).navigator;
  if (!nav?.gpu) return NO_WEBGPU;
  let adapter: GpuAdapterLike | null;
  try {
    adapter = await nav.gpu.requestAdapter({ powerPreference: 'high-performance' });
  } catch {
    return NO_WEBGPU;
  }
  if (!adapter) return NO_WEBGPU;
  const facts: DeviceFacts = {
    webgpu: true,
    shaderF16: adapter.features.has('shader-f16'),
    isFallbackAdapter: adapter.info?.isFallbackAdapter ?? adapter.isFallbackAdapter ?? false,
  };
  if (adapter.limits.maxStorageBufferBindingSize !== undefined) facts.maxStorageBufferBindingSize = adapter.limits.maxStorageBufferBindingSize;
  if (adapter.limits.maxBufferSize !== undefined) facts.maxBufferSize = adapter.limits.maxBufferSize;
  if (typeof nav.deviceMemory === 'number') facts.deviceMemoryGB = nav.deviceMemory;
  if (adapter.info?.vendor) facts.vendor = adapter.info.vendor;
  if (adapter.info?.architecture) facts.architecture = adapter.info.architecture;
  return facts;
}

/** `appConfig` with `cacheBackend` set (a copy; the input is not changed). */
function withCacheBackend(appConfig: AppConfig, cacheBackend?: CacheBackend): AppConfig {
  if (cacheBackend === undefined) return appConfig;
  const allowed: readonly CacheBackend[] = ['cache', 'indexeddb', 'cross-origin', 'opfs'];
  if (!allowed.includes(cacheBackend)) throw new LLMConfigError(`cacheBackend must be one of ${allowed.join(', ')}, got ${JSON.stringify(cacheBackend)}`);
  return { ...appConfig, cacheBackend };
}

/** Options naming a model list and its cache. */
export interface CacheOptions {
  appConfig?: AppConfig;
  cacheBackend?: CacheBackend;
}

/** The model's base URL as WebLLM keys its cache entries (`…/resolve/main/`). */
function modelBaseUrl(model: string): string {
  let url = model.endsWith('/') ? model : `${model}/`;
  if (!/.+\/resolve\/.+\//.test(url)) url += 'resolve/main/';
  return new URL(url).href;
}

/**
 * Whether the model's library and chat config are in the Cache API, where WebLLM's default
 * backend keeps them apart from the weights (true for other backends, whose entries this cannot see).
 */
async function hasRuntimeFilesInCache(record: AppConfig['model_list'][number], appConfig: AppConfig): Promise<boolean> {
  if ((appConfig.cacheBackend ?? 'cache') !== 'cache') return true;
  const cacheStorage = (globalThis as { caches?: CacheStorage }).caches;
  if (!cacheStorage) return false;
  const [wasm, config] = await Promise.all([cacheStorage.open('webllm/wasm'), cacheStorage.open('webllm/config')]);
  const [lib, chatConfig] = await Promise.all([wasm.match(record.model_lib), config.match(new URL('mlc-chat-config.json', modelBaseUrl(record.model)).href)]);
  return lib !== undefined && chatConfig !== undefined;
}

/**
 * Ids of the models of the app config that load without a download: weights, model library and
 * chat config all in the cache (a model with cached weights but no library still downloads it).
 */
export async function listCachedModels(options: CacheOptions = {}): Promise<string[]> {
  const appConfig = withCacheBackend(options.appConfig ?? prebuiltAppConfig, options.cacheBackend);
  const out: string[] = [];
  for (const record of appConfig.model_list) {
    if ((await hasModelInCache(record.model_id, appConfig)) && (await hasRuntimeFilesInCache(record, appConfig))) out.push(record.model_id);
  }
  return out;
}

/**
 * Deletes a model's weights, tokenizer, config and library from the cache. A model whose weight
 * manifest was never cached has no weights to delete (WebLLM would try to download the manifest
 * to list them, which fails offline); its config and library entries are still deleted.
 */
export async function deleteCachedModel(modelId: string, options: CacheOptions = {}): Promise<void> {
  const appConfig = withCacheBackend(options.appConfig ?? prebuiltAppConfig, options.cacheBackend);
  findModel(appConfig, modelId);
  try {
    await deleteModelAllInfoInCache(modelId, appConfig);
  } catch (error) {
    if (classifyLoadError(error, modelId).reason !== 'no-network' || (await hasModelInCache(modelId, appConfig))) throw error;
    await deleteModelWasmInCache(modelId, appConfig);
    await deleteChatConfigInCache(modelId, appConfig);
  }
}

/** The catalogue for this device (detected unless given). */
export async function deviceCatalogue(options: { appConfig?: AppConfig; device?: DeviceFacts; vramBudgetMB?: number } = {}): Promise<CatalogueEntry[]> {
  const device = options.device ?? (await detectDevice());
  return describeCatalogue(options.appConfig ?? prebuiltAppConfig, device, options.vramBudgetMB === undefined ? {} : { vramBudgetMB: options.vramBudgetMB });
}

function defaultWorker(): Worker {
  return new Worker(new URL('../../workers/llm.worker.ts', import.meta.url), { type: 'module', name: 'dreamgym-llm' });
}

function checkOptions(options: LLMClientOptions): void {
  const positive = (name: string, value: number | undefined): void => {
    if (value !== undefined && !(Number.isFinite(value) && value > 0)) throw new LLMConfigError(`${name} must be a positive number, got ${value}`);
  };
  positive('stallTimeoutMs', options.stallTimeoutMs);
  positive('fetchStallTimeoutMs', options.fetchStallTimeoutMs);
  positive('vramBudgetMB', options.vramBudgetMB);
  if (options.contextWindowSize !== undefined && !(Number.isInteger(options.contextWindowSize) && options.contextWindowSize >= 256)) {
    throw new LLMConfigError(`contextWindowSize must be an integer >= 256, got ${options.contextWindowSize}`);
  }
  if (options.onProgress !== undefined && typeof options.onProgress !== 'function') throw new LLMConfigError('onProgress must be a function');
  if (options.createWorker !== undefined && typeof options.createWorker !== 'function') throw new LLMConfigError('createWorker must be a function returning a Worker');
}

/**
 * Starts the LLM worker and loads the chat and embedding models. Resolves once both are
 * loaded; rejects fast with an {@link LLMUnavailableError} when WebGPU is missing, a model needs
 * shader-f16 the GPU lacks, nothing fits in memory, the models cannot be downloaded, or loading
 * fails or stalls. The worker is terminated on failure. Aborting `options.signal` cancels the
 * load (rejecting with {@link LLMAbortedError}).
 */
export async function createLLMClient(options: LLMClientOptions = {}): Promise<LLMClient> {
  checkOptions(options);
  const cancelled = (): LLMAbortedError => new LLMAbortedError('Loading the local LLM was cancelled.');
  if (options.signal?.aborted) throw cancelled();
  const appConfig = withCacheBackend(options.appConfig ?? prebuiltAppConfig, options.cacheBackend);
  const device = options.device ?? (await detectDevice());
  const selection = selectModels(
    appConfig,
    device,
    { chat: options.chatModel, embedding: options.embeddingModel },
    options.vramBudgetMB === undefined ? {} : { vramBudgetMB: options.vramBudgetMB },
  );
  const modelIds = [selection.chat, selection.embedding].filter((id): id is string => id !== null);
  if (modelIds.length === 0) throw new LLMConfigError('createLLMClient: chatModel and embeddingModel are both null; there is nothing to load');
  const label = modelIds.join(' and ');

  const nav = (globalThis as { navigator?: { onLine?: boolean } }).navigator;
  if (nav?.onLine === false) {
    for (const id of modelIds) {
      if (!(await hasModelInCache(id, appConfig).catch(() => false))) {
        throw new LLMUnavailableError('no-network', `Model ${id} could not be downloaded: this browser is offline and the model is not in the cache. Connect to the internet once to download it, or use the retrieval experience model, which needs no download.`, { modelId: id });
      }
    }
  }

  if (options.signal?.aborted) throw cancelled();
  const worker = (options.createWorker ?? defaultWorker)();
  const side = SideChannelClient.connect(worker);
  const stallMs = options.stallTimeoutMs ?? DEFAULT_LLM_CLIENT_OPTIONS.stallTimeoutMs;
  const fetchStallMs = options.fetchStallTimeoutMs ?? DEFAULT_LLM_CLIENT_OPTIONS.fetchStallTimeoutMs;
  const timings = new LoadTimer();
  const capture = options.logitCapture ?? DEFAULT_LLM_CLIENT_OPTIONS.logitCapture;
  // Loading fails when the worker errors, or when WebLLM reports no progress for `stallMs`.
  let fail: (error: Error) => void = () => undefined;
  const failure = new Promise<never>((_resolve, reject) => (fail = reject));
  failure.catch(() => undefined);
  let timer: ReturnType<typeof setTimeout> | undefined;
  let loading = true;
  const arm = (): void => {
    if (timer !== undefined) clearTimeout(timer);
    if (!loading) return;
    // Before its first report WebLLM downloads the config, tokenizer and model library: a download too.
    const fetching = timings.phase !== 'load';
    const ms = fetching ? fetchStallMs : stallMs;
    const what = fetching ? 'while downloading the model' : 'while loading the model onto the GPU';
    timer = setTimeout(() => fail(new LLMUnavailableError('load-failed', `Loading ${label} made no progress for ${Math.round(ms / 1000)} s ${what}; giving up. Check the network and try again.`)), ms);
  };
  const onWorkerError = (event: ErrorEvent): void => fail(new LLMUnavailableError('load-failed', `The LLM worker failed to start: ${event.message || 'unknown error'}`));
  worker.addEventListener('error', onWorkerError);
  const onAbort = (): void => fail(cancelled());
  options.signal?.addEventListener('abort', onAbort, { once: true });
  const engine = new WebWorkerMLCEngine(worker, {
    appConfig,
    initProgressCallback: (report) => {
      timings.report(report.text);
      arm();
      options.onProgress?.(report);
    },
  });
  const chatOpts: ChatOptions[] = modelIds.map((id) => (id === selection.chat && options.contextWindowSize !== undefined ? { context_window_size: options.contextWindowSize } : {}));
  try {
    arm();
    await Promise.race([side.request<'configure'>({ kind: 'configure', captureModels: capture && selection.chat !== null ? [selection.chat] : [] }), failure]);
    await Promise.race([engine.reload(modelIds, chatOpts), failure]);
    timings.finish();
  } catch (error) {
    side.close();
    worker.terminate();
    throw error instanceof LLMAbortedError ? error : classifyLoadError(error, label);
  } finally {
    loading = false;
    if (timer !== undefined) clearTimeout(timer);
    worker.removeEventListener('error', onWorkerError);
    options.signal?.removeEventListener('abort', onAbort);
  }
  const chatRecord = selection.chat === null ? null : findModel(appConfig, selection.chat);
  return new LLMClient(engine, worker, side, {
    reload: { modelIds, chatOpts },
    loadTimings: timings.result(),
    chatModel: selection.chat,
    chatContextWindow: options.contextWindowSize ?? chatRecord?.overrides?.context_window_size ?? null,
    embeddingModel: selection.embedding,
    device,
    warnings: selection.warnings,
    labelLogits: capture && selection.chat !== null,
  });
}

/** Whether `error` says the engine has no model loaded (WebLLM unloads everything when the GPU device is lost). */
function isModelNotLoaded(error: unknown): boolean {
  return /ModelNotLoadedError|WorkerEngineModelNotLoadedError|Model not loaded before/i.test(errorText(error));
}

/** Errors from WebLLM's worker protocol arrive as strings; make them typed. */
function requestError(what: string, error: unknown): LLMRequestError {
  if (error instanceof LLMRequestError) return error;
  return new LLMRequestError(`${what} failed: ${errorText(error)}`, { cause: error });
}

/** A loaded local LLM: the chat and embedding engines, the label-logit reader, lifecycle. */
export class LLMClient {
  readonly chatModel: string | null;
  readonly embeddingModel: string | null;
  /** The chat model's context window, tokens (null when the model list does not say). */
  readonly chatContextWindow: number | null;
  readonly device: DeviceFacts;
  /** Notes from model selection (e.g. a model that may not fit), in plain words. */
  readonly warnings: readonly string[];
  /** Chat completions on the chat model (`model` filled in). */
  readonly chat: ChatEngine;
  /** Embeddings on the embedding model (`model` filled in). */
  readonly embeddings: EmbeddingEngine;
  /** Label logits through the worker's logit processor, or null when capture is off. */
  readonly labelLogits: LabelLogitSource | null;
  /** How long the load spent downloading and loading. */
  readonly loadTimings: LoadTimings;
  /** Times the models were loaded again after the engine lost them (a lost GPU device). */
  reloads = 0;
  private terminated = false;
  private readonly reloadArgs: { modelIds: string[]; chatOpts: ChatOptions[] };
  private reloading: Promise<void> | null = null;

  constructor(
    /** WebLLM's worker engine (the full `MLCEngineInterface`). */
    readonly engine: WebWorkerMLCEngine,
    private readonly worker: Worker,
    private readonly side: SideChannelClient,
    info: {
      reload: { modelIds: string[]; chatOpts: ChatOptions[] };
      loadTimings: LoadTimings;
      chatModel: string | null;
      chatContextWindow: number | null;
      embeddingModel: string | null;
      device: DeviceFacts;
      warnings: readonly string[];
      labelLogits: boolean;
    },
  ) {
    this.reloadArgs = info.reload;
    this.loadTimings = info.loadTimings;
    this.chatModel = info.chatModel;
    this.chatContextWindow = info.chatContextWindow;
    this.embeddingModel = info.embeddingModel;
    this.device = info.device;
    this.warnings = info.warnings;
    const chatModel = info.chatModel;
    const embeddingModel = info.embeddingModel;
    this.chat = {
      chatCompletion: async (request: ChatCompletionRequestNonStreaming): Promise<ChatCompletion> => {
        if (chatModel === null) throw new LLMConfigError('this LLM client has no chat model');
        this.checkAlive();
        try {
          return await this.reloadingOnLoss(() => engine.chatCompletion({ ...request, stream: false, model: request.model ?? chatModel }));
        } catch (error) {
          throw requestError(`chat completion on ${chatModel}`, error);
        }
      },
    };
    this.embeddings = {
      embedding: async (request: EmbeddingCreateParams): Promise<CreateEmbeddingResponse> => {
        if (embeddingModel === null) throw new LLMConfigError('this LLM client has no embedding model');
        this.checkAlive();
        try {
          return await this.reloadingOnLoss(() => engine.embedding({ ...request, model: request.model ?? embeddingModel }));
        } catch (error) {
          throw requestError(`embedding on ${embeddingModel}`, error);
        }
      },
    };
    this.labelLogits = info.labelLogits
      ? {
          labelLogits: (request, labels) => {
            this.checkAlive();
            return this.reloadingOnLoss(() => side.labelLogits({ ...request, model: request.model ?? chatModel ?? undefined }, labels));
          },
        }
      : null;
  }

  private checkAlive(): void {
    if (this.terminated) throw new LLMRequestError('this LLM client was terminated');
  }

  /**
   * Loads the models again, whatever the worker believes is loaded: after a lost GPU device WebLLM
   * has unloaded them while its worker handler keeps their ids, so its own check never reloads.
   * Concurrent callers share one reload.
   */
  private reload(): Promise<void> {
    this.reloading ??= (async () => {
      try {
        await this.engine.reload(this.reloadArgs.modelIds, this.reloadArgs.chatOpts);
        this.reloads++;
      } catch (error) {
        throw classifyLoadError(error, this.reloadArgs.modelIds.join(' and '));
      } finally {
        this.reloading = null;
      }
    })();
    return this.reloading;
  }

  /** Runs `request`; when the engine has lost its models, reloads them and runs it once more. */
  private async reloadingOnLoss<T>(request: () => Promise<T>): Promise<T> {
    try {
      return await request();
    } catch (error) {
      if (!isModelNotLoaded(error) || this.terminated) throw error;
      await this.reload();
      return request();
    }
  }

  /**
   * Checks that the engine still holds the models (a cheap request that needs a loaded model) and
   * loads them again when it does not. Resolves true when it had to reload. Call it before reusing
   * a client that sat idle: the GPU device may have been lost in the meantime.
   */
  async ensureLoaded(): Promise<boolean> {
    this.checkAlive();
    try {
      await this.engine.runtimeStatsText(this.chatModel ?? this.embeddingModel ?? undefined);
      return false;
    } catch (error) {
      if (!isModelNotLoaded(error)) return false;
    }
    await this.reload();
    return true;
  }

  /** The policy prior on the chat model: the worker's logit processor when capture is on, else logprobs. */
  prior(config: Partial<LLMPriorConfig> = {}): LLMPrior {
    if (this.chatModel === null) throw new LLMConfigError('this LLM client has no chat model, so it has no LLM prior');
    return new LLMPrior(this.chat, this.labelLogits, { model: this.chatModel, ...config });
  }

  /** A `WebLLMEmbedder` on the embedding model (asks the model once for its dimension). */
  embedder(options: Partial<WebLLMEmbedderOptions> = {}): Promise<WebLLMEmbedder> {
    if (this.embeddingModel === null) return Promise.reject(new LLMConfigError('this LLM client has no embedding model'));
    return WebLLMEmbedder.create(this.embeddings, { ...options, model: this.embeddingModel });
  }

  /** Stops the chat generation running now; its request resolves with what was generated (`finish_reason: 'abort'`). */
  interrupt(): void {
    if (!this.terminated) this.engine.interruptGenerate();
  }

  /** WebLLM's runtime statistics text (prefill and decode speed). */
  async runtimeStats(): Promise<string> {
    this.checkAlive();
    return this.engine.runtimeStatsText(this.chatModel ?? undefined);
  }

  /**
   * Unloads the models and stops the worker. A worker that does not answer within `timeoutMs`
   * (a hung GPU, a dead worker) is stopped all the same.
   */
  async dispose(timeoutMs = DISPOSE_TIMEOUT_MS): Promise<void> {
    if (this.terminated) return;
    let timer: ReturnType<typeof setTimeout> | undefined;
    try {
      await Promise.race([this.engine.unload(), new Promise<void>((resolve) => (timer = setTimeout(resolve, timeoutMs)))]);
    } finally {
      if (timer !== undefined) clearTimeout(timer);
      this.terminate();
    }
  }

  /** Stops the worker at once (pending requests reject). */
  terminate(): void {
    if (this.terminated) return;
    this.terminated = true;
    this.side.close();
    this.worker.terminate();
  }
}
