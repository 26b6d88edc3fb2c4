/**
 * Every `response_format` the project sends to WebLLM, compiled with WebLLM's own bundled grammar
 * compiler (XGrammar, run in Node without a GPU) exactly as `MLCEngine` compiles it before
 * sampling: a request the real engine would refuse fails here. The requests are captured from the
 * modules that send them (task generator, experience model in every constraint and reasoning
 * setting, policy prior and its label calibration), not copied.
 */
import { describe, expect, it } from 'vitest';
import { type Task, agentView } from '../src/core/types.ts';
import { LLMTaskGenerator } from '../src/curriculum/generator.ts';
import { getEnvSpec } from '../src/envs/registry.ts';
import { LLMExperienceModel } from '../src/experience/llm.ts';
import { GRAMMAR_MAX_WS, OUTPUT_LIMITS } from '../src/experience/llm-output.ts';
import type { ChatCompletionRequestNonStreaming } from '../src/llm/engine.ts';
import { CaptureRegistry, LabelLogitReader, PRIOR_LABELS } from '../src/llm/logits.ts';
import { LLMPrior } from '../src/llm/prior.ts';
import { ScriptedEngine, echoScript, stepReply } from './fixtures/scripted-engine.ts';
import { compileResponseFormat, loadXGrammar } from './fixtures/xgrammar.ts';

const xg = loadXGrammar();

function formatKey(request: ChatCompletionRequestNonStreaming): string {
  return JSON.stringify(request.response_format ?? null);
}

/** The distinct constrained requests among `requests`. */
function distinctFormats(requests: readonly ChatCompletionRequestNonStreaming[]): ChatCompletionRequestNonStreaming[] {
  const seen = new Map<string, ChatCompletionRequestNonStreaming>();
  for (const r of requests) if (r.response_format) seen.set(formatKey(r), r);
  return [...seen.values()];
}

async function expectAllCompile(requests: readonly ChatCompletionRequestNonStreaming[]): Promise<void> {
  expect(requests.length).toBeGreaterThan(0);
  for (const r of requests) {
    const result = await compileResponseFormat(xg, r);
    expect(result, formatKey(r).slice(0, 300)).toEqual({ ok: true });
  }
}

/** Whether XGrammar's grammar for `schema` accepts `text` whole. */
async function schemaAccepts(schema: string, text: string): Promise<boolean> {
  return xg.Testings.isGrammarAcceptString(await xg.Testings._jsonSchemaToEBNF(schema), text);
}

const seed = (env: 'shop' | 'household'): Task => getEnvSpec(env).tasks({ split: 'train', count: 1, seed: 5 })[0] as Task;

describe("WebLLM's grammar compiler", () => {
  it('refuses what WebLLM refuses: a json_object without a schema, and a broken grammar', async () => {
    expect((await compileResponseFormat(xg, { response_format: { type: 'json_object' } })).ok).toBe(false);
    expect(await compileResponseFormat(loadXGrammar(), { response_format: { type: 'grammar', grammar: 'root ::= missing' } })).toMatchObject({ ok: false });
    expect(await compileResponseFormat(xg, { response_format: { type: 'json_object', schema: '{"type":"object"}' } })).toEqual({ ok: true });
  });
});

describe('the task generator', () => {
  it("sends a response_format WebLLM compiles, for every environment's seeds", async () => {
    const engine = new ScriptedEngine({ chat: echoScript });
    const generator = new LLMTaskGenerator(engine, { perSeed: 3 });
    await generator.generateWithReport([seed('shop'), seed('household')], 4);
    await expectAllCompile(distinctFormats(engine.requests));
  });

  it("its schema accepts a reply in the requested form and refuses more tasks than asked for", async () => {
    const engine = new ScriptedEngine({ chat: echoScript });
    await new LLMTaskGenerator(engine, { perSeed: 2 }).generateWithReport([seed('shop')], 2);
    const schema = (engine.requests[0]?.response_format as { schema: string }).schema;
    const task = { instruction: 'i want a red shirt', goal: { category: 'fashion', attributes: ['red'] } };
    expect(await schemaAccepts(schema, JSON.stringify({ tasks: [task, task] }))).toBe(true);
    expect(await schemaAccepts(schema, JSON.stringify({ tasks: [task, task, task] }))).toBe(false);
  });
});

