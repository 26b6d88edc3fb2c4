/**
 * The page's local LLM: lists the model catalogue for this device (with what is cached), loads
 * the models a run asks for through the LLM client (src/llm/client.ts: the LLM worker, WebLLM's
 * download progress, typed failures) with a Cancel, keeps them loaded across runs, and serves
 * them to the training worker over one LLM bridge per run (src/llm/bridge.ts). Its state lives
 * in the store's `llm` signal (../state/llm-state.ts).
 *
 * Nothing here touches the network or the GPU until the person asks: the catalogue is read when
 * they pick the LLM experience model, and a model downloads only when they load it or start a
 * run with it. WebLLM itself is imported on first use, so the page without an LLM never loads it.
 */
import type { BridgeEndpoint, BridgeServerStats, LLMBridgeServer } from '../../llm/bridge.ts';
import { estimateVramBudgetMB, type DeviceFacts } from '../../llm/catalogue.ts';
import type { CacheBackend, LLMClient } from '../../llm/client.ts';
import type { AppConfig } from '../../llm/engine.ts';
import { LLMAbortedError, LLMConfigError, LLMRequestError, LLMUnavailableError } from '../../llm/errors.ts';
import type { LLMLink } from '../../../workers/training.protocol.ts';
import type { LLMFailureReason, LLMSelection, ModelView } from '../state/llm-state.ts';
import type { TrainingStore } from '../state/store.ts';

/** Options of {@link LLMController}. Every field is optional. */
export interface LLMControllerOptions {
  /** Starts the LLM worker (default: workers/llm.worker.ts with WebLLM's engine). Tests pass one with a scripted engine. */
  createWorker?: () => Worker;
  /** The model list (default: WebLLM's prebuilt list). */
  appConfig?: AppConfig;
  /** The device's facts (default: asked from WebGPU). */
  device?: DeviceFacts;
  /** Where WebLLM caches models (default: the Cache API). */
  cacheBackend?: CacheBackend;
  /** A load that reports no progress for this long fails (default: the client's, 120 s). */
  stallTimeoutMs?: number;
}

/** How often at most the served-request counts are reported to the store. */
const SERVED_REPORT_MS = 500;

const clientModule = () => import('../../llm/client.ts');
const bridgeModule = () => import('../../llm/bridge.ts');

/** Whether the loaded models `have` serve a run that asks for `want`. */
function serves(have: LLMSelection, want: LLMSelection): boolean {
  return have.chatModel === want.chatModel && (want.embeddingModel === null || have.embeddingModel === want.embeddingModel) && (!want.priorLogits || have.priorLogits === true);
}

/** The typed reason of a load failure. */
function reasonOf(error: unknown): LLMFailureReason {
  if (error instanceof LLMAbortedError) return 'cancelled';
  if (error instanceof LLMUnavailableError) return error.reason;
  return 'error';
}

/** Drives the page's local LLM (one loaded set of models at a time). */
export class LLMController {
  private current: { client: LLMClient; selection: LLMSelection } | null = null;
  private loading: { selection: LLMSelection; promise: Promise<LLMClient>; abort: AbortController } | null = null;
  private catalogue: Promise<void> | null = null;
  private device: DeviceFacts | null = null;
  /** The person's GPU memory budget for models, MB (null: the estimate for the device). */
  private budgetMB: number | null = null;
  private readonly servers = new Set<LLMBridgeServer>();
  private destroyed = false;

  constructor(
    private readonly store: TrainingStore,
    private readonly options: LLMControllerOptions = {},
  ) {}

  /** The loaded client, or null. */
  get client(): LLMClient | null {
    return this.current?.client ?? null;
  }

  /** Runs being served right now. */
  get activeLinks(): number {
    return this.servers.size;
  }

  /**
   * Sets the GPU memory the models may use, MB (null: the estimate for this device, which cannot
   * see past Chrome's 8 GiB report of the machine's memory). A catalogue already listed is listed
   * again under it; the next load is held to it.
   */
  setMemoryBudget(mb: number | null): void {
    if (mb !== null && !(Number.isFinite(mb) && mb > 0)) throw new LLMConfigError(`the GPU memory budget must be a positive number of MB, got ${mb}`);
    if (mb === this.budgetMB) return;
    this.budgetMB = mb;
    // Listed again in place (no "checking" in between), so that the model list keeps its focus.
    if (this.catalogue) this.catalogue = this.listCatalogue();
  }

