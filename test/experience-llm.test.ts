import { describe, expect, it, vi } from 'vitest';
import { Rng } from '../src/core/rng.ts';
import { type AgentTask, type EnvName, type JsonValue, type Observation, type Task, agentView } from '../src/core/types.ts';
import { getEnvSpec } from '../src/envs/registry.ts';
import { type CallRecord, DEFAULT_LLM_EXPERIENCE_CONFIG, ExperienceParseError, type LLMExperienceConfig, LLMExperienceModel } from '../src/experience/llm.ts';
import { STEP_GRAMMAR, STEP_JSON_SCHEMA } from '../src/experience/llm-output.ts';
import type { Demonstration, ExperienceStep, HistoryStep } from '../src/experience/types.ts';
import { REPLY_FORMAT, RESET_FORMAT } from '../src/experience/prompt.ts';
import type { ChatCompletion, ChatCompletionMessageParam, ChatCompletionRequestNonStreaming } from '../src/llm/engine.ts';
import { LLMConfigError, LLMRequestError } from '../src/llm/errors.ts';
import { importGraph, importSpecifiers } from './fixtures/import-graph.ts';
import { ScriptedEngine, echoScript, mirrorScript, stepReply } from './fixtures/scripted-engine.ts';

/** A string that appears only in tasks' goals: it must never reach the experience model. */
const MARKER = 'ZQXMARKER123';

const task = getEnvSpec('shop').tasks({ split: 'train', count: 1, seed: 1 })[0] as Task;
const start: Observation = getEnvSpec('shop').create().reset(task);
const demo = (i: number): Demonstration => ({
  state: `Page: results ${i}`,
  action: `click[B0${i}]`,
  nextState: `Page: item B0${i}`,
  nextActions: ['click[buy now]'],
  reward: 0,
  done: false,
  valid: true,
  score: 1 - i / 10,
});
const demos = [demo(1), demo(2), demo(3), demo(4)];

/** Runs `actions` as one synthetic trajectory: each step's state is the previous prediction. */
async function rollout(model: LLMExperienceModel, actions: readonly string[], first: Observation = start, t: Task = task): Promise<ExperienceStep[]> {
  const history: HistoryStep[] = [];
  let observation = first;
  const out: ExperienceStep[] = [];
  for (const action of actions) {
    const step = await model.step({ task: t, history, observation, action, demos });
    out.push(step);
    history.push({ observation, action });
    observation = step.observation;
    if (step.done) break;
  }
  return out;
}

function contents(messages: readonly ChatCompletionMessageParam[]): string[] {
  return messages.map((m) => `${m.role}: ${String(m.content).slice(0, 40)}`);
}

