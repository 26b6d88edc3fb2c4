import { describe, expect, it } from 'vitest';
import { CaptureRegistry, LabelLogitReader } from '../src/llm/logits.ts';
import { SideChannelClient, WorkerSideError, serveSideChannel } from '../src/llm/protocol.ts';
import { ScriptedEngine } from './fixtures/scripted-engine.ts';

function pair() {
  const engine = new ScriptedEngine({ logits: () => ({ A: 2, B: 1 }) });
  const registry = new CaptureRegistry();
  engine.setLogitProcessorRegistry(registry);
  engine.loadedModels = ['m'];
  const reader = new LabelLogitReader(engine, (id) => registry.get(id));
  const channel = new MessageChannel();
  serveSideChannel(channel.port2, {
    ping: async () => ({ engine: 'injected' }),
    configure: async (msg) => {
      registry.setCaptureModels(msg.captureModels);
      return { captureModels: msg.captureModels };
    },
    'label-logits': (msg) => reader.labelLogits(msg.request, msg.labels),
  });
  const client = new SideChannelClient(channel.port1);
  return { client, channel, engine };
}

describe('side channel', () => {
  it('round-trips typed requests', async () => {
    const { client, channel, engine } = pair();
    try {
      expect(await client.request<'ping'>({ kind: 'ping' })).toEqual({ engine: 'injected' });
      expect(await client.request<'configure'>({ kind: 'configure', captureModels: ['m'] })).toEqual({ captureModels: ['m'] });
      // WebLLM reads the logit processor registry when a model loads: the client configures, then loads.
      await engine.reload('m');
      const logits = await client.labelLogits({ messages: [{ role: 'user', content: 'A or B?' }], model: 'm' }, ['A', 'B']);
      expect(logits).toBeInstanceOf(Float32Array);
      expect([...logits]).toEqual([2, 1]);
    } finally {
      client.close();
      channel.port2.close();
    }
  });

  it('re-creates remote errors with their name, and rejects after close', async () => {
    const { client, channel } = pair();
    try {
      const error = await client.labelLogits({ messages: [{ role: 'user', content: 'x' }], model: 'm' }, ['A']).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(WorkerSideError);
      expect((error as WorkerSideError).remoteName).toBe('LabelLogitError');
      expect((error as Error).message).toMatch(/no logit processor is registered/);
    } finally {
      client.close();
      channel.port2.close();
    }
    await expect(client.request<'ping'>({ kind: 'ping' })).rejects.toThrow(/closed/);
  });
});
