/** The page's LLM controller (src/ui/llm/controller.ts) with the scripted engine in the real worker host. */
import { describe, expect, it } from 'vitest';
import type { DeviceFacts } from '../src/llm/catalogue.ts';
import type { AppConfig } from '../src/llm/engine.ts';
import { LLMController } from '../src/ui/llm/controller.ts';
import { createTrainingStore } from '../src/ui/state/store.ts';

const appConfig: AppConfig = {
  model_list: [{ model: 'https://example.invalid/chat', model_id: 'scripted-chat-q4f32_1-MLC', model_lib: 'https://example.invalid/chat.wasm', vram_required_MB: 100 }],
};
const device: DeviceFacts = { webgpu: true, shaderF16: false, isFallbackAdapter: true };

describe('LLMController', () => {
  it('checks a loaded client before reusing it, and reloads its models after a lost GPU device', async () => {
    const store = createTrainingStore();
    const controller = new LLMController(store, { appConfig, device, createWorker: () => new Worker(new URL('./fixtures/llm-worker.ts', import.meta.url), { type: 'module', name: 'lose-device' }) });
    const selection = { chatModel: 'scripted-chat-q4f32_1-MLC', embeddingModel: null };
    try {
      const client = await controller.load(selection);
      // The run's first request is answered; then the device is lost and WebLLM unloads the model.
      await client.chat.chatCompletion({ messages: [{ role: 'user', content: 'Write its initial state' }] });
      const again = await controller.load(selection);
      expect(again).toBe(client);
      expect(client.reloads).toBe(1);
      // The reused client answers at once: its models are loaded again.
      expect(await client.ensureLoaded()).toBe(false);
    } finally {
      controller.destroy();
    }
  });

  it('gives the chat model a logit processor only for a run whose LLM prior reads label logits', async () => {
    const store = createTrainingStore();
    const controller = new LLMController(store, { appConfig, device, createWorker: () => new Worker(new URL('./fixtures/llm-worker.ts', import.meta.url), { type: 'module', name: 'ok' }) });
    const selection = { chatModel: 'scripted-chat-q4f32_1-MLC', embeddingModel: null };
    try {
      const plain = await controller.load(selection);
      expect(plain.labelLogits).toBeNull();
      // WebLLM reads the registry at load: a run that needs the processor loads the model again.
      const withPrior = await controller.load({ ...selection, priorLogits: true });
      expect(withPrior).not.toBe(plain);
      expect(withPrior.labelLogits).not.toBeNull();
      // A run without the prior is served by the loaded model as it is.
      expect(await controller.load(selection)).toBe(withPrior);
    } finally {
      controller.destroy();
    }
  });
});
