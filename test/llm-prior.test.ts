import { describe, expect, it } from 'vitest';
import { LLMConfigError } from '../src/llm/errors.ts';
import { CaptureRegistry, LabelLogitReader, logSoftmax, PRIOR_LABELS } from '../src/llm/logits.ts';
import { LexicalPrior, LLMPrior, MIN_LOG_PROB, type PriorContext, UniformPrior, lexicalLogProbs, priorMessages, uniformLogProbs } from '../src/llm/prior.ts';
import { ScriptedEngine } from './fixtures/scripted-engine.ts';

const MODEL = 'scripted-chat';

function context(n: number): PriorContext {
  return {
    instruction: 'i need a red running shoe',
    history: [{ action: 'search[red running shoe]' }],
    observation: { text: 'Page: results\n[B01] Red Running Shoe | $20', actions: Array.from({ length: n }, (_, i) => `click[item ${i}]`) },
  };
}

/** Logit feed: label i gets logit sin(i) * 3 (distinct, mixed signs). */
function feed(): Record<string, number> {
  return Object.fromEntries(PRIOR_LABELS.map((l, i) => [l, Math.sin(i + 1) * 3]));
}

function engineWithProcessor() {
  const engine = new ScriptedEngine({ logits: feed });
  const registry = new CaptureRegistry();
  registry.setCaptureModels([MODEL]);
  engine.setLogitProcessorRegistry(registry);
  engine.loadedModels = [MODEL];
  return { engine, reader: new LabelLogitReader(engine, (id) => registry.get(id)) };
}

function sumExp(v: Float32Array): number {
  return [...v].reduce((s, x) => s + Math.exp(x), 0);
}

describe('priors without an LLM', () => {
  it('uniform: -log n each', async () => {
    const lp = await new UniformPrior().score(context(4));
    expect([...lp]).toEqual(new Array(4).fill(Math.fround(-Math.log(4))));
    expect(() => uniformLogProbs(0)).toThrow(/got 0/);
  });

  it('lexical: candidates sharing words with the instruction get more mass', async () => {
    const ctx: PriorContext = { instruction: 'put a clean apple in fridge', observation: { text: '', actions: ['take apple 1 from countertop 1', 'go to sofa 1', 'open fridge 1'] } };
    const lp = await new LexicalPrior().score(ctx);
    expect(sumExp(lp)).toBeCloseTo(1, 5);
    expect(lp[0]).toBeGreaterThan(lp[1] as number);
    expect(lp[2]).toBeGreaterThan(lp[1] as number);
    expect([...lexicalLogProbs('x', ['a', 'b'], 0)]).toEqual([Math.fround(-Math.log(2)), Math.fround(-Math.log(2))]);
    expect(() => new LexicalPrior({ strength: -1 })).toThrow(/got -1/);
    expect(() => new LexicalPrior({ repeatPenalty: Number.NaN })).toThrow(/repeatPenalty.*got NaN/);
    await expect(new LexicalPrior().score({ instruction: 'x', observation: { text: '', actions: [] } })).rejects.toThrow(LLMConfigError);
  });
});

describe('lexical prior: numbers', () => {
  it('leaves out instance numbers beside other words and keeps a number that stands alone', () => {
    const place = lexicalLogProbs('put a peppershaker in cabinet', ['go to cabinet 1', 'go to drawer 12', 'take peppershaker 2 from drawer 3'], 3);
    // "cabinet" is all of "go to cabinet 1" that counts: full overlap, 3 log-odds over no overlap.
    expect((place[0] as number) - (place[1] as number)).toBeCloseTo(3, 5);
    // take, peppershaker, drawer: one word of three ("from" is a stop word).
    expect((place[2] as number) - (place[1] as number)).toBeCloseTo(1, 5);
    const size = lexicalLogProbs('shoes in size 10', ['click[10]', 'click[12]'], 3);
    expect((size[0] as number) - (size[1] as number)).toBeCloseTo(3, 5);
  });
});

describe('lexical prior: repeats', () => {
  it('takes mass off actions the episode already took, more for each time', async () => {
    const observation = { text: '', actions: ['click[red]', 'click[blue]', 'click[buy now]'] };
    const fresh = await new LexicalPrior().score({ instruction: 'a red mug', observation });
    expect(fresh[0]).toBeGreaterThan(fresh[2] as number);
    const once = await new LexicalPrior().score({ instruction: 'a red mug', history: [{ action: 'click[red]' }], observation });
    const twice = await new LexicalPrior().score({ instruction: 'a red mug', history: [{ action: 'click[red]' }, { action: 'click[red]' }], observation });
    // Overlap 3 - one repeat 2 = 1 > 0 (buy now); a second repeat puts it below the untried ones.
    expect(once[0]).toBeGreaterThan(once[2] as number);
    expect(twice[0]).toBeLessThan(twice[2] as number);
    expect(twice[1]).toBeCloseTo(twice[2] as number, 6);
    // Without a penalty, history changes nothing.
    const off = await new LexicalPrior({ repeatPenalty: 0 }).score({ instruction: 'a red mug', history: [{ action: 'click[red]' }, { action: 'click[red]' }], observation });
    expect([...off]).toEqual([...fresh]);
  });
});

