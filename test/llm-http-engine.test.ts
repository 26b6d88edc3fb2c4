import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { LLMConfigError, LLMRequestError, LLMServerError } from '../src/llm/errors.ts';
import { apiBase, HttpChatEngine, serverRequest } from '../src/llm/http-engine.ts';
import { LLMPrior } from '../src/llm/prior.ts';
import { closedPort, completion, startLlmServer, type Reply, type ScriptedServer } from './fixtures/llm-server.ts';

let server: ScriptedServer | null = null;
afterEach(async () => {
  await server?.close();
  server = null;
});

async function serve(handle: (index: number) => Reply): Promise<ScriptedServer> {
  server = await startLlmServer((_req, i) => handle(i));
  return server;
}

/** Fast retries for tests: bounded in count and time. */
const FAST = { backoffMs: 10, maxBackoffMs: 40, maxRetries: 3, maxRetryTimeMs: 5_000, timeoutMs: 5_000 };

async function failure(promise: Promise<unknown>): Promise<LLMServerError> {
  const error = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(LLMServerError);
  return error as LLMServerError;
}

const ask = { messages: [{ role: 'user' as const, content: 'hi' }] };

describe('apiBase', () => {
  it('accepts a base URL with or without /v1 (and a full endpoint URL)', () => {
    expect(apiBase('http://127.0.0.1:8080')).toBe('http://127.0.0.1:8080/v1');
    expect(apiBase('http://127.0.0.1:8080/')).toBe('http://127.0.0.1:8080/v1');
    expect(apiBase('http://127.0.0.1:8080/v1/')).toBe('http://127.0.0.1:8080/v1');
    expect(apiBase('http://127.0.0.1:11434/v1/chat/completions')).toBe('http://127.0.0.1:11434/v1');
    expect(apiBase('http://127.0.0.1:9000/proxy')).toBe('http://127.0.0.1:9000/proxy/v1');
  });

  it('refuses what is not an http(s) URL, and bad settings', () => {
    expect(() => apiBase('localhost:8080x')).toThrow(LLMConfigError);
    expect(() => apiBase('ftp://127.0.0.1/')).toThrow(/http or https/);
    expect(() => apiBase('not a url')).toThrow(/not a server URL/);
    expect(() => new HttpChatEngine('http://127.0.0.1:1', { maxRetries: -1 })).toThrow(/maxRetries/);
    expect(() => new HttpChatEngine('http://127.0.0.1:1', { timeoutMs: 0 })).toThrow(/timeoutMs/);
  });
});

describe('serverRequest', () => {
  it("translates WebLLM's json_object schema string into OpenAI's json_schema, and a grammar into llama.cpp's field", () => {
    const schema = { type: 'object', properties: { a: { type: 'string' } }, required: ['a'] };
    const body = serverRequest({ ...ask, response_format: { type: 'json_object', schema: JSON.stringify(schema) }, temperature: 0.3 }, { model: 'm', grammar: 'llama.cpp' });
    expect(body).toEqual({ ...ask, temperature: 0.3, stream: false, model: 'm', response_format: { type: 'json_schema', json_schema: { name: 'reply', schema, strict: true } } });
    expect(serverRequest({ ...ask, response_format: { type: 'json_object' } }, { grammar: 'llama.cpp' }).response_format).toEqual({ type: 'json_object' });
    const g = serverRequest({ ...ask, model: 'own', response_format: { type: 'grammar', grammar: 'root ::= "A"' } }, { model: 'm', grammar: 'llama.cpp' });
    expect(g).toMatchObject({ grammar: 'root ::= "A"', model: 'own' });
    expect(g.response_format).toBeUndefined();
    expect(serverRequest({ ...ask, response_format: { type: 'grammar', grammar: 'root ::= "A"' } }, { grammar: 'drop' })).toEqual({ ...ask, stream: false });
  });
});

