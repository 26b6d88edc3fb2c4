/**
 * A {@link ChatEngine} (and {@link EmbeddingEngine}) over HTTP, for any OpenAI-compatible server:
 * llama.cpp's `llama-server`, Ollama, vLLM. It lets the LLM experience model, the LLM task
 * generator and the logprobs prior run headless (Node, CI, a GPU server) with the same code the
 * page runs on WebLLM.
 *
 * Requests arrive in WebLLM's dialect (what the callers already send) and are translated:
 * - `response_format: {type: 'json_object', schema: '<JSON string>'}` becomes OpenAI's
 *   `{type: 'json_schema', json_schema: {name, schema: <object>, strict: true}}`;
 * - `response_format: {type: 'grammar', grammar}` becomes llama.cpp's top-level `grammar` field
 *   (GBNF reads the same simple EBNF), or is dropped (`grammar: 'drop'`) for servers without one;
 * - `model` defaults to the engine's model; `stream` is always false.
 *
 * Failures are {@link LLMServerError}s with a reason. 5xx, 429 and dropped connections are
 * retried with exponential backoff, bounded in count and in total time; a refused connection,
 * a timeout, another 4xx, a malformed reply and a missing feature are not (retrying them would
 * only repeat the same answer or the same wait).
 */
import type { ChatCompletion, ChatCompletionRequestNonStreaming, ChatEngine, CreateEmbeddingResponse, EmbeddingCreateParams, EmbeddingEngine } from './engine.ts';
import { LLMConfigError, LLMServerError } from './errors.ts';

/** The most bytes of one reply body read from a server (32 MiB): a reply is a few kilobytes of text, never a stream without end. */
const MAX_REPLY_BYTES = 32 * 1024 * 1024;

/** How a `{type: 'grammar'}` response format is sent. */
export type GrammarDialect = 'llama.cpp' | 'drop';

/** Settings of {@link HttpChatEngine}; defaults in {@link DEFAULT_HTTP_ENGINE_CONFIG}. */
export interface HttpEngineConfig {
  /** Model name sent with each request that names none (Ollama and vLLM need one; llama.cpp ignores it). */
  model?: string;
  /** Time limit of one request, in milliseconds (a slow reply is a `timeout`). */
  timeoutMs: number;
  /** Retries after a 5xx, a 429 or a dropped connection. */
  maxRetries: number;
  /** Delay before the first retry, doubled for each next one. */
  backoffMs: number;
  /** Longest delay between two tries (also caps a server's Retry-After). */
  maxBackoffMs: number;
  /** No retry starts once this much time has passed since the first try. */
  maxRetryTimeMs: number;
  /** How grammar-constrained requests are sent. */
  grammar: GrammarDialect;
}

/** Defaults of {@link HttpEngineConfig}: generous, because a CPU-only server can take minutes per reply. */
const DEFAULT_HTTP_ENGINE_CONFIG: HttpEngineConfig = {
  timeoutMs: 300_000,
  maxRetries: 4,
  backoffMs: 500,
  maxBackoffMs: 8_000,
  maxRetryTimeMs: 120_000,
  grammar: 'llama.cpp',
};

/**
 * The API base of a server URL: `http://host:8080`, `http://host:8080/`, `http://host:8080/v1`
 * and `http://host:8080/v1/chat/completions` all give `http://host:8080/v1`.
 */
export function apiBase(url: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new LLMConfigError(`not a server URL: ${JSON.stringify(url)} (expected e.g. http://127.0.0.1:8080)`);
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') throw new LLMConfigError(`the LLM server URL must be http or https, got ${JSON.stringify(url)}`);
  if (parsed.search !== '' || parsed.hash !== '') throw new LLMConfigError(`the LLM server URL must not have a query or fragment, got ${JSON.stringify(url)}`);
  let path = parsed.pathname.replace(/\/+$/, '').replace(/\/chat\/completions$/, '');
  if (!/\/v1$/.test(path)) path = `${path}/v1`;
  parsed.pathname = path;
  return parsed.toString().replace(/\/+$/, '');
}