describe('the experience model', () => {
  it('sends response formats WebLLM compiles, in every constraint and reasoning setting', async () => {
    const requests: ChatCompletionRequestNonStreaming[] = [];
    for (const constraint of ['json-schema', 'grammar'] as const) {
      for (const reasoning of [true, false]) {
        const engine = new ScriptedEngine({ chat: echoScript });
        const model = new LLMExperienceModel(engine, { constraint, reasoning });
        const task = agentView(seed('shop'));
        await model.reset(task, []).catch(() => undefined);
        await model.step({ task, history: [], observation: { text: 'Start page', actions: ['search[shirt]'] }, action: 'search[shirt]', demos: [] }).catch(() => undefined);
        requests.push(...engine.requests);
      }
    }
    const formats = distinctFormats(requests);
    expect(formats.length).toBe(8);
    await expectAllCompile(formats);
  });

  it('bounds the lists, one-line strings and numbers of a step reply in the JSON schema', async () => {
    const engine = new ScriptedEngine({ chat: echoScript });
    const task = agentView(seed('shop'));
    await new LLMExperienceModel(engine).step({ task, history: [], observation: { text: 'Start page', actions: ['search[shirt]'] }, action: 'search[shirt]', demos: [] });
    const schema = (engine.requests[0]?.response_format as { schema: string }).schema;
    expect(await schemaAccepts(schema, stepReply({ text: 'Page: results\n[B01] shirt' }))).toBe(true);
    expect(await schemaAccepts(schema, stepReply({ actions: Array.from({ length: OUTPUT_LIMITS.actions + 1 }, (_, i) => `a${i}`) }))).toBe(false);
    expect(await schemaAccepts(schema, stepReply({ actions: ['x'.repeat(OUTPUT_LIMITS.action + 1)] }))).toBe(false);
    expect(await schemaAccepts(schema, stepReply({ reward: 2 }))).toBe(false);
  });

  it('bounds whitespace and every string of a step reply in the EBNF grammar', async () => {
    const engine = new ScriptedEngine({ chat: echoScript });
    const task = agentView(seed('shop'));
    await new LLMExperienceModel(engine, { constraint: 'grammar' }).step({ task, history: [], observation: { text: 'Start page', actions: ['search[shirt]'] }, action: 'search[shirt]', demos: [] });
    const grammar = (engine.requests[0]?.response_format as { grammar: string }).grammar;
    const accepts = (text: string): Promise<boolean> => xg.Testings.isGrammarAcceptString(grammar, text);
    expect(await accepts(stepReply({ text: 'Page: results\n[B01] "shirt"' }))).toBe(true);
    expect(await accepts(JSON.stringify(JSON.parse(stepReply()), null, 2))).toBe(true);
    expect(await accepts(`{${' '.repeat(GRAMMAR_MAX_WS + 1)}${stepReply().slice(1)}`)).toBe(false);
    expect(await accepts(stepReply({ reasoning: 'x'.repeat(OUTPUT_LIMITS.reasoning + 1) }))).toBe(false);
    expect(await accepts(stepReply({ actions: ['x'.repeat(OUTPUT_LIMITS.action + 1)] }))).toBe(false);
  });
});

describe('the policy prior', () => {
  it('sends label grammars WebLLM compiles (label logits, their calibration, and the logprobs path)', async () => {
    const model = 'scripted-chat';
    const feed = (): Record<string, number> => Object.fromEntries(PRIOR_LABELS.map((l, i) => [l, Math.sin(i + 1)]));
    const engine = new ScriptedEngine({ logits: feed });
    const registry = new CaptureRegistry();
    registry.setCaptureModels([model]);
    engine.setLogitProcessorRegistry(registry);
    await engine.reload(model);
    const reader = new LabelLogitReader(engine, (id) => registry.get(id));
    const ctx = { instruction: 'buy a red shoe', history: [], observation: { text: 'results', actions: Array.from({ length: 60 }, (_, i) => `click[item ${i}]`) } };
    await new LLMPrior(engine, reader, { model }).score(ctx);
    await new LLMPrior(engine, null, { model }).score(ctx);
    await expectAllCompile(distinctFormats(engine.requests));
  });
});
