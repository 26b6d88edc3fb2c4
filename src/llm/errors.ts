/**
 * Typed errors of the LLM layer, and the classification of WebLLM's load failures into them.
 *
 * WebLLM's worker protocol sends errors across the worker boundary as strings
 * (`err.toString()`, e.g. `"TypeError: Failed to fetch"`), so classification works on the
 * error's name and text, whether it arrives as an `Error` or as a string.
 */

/** Why a local LLM cannot be used. */
export type LLMUnavailableReason = 'no-webgpu' | 'no-network' | 'no-shader-f16' | 'out-of-memory' | 'load-failed';

/** Every {@link LLMUnavailableReason}, for menus and exhaustive tests. */
export const LLM_UNAVAILABLE_REASONS: readonly LLMUnavailableReason[] = ['no-webgpu', 'no-network', 'no-shader-f16', 'out-of-memory', 'load-failed'];

/**
 * Thrown when a local LLM cannot be started: no WebGPU, the model cannot be downloaded, the GPU
 * lacks a feature the model needs, it runs out of memory, or loading fails for another reason.
 * The message says what happened and what to do, in plain words.
 */
export class LLMUnavailableError extends Error {
  override name = 'LLMUnavailableError';
  constructor(
    readonly reason: LLMUnavailableReason,
    message: string,
    options: { cause?: unknown; modelId?: string } = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.modelId = options.modelId;
  }
  /** The model being loaded, when one was. */
  readonly modelId: string | undefined;
}

/** Thrown for a bad LLM-layer argument or configuration (unknown model id, bad option value). */
export class LLMConfigError extends RangeError {
  override name = 'LLMConfigError';
}

/** Thrown when a request to a loaded engine fails (the engine threw, or returned no usable answer). */
export class LLMRequestError extends Error {
  override name = 'LLMRequestError';
  constructor(message: string, options: { cause?: unknown } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
  }
}

/**
 * Thrown when an LLM operation was given up on purpose: a model load the person cancelled, or a
 * request whose run was paused, stopped or ended before the reply came.
 */
export class LLMAbortedError extends LLMRequestError {
  override name = 'LLMAbortedError';
}

/** The text of any thrown value: `Error` name and message, or the string itself. */
export function errorText(error: unknown): string {
  if (error instanceof Error) return `${error.name}: ${error.message}`;
  if (typeof error === 'string') return error;
  try {
    return JSON.stringify(error) ?? String(error);
  } catch {
    return String(error);
  }
}

const NETWORK_RE = /failed to fetch|networkerror|network error|err_internet_disconnected|err_name_not_resolved|err_connection|load failed|fetch failed|getaddrinfo|enotfound|econnrefused|etimedout|cannot fetch|net::/i;
const F16_RE = /shader-f16|shaderf16supporterror|featuresupporterror/i;
const OOM_RE = /devicelosterror|device was lost|out of memory|\boom\b|allocation failed|failed to allocate|createbuffer.*(?:too large|exceed)|maxbuffersize|maxstoragebufferbindingsize/i;
const WEBGPU_RE = /webgpunotavailableerror|webgpunotfounderror|webgpu is not supported|navigator\.gpu|unable to find a compatible gpu|no (?:webgpu )?adapter|requestadapter/i;

/**
 * Turns any failure of loading `modelId` into an {@link LLMUnavailableError} with a plain-words
 * message. An {@link LLMUnavailableError} is returned unchanged.
 */
export function classifyLoadError(error: unknown, modelId: string): LLMUnavailableError {
  if (error instanceof LLMUnavailableError) return error;
  const text = errorText(error);
  const detail = text.length > 300 ? `${text.slice(0, 300)}…` : text;
  const opts = { cause: error, modelId };
  if (F16_RE.test(text)) {
    return new LLMUnavailableError(
      'no-shader-f16',
      `Model ${modelId} needs the WebGPU feature shader-f16, which this GPU or browser does not offer. Choose a q4f32 or q0f32 variant of the model instead. (${detail})`,
      opts,
    );
  }
  if (WEBGPU_RE.test(text)) {
    return new LLMUnavailableError(
      'no-webgpu',
      `WebGPU is not available here, so model ${modelId} cannot run. Use a browser with WebGPU enabled (recent Chrome or Edge), or the retrieval experience model, which needs no GPU. (${detail})`,
      opts,
    );
  }
  if (OOM_RE.test(text)) {
    return new LLMUnavailableError(
      'out-of-memory',
      `The GPU ran out of memory while loading model ${modelId}. Close other GPU-heavy tabs, or choose a smaller model or a shorter context window. (${detail})`,
      opts,
    );
  }
  if (NETWORK_RE.test(text)) {
    return new LLMUnavailableError(
      'no-network',
      `Model ${modelId} could not be downloaded: the model files could not be fetched (no network, or the model hub is unreachable). Connect to the internet once so the model can be downloaded and cached, pick a model that is already cached, or use the retrieval experience model, which needs no download. (${detail})`,
      opts,
    );
  }
  return new LLMUnavailableError('load-failed', `Model ${modelId} could not be loaded: ${detail}`, opts);
}

/**
 * Why a request to an OpenAI-compatible server failed:
 * - `unreachable`: nothing answers at the address (connection refused, unknown host);
 * - `timeout`: no complete reply within the per-request time limit;
 * - `dropped`: the connection closed before a complete reply, on every try;
 * - `http`: the server answered with an error status (5xx or 429 on every try, or another 4xx);
 * - `malformed-reply`: the reply is not JSON, or not a chat completion (or embedding list);
 * - `unsupported`: the server lacks a feature the request needs (it rejected `response_format`,
 *   or sent no `logprobs` when they were asked for).
 */
export type LLMServerErrorReason = 'unreachable' | 'timeout' | 'dropped' | 'http' | 'malformed-reply' | 'unsupported';

/**
 * Thrown by the HTTP engine (`http-engine.ts`) when an OpenAI-compatible server cannot answer a
 * request. An {@link LLMRequestError}, so callers that handle engine failures handle it too; the
 * message names the server and says what to do.
 */
export class LLMServerError extends LLMRequestError {
  override name = 'LLMServerError';
  /** The HTTP status, when the server answered with one. */
  readonly status: number | undefined;
  /** The feature the server lacks, for `unsupported` (e.g. `logprobs`, `response_format`). */
  readonly feature: string | undefined;
  /** Requests sent (1 + retries). */
  readonly attempts: number;
  constructor(
    readonly reason: LLMServerErrorReason,
    message: string,
    options: { cause?: unknown; status?: number; feature?: string; attempts?: number } = {},
  ) {
    super(message, options.cause === undefined ? {} : { cause: options.cause });
    this.status = options.status;
    this.feature = options.feature;
    this.attempts = options.attempts ?? 1;
  }
}