/** A URL as it may be printed: without user name and password. */
function shown(url: string): string {
  try {
    const u = new URL(url);
    u.username = '';
    u.password = '';
    return u.toString();
  } catch {
    return url;
  }
}

type JsonObject = Record<string, unknown>;

const isObject = (x: unknown): x is JsonObject => x !== null && typeof x === 'object' && !Array.isArray(x);

/**
 * The body sent for `request`: WebLLM's response formats translated to OpenAI's (see the module
 * comment), the engine's model when the request names none, `stream: false`. Everything else
 * is passed through as it is.
 */
export function serverRequest(request: ChatCompletionRequestNonStreaming, config: Pick<HttpEngineConfig, 'model' | 'grammar'>): JsonObject {
  const { response_format: format, model, stream: _stream, ...rest } = request as ChatCompletionRequestNonStreaming & { stream?: unknown };
  const body: JsonObject = { ...rest, stream: false };
  const name = model ?? config.model;
  if (typeof name === 'string' && name !== '') body.model = name;
  if (format !== undefined && format !== null) {
    if (format.type === 'json_object' && typeof format.schema === 'string') {
      let schema: unknown;
      try {
        schema = JSON.parse(format.schema);
      } catch (error) {
        throw new LLMConfigError(`response_format.schema is not JSON: ${error instanceof Error ? error.message : String(error)}`);
      }
      body.response_format = { type: 'json_schema', json_schema: { name: 'reply', schema, strict: true } };
    } else if (format.type === 'grammar') {
      if (config.grammar === 'llama.cpp' && typeof format.grammar === 'string') body.grammar = format.grammar;
    } else {
      body.response_format = format;
    }
  }
  return body;
}

/** What one HTTP exchange gave: a status and the text of the body. */
interface Exchange {
  status: number;
  text: string;
  retryAfterMs: number | null;
}

/** Node's (undici's) network error codes, read from the error and its causes. */
function errorCodes(error: unknown): string[] {
  const codes: string[] = [];
  let e: unknown = error;
  for (let depth = 0; depth < 5 && e !== null && e !== undefined; depth++) {
    if (isObject(e) || e instanceof Error) {
      const code = (e as { code?: unknown }).code;
      if (typeof code === 'string') codes.push(code);
      const name = (e as { name?: unknown }).name;
      if (typeof name === 'string') codes.push(name);
      const message = (e as { message?: unknown }).message;
      if (typeof message === 'string') codes.push(message);
      e = (e as { cause?: unknown }).cause;
    } else break;
  }
  return codes;
}

const REFUSED = /ECONNREFUSED|ENOTFOUND|EAI_AGAIN|EHOSTUNREACH|ENETUNREACH|EADDRNOTAVAIL/;

/** A feature a 4xx body complains about, if it names one. */
function featureNamed(text: string): string | null {
  if (/response_format|json_schema|json schema|structured output/i.test(text)) return 'response_format';
  if (/grammar/i.test(text)) return 'grammar';
  if (/top_logprobs|logprobs/i.test(text)) return 'logprobs';
  return null;
}

