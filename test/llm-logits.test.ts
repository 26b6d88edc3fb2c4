import { describe, expect, it } from 'vitest';
import { LLMConfigError } from '../src/llm/errors.ts';
import {
  AsyncLock,
  CaptureRegistry,
  LabelCaptureProcessor,
  LabelLogitError,
  LabelLogitReader,
  PRIOR_LABELS,
  ebnfLiteral,
  labelGrammar,
  logSoftmax,
} from '../src/llm/logits.ts';
import { Ebnf } from './fixtures/llm-ebnf.ts';
import type { ChatEngine } from '../src/llm/engine.ts';
import { ScriptedEngine } from './fixtures/scripted-engine.ts';

const MODEL = 'scripted-chat';

function setup(feed: Record<string, number> = { A: 1, B: 3, C: -2 }) {
  const engine = new ScriptedEngine({ logits: () => feed });
  const registry = new CaptureRegistry();
  registry.setCaptureModels([MODEL]);
  engine.setLogitProcessorRegistry(registry);
  engine.loadedModels = [MODEL];
  const reader = new LabelLogitReader(engine, (id) => registry.get(id));
  return { engine, registry, reader };
}

const messages = [{ role: 'user' as const, content: 'A. x\nB. y\nC. z' }];

describe('labels and grammar', () => {
  it('has 52 single-character labels', () => {
    expect(PRIOR_LABELS).toHaveLength(52);
    expect(new Set(PRIOR_LABELS).size).toBe(52);
    expect(PRIOR_LABELS.every((l) => l.length === 1)).toBe(true);
  });

  it('writes a grammar that accepts exactly the labels', () => {
    const g = new Ebnf(labelGrammar(['A', 'B', 'c']));
    expect(g.accepts('A')).toBe(true);
    expect(g.accepts('c')).toBe(true);
    expect(g.accepts('C')).toBe(false);
    expect(g.accepts('AB')).toBe(false);
    expect(g.accepts('')).toBe(false);
    expect(ebnfLiteral('a"b\\c')).toBe('"a\\"b\\\\c"');
    expect(new Ebnf(`root ::= ${ebnfLiteral('a"b\\c')}`).accepts('a"b\\c')).toBe(true);
    expect(() => labelGrammar([])).toThrow(LLMConfigError);
  });
});

describe('logSoftmax', () => {
  it('normalises and stays finite for finite input', () => {
    const lp = logSoftmax([1, 2, 3, 1000]);
    expect([...lp].reduce((s, v) => s + Math.exp(v), 0)).toBeCloseTo(1, 6);
    expect([...lp].every(Number.isFinite)).toBe(true);
    expect(lp[3]).toBeCloseTo(0, 6);
  });
  it('gives a uniform answer when nothing is finite', () => {
    expect([...logSoftmax([-Infinity, -Infinity])]).toEqual([-Math.log(2), -Math.log(2)].map((v) => Math.fround(v)));
  });
});

describe('LabelCaptureProcessor', () => {
  it('is a pass-through no-op until armed', () => {
    const p = new LabelCaptureProcessor();
    const logits = new Float32Array([1, 2, 3]);
    expect(p.processLogits(logits)).toBe(logits);
    p.processSampledToken(2);
    expect(p.disarm()).toEqual({ values: null, token: null });
  });
  it('copies the armed ids on the first forward pass only', () => {
    const p = new LabelCaptureProcessor();
    p.armCapture([2, 0, 9]);
    p.processLogits(new Float32Array([1, 2, 3]));
    p.processLogits(new Float32Array([7, 7, 7]));
    const { values } = p.disarm();
    expect(values?.[0]).toBe(3);
    expect(values?.[1]).toBe(1);
    expect(values?.[2]).toBeNaN();
  });
  it('records the first sampled token when armed for it', () => {
    const p = new LabelCaptureProcessor();
    p.armSampled();
    p.processSampledToken(5);
    p.processSampledToken(6);
    expect(p.disarm().token).toBe(5);
  });
});

describe('CaptureRegistry', () => {
  it('gives a processor only to the named models, the same one each time', () => {
    const r = new CaptureRegistry();
    expect(r.has('m')).toBe(false);
    expect(r.get('m')).toBeUndefined();
    r.setCaptureModels(['m']);
    expect(r.has('m')).toBe(true);
    expect(r.get('m')).toBeInstanceOf(LabelCaptureProcessor);
    expect(r.get('m')).toBe(r.get('m'));
    expect(r.get('other')).toBeUndefined();
  });
});