describe('LLMExperienceModel: conversation per trajectory', () => {
  it('each step adds one turn, and each request extends the previous one (KV-cache reuse)', async () => {
    const engine = new ScriptedEngine({ chat: echoScript });
    const model = new LLMExperienceModel(engine, { conversation: true, model: 'chat' });
    const steps = await rollout(model, ['search[cat litter]', 'click[next]', 'click[next]', 'click[buy now]']);
    expect(steps.map((s) => s.observation.text)).toEqual(['after search[cat litter]', 'after click[next]', 'after click[next]', 'after click[buy now]']);
    expect(steps[3]).toMatchObject({ reward: 1, done: true, valid: true });
    const reqs = engine.requests;
    expect(reqs.map((r) => r.messages.length)).toEqual([2, 4, 6, 8]);
    for (let i = 1; i < reqs.length; i++) {
      const prev = reqs[i - 1]?.messages as ChatCompletionMessageParam[];
      const cur = reqs[i]?.messages as ChatCompletionMessageParam[];
      expect(cur.slice(0, prev.length)).toEqual(prev);
      expect(cur[prev.length]?.role).toBe('assistant');
      expect(cur[prev.length + 1]?.role).toBe('user');
      // The state is the one just predicted: not repeated.
      expect(cur[prev.length + 1]?.content).toContain('Current state: the state in your previous reply.');
    }
    expect(engine.kvReused).toEqual([false, true, true, true]);
    expect(reqs.every((r) => r.model === 'chat' && r.response_format?.type === 'json_object' && r.response_format.schema === STEP_JSON_SCHEMA)).toBe(true);
    const s = model.stats;
    expect(s).toMatchObject({ steps: 4, calls: 4, extendedCalls: 3, conversationsStarted: 1, parseFailures: 0, failures: 0 });
    expect(s.promptTokens).toBe(engine.prefilledChars.reduce((a, c) => a + Math.max(1, Math.ceil(c / 4)), 0));
    expect(s.promptCharsPerStep).toBeGreaterThan(0);
    expect(s.newPromptChars).toBeLessThan(s.promptChars);
  });

  it('shows each retrieved transition once per conversation', async () => {
    const engine = new ScriptedEngine({ chat: echoScript });
    const model = new LLMExperienceModel(engine, { conversation: true, topK: 2 });
    await rollout(model, ['click[a]', 'click[b]']);
    const second = engine.requests[1]?.messages.at(-1)?.content as string;
    // The same top-2 transitions were retrieved again: the second turn refers to them instead.
    expect(second).toContain('The real transitions retrieved for this step were shown earlier.');
    expect(second).not.toContain('Transition 1:');
  });

  it('prefills far fewer characters per step than one prompt per step', async () => {
    const actions = Array.from({ length: 10 }, (_, i) => `click[next ${i}]`);
    const conv = new ScriptedEngine({ chat: echoScript });
    await rollout(new LLMExperienceModel(conv, { conversation: true }), actions);
    const flat = new ScriptedEngine({ chat: echoScript });
    const flatModel = new LLMExperienceModel(flat, { conversation: false });
    await rollout(flatModel, actions);
    const perStep = (e: ScriptedEngine) => e.prefilledChars.reduce((a, b) => a + b, 0) / e.prefilledChars.length;
    expect(flat.kvReused.every((r) => !r)).toBe(true);
    expect(flat.requests.every((r) => r.messages.length === 2)).toBe(true);
    expect(perStep(conv)).toBeLessThan(perStep(flat) * 0.8);
    // Stateless prompts restate the recent history instead.
    expect(flat.requests[5]?.messages[1]?.content).toContain('Interaction so far:');
  });

  it('keeps interleaved trajectories (a GRPO group) in separate conversations', async () => {
    const engine = new ScriptedEngine({ chat: echoScript });
    const model = new LLMExperienceModel(engine, { conversation: true });
    const a = await model.step({ task, history: [], observation: start, action: 'search[a]', demos });
    const b = await model.step({ task, history: [], observation: start, action: 'search[b]', demos });
    await model.step({ task, history: [{ observation: start, action: 'search[a]' }], observation: a.observation, action: 'click[next]', demos });
    await model.step({ task, history: [{ observation: start, action: 'search[b]' }], observation: b.observation, action: 'click[next]', demos });
    const third = engine.requests[2]?.messages as ChatCompletionMessageParam[];
    const fourth = engine.requests[3]?.messages as ChatCompletionMessageParam[];
    expect(third).toHaveLength(4);
    expect(third[1]?.content).toContain('Action: search[a]');
    expect(fourth[1]?.content).toContain('Action: search[b]');
    expect(fourth[2]?.content).toContain('after search[b]');
  });

  it('restarts a conversation that grows past maxConversationChars, restating the history', async () => {
    const engine = new ScriptedEngine({ chat: echoScript });
    const model = new LLMExperienceModel(engine, { conversation: true, maxConversationChars: 6000 });
    await rollout(model, Array.from({ length: 14 }, (_, i) => `click[next ${i}]`));
    expect(model.stats.conversationRestarts).toBeGreaterThan(0);
    const longest = Math.max(...engine.requests.map((r) => r.messages.reduce((n, m) => n + String(m.content).length, 0)));
    expect(longest).toBeLessThanOrEqual(6000 + 1000);
    const restarted = engine.requests.find((r, i) => i > 0 && r.messages.length === 2);
    expect(restarted?.messages[1]?.content).toContain('Interaction so far:');
  });
});

describe("LLMExperienceModel: the training loop's request order", () => {
  it('sends a fresh, bounded prompt per step by default: in the loop\'s order no conversation would reach WebLLM\'s KV cache', async () => {
    expect(DEFAULT_LLM_EXPERIENCE_CONFIG.conversation).toBe(false);
    // Two episodes advanced together, as the loop does: the stand-in counts KV-cache reuse as WebLLM does.
    const lockstep = async (config: Partial<LLMExperienceConfig>): Promise<ScriptedEngine> => {
      const engine = new ScriptedEngine({ chat: echoScript });
      const model = new LLMExperienceModel(engine, config);
      const runs = [{ history: [] as HistoryStep[], observation: start }, { history: [] as HistoryStep[], observation: start }];
      for (let t = 0; t < 4; t++) {
        for (const [i, r] of runs.entries()) {
          const action = `click[next ${i}-${t}]`;
          const step = await model.step({ task, history: r.history, observation: r.observation, action, demos });
          r.history.push({ observation: r.observation, action });
          r.observation = step.observation;
        }
      }
      return engine;
    };
    const fresh = await lockstep({});
    const conv = await lockstep({ conversation: true });
    expect(fresh.requests.every((r) => r.messages.length === 2)).toBe(true);
    expect(conv.kvReused.some(Boolean)).toBe(false);
    const total = (e: ScriptedEngine): number => e.prefilledChars.reduce((a, b) => a + b, 0);
    // A conversation nobody continues is prefilled whole every time: more than fresh prompts.
    expect(total(conv)).toBeGreaterThan(total(fresh));
  });
});