  /**
   * Asks WebGPU about the device and lists the catalogue with each model's cache state (once:
   * later calls share the first; `force` asks again). Never rejects: a failure is in the state.
   */
  checkCatalogue(force = false): Promise<void> {
    if (this.catalogue && !force) return this.catalogue;
    this.store.dispatch({ kind: 'llm/checking' });
    this.catalogue = this.listCatalogue();
    return this.catalogue;
  }

  private listCatalogue(): Promise<void> {
    return (async () => {
      try {
        const { detectDevice, deviceCatalogue, listCachedModels } = await clientModule();
        const device = this.options.device ?? this.device ?? (await detectDevice());
        const budgetMB = this.budgetMB;
        const entries = await deviceCatalogue({ device, ...(this.options.appConfig ? { appConfig: this.options.appConfig } : {}), ...(budgetMB !== null ? { vramBudgetMB: budgetMB } : {}) });
        // Without a readable cache (e.g. storage blocked), every model simply shows as not cached.
        const cached = new Set(
          await listCachedModels({ ...(this.options.appConfig ? { appConfig: this.options.appConfig } : {}), ...(this.options.cacheBackend ? { cacheBackend: this.options.cacheBackend } : {}) }).catch(() => [] as string[]),
        );
        if (this.destroyed) return;
        this.device = device;
        const models: ModelView[] = entries.filter((e) => e.kind !== 'vision').map((e) => ({ ...e, cached: cached.has(e.modelId) }));
        // A newer budget lists the catalogue again: this listing is stale.
        if (budgetMB !== this.budgetMB) return;
        const estimateMB = estimateVramBudgetMB(device);
        this.store.dispatch({ kind: 'llm/catalogue', device, models, budget: { mb: budgetMB ?? estimateMB, estimateMB, overridden: budgetMB !== null } });
      } catch (e) {
        this.store.dispatch({ kind: 'llm/catalogue-failed', message: `The model catalogue could not be read: ${e instanceof Error ? e.message : String(e)}` });
      }
    })();
  }

  /**
   * Loads `selection` (a no-op when the loaded models serve it), reporting WebLLM's progress to
   * the store. Rejects with the typed error (also shown in the state): `LLMUnavailableError`
   * (no WebGPU, no shader-f16, download failed, out of memory, load failed) or
   * `LLMAbortedError` when cancelled.
   */
  async load(selection: LLMSelection): Promise<LLMClient> {
    if (this.destroyed) throw new LLMAbortedError('the page was closed');
    if (this.current && serves(this.current.selection, selection)) {
      // A lost GPU device leaves the models unloaded behind a client that looks ready: check first.
      const current = this.current;
      const ok = await current.client.ensureLoaded().then(
        () => true,
        () => false,
      );
      if (ok && this.current === current) return current.client;
    }
    if (this.loading) {
      if (serves(this.loading.selection, selection)) return this.loading.promise;
      this.loading.abort.abort();
      await this.loading.promise.catch(() => undefined);
    }
    // One set of models at a time: two may not fit in GPU memory together.
    await this.unload();
    const abort = new AbortController();
    this.store.dispatch({ kind: 'llm/loading', ...selection });
    const promise = (async () => {
      const { createLLMClient } = await clientModule();
      return createLLMClient({
        chatModel: selection.chatModel,
        embeddingModel: selection.embeddingModel,
        signal: abort.signal,
        logitCapture: selection.priorLogits === true,
        onProgress: (report) => this.store.dispatch({ kind: 'llm/progress', progress: report.progress, timeElapsed: report.timeElapsed, text: report.text }),
        ...(this.options.appConfig ? { appConfig: this.options.appConfig } : {}),
        ...(this.options.cacheBackend ? { cacheBackend: this.options.cacheBackend } : {}),
        ...(this.options.createWorker ? { createWorker: this.options.createWorker } : {}),
        ...(this.options.stallTimeoutMs !== undefined ? { stallTimeoutMs: this.options.stallTimeoutMs } : {}),
        ...(this.budgetMB !== null ? { vramBudgetMB: this.budgetMB } : {}),
        ...((this.options.device ?? this.device) ? { device: (this.options.device ?? this.device) as DeviceFacts } : {}),
      });
    })();
    const loading = { selection, promise, abort };
    this.loading = loading;
    let client: LLMClient;
    try {
      client = await promise;
    } catch (e) {
      if (this.loading === loading) {
        const message = e instanceof LLMAbortedError ? 'Loading the model was cancelled.' : e instanceof Error ? e.message : String(e);
        this.store.dispatch({ kind: 'llm/failed', reason: reasonOf(e), message, chatModel: selection.chatModel });
      }
      throw e;
    } finally {
      if (this.loading === loading) this.loading = null;
    }
    if (this.destroyed) {
      client.terminate();
      throw new LLMAbortedError('the page was closed');
    }
    const loaded = { chatModel: client.chatModel ?? selection.chatModel, embeddingModel: client.embeddingModel };
    this.current = { client, selection: { ...loaded, priorLogits: client.labelLogits !== null } };
    this.store.dispatch({ kind: 'llm/ready', ...loaded, labelLogits: client.labelLogits !== null, warnings: [...client.warnings], timings: client.loadTimings });
    return client;
  }