describe('HttpChatEngine against a scripted server on 127.0.0.1', () => {
  it('posts to /v1/chat/completions with the model and the schema, and returns the completion', async () => {
    const s = await serve(() => ({ json: completion('{"a":"b"}') }));
    const engine = new HttpChatEngine(`${s.url}/v1`, { ...FAST, model: 'qwen2.5:7b' });
    const reply = await engine.chatCompletion({ ...ask, response_format: { type: 'json_object', schema: '{"type":"object"}' } });
    expect(reply.choices[0]?.message.content).toBe('{"a":"b"}');
    expect(s.requests).toHaveLength(1);
    expect(s.requests[0]).toMatchObject({ method: 'POST', path: '/v1/chat/completions' });
    expect(s.requests[0]?.body).toMatchObject({ model: 'qwen2.5:7b', stream: false, response_format: { type: 'json_schema', json_schema: { schema: { type: 'object' } } } });
  });

  it('retries 500s with backoff, then succeeds', async () => {
    const s = await serve((i) => (i < 2 ? { status: 500, json: { error: { message: 'loading model' } } } : { json: completion('ok') }));
    const engine = new HttpChatEngine(s.url, FAST);
    const reply = await engine.chatCompletion(ask);
    expect(reply.choices[0]?.message.content).toBe('ok');
    expect(s.requests).toHaveLength(3);
    expect(engine.stats).toEqual({ requests: 3, retries: 2, failures: 0 });
  });

  it('gives up after maxRetries on a server that keeps failing, with the status and its message', async () => {
    const s = await serve(() => ({ status: 503, json: { error: 'overloaded' } }));
    const e = await failure(new HttpChatEngine(s.url, FAST).chatCompletion(ask));
    expect(e.reason).toBe('http');
    expect(e.status).toBe(503);
    expect(e.attempts).toBe(4);
    expect(e.message).toMatch(/HTTP 503 after 4 tries: overloaded/);
    expect(e).toBeInstanceOf(LLMRequestError);
    expect(s.requests).toHaveLength(4);
  });

  it('stops retrying once the total retry time is spent', async () => {
    const s = await serve(() => ({ status: 500, json: {} }));
    const started = performance.now();
    const e = await failure(new HttpChatEngine(s.url, { ...FAST, maxRetries: 50, backoffMs: 100, maxBackoffMs: 100, maxRetryTimeMs: 350 }).chatCompletion(ask));
    expect(e.status).toBe(500);
    expect(s.requests.length).toBeGreaterThanOrEqual(2);
    expect(s.requests.length).toBeLessThanOrEqual(5);
    expect(performance.now() - started).toBeLessThan(2_000);
  });

  it('retries a 429, honouring Retry-After within the cap', async () => {
    const s = await serve((i) => (i === 0 ? { status: 429, json: { error: 'slow down' }, headers: { 'retry-after': '0' } } : { json: completion('ok') }));
    const engine = new HttpChatEngine(s.url, FAST);
    expect((await engine.chatCompletion(ask)).choices[0]?.message.content).toBe('ok');
    expect(s.requests).toHaveLength(2);
  });

  it('retries dropped connections, and says so when they keep dropping', async () => {
    let s = await serve((i) => (i < 2 ? { drop: true } : { json: completion('ok') }));
    const engine = new HttpChatEngine(s.url, FAST);
    expect((await engine.chatCompletion(ask)).choices[0]?.message.content).toBe('ok');
    expect(s.requests).toHaveLength(3);
    await s.close();
    s = await serve(() => ({ drop: true }));
    const e = await failure(new HttpChatEngine(s.url, { ...FAST, maxRetries: 2 }).chatCompletion(ask));
    expect(e.reason).toBe('dropped');
    expect(e.message).toMatch(/closed the connection before replying \(3 tries\)/);
    expect(s.requests).toHaveLength(3);
  });

  it('a malformed (non-JSON) reply is a malformed-reply error, not retried', async () => {
    const s = await serve(() => ({ text: '{"choices": [ oops' }));
    const e = await failure(new HttpChatEngine(s.url, FAST).chatCompletion(ask));
    expect(e.reason).toBe('malformed-reply');
    expect(e.message).toMatch(/not JSON/);
    expect(s.requests).toHaveLength(1);
  });

  it('a reply body over 32 MiB is refused, with or without a declared length, not retried', async () => {
    const big = 32 * 1024 * 1024 + 1;
    const s = await serve(() => ({ text: 'x'.repeat(big) }));
    const e = await failure(new HttpChatEngine(s.url, FAST).chatCompletion(ask));
    expect(e.reason).toBe('malformed-reply');
    expect(e.message).toMatch(/reply body of more than 33554432 bytes for \/v1\/chat\/completions; refused/);
    expect(s.requests).toHaveLength(1);
    // Chunked, with no length announced: the read stops at the cap.
    let sent = 0;
    const raw = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      const chunk = Buffer.alloc(1 << 20, 0x20);
      const more = (): void => {
        while (sent < 64 * (1 << 20)) {
          sent += chunk.length;
          if (!res.write(chunk)) {
            res.once('drain', more);
            return;
          }
        }
        res.end();
      };
      more();
    });
    await new Promise<void>((done) => raw.listen(0, '127.0.0.1', done));
    try {
      const port = (raw.address() as AddressInfo).port;
      const chunked = await failure(new HttpChatEngine(`http://127.0.0.1:${port}`, FAST).chatCompletion(ask));
      expect(chunked.reason).toBe('malformed-reply');
      expect(chunked.message).toMatch(/more than 33554432 bytes/);
    } finally {
      raw.closeAllConnections();
      await new Promise((done) => raw.close(done));
    }
  });

  it('JSON that is not a chat completion is a malformed-reply error', async () => {
    const s = await serve(() => ({ json: { choices: [] } }));
    const e = await failure(new HttpChatEngine(s.url, FAST).chatCompletion(ask));
    expect(e.reason).toBe('malformed-reply');
    expect(e.message).toMatch(/not a chat completion/);
  });

  it('a slow reply is a timeout within the time limit, not retried', async () => {
    const s = await serve(() => ({ json: completion('late'), delayMs: 3_000 }));
    const started = performance.now();
    const e = await failure(new HttpChatEngine(s.url, { ...FAST, timeoutMs: 200 }).chatCompletion(ask));
    expect(e.reason).toBe('timeout');
    expect(e.message).toMatch(/did not reply within 0\.2 s/);
    expect(performance.now() - started).toBeLessThan(2_000);
    expect(s.requests).toHaveLength(1);
  });

  it('connection refused (a closed port) is unreachable at once, naming the server', async () => {
    const url = await closedPort();
    const started = performance.now();
    const e = await failure(new HttpChatEngine(url, FAST).chatCompletion(ask));
    expect(e.reason).toBe('unreachable');
    expect(e.attempts).toBe(1);
    expect(e.message).toContain(`no LLM server answers at ${url}/v1`);
    expect(e.message).toMatch(/ECONNREFUSED/);
    expect(performance.now() - started).toBeLessThan(2_000);
  });

  it('a 400 naming response_format is an unsupported feature, not retried', async () => {
    const s = await serve(() => ({ status: 400, json: { error: { message: "Unrecognized request argument: 'response_format'" } } }));
    const e = await failure(new HttpChatEngine(s.url, FAST).chatCompletion({ ...ask, response_format: { type: 'json_object', schema: '{}' } }));
    expect(e.reason).toBe('unsupported');
    expect(e.feature).toBe('response_format');
    expect(e.status).toBe(400);
    expect(s.requests).toHaveLength(1);
  });

  it('a 404 without a model complaint says the URL is not an OpenAI-compatible endpoint', async () => {
    const s = await serve(() => ({ status: 404, text: 'Not Found' }));
    const e = await failure(new HttpChatEngine(s.url, FAST).chatCompletion(ask));
    expect(e.message).toMatch(/no \/chat\/completions endpoint .* check --llm-url/);
  });

  it('a server that sends no logprobs when asked is an unsupported feature', async () => {
    const s = await serve(() => ({ json: completion('A') }));
    const e = await failure(new HttpChatEngine(s.url, FAST).chatCompletion({ ...ask, logprobs: true, top_logprobs: 2 }));
    expect(e.reason).toBe('unsupported');
    expect(e.feature).toBe('logprobs');
    // Without asking, the same reply is fine.
    expect((await new HttpChatEngine(s.url, FAST).chatCompletion(ask)).choices[0]?.message.content).toBe('A');
  });

  it('the logprobs prior scores candidates through the engine (top_logprobs read, grammar sent as llama.cpp grammar)', async () => {
    const s = await serve(() => ({ json: completion('B', [{ token: 'B', logprob: Math.log(0.7) }, { token: ' A', logprob: Math.log(0.3) }]) }));
    const prior = new LLMPrior(new HttpChatEngine(s.url, { ...FAST, model: 'm' }), null, { readout: 'logprobs' });
    const lp = await prior.score({ instruction: 'buy a red shirt', observation: { text: 'page', actions: ['click[blue]', 'click[red]'] } });
    expect(Array.from(lp, (x) => Math.round(Math.exp(x) * 100) / 100)).toEqual([0.3, 0.7]);
    expect(s.requests[0]?.body).toMatchObject({ logprobs: true, top_logprobs: 2, max_tokens: 1, grammar: 'root ::= "A" | "B"', model: 'm' });
  });

  it('lists models and returns embeddings', async () => {
    const s = await startLlmServer((req) =>
      req.path === '/v1/models'
        ? { json: { object: 'list', data: [{ id: 'llama-3.2-3b', object: 'model' }] } }
        : { json: { object: 'list', model: 'e', data: [{ object: 'embedding', index: 0, embedding: [0.1, 0.2] }], usage: { prompt_tokens: 1, total_tokens: 1 } } },
    );
    server = s;
    const engine = new HttpChatEngine(s.url, FAST);
    expect(await engine.listModels()).toEqual(['llama-3.2-3b']);
    const emb = await engine.embedding({ input: ['x'], model: 'e' });
    expect(emb.data[0]?.embedding).toEqual([0.1, 0.2]);
    expect(s.requests.map((r) => `${r.method} ${r.path}`)).toEqual(['GET /v1/models', 'POST /v1/embeddings']);
  });
});