describe('LLMExperienceModel: the context window', () => {
  const longActions = Array.from({ length: 14 }, (_, i) => `click[item ${i}]`);
  /** Replies with a long next state (about 600 characters), so that a conversation grows fast. */
  const longStates = (request: ChatCompletionRequestNonStreaming): string => {
    const last = String(request.messages[request.messages.length - 1]?.content ?? '');
    const action = [...last.matchAll(/^Action: (.*)$/gm)].at(-1)?.[1] ?? 'nothing';
    return stepReply({ text: `after ${action}: ${'a long listing of the page. '.repeat(20)}`, actions: longActions });
  };

  it('sizes every prompt from the context window so that the prompt and the reply fit', async () => {
    const engine = new ScriptedEngine({ chat: longStates, contextWindowSize: 2048, charsPerToken: 3 });
    const model = new LLMExperienceModel(engine, { conversation: true, contextWindowTokens: 2048 });
    const steps = await rollout(model, longActions);
    expect(steps.length).toBe(longActions.length);
    for (const r of engine.requests) expect(engine.tokens(r.messages.reduce((n, m) => n + String(m.content).length, 0)) + (r.max_tokens ?? 0)).toBeLessThanOrEqual(2048);
    expect(model.stats).toMatchObject({ contextRestarts: 0, failures: 0 });
    expect(model.stats.conversationRestarts).toBeGreaterThan(0);
  });

  it('restarts shorter on ContextWindowSizeExceededError instead of failing (or growing the prompt)', async () => {
    // The window is unknown to the model and the tokenizer denser than assumed: WebLLM refuses the prompt.
    const engine = new ScriptedEngine({ chat: longStates, contextWindowSize: 2048, charsPerToken: 2.5 });
    const model = new LLMExperienceModel(engine, { conversation: false });
    const big: Observation = { text: `Page: results\n${'[B0] a product with a long description. '.repeat(150)}`, actions: longActions };
    const step = await model.step({ task, history: [], observation: big, action: 'click[item 1]', demos });
    expect(step.valid).toBe(true);
    const sent = engine.requests.length;
    expect(sent).toBeGreaterThan(model.stats.calls);
    expect(model.stats.contextRestarts).toBeGreaterThan(0);
    expect(model.stats).toMatchObject({ failures: 0, engineErrors: 0 });
    expect(model.stats.promptBudgetChars).toBeLessThan(Infinity);
    // The prompt that got its reply is shorter than the refused one.
    const sizes = engine.requests.map((r) => r.messages.reduce((n, m) => n + String(m.content).length, 0));
    expect(sizes.at(-1)).toBeLessThan(sizes[0] as number);
    // Later prompts are sized to what was learned: no second refusal.
    await model.step({ task, history: [], observation: big, action: 'click[item 2]', demos });
    expect(engine.requests.length).toBe(sent + 1);
  });

  it('asks afresh after a reply cut off by the window (finish_reason length), without the cut-off text', async () => {
    const cut = stepReply().slice(0, 40);
    const engine = new ScriptedEngine({ chat: [{ content: cut, finishReason: 'length' }, stepReply()] });
    const model = new LLMExperienceModel(engine);
    const step = await model.step({ task, history: [], observation: start, action: start.actions[0] as string, demos });
    expect(step.valid).toBe(true);
    expect(engine.requests).toHaveLength(2);
    const second = engine.requests[1]?.messages ?? [];
    expect(second.some((m) => m.content === cut)).toBe(false);
    expect(second).toHaveLength(2);
    expect(model.stats.contextRestarts).toBe(1);
  });

  it('refuses a window too small for the prompt and the reply, saying why', () => {
    expect(() => new LLMExperienceModel(new ScriptedEngine(), { contextWindowTokens: 1024 })).toThrow(/context window of 1024 tokens is too small for the experience model/);
    expect(() => new LLMExperienceModel(new ScriptedEngine(), { contextWindowTokens: 1024, maxTokens: 64 })).toThrow(LLMConfigError);
    expect(() => new LLMExperienceModel(new ScriptedEngine(), { charsPerToken: 0 })).toThrow(/charsPerToken/);
  });
});