describe('LabelLogitReader (scripted logit feed)', () => {
  it('calibrates each label once, then reads its raw logit in one forward pass', async () => {
    const { engine, reader } = setup();
    const values = await reader.labelLogits({ messages, model: MODEL }, ['A', 'B', 'C']);
    expect([...values]).toEqual([1, 3, -2]);
    // 6 calibration requests (each label, then each label after a space: this vocabulary has no such token), then the read.
    expect(engine.requests).toHaveLength(7);
    for (const r of engine.requests) expect(r.max_tokens).toBe(1);
    expect(engine.requests[0]?.response_format).toEqual({ type: 'grammar', grammar: 'root ::= "A"' });
    expect(engine.requests[3]?.response_format).toEqual({ type: 'grammar', grammar: 'root ::= " A"' });
    expect(engine.requests[6]?.response_format).toEqual({ type: 'grammar', grammar: 'root ::= "A" | "B" | "C"' });
    expect(reader.calibrated.get(`${MODEL}\u0000B`)).toBe(engine.vocab.indexOf('B'));

    const again = await reader.labelLogits({ messages, model: MODEL }, ['B', 'A']);
    expect([...again]).toEqual([3, 1]);
    expect(engine.requests).toHaveLength(8);
  });

  it('fails with a typed error when no processor is registered for the model', async () => {
    const { reader } = setup();
    await expect(reader.labelLogits({ messages, model: 'unregistered' }, ['A', 'B'])).rejects.toThrow(LabelLogitError);
    await expect(reader.labelLogits({ messages, model: 'unregistered' }, ['A', 'B'])).rejects.toThrow(/no logit processor is registered for model "unregistered"/);
  });

  it('rejects empty or repeated labels', async () => {
    const { reader } = setup();
    await expect(reader.labelLogits({ messages, model: MODEL }, [])).rejects.toThrow(LLMConfigError);
    await expect(reader.labelLogits({ messages, model: MODEL }, ['A', 'A'])).rejects.toThrow(/distinct labels/);
  });

  it('fails when the engine never calls the processor', async () => {
    const engine = new ScriptedEngine();
    const registry = new CaptureRegistry();
    registry.setCaptureModels([MODEL]);
    // The registry is not handed to the engine: the processor sees no forward pass.
    const reader = new LabelLogitReader(engine, (id) => registry.get(id));
    await expect(reader.labelLogits({ messages, model: MODEL }, ['A', 'B'])).rejects.toThrow(/reported no sampled token/);
  });
});

describe('LabelLogitReader: calibration', () => {
  it("counts a label's space-prefixed token too (SentencePiece spells a reply's first letter \"▁A\"), as the log of the summed weights", async () => {
    const engine = new ScriptedEngine({ vocab: [' A'], logits: () => ({ A: 1, ' A': 2, B: 3 }) });
    const registry = new CaptureRegistry();
    registry.setCaptureModels([MODEL]);
    engine.setLogitProcessorRegistry(registry);
    await engine.reload(MODEL);
    const reader = new LabelLogitReader(engine, (id) => registry.get(id));
    const values = await reader.labelLogits({ messages, model: MODEL }, ['A', 'B']);
    expect(values[0]).toBeCloseTo(Math.log(Math.exp(1) + Math.exp(2)), 5);
    expect(values[1]).toBeCloseTo(3, 5);
    // The read's grammar admits both spellings of A, and B alone (it has no spaced token here).
    expect(engine.requests.at(-1)?.response_format).toEqual({ type: 'grammar', grammar: 'root ::= "A" | "B" | " A"' });
  });

  it('takes the argmax token with its logprobs, and refuses a token that does not spell the label', async () => {
    const { engine, registry } = setup();
    await new LabelLogitReader(engine, (id) => registry.get(id)).labelLogits({ messages, model: MODEL }, ['A']);
    expect(engine.requests[0]).toMatchObject({ temperature: 0, logprobs: true, top_logprobs: 1, max_tokens: 1 });
    // An engine whose one token spells more than the label (a merged or partial token).
    const misspelled: ChatEngine = {
      chatCompletion: async (request) => {
        const reply = await engine.chatCompletion(request);
        const entry = reply.choices[0]?.logprobs?.content?.[0];
        if (entry) Object.assign(entry, { token: 'A.', bytes: [65, 46] });
        return reply;
      },
    };
    const reader = new LabelLogitReader(misspelled, (id) => registry.get(id));
    await expect(reader.labelLogits({ messages, model: MODEL }, ['A'])).rejects.toThrow(/spells "A\."/);
    expect(reader.calibrated.size).toBe(0);
  });
});

describe('AsyncLock', () => {
  it('runs work one at a time in FIFO order, surviving failures', async () => {
    const lock = new AsyncLock();
    const log: string[] = [];
    const job = (name: string, ms: number, fail = false) =>
      lock.run(async () => {
        log.push(`start ${name}`);
        await new Promise((r) => setTimeout(r, ms));
        log.push(`end ${name}`);
        if (fail) throw new Error(name);
        return name;
      });
    const results = await Promise.allSettled([job('a', 20), job('b', 1, true), job('c', 1)]);
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect(log).toEqual(['start a', 'end a', 'start b', 'end b', 'start c', 'end c']);
  });

  it('acquire holds the lock until released', async () => {
    const lock = new AsyncLock();
    const release = await lock.acquire();
    let ran = false;
    const p = lock.run(async () => {
      ran = true;
    });
    await new Promise((r) => setTimeout(r, 5));
    expect(ran).toBe(false);
    release();
    await p;
    expect(ran).toBe(true);
  });
});
