/**
 * The LLM bridge (src/llm/bridge.ts) over a real MessageChannel in Node: requests and replies of
 * every kind, typed errors re-created on the requester's side, one request at a time in order,
 * and a run's abort that rejects pending requests and drops the ones the provider has not started.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { fromBridgeError, LLMBridgeClient, serveLLMBridge, toBridgeError, type BridgeEndpoint, type LLMBridgeServer } from '../src/llm/bridge.ts';
import type { ChatCompletion, ChatCompletionRequestNonStreaming, ChatEngine } from '../src/llm/engine.ts';
import { LLMAbortedError, LLMConfigError, LLMRequestError, LLMServerError, LLMUnavailableError } from '../src/llm/errors.ts';
import { LabelLogitError } from '../src/llm/logits.ts';
import { ScriptedEngine } from './fixtures/scripted-engine.ts';

const open: { client: LLMBridgeClient; server: LLMBridgeServer }[] = [];
afterEach(() => {
  for (const { client, server } of open.splice(0)) {
    client.close();
    server.close();
  }
});

function bridge(provider: Parameters<typeof serveLLMBridge>[1], signal?: AbortSignal, onClose?: () => void) {
  const channel = new MessageChannel();
  const server = serveLLMBridge(channel.port1 as BridgeEndpoint, provider, onClose ? { onClose } : {});
  const client = new LLMBridgeClient(channel.port2 as BridgeEndpoint, signal ? { signal } : {});
  open.push({ client, server });
  return { client, server };
}

const ask = (content: string): ChatCompletionRequestNonStreaming => ({ messages: [{ role: 'user', content }] });

function completion(content: string): ChatCompletion {
  return { id: 'x', object: 'chat.completion', created: 0, model: 'm', choices: [{ index: 0, finish_reason: 'stop', logprobs: null, message: { role: 'assistant', content } }] };
}

/** A chat engine whose replies the test releases one by one; it records what it started. */
function gatedEngine() {
  const started: string[] = [];
  const gates: (() => void)[] = [];
  let inFlight = 0;
  let maxInFlight = 0;
  const engine: ChatEngine = {
    async chatCompletion(request) {
      const text = String(request.messages[0]?.content);
      started.push(text);
      inFlight++;
      maxInFlight = Math.max(maxInFlight, inFlight);
      await new Promise<void>((resolve) => gates.push(resolve));
      inFlight--;
      return completion(`re: ${text}`);
    },
  };
  const release = async (): Promise<void> => {
    await expect.poll(() => gates.length).toBeGreaterThan(0);
    gates.shift()?.();
  };
  return { engine, started, release, maxInFlight: () => maxInFlight };
}