describe('LLMExperienceModel: validation and retries', () => {
  it('answers an unusable reply with a correction turn that extends the conversation, then succeeds', async () => {
    const engine = new ScriptedEngine({ chat: ['Sure, the page changes.', stepReply({ text: 'Page: results' })] });
    // A clock that only the engine's replies move: 40 ms for the first, 15 ms for the second.
    let clock = 1000;
    const replyMs = [40, 15];
    const chat = engine.chatCompletion.bind(engine);
    engine.chatCompletion = async (request) => {
      const reply = await chat(request);
      clock += replyMs.shift() ?? 0;
      return reply;
    };
    const now = vi.spyOn(performance, 'now').mockImplementation(() => clock);
    const records: CallRecord[] = [];
    const model = new LLMExperienceModel(engine, { conversation: true });
    model.onCall = (r) => records.push(r);
    const step = await model.step({ task, history: [], observation: start, action: 'search[x]', demos }).finally(() => now.mockRestore());
    expect(step.observation.text).toBe('Page: results');
    expect(model.stats).toMatchObject({ calls: 2, parseFailures: 1, retries: 1, failures: 0, steps: 1 });
    const retry = engine.requests[1]?.messages as ChatCompletionMessageParam[];
    expect(contents(retry.slice(2))).toEqual(['assistant: Sure, the page changes.', 'user: Your reply could not be used: the reply ']);
    expect(engine.kvReused).toEqual([false, true]);
    expect(records.map((r) => [r.attempt, r.ok, r.extendsPrevious])).toEqual([
      [1, false, false],
      [2, true, true],
    ]);
    expect(records[0]?.problem).toMatch(/no JSON object/);
    for (const r of records) {
      expect(r.promptTokens).toBeGreaterThan(0);
      expect(r.completionTokens).toBeGreaterThan(0);
    }
    expect(records.map((r) => r.latencyMs)).toEqual([40, 15]);
    // The stored conversation is the clean one: the next step does not carry the bad reply.
    await model.step({ task, history: [{ observation: start, action: 'search[x]' }], observation: step.observation, action: 'click[a]', demos });
    const next = engine.requests[2]?.messages as ChatCompletionMessageParam[];
    expect(next).toHaveLength(4);
    expect(next.some((m) => String(m.content).includes('Sure, the page changes.'))).toBe(false);
  });

  it('after the retry budget, throws ExperienceParseError and records nothing', async () => {
    const engine = new ScriptedEngine({ chat: ['{"reasoning": "x"', '{"reasoning": 1}', 'nope'] });
    const model = new LLMExperienceModel(engine, { maxRetries: 2 });
    const error = await model.step({ task, history: [], observation: start, action: 'search[x]', demos }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ExperienceParseError);
    const e = error as ExperienceParseError;
    expect(e.attempts).toBe(3);
    expect(e.problems).toHaveLength(3);
    expect(e.problems[0]).toMatch(/not closed/);
    expect(e.problems[1]).toMatch(/required fields/);
    expect(e.lastReply).toBe('nope');
    expect(model.stats).toMatchObject({ calls: 3, parseFailures: 3, retries: 2, failures: 1, steps: 0 });
    // Nothing was stored: a next step from the same history starts a fresh conversation.
    await expect(model.step({ task, history: [], observation: start, action: 'search[x]', demos }, { maxRetries: 0 })).rejects.toThrow(ExperienceParseError);
    expect(engine.requests[3]?.messages).toHaveLength(2);
  });

  it('enforces the rules: an invalid action earns 0 and a reward comes only with done', async () => {
    const engine = new ScriptedEngine({
      chat: [stepReply({ valid: false, reward: 1, done: false, actions: ['click[buy now]'] }), stepReply({ reward: 0.6, done: true, actions: [] })],
    });
    const model = new LLMExperienceModel(engine);
    const bad = await model.step({ task, history: [], observation: start, action: 'dance', demos });
    expect(bad).toMatchObject({ valid: false, reward: 0, done: false });
    const end = await model.step({ task, history: [{ observation: start, action: 'dance' }], observation: bad.observation, action: 'click[buy now]', demos });
    expect(end).toMatchObject({ reward: 0.6, done: true, valid: true, observation: { actions: [] } });
    expect(model.stats.ruleCorrections).toBe(1);
  });

  it('an action the state does not list is invalid with reward 0, even when the model calls it valid', async () => {
    const engine = new ScriptedEngine({ chat: [stepReply({ valid: true, reward: 1, done: true, actions: [] }), stepReply({ text: 'Page: results' })] });
    const model = new LLMExperienceModel(engine, { groupCache: false, freeTextActions: ['search[{}]'] });
    const off = await model.step({ task, history: [], observation: start, action: 'click[not on this page]', demos });
    expect(off).toMatchObject({ valid: false, reward: 0 });
    expect(model.stats.ruleCorrections).toBe(1);
    // A free search query is admissible where the state has a search box the environment declares.
    expect(start.actions.some((a) => a.startsWith('search['))).toBe(true);
    const search = await model.step({ task, history: [], observation: start, action: 'search[a query nobody listed]', demos });
    expect(search.valid).toBe(true);
    expect(model.stats.ruleCorrections).toBe(1);
  });

  it('treats a malformed completion (no message, non-text content) as an unusable reply, not a crash', async () => {
    const replies = [{ choices: [{}] }, { choices: [{ message: { content: 42 } }] }, { choices: [{ message: { content: stepReply({ text: 'Page: ok' }) } }] }];
    let i = 0;
    const engine = { chatCompletion: async () => replies[i++] as unknown as ChatCompletion };
    const model = new LLMExperienceModel(engine);
    const step = await model.step({ task, history: [], observation: start, action: 'search[x]', demos });
    expect(step.observation.text).toBe('Page: ok');
    expect(model.stats).toMatchObject({ calls: 3, parseFailures: 2, engineErrors: 0, steps: 1 });
  });

  it('wraps engine failures in a typed error', async () => {
    const engine = new ScriptedEngine({
      chat: () => {
        throw new Error('Error: Prompt tokens exceed context window size');
      },
    });
    const model = new LLMExperienceModel(engine);
    const error = await model.step({ task, history: [], observation: start, action: 'search[x]', demos }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LLMRequestError);
    expect((error as Error).message).toMatch(/context window/);
    expect(model.stats.engineErrors).toBe(1);
  });

  it('sends the EBNF grammar when asked, and per-call overrides', async () => {
    const engine = new ScriptedEngine({ chat: echoScript, enforceFormat: true });
    const model = new LLMExperienceModel(engine, { constraint: 'grammar', temperature: 0.1 });
    await model.step({ task, history: [], observation: start, action: 'search[x]', demos }, { temperature: 0.9, maxTokens: 99 });
    expect(engine.requests[0]).toMatchObject({ temperature: 0.9, max_tokens: 99, response_format: { type: 'grammar', grammar: STEP_GRAMMAR } });
  });

  it('checks its settings and requests loudly', async () => {
    const engine = new ScriptedEngine();
    expect(() => new LLMExperienceModel(engine, { topK: -1 })).toThrow(/topK must be an integer >= 0, got -1/);
    expect(() => new LLMExperienceModel(engine, { temperature: 3 })).toThrow(/temperature must be in \[0, 2\], got 3/);
    expect(() => new LLMExperienceModel(engine, { constraint: 'xml' as 'none' })).toThrow(/got "xml"/);
    expect(() => new LLMExperienceModel({} as ScriptedEngine)).toThrow(LLMConfigError);
    const model = new LLMExperienceModel(engine);
    await expect(model.step({ task, history: [], observation: { text: 'x' } as Observation, action: 'a', demos })).rejects.toThrow(/observation must be \{text, actions\}/);
    await expect(model.step({ task, history: [], observation: start, action: 3 as unknown as string, demos })).rejects.toThrow(/action must be a string, got 3/);
    await expect(model.step({ task, history: [], observation: start, action: 'a', demos: undefined as unknown as Demonstration[] })).rejects.toThrow(/demos must be an array/);
  });
});

