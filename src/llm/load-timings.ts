/**
 * How long loading a model spent in each of WebLLM's phases, told apart by the text of its
 * progress reports: downloading the weights ("Fetching param cache"), loading them from the
 * browser's cache onto the GPU ("Loading model from cache") and compiling the GPU shaders
 * ("Loading GPU shader modules"). WebLLM reports when a piece of work ends, so the time since the
 * previous report is counted to the phase of the report that ends it; the time before "Start to
 * fetch params" (the worker, the model's config, tokenizer and library) is setup.
 */

/** Where a load's time went, ms. */
export interface LoadTimings {
  /** Downloading the weights (0 when they were cached). */
  fetchMs: number;
  /** Loading the weights from the browser's cache onto the GPU. */
  cacheLoadMs: number;
  /** Compiling the model's GPU shaders. */
  shaderMs: number;
  /** Before the download began: the worker, the model's config, tokenizer and library. */
  setupMs: number;
  /** From the download's end (or the setup's, for a cached model) to the loaded model: cache load, shaders and the rest. */
  loadMs: number;
  /** The whole load. */
  totalMs: number;
}

/** A phase of a load, as WebLLM's progress text names it. */
export type LoadPhaseName = 'fetch' | 'cache' | 'shader' | 'other';

/** The phase a progress text reports on. */
export function progressPhase(text: string): LoadPhaseName {
  if (/^(?:Start to fetch params|Fetching param cache)/.test(text)) return 'fetch';
  if (/^Loading model from cache/.test(text)) return 'cache';
  if (/^Loading GPU shader modules/.test(text)) return 'shader';
  return 'other';
}

/** Whether a load is downloading (`fetch`) or past it (`load`): the stall timer allows a download longer silences. */
export function loadPhase(text: string): 'fetch' | 'load' {
  return progressPhase(text) === 'fetch' ? 'fetch' : 'load';
}

/** Splits a load's time into its phases from WebLLM's progress texts (see the module comment). */
export class LoadTimer {
  /** The phase of the latest report ('start' before any). */
  phase: 'start' | 'fetch' | 'load' = 'start';
  private readonly started: number;
  private last: number;
  private readonly spent: Record<LoadPhaseName | 'setup', number> = { fetch: 0, cache: 0, shader: 0, other: 0, setup: 0 };
  private end: number | null = null;

  constructor(private readonly now: () => number = () => performance.now()) {
    this.started = now();
    this.last = this.started;
  }

  report(text: string): void {
    const t = this.now();
    const phase = progressPhase(text);
    // "Start to fetch params" begins the download: what it ends is setup (worker, config, library).
    this.spent[/^Start to fetch params/.test(text) ? 'setup' : phase] += t - this.last;
    this.last = t;
    this.phase = phase === 'fetch' ? 'fetch' : 'load';
  }

  finish(): void {
    this.end = this.now();
  }

  result(): LoadTimings {
    const totalMs = (this.end ?? this.now()) - this.started;
    const { fetch, cache, shader, setup } = this.spent;
    return { fetchMs: fetch, cacheLoadMs: cache, shaderMs: shader, setupMs: setup, loadMs: totalMs - fetch - setup, totalMs };
  }
}
