import { describe, expect, it } from 'vitest';
import type { DeviceFacts } from '../src/llm/catalogue.ts';
import { createLLMClient, deleteCachedModel, detectDevice, listCachedModels } from '../src/llm/client.ts';
import type { AppConfig, InitProgressReport } from '../src/llm/engine.ts';
import { LLMAbortedError, LLMConfigError, LLMUnavailableError } from '../src/llm/errors.ts';
import { LLMExperienceModel } from '../src/experience/llm.ts';
import type { Task } from '../src/core/types.ts';

/** A model list for the scripted worker (it loads anything; the catalogue must know the ids). */
const scriptedConfig: AppConfig = {
  model_list: [
    { model: 'https://example.invalid/chat', model_id: 'scripted-chat-q4f32_1-MLC', model_lib: 'https://example.invalid/chat.wasm', vram_required_MB: 100 },
    { model: 'https://example.invalid/embed', model_id: 'scripted-embed-q0f32-MLC-b4', model_lib: 'https://example.invalid/embed.wasm', vram_required_MB: 50, model_type: 1 },
  ],
};
const fakeDevice: DeviceFacts = { webgpu: true, shaderF16: false, isFallbackAdapter: true };
const scriptedWorker = (name = 'ok') => () => new Worker(new URL('./fixtures/llm-worker.ts', import.meta.url), { type: 'module', name });

const task: Task = { id: 't1', env: 'shop', instruction: 'i need a red shoe', goal: {}, split: 'train', origin: 'seed' };