describe('LLMExperienceModel: without reasoning (the --no-reasoning ablation)', () => {
  const outcome = (text: string): string => JSON.stringify({ next_state: { text, actions: ['click[buy now]'] }, reward: 0, done: false, valid: true });

  it('asks for the outcome alone (system prompt, schema and grammar) and returns an empty reasoning', async () => {
    const engine = new ScriptedEngine({ chat: () => outcome('Page: item B01') });
    const model = new LLMExperienceModel(engine, { reasoning: false });
    const [step] = await rollout(model, [start.actions[0]!]);
    expect(step).toMatchObject({ reasoning: '', observation: { text: 'Page: item B01' }, valid: true });
    const req = engine.requests[0]!;
    expect(String(req.messages[0]?.content)).not.toContain('Think first');
    expect(String(req.messages[0]?.content)).not.toContain('"reasoning"');
    expect(req.response_format).toMatchObject({ type: 'json_object' });
    const schema = JSON.parse((req.response_format as { schema: string }).schema) as { required: string[] };
    expect(schema.required).toEqual(['next_state', 'reward', 'done', 'valid']);
    const grammarEngine = new ScriptedEngine({ chat: () => outcome('Page: item B02') });
    await rollout(new LLMExperienceModel(grammarEngine, { reasoning: false, constraint: 'grammar' }), ['click[B02]']);
    const grammar = (grammarEngine.requests[0]?.response_format as { grammar: string }).grammar;
    expect(grammar).not.toContain('reasoning');
    expect(grammar).not.toBe(STEP_GRAMMAR);
  });

  it('the default model still needs its reasoning: the same reply is refused and retried', async () => {
    const engine = new ScriptedEngine({ chat: () => outcome('Page: item B01') });
    const model = new LLMExperienceModel(engine, { maxRetries: 1 });
    await expect(rollout(model, ['click[B01]'])).rejects.toThrow(ExperienceParseError);
    expect(String(engine.requests[0]?.messages[0]?.content)).toContain('Think first');
    // The correction asks for the reply format with reasoning.
    expect(String(engine.requests[1]?.messages.at(-1)?.content)).toContain(REPLY_FORMAT);
  });

  it('refuses a reasoning setting that is not a boolean', () => {
    expect(() => new LLMExperienceModel(new ScriptedEngine(), { reasoning: 'no' as unknown as boolean })).toThrow(LLMConfigError);
  });
});