  /** Cancels a load in progress (its promise rejects with `LLMAbortedError`). */
  cancel(): void {
    this.loading?.abort.abort();
  }

  /** Unloads the models (runs still using them fail with a plain message, and stay resumable). */
  async unload(): Promise<void> {
    const current = this.current;
    if (!current) return;
    this.current = null;
    this.closeLinks(new LLMRequestError('the local LLM was unloaded'));
    await current.client.dispose().catch(() => current.client.terminate());
    if (!this.destroyed) this.store.dispatch({ kind: 'llm/unloaded' });
  }

  /**
   * Opens an LLM bridge for one run on `client`'s models and returns the link to send to the
   * training worker (its port is transferred with the command). The page serves the bridge
   * until the run closes its end, or {@link closeLinks}.
   */
  async openLink(client: LLMClient): Promise<LLMLink> {
    const { serveLLMBridge } = await bridgeModule();
    const channel = new MessageChannel();
    let reported: BridgeServerStats = { chat: 0, embedding: 0, 'label-logits': 0, cancelled: 0, failed: 0 };
    let timer: ReturnType<typeof setTimeout> | undefined;
    const report = (stats: Readonly<BridgeServerStats>): void => {
      timer = undefined;
      const delta = { chat: stats.chat - reported.chat, embedding: stats.embedding - reported.embedding, labelLogits: stats['label-logits'] - reported['label-logits'] };
      reported = { ...stats };
      if (!this.destroyed && (delta.chat || delta.embedding || delta.labelLogits)) this.store.dispatch({ kind: 'llm/served', ...delta });
    };
    const server = serveLLMBridge(
      channel.port1 as BridgeEndpoint,
      { chat: client.chatModel !== null ? client.chat : null, embeddings: client.embeddingModel !== null ? client.embeddings : null, labelLogits: client.labelLogits, interrupt: () => client.interrupt() },
      {
        // Counted for the page, at most every SERVED_REPORT_MS: a store update per request would redraw too often.
        onServed: (stats) => {
          timer ??= setTimeout(() => report(stats), SERVED_REPORT_MS);
        },
        onClose: () => {
          this.servers.delete(server);
          if (timer !== undefined) clearTimeout(timer);
          report(server.stats);
        },
      },
    );
    this.servers.add(server);
    return { port: channel.port2, chatModel: client.chatModel ?? '', embeddingModel: client.embeddingModel, labelLogits: client.labelLogits !== null, contextWindowSize: client.chatContextWindow };
  }

  /** Closes every open bridge: the runs' pending and later requests fail with `error`. */
  closeLinks(error: Error = new LLMRequestError('the local LLM stopped serving this run')): void {
    for (const server of [...this.servers]) server.close(error);
    this.servers.clear();
  }

  /** Stops everything: a load in progress, the bridges, the LLM worker. */
  destroy(): void {
    this.destroyed = true;
    this.loading?.abort.abort();
    this.closeLinks(new LLMRequestError('the page was closed'));
    this.current?.client.terminate();
    this.current = null;
  }
}
