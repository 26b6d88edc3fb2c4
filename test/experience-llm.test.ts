import { describe, expect, it } from 'vitest';
import type { Observation, Task } from '../src/core/types.ts';
import { getEnvSpec } from '../src/envs/registry.ts';
import { type CallRecord, ExperienceParseError, LLMExperienceModel } from '../src/experience/llm.ts';
import { STEP_GRAMMAR, STEP_JSON_SCHEMA } from '../src/experience/llm-output.ts';
import type { Demonstration, ExperienceStep, HistoryStep } from '../src/experience/types.ts';
import { REPLY_FORMAT, RESET_FORMAT } from '../src/experience/prompt.ts';
import type { ChatCompletion, ChatCompletionMessageParam } from '../src/llm/engine.ts';
import { LLMConfigError, LLMRequestError } from '../src/llm/errors.ts';
import { ScriptedEngine, echoScript, stepReply } from './fixtures/scripted-engine.ts';

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
    const model = new LLMExperienceModel(engine, { model: 'chat' });
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
    const model = new LLMExperienceModel(engine, { topK: 2 });
    await rollout(model, ['click[a]', 'click[b]']);
    const second = engine.requests[1]?.messages.at(-1)?.content as string;
    // The same top-2 transitions were retrieved again: the second turn refers to them instead.
    expect(second).toContain('The real transitions retrieved for this step were shown earlier.');
    expect(second).not.toContain('Transition 1:');
  });

  it('prefills far fewer characters per step than one prompt per step', async () => {
    const actions = Array.from({ length: 10 }, (_, i) => `click[next ${i}]`);
    const conv = new ScriptedEngine({ chat: echoScript });
    await rollout(new LLMExperienceModel(conv), actions);
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
    const model = new LLMExperienceModel(engine);
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
    const model = new LLMExperienceModel(engine, { maxConversationChars: 6000 });
    await rollout(model, Array.from({ length: 8 }, (_, i) => `click[next ${i}]`));
    expect(model.stats.conversationRestarts).toBeGreaterThan(0);
    const longest = Math.max(...engine.requests.map((r) => r.messages.reduce((n, m) => n + String(m.content).length, 0)));
    expect(longest).toBeLessThanOrEqual(6000 + 1000);
    const restarted = engine.requests.find((r, i) => i > 0 && r.messages.length === 2);
    expect(restarted?.messages[1]?.content).toContain('Interaction so far:');
  });
});

describe('LLMExperienceModel: validation and retries', () => {
  it('answers an unusable reply with a correction turn that extends the conversation, then succeeds', async () => {
    const engine = new ScriptedEngine({ chat: ['Sure, the page changes.', stepReply({ text: 'Page: results' })] });
    const records: CallRecord[] = [];
    const model = new LLMExperienceModel(engine);
    model.onCall = (r) => records.push(r);
    const step = await model.step({ task, history: [], observation: start, action: 'search[x]', demos });
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
      expect(r.latencyMs).toBeGreaterThanOrEqual(0);
    }
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
    const model = new LLMExperienceModel(engine, { groupCache: false });
    const off = await model.step({ task, history: [], observation: start, action: 'click[not on this page]', demos });
    expect(off).toMatchObject({ valid: false, reward: 0 });
    expect(model.stats.ruleCorrections).toBe(1);
    // A free search query is admissible where the state has a search box.
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
  it("'env' takes the first observation from the task's environment without a call", async () => {
    const engine = new ScriptedEngine({ chat: echoScript });
    const model = new LLMExperienceModel(engine);
    expect(await model.reset(task, [])).toEqual(start);
    expect(engine.requests).toHaveLength(0);
  });

  it("'llm' asks the model, and the first step continues that conversation", async () => {
    const engine = new ScriptedEngine({ chat: echoScript });
    const model = new LLMExperienceModel(engine, { initialObservation: 'llm' });
    const obs = await model.reset(task, demos);
    expect(obs).toEqual({ text: 'Start page', actions: ['search[anything]'] });
    expect(engine.requests[0]?.messages[1]?.content).toContain('Initial states of similar real episodes:');
    await model.step({ task, history: [], observation: obs, action: 'search[anything]', demos });
    expect(engine.requests[1]?.messages).toHaveLength(4);
    expect(engine.kvReused).toEqual([false, true]);
    expect(model.stats.resets).toBe(1);
  });

  it('a reset retry asks again for the reset format, not the step format', async () => {
    const good = JSON.stringify({ reasoning: 'a fresh start', state: { text: 'Start page', actions: ['search[anything]'] } });
    const engine = new ScriptedEngine({ chat: ['not json', good] });
    const model = new LLMExperienceModel(engine, { initialObservation: 'llm' });
    expect(await model.reset(task, [])).toEqual({ text: 'Start page', actions: ['search[anything]'] });
    const correction = String(engine.requests[1]?.messages.at(-1)?.content);
    expect(correction).toContain(RESET_FORMAT);
    expect(correction).not.toContain(REPLY_FORMAT);
    expect(model.stats).toMatchObject({ resets: 1, parseFailures: 1, retries: 1 });
  });

  it("falls back to the LLM when the environment cannot reset the task", async () => {
    const engine = new ScriptedEngine({ chat: echoScript });
    const model = new LLMExperienceModel(engine);
    const broken: Task = { ...task, id: 'broken', goal: { nonsense: true } };
    expect((await model.reset(broken, [])).text).toBe('Start page');
  });
});