describe('LLMExperienceModel: group cache', () => {
  it('reuses the sampled transition for the same task, history, state and action', async () => {
    const engine = new ScriptedEngine({ chat: echoScript });
    const model = new LLMExperienceModel(engine, { groupCache: true });
    const req = { task, history: [], observation: start, action: 'search[x]', demos };
    const first = await model.step(req);
    const again = await model.step(req);
    expect(again).toEqual(first);
    again.observation.actions.push('mutated');
    expect((await model.step(req)).observation.actions).not.toContain('mutated');
    await model.step({ ...req, action: 'search[y]' });
    expect(engine.requests).toHaveLength(2);
    expect(model.stats).toMatchObject({ cacheLookups: 4, cacheHits: 2, cacheHitRate: 0.5, steps: 4 });
    model.clearCache();
    await model.step(req);
    expect(engine.requests).toHaveLength(3);
  });

  it('is off by default', async () => {
    const engine = new ScriptedEngine({ chat: echoScript });
    const model = new LLMExperienceModel(engine);
    const req = { task, history: [], observation: start, action: 'search[x]', demos };
    await model.step(req);
    await model.step(req);
    expect(engine.requests).toHaveLength(2);
    expect(model.stats.cacheLookups).toBe(0);
  });
});

describe('LLMExperienceModel: reset', () => {
  it('asks the LLM (never the environment), and the first step continues that conversation', async () => {
    const engine = new ScriptedEngine({ chat: echoScript });
    const model = new LLMExperienceModel(engine, { conversation: true });
    const obs = await model.reset(task, demos);
    expect(obs).toEqual({ text: 'Start page', actions: ['search[anything]'] });
    expect(engine.requests).toHaveLength(1);
    expect(engine.requests[0]?.messages[1]?.content).toContain('Initial states of similar real episodes:');
    expect(engine.requests[0]?.messages[1]?.content).toContain(`Task: ${task.instruction}`);
    await model.step({ task, history: [], observation: obs, action: 'search[anything]', demos });
    expect(engine.requests[1]?.messages).toHaveLength(4);
    expect(engine.kvReused).toEqual([false, true]);
    expect(model.stats).toMatchObject({ resets: 1, resetFailures: 0 });
  });

  it('a reset retry asks again for the reset format, not the step format', async () => {
    const good = JSON.stringify({ reasoning: 'a fresh start', state: { text: 'Start page', actions: ['search[anything]'] } });
    const engine = new ScriptedEngine({ chat: ['not json', good] });
    const model = new LLMExperienceModel(engine);
    expect(await model.reset(task, [])).toEqual({ text: 'Start page', actions: ['search[anything]'] });
    const correction = String(engine.requests[1]?.messages.at(-1)?.content);
    expect(correction).toContain(RESET_FORMAT);
    expect(correction).not.toContain(REPLY_FORMAT);
    expect(model.stats).toMatchObject({ resets: 1, resetFailures: 0, parseFailures: 1, retries: 1 });
  });

  it('a reset with no usable reply throws ExperienceParseError and counts a reset failure', async () => {
    const engine = new ScriptedEngine({ chat: ['not json', '{"reasoning": "x"}', '{"state": {"text": "s", "actions": []}}'] });
    const model = new LLMExperienceModel(engine, { maxRetries: 2 });
    const error = await model.reset(task, demos).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ExperienceParseError);
    expect((error as ExperienceParseError).attempts).toBe(3);
    expect(model.stats).toMatchObject({ resets: 0, resetFailures: 1, failures: 1, parseFailures: 3, retries: 2 });
    // Nothing was stored: a step from the start opens a fresh conversation.
    const fresh = new ScriptedEngine({ chat: echoScript });
    const again = new LLMExperienceModel(fresh);
    await expect(again.reset(task, [])).resolves.toMatchObject({ text: 'Start page' });
    // An engine failure during a reset is a reset failure too.
    const broken = new LLMExperienceModel(
      new ScriptedEngine({
        chat: () => {
          throw new Error('device lost');
        },
      }),
    );
    await expect(broken.reset(task, [])).rejects.toThrow(LLMRequestError);
    expect(broken.stats).toMatchObject({ resetFailures: 1, engineErrors: 1, failures: 1 });
  });

  it('rejects the removed initialObservation setting and unknown settings loudly', () => {
    const engine = new ScriptedEngine();
    expect(() => new LLMExperienceModel(engine, { initialObservation: 'env' } as Partial<LLMExperienceConfig>)).toThrow(/initialObservation was removed: reset always asks the LLM/);
    expect(() => new LLMExperienceModel(engine, { initialObservation: 'llm' } as Partial<LLMExperienceConfig>)).toThrow(LLMConfigError);
    expect(() => new LLMExperienceModel(engine, { topk: 3 } as Partial<LLMExperienceConfig>)).toThrow(/unknown setting "topk"/);
    expect(() => new LLMExperienceModel(engine, { model: 3 } as unknown as Partial<LLMExperienceConfig>)).toThrow(/model must be a string/);
    expect(Object.keys(DEFAULT_LLM_EXPERIENCE_CONFIG)).not.toContain('initialObservation');
    expect(new LLMExperienceModel(engine, { model: 'chat', topK: 2 }).config).toMatchObject({ model: 'chat', topK: 2 });
  });

  it('checks the task without printing it', async () => {
    const model = new LLMExperienceModel(new ScriptedEngine({ chat: echoScript }));
    const noInstruction = { id: 'x', env: 'shop', goal: { secret: MARKER } } as unknown as Task;
    const error = await model.reset(noInstruction, []).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LLMConfigError);
    expect((error as Error).message).toMatch(/reset: task must be a task with a string id, env and instruction/);
    expect((error as Error).message).not.toContain(MARKER);
    const stepError = await model.step({ task: noInstruction, history: [], observation: start, action: 'a', demos }).catch((e: unknown) => e);
    expect((stepError as Error).message).toMatch(/step: request.task must be a task/);
    expect((stepError as Error).message).not.toContain(MARKER);
  });
});