describe('LLM worker protocol (scripted engine in the real worker host)', () => {
  it('loads with progress, then chat, embeddings and label logits round-trip through the worker', async () => {
    const progress: InitProgressReport[] = [];
    const client = await createLLMClient({
      chatModel: 'scripted-chat-q4f32_1-MLC',
      embeddingModel: 'scripted-embed-q0f32-MLC-b4',
      appConfig: scriptedConfig,
      device: fakeDevice,
      createWorker: scriptedWorker(),
      logitCapture: true,
      onProgress: (r) => progress.push(r),
    });
    try {
      expect(client.chatModel).toBe('scripted-chat-q4f32_1-MLC');
      expect(progress.length).toBeGreaterThanOrEqual(5);
      expect(progress.at(-1)?.progress).toBe(1);
      expect(progress.at(-1)?.text).toContain('scripted-chat-q4f32_1-MLC');
      expect(client.chatContextWindow).toBeNull();

      // The experience model, through the worker.
      const model = new LLMExperienceModel(client.chat, { conversation: true });
      const observation = { text: 'Page: search', actions: ['search[red shoe]'] };
      const step = await model.step({ task, history: [], observation, action: 'search[red shoe]', demos: [] });
      expect(step).toMatchObject({ observation: { text: 'after search[red shoe]' }, reward: 0, done: false, valid: true });
      const next = await model.step({ task, history: [{ observation, action: 'search[red shoe]' }], observation: step.observation, action: 'click[buy now]', demos: [] });
      expect(next).toMatchObject({ reward: 1, done: true });
      expect(model.stats).toMatchObject({ calls: 2, extendedCalls: 1 });

      // Embeddings, dimension from the model.
      const embedder = await client.embedder();
      expect(embedder.dim).toBe(8);
      const vectors = await embedder.embed(['a', 'b', 'c', 'd', 'e']);
      expect(vectors).toHaveLength(5);

      // The policy prior through the worker's logit processor (side channel).
      expect(client.labelLogits).not.toBeNull();
      const prior = client.prior();
      const lp = await prior.score({ instruction: 'x', observation: { text: 'y', actions: ['a', 'b', 'c', 'd'] } });
      expect(prior.stats).toMatchObject({ logitPasses: 1, fallbacks: 0 });
      const expected = [0.5, 2, -1, 1];
      const lse = Math.log(expected.reduce((s, v) => s + Math.exp(v), 0));
      expected.forEach((v, i) => expect(lp[i]).toBeCloseTo(v - lse, 5));

      expect(await client.runtimeStats()).toMatch(/scripted engine/);
    } finally {
      client.terminate();
    }
    await expect(client.chat.chatCompletion({ messages: [{ role: 'user', content: 'x' }] })).rejects.toThrow(/terminated/);
  });

  it('a load failure in the worker becomes a typed error, fast', async () => {
    const started = performance.now();
    const error = await createLLMClient({
      chatModel: 'scripted-chat-q4f32_1-MLC',
      embeddingModel: null,
      appConfig: scriptedConfig,
      device: fakeDevice,
      createWorker: scriptedWorker('fail-load'),
    }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LLMUnavailableError);
    expect((error as LLMUnavailableError).reason).toBe('no-network');
    expect(performance.now() - started).toBeLessThan(5000);
  });

  it('a download that stops reporting progress fails with load-failed after fetchStallTimeoutMs', async () => {
    const started = performance.now();
    const error = await createLLMClient({
      chatModel: 'scripted-chat-q4f32_1-MLC',
      embeddingModel: null,
      appConfig: scriptedConfig,
      device: fakeDevice,
      createWorker: scriptedWorker('stall'),
      fetchStallTimeoutMs: 500,
    }).catch((e: unknown) => e);
    expect(error).toMatchObject({ reason: 'load-failed' });
    expect((error as Error).message).toMatch(/made no progress for 1 s while downloading the model/);
    expect(performance.now() - started).toBeLessThan(5000);
  });

  it('a healthy slow download (one report per finished weight shard) is not a stall; its time is told apart from loading', async () => {
    const progress: InitProgressReport[] = [];
    // One shard a second, while loading from the cache must report every half second.
    const client = await createLLMClient({
      chatModel: 'scripted-chat-q4f32_1-MLC',
      embeddingModel: null,
      appConfig: scriptedConfig,
      device: fakeDevice,
      createWorker: scriptedWorker('slow-fetch'),
      stallTimeoutMs: 500,
      onProgress: (r) => progress.push(r),
    });
    try {
      expect(progress.filter((r) => /^Fetching param cache/.test(r.text))).toHaveLength(4);
      expect(client.loadTimings.fetchMs).toBeGreaterThan(2500);
      expect(client.loadTimings.loadMs).toBeLessThan(client.loadTimings.fetchMs);
    } finally {
      client.terminate();
    }
  });

  it('after the GPU device is lost, a request reloads the models and goes through; ensureLoaded finds the loss first', async () => {
    const client = await createLLMClient({ chatModel: 'scripted-chat-q4f32_1-MLC', embeddingModel: 'scripted-embed-q0f32-MLC-b4', appConfig: scriptedConfig, device: fakeDevice, createWorker: scriptedWorker('lose-device') });
    try {
      const ask = { messages: [{ role: 'user' as const, content: 'Write its initial state' }] };
      await client.chat.chatCompletion(ask);
      // The device is gone now: WebLLM unloaded the models, its worker handler still lists them.
      expect(await client.ensureLoaded()).toBe(true);
      expect(client.reloads).toBe(1);
      expect(await client.ensureLoaded()).toBe(false);
      await client.chat.chatCompletion(ask);
      // Lost again: the next request itself reloads and is answered.
      const reply = await client.chat.chatCompletion(ask);
      expect(reply.choices[0]?.message.content).toContain('state');
      expect(client.reloads).toBe(2);
      expect((await client.embeddings.embedding({ input: ['a'] })).data).toHaveLength(1);
    } finally {
      client.terminate();
    }
  });

  it('dispose stops a worker that never finishes unloading', async () => {
    const client = await createLLMClient({ chatModel: 'scripted-chat-q4f32_1-MLC', embeddingModel: null, appConfig: scriptedConfig, device: fakeDevice, createWorker: scriptedWorker('hang-unload') });
    const started = performance.now();
    await client.dispose(300);
    expect(performance.now() - started).toBeLessThan(2000);
    await expect(client.chat.chatCompletion({ messages: [{ role: 'user', content: 'x' }] })).rejects.toThrow(/terminated/);
  });
  it('a load cancelled through its signal rejects with LLMAbortedError at once, not a load failure', async () => {
    const controller = new AbortController();
    const loading = createLLMClient({
      chatModel: 'scripted-chat-q4f32_1-MLC',
      embeddingModel: null,
      appConfig: scriptedConfig,
      device: fakeDevice,
      // Its load takes a minute: the person cancels it midway.
      createWorker: scriptedWorker('stall'),
      signal: controller.signal,
    }).catch((e: unknown) => e);
    await new Promise((resolve) => setTimeout(resolve, 500));
    const started = performance.now();
    controller.abort();
    const error = await loading;
    expect(error).toBeInstanceOf(LLMAbortedError);
    expect((error as Error).message).toMatch(/cancelled/);
    expect(performance.now() - started).toBeLessThan(1000);
    // An already aborted signal loads nothing.
    await expect(createLLMClient({ chatModel: 'scripted-chat-q4f32_1-MLC', embeddingModel: null, appConfig: scriptedConfig, device: fakeDevice, createWorker: scriptedWorker(), signal: controller.signal })).rejects.toThrow(LLMAbortedError);
  });
});