describe('priorMessages', () => {
  it('lists the candidates with single-token labels', () => {
    const m = priorMessages(context(3), PRIOR_LABELS);
    expect(m[1]?.content).toMatchInlineSnapshot(`
      "Task: i need a red running shoe
      Previous actions: search[red running shoe]

      Current state:
      Page: results
      [B01] Red Running Shoe | $20

      Candidate actions:
      A. click[item 0]
      B. click[item 1]
      C. click[item 2]

      Which action should the agent take next? Answer with its letter only."
    `);
    expect(() => priorMessages(context(3), ['A'])).toThrow(/3 candidates but only 1 labels/);
  });
});

describe('LLMPrior', () => {
  it('scores all candidates in one forward pass through the logit processor', async () => {
    const { engine, reader } = engineWithProcessor();
    const prior = new LLMPrior(engine, reader, { model: MODEL });
    const lp = await prior.score(context(6));
    const expected = logSoftmax(PRIOR_LABELS.slice(0, 6).map((l) => feed()[l] as number));
    for (let i = 0; i < 6; i++) expect(lp[i]).toBeCloseTo(expected[i] as number, 5);
    expect(sumExp(lp)).toBeCloseTo(1, 5);
    expect(prior.stats.logitPasses).toBe(1);
    const before = engine.requests.length;
    await prior.score(context(6));
    expect(engine.requests.length - before).toBe(1); // labels already calibrated: one forward pass
  });

  it('falls back to chained top_logprobs passes and gets the same distribution', async () => {
    const { engine } = engineWithProcessor();
    const prior = new LLMPrior(engine, null, { model: MODEL, readout: 'logprobs' });
    const lp = await prior.score(context(12));
    const expected = logSoftmax(PRIOR_LABELS.slice(0, 12).map((l) => feed()[l] as number));
    for (let i = 0; i < 12; i++) expect(lp[i]).toBeCloseTo(expected[i] as number, 4);
    // 12 candidates, 5 per pass: passes score 5, 5, then the remaining 2 need one more pass.
    expect(prior.stats.logprobPasses).toBe(3);
    for (const r of engine.requests) {
      expect(r.logprobs).toBe(true);
      expect(r.top_logprobs).toBeLessThanOrEqual(5);
      expect(r.temperature).toBe(1);
    }
  });

  it("'auto' falls back to logprobs when the logit processor fails", async () => {
    const engine = new ScriptedEngine({ logits: feed });
    engine.loadedModels = [MODEL];
    const failing = { labelLogits: async () => Promise.reject(new Error('no processor')) };
    const prior = new LLMPrior(engine, failing, { model: MODEL });
    const lp = await prior.score(context(3));
    expect(sumExp(lp)).toBeCloseTo(1, 4);
    expect(prior.stats.fallbacks).toBe(1);
    expect(prior.stats.logprobPasses).toBe(1);
    await prior.score(context(3));
    expect(prior.stats.fallbacks).toBe(1);
  });

  it("'logit-processor' surfaces the failure instead", async () => {
    const engine = new ScriptedEngine();
    const failing = { labelLogits: async () => Promise.reject(new Error('no processor')) };
    await expect(new LLMPrior(engine, failing, { readout: 'logit-processor' }).score(context(3))).rejects.toThrow('no processor');
    expect(() => new LLMPrior(engine, null, { readout: 'logit-processor' })).toThrow(/needs a label-logit source/);
  });

  it('scores more than 52 candidates in chunks, every value finite, one candidate for free', async () => {
    const { engine, reader } = engineWithProcessor();
    const prior = new LLMPrior(engine, reader, { model: MODEL });
    const lp = await prior.score(context(60));
    expect(lp).toHaveLength(60);
    expect([...lp].every((v) => Number.isFinite(v) && v >= MIN_LOG_PROB)).toBe(true);
    expect(sumExp(lp)).toBeCloseTo(1, 4);
    const before = engine.requests.length;
    expect([...(await prior.score(context(1)))]).toEqual([0]);
    expect(engine.requests.length).toBe(before);
  });

  it('checks its settings loudly', () => {
    const engine = new ScriptedEngine();
    expect(() => new LLMPrior(engine, null, { readout: 'magic' as 'auto' })).toThrow(/got "magic"/);
    expect(() => new LLMPrior(engine, null, { maxStateChars: 0 })).toThrow(/maxStateChars must be a positive integer, got 0/);
  });
});