/** `t` with the marker in its goal's fields (and in a stray top-level field): agent-invisible. */
function marked(t: Task): Task {
  const goal: Record<string, JsonValue> = { ...(t.goal as Record<string, JsonValue>), secretNote: MARKER, hint: `the answer is ${MARKER}` };
  if (t.env === 'shop') goal.targetId = MARKER;
  else goal.receptacleId = `${MARKER}-1`;
  return { ...t, goal, hiddenTag: MARKER } as Task;
}

/** Real transitions (expert episodes on other tasks), as retrieved demonstrations and as initial states. */
function realDemos(env: EnvName): { demos: Demonstration[]; initial: Demonstration[] } {
  const spec = getEnvSpec(env);
  const demos: Demonstration[] = [];
  const initial: Demonstration[] = [];
  for (const t of spec.tasks({ split: 'train', count: 3, seed: 12 })) {
    const real = spec.create();
    let observation = real.reset(t);
    for (let i = 0; i < 6; i++) {
      const action = real.expertAction();
      const r = real.step(action);
      const d: Demonstration = { state: observation.text, action, nextState: r.observation.text, nextActions: r.observation.actions, reward: r.reward, done: r.done, valid: r.info.valid, score: 1 - i / 10 };
      demos.push(d);
      if (i === 0) initial.push(d);
      observation = r.observation;
      if (r.done) break;
    }
  }
  return { demos, initial };
}