describe('real WebLLM without a model hub', () => {
  it('detects this adapter', async () => {
    const facts = await detectDevice();
    // Headless Chromium with --enable-unsafe-webgpu: SwiftShader, no shader-f16.
    if (facts.webgpu) {
      expect(facts.isFallbackAdapter).toBe(true);
      expect(facts.shaderF16).toBe(false);
    }
  });

  it('loading a real model fails within seconds with a plain "could not be downloaded" error', async () => {
    const started = performance.now();
    const error = await createLLMClient({ chatModel: 'SmolLM2-135M-Instruct-q0f32-MLC', embeddingModel: null, stallTimeoutMs: 15_000 }).catch((e: unknown) => e);
    const elapsed = performance.now() - started;
    expect(error).toBeInstanceOf(LLMUnavailableError);
    const e = error as LLMUnavailableError;
    if ((await detectDevice()).webgpu) {
      expect(e.reason).toBe('no-network');
      expect(e.message).toMatch(/SmolLM2-135M-Instruct-q0f32-MLC could not be downloaded/);
    } else {
      expect(e.reason).toBe('no-webgpu');
    }
    expect(elapsed).toBeLessThan(10_000);
    console.info(`real WebLLM load failed in ${elapsed.toFixed(0)} ms: ${e.reason}: ${e.message.slice(0, 160)}`);
  });

  it('refuses an f16 model on this GPU at once, naming the f32 variant', async () => {
    const device = await detectDevice();
    if (!device.webgpu || device.shaderF16) return;
    const error = await createLLMClient({ chatModel: 'SmolLM2-360M-Instruct-q4f16_1-MLC', embeddingModel: null }).catch((e: unknown) => e);
    expect(error).toMatchObject({ reason: 'no-shader-f16' });
    expect((error as Error).message).toContain('SmolLM2-360M-Instruct-q4f32_1-MLC');
  });

  it('lists and deletes cached models (none here), with a configurable cache backend', async () => {
    const appConfig: AppConfig = { model_list: scriptedConfig.model_list };
    expect(await listCachedModels({ appConfig })).toEqual([]);
    expect(await listCachedModels({ appConfig, cacheBackend: 'indexeddb' })).toEqual([]);
    await deleteCachedModel('scripted-chat-q4f32_1-MLC', { appConfig });
    await expect(deleteCachedModel('nope', { appConfig })).rejects.toThrow(LLMConfigError);
    await expect(listCachedModels({ appConfig, cacheBackend: 'floppy' as 'cache' })).rejects.toThrow(/got "floppy"/);
  });

  it('counts a model as cached only with its weights, model library and chat config all in the cache', async () => {
    const base = 'https://example.invalid/chat/resolve/main/';
    const appConfig: AppConfig = { model_list: scriptedConfig.model_list };
    const model = await caches.open('webllm/model');
    const wasm = await caches.open('webllm/wasm');
    const config = await caches.open('webllm/config');
    try {
      await model.put(`${base}tensor-cache.json`, new Response(JSON.stringify({ records: [{ dataPath: 'params_shard_0.bin' }] })));
      await model.put(`${base}params_shard_0.bin`, new Response(new Uint8Array(8)));
      // Weights alone: loading would still download the library and the config.
      expect(await listCachedModels({ appConfig })).toEqual([]);
      await wasm.put('https://example.invalid/chat.wasm', new Response(new Uint8Array(8)));
      expect(await listCachedModels({ appConfig })).toEqual([]);
      await config.put(`${base}mlc-chat-config.json`, new Response('{}'));
      expect(await listCachedModels({ appConfig })).toEqual(['scripted-chat-q4f32_1-MLC']);
    } finally {
      await model.delete(`${base}tensor-cache.json`);
      await model.delete(`${base}params_shard_0.bin`);
      await wasm.delete('https://example.invalid/chat.wasm');
      await config.delete(`${base}mlc-chat-config.json`);
    }
  });
});