/** The server's own error message, cut short (`{"error": {"message": ...}}` or `{"error": "..."}` or the text). */
function serverMessage(text: string): string {
  let message = text;
  try {
    const body: unknown = JSON.parse(text);
    if (isObject(body)) {
      const e = body.error;
      if (typeof e === 'string') message = e;
      else if (isObject(e) && typeof e.message === 'string') message = e.message;
      else if (typeof body.message === 'string') message = body.message;
      else if (typeof body.detail === 'string') message = body.detail;
    }
  } catch {
    // Not JSON: the text itself.
  }
  message = message.replace(/\s+/g, ' ').trim();
  return message.length > 300 ? `${message.slice(0, 300)}…` : message;
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Counters of an {@link HttpChatEngine}. */
export interface HttpEngineStats {
  /** HTTP requests sent, retries included. */
  requests: number;
  /** Retries after a 5xx, a 429 or a dropped connection. */
  retries: number;
  /** Requests that failed in the end. */
  failures: number;
}

/** An OpenAI-compatible chat-completions (and embeddings) server, as a {@link ChatEngine}. */
export class HttpChatEngine implements ChatEngine, EmbeddingEngine {
  /** The API base, e.g. `http://127.0.0.1:8080/v1`. */
  readonly baseUrl: string;
  readonly config: Readonly<HttpEngineConfig>;
  readonly stats: HttpEngineStats = { requests: 0, retries: 0, failures: 0 };

  constructor(url: string, config: Partial<HttpEngineConfig> = {}) {
    this.baseUrl = apiBase(url);
    const c: HttpEngineConfig = { ...DEFAULT_HTTP_ENGINE_CONFIG, ...config };
    const positive = (name: 'timeoutMs' | 'backoffMs' | 'maxBackoffMs' | 'maxRetryTimeMs', min: number): void => {
      if (!(Number.isFinite(c[name]) && c[name] >= min)) throw new LLMConfigError(`${name} must be a number >= ${min}, got ${c[name]}`);
    };
    positive('timeoutMs', 1);
    positive('backoffMs', 0);
    positive('maxBackoffMs', 0);
    positive('maxRetryTimeMs', 0);
    if (!(Number.isInteger(c.maxRetries) && c.maxRetries >= 0)) throw new LLMConfigError(`maxRetries must be an integer >= 0, got ${c.maxRetries}`);
    if (c.grammar !== 'llama.cpp' && c.grammar !== 'drop') throw new LLMConfigError(`grammar must be 'llama.cpp' or 'drop', got ${JSON.stringify(c.grammar)}`);
    if (c.model !== undefined && (typeof c.model !== 'string' || c.model === '')) throw new LLMConfigError(`model must be a non-empty string, got ${JSON.stringify(c.model)}`);
    this.config = Object.freeze(c);
  }

  /** The server as it may be printed (no credentials). */
  get server(): string {
    return shown(this.baseUrl);
  }

  /** A chat completion. Throws {@link LLMServerError} (see the module comment for which are retried). */
  async chatCompletion(request: ChatCompletionRequestNonStreaming): Promise<ChatCompletion> {
    const body = serverRequest(request, this.config);
    const { text, attempts } = await this.send('POST', '/chat/completions', body);
    const reply = this.parseJson(text, 'chat completion', attempts);
    const choices = isObject(reply) ? reply.choices : undefined;
    const first: unknown = Array.isArray(choices) ? choices[0] : undefined;
    if (!isObject(first) || !isObject(first.message)) {
      throw new LLMServerError('malformed-reply', `the LLM server at ${this.server} sent a reply that is not a chat completion (no choices[0].message): ${JSON.stringify(text.slice(0, 200))}`, { attempts });
    }
    if (request.logprobs === true) {
      const logprobs = first.logprobs;
      const content = isObject(logprobs) ? logprobs.content : undefined;
      if (!Array.isArray(content) || content.length === 0) {
        throw new LLMServerError(
          'unsupported',
          `the LLM server at ${this.server} sent no logprobs although they were asked for: the LLM prior needs a server that returns logprobs with top_logprobs (llama.cpp's llama-server does); use --prior uniform or lexical with this one`,
          { feature: 'logprobs', attempts },
        );
      }
    }
    return reply as unknown as ChatCompletion;
  }

  /** Embeddings (`/v1/embeddings`); the server must host an embedding model. */
  async embedding(request: EmbeddingCreateParams): Promise<CreateEmbeddingResponse> {
    const body: JsonObject = { ...request };
    const name = request.model ?? this.config.model;
    if (typeof name === 'string' && name !== '') body.model = name;
    const { text, attempts } = await this.send('POST', '/embeddings', body);
    const reply = this.parseJson(text, 'embedding list', attempts);
    const data = isObject(reply) ? reply.data : undefined;
    const ok = Array.isArray(data) && data.length > 0 && data.every((d) => isObject(d) && Array.isArray(d.embedding) && d.embedding.every((x) => typeof x === 'number' && Number.isFinite(x)));
    if (!ok) throw new LLMServerError('malformed-reply', `the LLM server at ${this.server} sent a reply that is not an embedding list (data[].embedding of numbers): ${JSON.stringify(text.slice(0, 200))}`, { attempts });
    return reply as unknown as CreateEmbeddingResponse;
  }

  /**
   * The ids of the models the server lists (`GET /v1/models`). Used as a first contact: it
   * fails fast, with the same typed errors, when nothing answers at the URL.
   */
  async listModels(): Promise<string[]> {
    const { text, attempts } = await this.send('GET', '/models', null);
    const reply = this.parseJson(text, 'model list', attempts);
    const data = isObject(reply) ? reply.data : undefined;
    if (!Array.isArray(data)) throw new LLMServerError('malformed-reply', `the LLM server at ${this.server} sent a reply that is not a model list (no data array): ${JSON.stringify(text.slice(0, 200))}`, { attempts });
    return data.flatMap((m) => (isObject(m) && typeof m.id === 'string' ? [m.id] : []));
  }

  private parseJson(text: string, what: string, attempts: number): unknown {
    try {
      return JSON.parse(text) as unknown;
    } catch (error) {
      this.stats.failures++;
      throw new LLMServerError('malformed-reply', `the LLM server at ${this.server} sent a ${what} that is not JSON (${error instanceof Error ? error.message : String(error)}): ${JSON.stringify(text.slice(0, 200))}`, {
        cause: error,
        attempts,
      });
    }
  }

  /** One request with its retries; resolves with a 2xx body, or throws the typed error. */
  private async send(method: 'GET' | 'POST', path: string, body: JsonObject | null): Promise<{ text: string; attempts: number }> {
    const url = `${this.baseUrl}${path}`;
    const started = performance.now();
    const { maxRetries, backoffMs, maxBackoffMs, maxRetryTimeMs } = this.config;
    for (let attempt = 1; ; attempt++) {
      let retryable: LLMServerError;
      let retryAfterMs: number | null = null;
      try {
        const exchange = await this.exchange(method, url, body);
        if (exchange.status >= 200 && exchange.status < 300) return { text: exchange.text, attempts: attempt };
        const error = this.statusError(exchange, path, attempt);
        if (!(exchange.status >= 500 || exchange.status === 429)) {
          this.stats.failures++;
          throw error;
        }
        retryable = error;
        retryAfterMs = exchange.retryAfterMs;
      } catch (error) {
        if (error instanceof LLMServerError) throw error;
        const classified = this.networkError(error, attempt);
        if (classified.reason !== 'dropped') {
          this.stats.failures++;
          throw classified;
        }
        retryable = classified;
      }
      const delay = Math.min(maxBackoffMs, Math.max(retryAfterMs ?? 0, backoffMs * 2 ** (attempt - 1)));
      if (attempt > maxRetries || performance.now() - started + delay > maxRetryTimeMs) {
        this.stats.failures++;
        throw retryable;
      }
      this.stats.retries++;
      await sleep(delay);
    }
  }

  private async exchange(method: 'GET' | 'POST', url: string, body: JsonObject | null): Promise<Exchange> {
    this.stats.requests++;
    // One time limit for the whole exchange: headers and body (a server can stall mid-body).
    const signal = AbortSignal.timeout(this.config.timeoutMs);
    const response = await fetch(url, {
      method,
      headers: body === null ? { accept: 'application/json' } : { 'content-type': 'application/json', accept: 'application/json' },
      ...(body === null ? {} : { body: JSON.stringify(body) }),
      signal,
    });
    const text = await this.readBody(response, url);
    const header = response.headers.get('retry-after');
    const seconds = header !== null && /^\d+(?:\.\d+)?$/.test(header.trim()) ? Number(header) : Number.NaN;
    return { status: response.status, text, retryAfterMs: Number.isFinite(seconds) ? seconds * 1000 : null };
  }

  /** The body as text, read until {@link MAX_REPLY_BYTES}: a bigger one is refused, not buffered. */
  private async readBody(response: Response, url: string): Promise<string> {
    const tooBig = (): LLMServerError => {
      this.stats.failures++;
      return new LLMServerError('malformed-reply', `the LLM server at ${this.server} sent a reply body of more than ${MAX_REPLY_BYTES} bytes for ${new URL(url).pathname}; refused`);
    };
    const declared = Number(response.headers.get('content-length'));
    if (Number.isFinite(declared) && declared > MAX_REPLY_BYTES) {
      await response.body?.cancel().catch(() => {});
      throw tooBig();
    }
    if (!response.body) return '';
    const reader = response.body.getReader();
    const parts: Uint8Array[] = [];
    let size = 0;
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      size += value.byteLength;
      if (size > MAX_REPLY_BYTES) {
        await reader.cancel().catch(() => {});
        throw tooBig();
      }
      parts.push(value);
    }
    const bytes = new Uint8Array(size);
    let at = 0;
    for (const p of parts) {
      bytes.set(p, at);
      at += p.byteLength;
    }
    return new TextDecoder().decode(bytes);
  }

  private statusError(exchange: Exchange, path: string, attempts: number): LLMServerError {
    const { status, text } = exchange;
    const said = serverMessage(text);
    if (status >= 400 && status < 500 && status !== 429) {
      const feature = featureNamed(said);
      if (feature !== null) {
        return new LLMServerError(
          'unsupported',
          `the LLM server at ${this.server} refused the request's ${feature} (HTTP ${status}: ${said}): ` +
            (feature === 'logprobs' ? 'the LLM prior needs logprobs with top_logprobs' : 'the LLM experience model needs structured output (response_format with a JSON schema)') +
            ', which llama.cpp\'s llama-server, Ollama (0.5 or later) and vLLM support',
          { status, feature, attempts },
        );
      }
      if (status === 404 && !/model/i.test(said)) {
        return new LLMServerError('http', `the server at ${this.server} has no ${path} endpoint (HTTP 404${said ? `: ${said}` : ''}): is it an OpenAI-compatible server? check --llm-url`, { status, attempts });
      }
    }
    const tries = attempts > 1 ? ` after ${attempts} tries` : '';
    return new LLMServerError('http', `the LLM server at ${this.server} answered HTTP ${status}${tries}${said ? `: ${said}` : ''}`, { status, attempts });
  }

  private networkError(error: unknown, attempts: number): LLMServerError {
    const codes = errorCodes(error).join(' ');
    if (/TimeoutError/.test(codes)) {
      return new LLMServerError('timeout', `the LLM server at ${this.server} did not reply within ${(this.config.timeoutMs / 1000).toFixed(1)} s`, { cause: error, attempts });
    }
    if (REFUSED.test(codes)) {
      return new LLMServerError('unreachable', `no LLM server answers at ${this.server} (${REFUSED.exec(codes)?.[0] ?? 'connection refused'}): start it (e.g. llama-server or ollama serve) or check --llm-url`, {
        cause: error,
        attempts,
      });
    }
    const tries = attempts > 1 ? ` (${attempts} tries)` : '';
    return new LLMServerError('dropped', `the LLM server at ${this.server} closed the connection before replying${tries}`, { cause: error, attempts });
  }
}