describe('LLMExperienceModel: sees only what the agent sees (no goal fields)', () => {
  const CONFIGS: Partial<LLMExperienceConfig>[] = [
    {},
    { conversation: false },
    { groupCache: true, maxConversationChars: 3000 },
    { constraint: 'grammar', historyWindow: 2 },
    { constraint: 'none', topK: 5 },
  ];

  for (const env of ['shop', 'household'] as const) {
    it(`${env}: no prompt, reply, observation, action or reasoning carries a goal field, over many resets and steps`, async () => {
      const spec = getEnvSpec(env);
      const tasks = [...spec.tasks({ split: 'train', count: 3, seed: 11 }), ...spec.tasks({ split: 'test', count: 2, seed: 11 })];
      const { demos: pool, initial } = realDemos(env);
      const rng = new Rng(7);
      const outputs: unknown[] = [];
      const problems: string[] = [];
      let requests = 0;
      let resets = 0;
      let steps = 0;
      for (const config of CONFIGS) {
        // Every 7th reply is unusable, so correction turns and retries are exercised as well.
        const engine = new ScriptedEngine({ chat: (request, i) => (i % 7 === 3 ? 'not json' : mirrorScript(request)) });
        const model = new LLMExperienceModel(engine, config);
        model.onCall = (r) => problems.push(r.problem ?? '');
        for (const seedTask of tasks) {
          const t = marked(seedTask);
          expect(t.instruction).not.toContain(MARKER);
          expect(JSON.stringify(t)).toContain(MARKER);
          for (let g = 0; g < 3; g++) {
            // g = 0: a generated task (the LLM writes the first state); else a seed task's recorded first state.
            const passed: Task | AgentTask = g === 2 ? agentView(t) : t;
            let observation: Observation;
            if (g === 0) {
              observation = await model.reset(passed, initial);
              resets++;
            } else observation = spec.create().reset(seedTask);
            outputs.push(observation);
            const history: HistoryStep[] = [];
            for (let i = 0; i < 6; i++) {
              const action = observation.actions.length > 0 && rng.chance(0.8) ? rng.pick(observation.actions) : 'do something odd';
              const retrieved = pool.filter(() => rng.chance(0.4));
              const step = await model.step({ task: passed, history, observation, action, demos: retrieved });
              steps++;
              outputs.push(step);
              history.push({ observation, action });
              observation = step.observation;
              if (step.done) break;
            }
          }
        }
        requests += engine.requests.length;
        // Every message of every request, whole (and the request's other fields).
        for (const request of engine.requests) expect(JSON.stringify(request)).not.toContain(MARKER);
        expect(model.stats.parseFailures).toBeGreaterThan(0);
      }
      expect(requests).toBeGreaterThan(150);
      expect(resets).toBe(CONFIGS.length * tasks.length);
      expect(steps).toBeGreaterThan(150);
      const out = JSON.stringify(outputs);
      expect(out).not.toContain(MARKER);
      expect(problems.join('\n')).not.toContain(MARKER);
      // The mirror does repeat its prompts: had a goal field been in one, it would be in `out`.
      expect(out).toContain(`Task: ${(tasks[0] as Task).instruction}`);
      const reasoned = (outputs as (ExperienceStep | Observation)[]).filter((o): o is ExperienceStep => 'reasoning' in o);
      // Every configuration's steps carry the mirror's reasoning, so some outputs must have it.
      expect(reasoned.length).toBeGreaterThan(0);
      for (const o of reasoned) expect(o.reasoning).toMatch(/^I was told: /);
    });
  }

  it('a goal never enters a cache key: the same task with other goals hits the group cache', async () => {
    const engine = new ScriptedEngine({ chat: mirrorScript });
    const model = new LLMExperienceModel(engine, { conversation: true, groupCache: true });
    const a = marked(task);
    const b = { ...task, goal: { other: 'goal' } } as Task;
    const first = await model.step({ task: a, history: [], observation: start, action: 'search[x]', demos });
    expect(await model.step({ task: b, history: [], observation: start, action: 'search[x]', demos })).toEqual(first);
    expect(await model.step({ task: agentView(task), history: [], observation: start, action: 'search[x]', demos })).toEqual(first);
    expect(engine.requests).toHaveLength(1);
    // A follow-up step continues the same conversation whichever goal came along.
    await model.step({ task: b, history: [{ observation: start, action: 'search[x]' }], observation: first.observation, action: 'click[buy now]', demos });
    expect(engine.requests[1]?.messages).toHaveLength(4);
    expect(JSON.stringify(engine.requests)).not.toContain(MARKER);
  });

  it('an unusable reset does not put a goal field into its error', async () => {
    const model = new LLMExperienceModel(new ScriptedEngine({ chat: ['not json'] }), { maxRetries: 1 });
    const error = (await model.reset(marked(task), demos).catch((e: unknown) => e)) as ExperienceParseError;
    expect(error).toBeInstanceOf(ExperienceParseError);
    expect(JSON.stringify({ message: error.message, problems: error.problems, lastReply: error.lastReply })).not.toContain(MARKER);
    expect(model.stats.resetFailures).toBe(1);
  });
});

// --- The module graph of the LLM experience model -------------------------------------------

describe('LLMExperienceModel: runs no environment code', () => {
  it('the specifier scanner sees static, type, re-export, side-effect and dynamic imports', () => {
    const source = [
      "import { a } from './a.ts';",
      "import type { B } from '../b.ts';",
      'import {\n  c,\n  d,\n} from "./c.ts";',
      "import * as e from './e.ts';",
      "export { f } from './f.ts';",
      "export * from './g.ts';",
      "import './h.ts';",
      "const i = await import('./i.ts');",
      'const j = import(`./j.ts`);',
      "const k = require('./k.js');",
      'const l = await import(name);',
      "import z from 'zod';",
    ].join('\n');
    expect(importSpecifiers(source)).toEqual(['./a.ts', '../b.ts', './c.ts', './e.ts', './f.ts', './g.ts', 'zod', './h.ts', './i.ts', './j.ts', './k.js', '<non-literal: n>']);
  });

  it('src/experience/llm.ts does not reach src/envs (nor any dynamic import it cannot check)', () => {
    const graph = importGraph('src/experience/llm.ts');
    // The walk does reach what the model is built from...
    expect(graph.files).toEqual(expect.arrayContaining(['src/experience/llm.ts', 'src/experience/prompt.ts', 'src/experience/llm-output.ts', 'src/llm/engine.ts', 'src/core/types.ts']));
    // ...and nothing of the environments, statically or dynamically.
    expect(graph.files.filter((f) => f.startsWith('src/envs/'))).toEqual([]);
    expect(graph.unresolved).toEqual([]);
    expect(graph.packages.filter((p) => /envs/.test(p))).toEqual([]);
  });

  it('the walker does find src/envs where it is imported (the curriculum validates tasks with it)', () => {
    expect(importGraph('src/curriculum/validation.ts').files).toEqual(expect.arrayContaining(['src/envs/registry.ts', 'src/envs/shop/index.ts']));
  });
});