describe('LLM bridge', () => {
  it('round-trips chat completions, embeddings and label logits', async () => {
    const engine = new ScriptedEngine({ chat: ['{"a":1}'] });
    const labelLogits = { labelLogits: async (_request: unknown, labels: readonly string[]) => new Float32Array(labels.map((_, i) => i / 2)) };
    const { client, server } = bridge({ chat: engine, embeddings: engine, labelLogits });
    const reply = await client.chatCompletion({ ...ask('hello'), model: 'm1', max_tokens: 7 });
    expect(reply.choices[0]?.message.content).toBe('{"a":1}');
    // The request arrived as sent.
    expect(engine.requests[0]).toMatchObject({ model: 'm1', max_tokens: 7, messages: [{ role: 'user', content: 'hello' }] });
    const embedded = await client.embedding({ input: ['a', 'b'], model: 'e' });
    expect(embedded.data.map((d) => d.index)).toEqual([0, 1]);
    expect(embedded.data[0]?.embedding).toHaveLength(8);
    const logits = await client.labelLogits({ messages: ask('x').messages }, ['A', 'B', 'C']);
    expect(logits).toBeInstanceOf(Float32Array);
    expect([...logits]).toEqual([0, 0.5, 1]);
    expect(client.sent).toEqual({ chat: 1, embedding: 1, 'label-logits': 1 });
    expect(server.stats).toMatchObject({ chat: 1, embedding: 1, 'label-logits': 1, failed: 0, cancelled: 0 });
    expect(client.pendingCount).toBe(0);
  });

  it('serves one request at a time, in order', async () => {
    const gated = gatedEngine();
    const { client } = bridge({ chat: gated.engine });
    const replies = ['one', 'two', 'three'].map((t) => client.chatCompletion(ask(t)));
    for (let i = 0; i < 3; i++) await gated.release();
    expect((await Promise.all(replies)).map((r) => r.choices[0]?.message.content)).toEqual(['re: one', 're: two', 're: three']);
    expect(gated.started).toEqual(['one', 'two', 'three']);
    expect(gated.maxInFlight()).toBe(1);
  });

  it('re-creates typed errors on the requester side', async () => {
    const failures: Error[] = [
      new LLMUnavailableError('out-of-memory', 'The GPU ran out of memory while loading model M.', { modelId: 'M' }),
      new LLMServerError('http', 'the server answered 503', { status: 503, attempts: 3 }),
      new LabelLogitError('no logits captured'),
      new TypeError('boom'),
    ];
    let n = 0;
    const { client } = bridge({
      chat: {
        chatCompletion: async () => {
          throw failures[n++];
        },
      },
    });
    const oom = await client.chatCompletion(ask('a')).catch((e: unknown) => e);
    expect(oom).toBeInstanceOf(LLMUnavailableError);
    expect(oom).toMatchObject({ reason: 'out-of-memory', modelId: 'M', message: 'The GPU ran out of memory while loading model M.' });
    const server = await client.chatCompletion(ask('b')).catch((e: unknown) => e);
    expect(server).toBeInstanceOf(LLMServerError);
    expect(server).toMatchObject({ reason: 'http', status: 503, attempts: 3 });
    expect(await client.chatCompletion(ask('c')).catch((e: unknown) => e)).toBeInstanceOf(LabelLogitError);
    const plain = await client.chatCompletion(ask('d')).catch((e: unknown) => e);
    expect(plain).toBeInstanceOf(LLMRequestError);
    expect((plain as Error).message).toBe('TypeError: boom');
    // A kind the provider lacks fails with a configuration error, not a hang.
    await expect(client.embedding({ input: ['x'] })).rejects.toThrow(LLMConfigError);
    await expect(client.labelLogits({ messages: [] }, ['A'])).rejects.toThrow(/reads no label logits/);
  });

  it('converts errors to data and back for every typed class', () => {
    const cases: Error[] = [
      new LLMUnavailableError('no-shader-f16', 'needs shader-f16'),
      new LLMServerError('unsupported', 'no logprobs', { feature: 'logprobs' }),
      new LLMConfigError('bad'),
      new LLMAbortedError('given up'),
      new LLMRequestError('failed'),
    ];
    for (const error of cases) {
      const back = fromBridgeError(structuredClone(toBridgeError(error)));
      expect(back.constructor, error.name).toBe(error.constructor);
      expect(back.message).toBe(error.message);
    }
    expect(fromBridgeError(toBridgeError(cases[1]))).toMatchObject({ feature: 'logprobs', reason: 'unsupported' });
    // An unknown reason is not trusted: a plain request error.
    expect(fromBridgeError({ name: 'LLMUnavailableError', reason: 'gremlins', message: 'm' })).not.toBeInstanceOf(LLMUnavailableError);
    expect(toBridgeError('text')).toEqual({ name: 'Error', message: 'text' });
  });

  it('an aborted run rejects its pending requests and the provider drops those it has not started', async () => {
    const gated = gatedEngine();
    const controller = new AbortController();
    const { client, server } = bridge({ chat: gated.engine }, controller.signal);
    const replies = ['one', 'two', 'three'].map((t) => client.chatCompletion(ask(t)).catch((e: unknown) => e));
    await expect.poll(() => gated.started).toEqual(['one']);
    controller.abort('pause');
    for (const r of await Promise.all(replies)) {
      expect(r).toBeInstanceOf(LLMAbortedError);
      expect((r as Error).message).toMatch(/the run was paused/);
    }
    await expect.poll(() => server.stats.cancelled).toBe(2);
    await gated.release();
    await expect.poll(() => server.stats.chat).toBe(1);
    // The two queued requests never reached the engine.
    expect(gated.started).toEqual(['one']);
    await expect(client.chatCompletion(ask('later'))).rejects.toThrow(LLMAbortedError);
    expect(client.pendingCount).toBe(0);
  });

  it("an aborted run interrupts the provider's running generation (WebLLM's interruptGenerate), and so does closing", async () => {
    const engine = new ScriptedEngine({ chat: ['{}'], replyMs: 10_000 });
    const controller = new AbortController();
    let interrupts = 0;
    const { client, server } = bridge({ chat: engine, interrupt: () => (interrupts++, engine.interruptGenerate()) }, controller.signal);
    const started = performance.now();
    const reply = client.chatCompletion(ask('long')).catch((e: unknown) => e);
    await expect.poll(() => engine.requests.length).toBe(1);
    controller.abort('pause');
    expect(await reply).toBeInstanceOf(LLMAbortedError);
    // The engine stopped decoding at once instead of finishing the 10 s reply.
    await expect.poll(() => server.stats.chat).toBe(1);
    expect(performance.now() - started).toBeLessThan(5000);
    expect(interrupts).toBe(1);

    const second = new ScriptedEngine({ chat: ['{}'], replyMs: 10_000 });
    let closedUnder = 0;
    const other = bridge({ chat: second, interrupt: () => (closedUnder++, second.interruptGenerate()) });
    void other.client.chatCompletion(ask('long')).catch(() => undefined);
    await expect.poll(() => second.requests.length).toBe(1);
    other.server.close(new LLMRequestError('unloaded'));
    expect(closedUnder).toBe(1);
  });

  it('a client made with an aborted signal fails at once', async () => {
    const controller = new AbortController();
    controller.abort('stop');
    const { client } = bridge({ chat: new ScriptedEngine() }, controller.signal);
    await expect(client.chatCompletion(ask('x'))).rejects.toThrow(/the run was stopped/);
  });

  it('the provider closing with an error fails pending and later requests with it', async () => {
    const gated = gatedEngine();
    const { client, server } = bridge({ chat: gated.engine });
    const pending = client.chatCompletion(ask('one')).catch((e: unknown) => e);
    await expect.poll(() => gated.started).toEqual(['one']);
    server.close(new LLMRequestError('the local LLM was unloaded'));
    const error = await pending;
    expect(error).toBeInstanceOf(LLMRequestError);
    expect((error as Error).message).toBe('the local LLM was unloaded');
    await expect(client.embedding({ input: ['x'] })).rejects.toThrow('the local LLM was unloaded');
    expect(server.closed).toBe(true);
    await gated.release();
  });

  it('the requester closing ends the provider side', async () => {
    let closed = 0;
    const { client, server } = bridge({ chat: new ScriptedEngine() }, undefined, () => closed++);
    await client.chatCompletion(ask('x'));
    client.close();
    await expect.poll(() => closed).toBe(1);
    expect(server.closed).toBe(true);
    await expect(client.chatCompletion(ask('y'))).rejects.toThrow(/closed/);
  });

  it('answers a request kind it does not know with an error', async () => {
    const channel = new MessageChannel();
    const server = serveLLMBridge(channel.port1 as BridgeEndpoint, {});
    const reply = new Promise<unknown>((resolve) => {
      channel.port2.onmessage = (event) => resolve(event.data);
    });
    channel.port2.postMessage({ kind: 'tokenize', id: 9 });
    expect(await reply).toMatchObject({ kind: 'error', id: 9, error: { name: 'LLMConfigError', message: expect.stringMatching(/unknown LLM bridge request kind "tokenize"/) } });
    server.close();
    channel.port2.close();
  });
});
