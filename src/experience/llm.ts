/**
 * The LLM experience model (DreamGym's M_exp): a local LLM, prompted with the domain rules, the
 * task, the interaction so far, the current state and action, and the top-k real transitions
 * retrieved for them, predicts (reasoning first) the next state, reward and done.
 *
 * - Output: constrained by `response_format` (JSON schema or EBNF grammar), validated whole with
 *   zod, DreamGym's rules enforced; an unusable reply is answered with a correction turn and
 *   retried a bounded number of times, then {@link ExperienceParseError}. `step` never returns a
 *   half-formed transition.
 * - Cost: by default each step is one fresh prompt, sized to the chat model's context window.
 *   WebLLM keeps one conversation per model and reuses its KV cache only for a request that
 *   extends that conversation exactly; the training loop advances all episodes together, so the
 *   next request is another episode's and a growing conversation per trajectory (`conversation`)
 *   would be prefilled whole every time. It pays off only when one episode's steps run back to
 *   back. Conversations restart with the recent history restated when they grow past
 *   `maxConversationChars` or the window. Optionally, transitions are cached within a GRPO group:
 *   the same task, history, state and action reuse the sampled outcome.
 * - Accounting: per call prompt and completion tokens, latency, prompt characters; totals in
 *   {@link LLMExperienceModel.stats}.
 * - What it sees: only what the agent sees (DESIGN.md section 4). `reset` and `step` reduce the
 *   task to {@link agentView} on entry, so a task's goal (ground truth for the real environment:
 *   hidden targets, a world's layout seed, ...) never reaches a prompt, a cache
 *   key, a reply or a returned step, even when a caller passes a whole `Task`.
 * - No environment code: this module does not import `src/envs` (a test walks its module graph).
 *   The first state of a seed task comes from its recorded data, supplied by the caller; `reset`
 *   is for tasks without one (generated tasks) and always asks the LLM.
 */
import { hashString } from '../core/rng.ts';
import { type AgentTask, type Observation, agentView } from '../core/types.ts';
import { CHAT_TEMPLATE_TOKENS, experienceModelProblem } from '../llm/catalogue.ts';
import type { ChatCompletionMessageParam, ChatEngine } from '../llm/engine.ts';
import { completionText, messageChars } from '../llm/engine.ts';
import { LLMConfigError, LLMRequestError, errorText } from '../llm/errors.ts';
import { isAdmissible } from './admissible.ts';
import { type OutputConstraint, parseResetReply, parseStepReply, responseFormat } from './llm-output.ts';
import {
  DEFAULT_PROMPT_CONFIG,
  type ExperiencePromptConfig,
  correctionTurn,
  demoKey,
  experienceSystemPrompt,
  firstStepTurn,
  followUpStepTurn,
  replyFormat,
  resetFormat,
  resetTurn,
  selectDemos,
} from './prompt.ts';
import type { Demonstration, ExperienceModel, ExperienceStep, ExperienceStepRequest, HistoryStep } from './types.ts';

/** Thrown when the model gave no usable reply within the retry budget. Nothing was recorded. */
export class ExperienceParseError extends Error {
  override name = 'ExperienceParseError';
  constructor(
    message: string,
    /** Attempts made (1 + retries). */
    readonly attempts: number,
    /** Why each attempt's reply was unusable, in order. */
    readonly problems: readonly string[],
    /** The last reply (cut to 500 characters). */
    readonly lastReply: string,
  ) {
    super(message);
  }
}

/** Settings of {@link LLMExperienceModel}; defaults in {@link DEFAULT_LLM_EXPERIENCE_CONFIG}. */
export interface LLMExperienceConfig extends ExperiencePromptConfig {
  /** Model id for the requests (needed when the engine hosts several models). */
  model?: string;
  /** Sampling temperature. */
  temperature: number;
  /** Nucleus sampling. */
  topP: number;
  /** Completion token limit per call. */
  maxTokens: number;
  /** How the reply is constrained. */
  constraint: OutputConstraint;
  /**
   * Reasoning first, then the prediction (DreamGym's reasoning experience model). False is the
   * paper's "without reasoning" ablation (`--no-reasoning`): the reply is the outcome alone, and a
   * step's `reasoning` is empty.
   */
  reasoning: boolean;
  /** Retries after an unusable reply (so `maxRetries + 1` attempts). */
  maxRetries: number;
  /**
   * One growing conversation per trajectory instead of one prompt per step: WebLLM reuses its KV
   * cache only when one episode's steps reach it back to back, which the training loop's order
   * (all episodes advanced together) does not give.
   */
  conversation: boolean;
  /** A conversation restarts (recent history restated) once its prompt would exceed this many characters. */
  maxConversationChars: number;
  /** Conversations remembered (least recently used are dropped). */
  maxConversations: number;
  /** Reuse the sampled transition for the same task, history, state and action (GRPO groups). */
  groupCache: boolean;
  /** Transitions remembered by the group cache. */
  groupCacheSize: number;
  /**
   * The chat model's context window, tokens (null: unknown). Prompts are sized so that the prompt
   * and a reply of `maxTokens` fit: WebLLM refuses a longer prompt outright.
   */
  contextWindowTokens: number | null;
  /** Characters per token assumed when sizing prompts (low: JSON and state listings tokenize densely). */
  charsPerToken: number;
  /** What the environment says it is (its one-line description); empty for a generic line. */
  environmentDescription: string;
  /** The environment's free-text action templates (see `FreeTextActions`). */
  freeTextActions: readonly string[];
}

/** Defaults of {@link LLMExperienceConfig}. */
export const DEFAULT_LLM_EXPERIENCE_CONFIG: LLMExperienceConfig = {
  ...DEFAULT_PROMPT_CONFIG,
  temperature: 0.3,
  topP: 0.95,
  maxTokens: 768,
  constraint: 'json-schema',
  reasoning: true,
  maxRetries: 2,
  conversation: false,
  maxConversationChars: 12_000,
  maxConversations: 256,
  groupCache: false,
  groupCacheSize: 4096,
  contextWindowTokens: null,
  charsPerToken: 3,
  environmentDescription: '',
  freeTextActions: [],
};

/** Settings that were removed, with what to do instead (passing one is an error, not a silent no-op). */
const REMOVED_KEYS: Readonly<Record<string, string>> = {
  initialObservation:
    "initialObservation was removed: reset always asks the LLM and never runs environment code; a seed task's first observation comes from its recorded data, which the caller passes to step instead of calling reset",
};

/** Per-call overrides of {@link LLMExperienceModel.step}. */
export type StepCallOptions = Partial<Pick<LLMExperienceConfig, 'temperature' | 'topP' | 'maxTokens' | 'maxRetries'>>;

/** One request to the engine. */
export interface CallRecord {
  kind: 'step' | 'reset';
  /** 1 for the first try, 2 for the first retry, ... */
  attempt: number;
  /** Tokens prefilled (WebLLM counts only the new part when it reuses the KV cache). */
  promptTokens: number;
  completionTokens: number;
  latencyMs: number;
  /** Characters of the whole prompt. */
  promptChars: number;
  /** Characters of the new part of the prompt (what extends the previous request). */
  newPromptChars: number;
  /** Whether the request extended the previous one (so WebLLM could reuse its KV cache). */
  extendsPrevious: boolean;
  /** Whether the reply was usable. */
  ok: boolean;
  /** Why not, when it was not. */
  problem?: string;
}

/** Totals of an {@link LLMExperienceModel}. */
export interface LLMExperienceStats {
  /** Steps answered (including group-cache hits). */
  steps: number;
  /** Resets answered by the LLM. */
  resets: number;
  /** Resets that failed (no usable reply within the retries, or an engine error); also in `failures`. */
  resetFailures: number;
  /** Requests sent to the engine. */
  calls: number;
  promptTokens: number;
  completionTokens: number;
  latencyMs: number;
  /** Unusable replies. */
  parseFailures: number;
  /** Retries after unusable replies. */
  retries: number;
  /** Steps or resets that failed after all retries. */
  failures: number;
  /** Engine errors (thrown by the engine). */
  engineErrors: number;
  /** Rule fixes applied to otherwise valid replies (e.g. reward of an invalid action set to 0). */
  ruleCorrections: number;
  /** Group-cache lookups and hits. */
  cacheLookups: number;
  cacheHits: number;
  /** cacheHits / cacheLookups (0 when no lookups). */
  cacheHitRate: number;
  /** Total characters of all prompts, and of their new parts. */
  promptChars: number;
  newPromptChars: number;
  /** newPromptChars per step that called the engine (what must be prefilled per step). */
  promptCharsPerStep: number;
  /**
   * Requests that extended this model's previous request, so WebLLM could prefill only the new
   * turn. WebLLM keeps one conversation per model: the reuse happens only if no other request
   * (another trajectory, the policy prior, the task generator) ran on the chat model in between.
   */
  extendedCalls: number;
  /** Conversations started (a trajectory's first step, or a restart past the size limit). */
  conversationsStarted: number;
  conversationRestarts: number;
  /**
   * Requests sent again as a fresh, shorter prompt because the last one did not fit the context
   * window (`ContextWindowSizeExceededError`) or its reply was cut off (`finish_reason: 'length'`).
   */
  contextRestarts: number;
  /** The longest prompt sent now, characters (shrinks after each context overflow; Infinity when unbounded). */
  promptBudgetChars: number;
}

function emptyStats(): LLMExperienceStats {
  return {
    steps: 0,
    resets: 0,
    resetFailures: 0,
    calls: 0,
    promptTokens: 0,
    completionTokens: 0,
    latencyMs: 0,
    parseFailures: 0,
    retries: 0,
    failures: 0,
    engineErrors: 0,
    ruleCorrections: 0,
    cacheLookups: 0,
    cacheHits: 0,
    cacheHitRate: 0,
    promptChars: 0,
    newPromptChars: 0,
    promptCharsPerStep: 0,
    extendedCalls: 0,
    conversationsStarted: 0,
    conversationRestarts: 0,
    contextRestarts: 0,
    promptBudgetChars: Infinity,
  };
}

/** A conversation: its messages (system first, assistant last) and the state its last reply predicted. */
interface Conversation {
  messages: ChatCompletionMessageParam[];
  chars: number;
  predicted: Observation | null;
  /** Keys of the retrieved transitions already shown (see `demoKey`). */
  shownDemos: ReadonlySet<string>;
}

/** A bounded map that forgets the least recently used entry. */
class Lru<V> {
  private readonly map = new Map<string, V>();
  constructor(private readonly capacity: number) {}
  get(key: string): V | undefined {
    const v = this.map.get(key);
    if (v !== undefined) {
      this.map.delete(key);
      this.map.set(key, v);
    }
    return v;
  }
  set(key: string, value: V): void {
    this.map.delete(key);
    this.map.set(key, value);
    while (this.map.size > this.capacity) this.map.delete(this.map.keys().next().value as string);
  }
  clear(): void {
    this.map.clear();
  }
  get size(): number {
    return this.map.size;
  }
}

/** A 53-bit key of some strings (two independent 32-bit hashes), collision-safe for cache use. */
function key(parts: readonly string[]): string {
  const joined = parts.join('\u0000');
  return `${hashString(joined).toString(36)}.${hashString(`\u0001${joined}`).toString(36)}.${joined.length}`;
}

function historyParts(taskId: string, history: readonly HistoryStep[]): string[] {
  const parts = [taskId];
  for (const h of history) parts.push(h.observation.text, h.observation.actions.join('\u0002'), h.action);
  return parts;
}

function sameObservation(a: Observation | null, b: Observation): boolean {
  return a !== null && a.text === b.text && a.actions.length === b.actions.length && a.actions.every((x, i) => x === b.actions[i]);
}

/** Rejects keys that are not settings (a typo or a removed setting would otherwise be ignored). */
function checkKeys(config: object): void {
  const known = new Set<string>([...Object.keys(DEFAULT_LLM_EXPERIENCE_CONFIG), 'model']);
  for (const k of Object.keys(config)) {
    const removed = REMOVED_KEYS[k];
    if (removed !== undefined) throw new LLMConfigError(removed);
    if (!known.has(k)) throw new LLMConfigError(`unknown setting ${JSON.stringify(k)} (known: ${[...known].sort().join(', ')})`);
  }
}

function checkConfig(c: LLMExperienceConfig): void {
  const int = (name: keyof LLMExperienceConfig, min: number): void => {
    const v = c[name];
    if (!(typeof v === 'number' && Number.isInteger(v) && v >= min)) throw new LLMConfigError(`${name} must be an integer >= ${min}, got ${JSON.stringify(v)}`);
  };
  int('topK', 0);
  int('maxDemoChars', 1);
  int('maxDemoActions', 1);
  int('maxStateChars', 1);
  int('historyWindow', 0);
  int('historyStateChars', 1);
  int('maxTokens', 1);
  int('maxRetries', 0);
  int('maxConversationChars', 1);
  int('maxConversations', 1);
  int('groupCacheSize', 1);
  if (c.contextWindowTokens !== null) {
    int('contextWindowTokens', 1);
    const problem = experienceModelProblem(c.contextWindowTokens, c.maxTokens);
    if (problem !== null) throw new LLMConfigError(`this chat model cannot be the experience model: ${problem}`);
  }
  if (!(Number.isFinite(c.charsPerToken) && c.charsPerToken > 0 && c.charsPerToken <= 8)) throw new LLMConfigError(`charsPerToken must be in (0, 8], got ${c.charsPerToken}`);
  if (!(Number.isFinite(c.temperature) && c.temperature >= 0 && c.temperature <= 2)) throw new LLMConfigError(`temperature must be in [0, 2], got ${c.temperature}`);
  if (!(Number.isFinite(c.topP) && c.topP > 0 && c.topP <= 1)) throw new LLMConfigError(`topP must be in (0, 1], got ${c.topP}`);
  if (!['json-schema', 'grammar', 'none'].includes(c.constraint)) throw new LLMConfigError(`constraint must be 'json-schema', 'grammar' or 'none', got ${JSON.stringify(c.constraint)}`);
  if (c.model !== undefined && typeof c.model !== 'string') throw new LLMConfigError(`model must be a string, got ${JSON.stringify(c.model)}`);
  if (typeof c.conversation !== 'boolean' || typeof c.groupCache !== 'boolean') throw new LLMConfigError('conversation and groupCache must be booleans');
  if (typeof c.reasoning !== 'boolean') throw new LLMConfigError(`reasoning must be a boolean, got ${JSON.stringify(c.reasoning)}`);
}

/**
 * Whether `task` has what an agent sees of a task. Error messages never print the task: a caller
 * may have passed a whole `Task`, whose goal must not show up anywhere.
 */
function checkTask(task: unknown, where: string): void {
  const t = task as Partial<AgentTask> | null | undefined;
  if (!t || typeof t !== 'object' || typeof t.id !== 'string' || typeof t.env !== 'string' || typeof t.instruction !== 'string') {
    throw new LLMConfigError(`${where} must be a task with a string id, env and instruction, got ${t === null ? 'null' : Array.isArray(t) ? 'an array' : typeof t !== 'object' ? typeof t : 'an object without them'}`);
  }
}

function checkRequest(r: ExperienceStepRequest): void {
  if (!r || typeof r !== 'object') throw new LLMConfigError(`step needs a request object, got ${r === null ? 'null' : typeof r}`);
  checkTask(r.task, 'step: request.task');
  if (!Array.isArray(r.history)) throw new LLMConfigError(`step: request.history must be an array, got ${JSON.stringify(r.history)}`);
  if (!r.observation || typeof r.observation.text !== 'string' || !Array.isArray(r.observation.actions)) {
    throw new LLMConfigError(`step: request.observation must be {text, actions}, got ${JSON.stringify(r.observation)}`);
  }
  if (typeof r.action !== 'string') throw new LLMConfigError(`step: request.action must be a string, got ${JSON.stringify(r.action)}`);
  if (!Array.isArray(r.demos)) throw new LLMConfigError(`step: request.demos must be an array, got ${JSON.stringify(r.demos)}`);
}

function cloneStep(s: ExperienceStep): ExperienceStep {
  return { reasoning: s.reasoning, observation: { text: s.observation.text, actions: [...s.observation.actions] }, reward: s.reward, done: s.done, valid: s.valid };
}

/** Whether `error` is WebLLM's refusal of a prompt longer than the context window. */
export function isContextOverflow(error: unknown): boolean {
  return /ContextWindowSizeExceededError|exceed context window size/i.test(errorText(error));
}

/** Shrink steps of a fresh prompt that does not fit (each halves the retrieved and restated parts). */
const MAX_SHRINK = 3;
/** Fresh restarts per call after overflows or cut-off replies, on top of the parse retries. */
const MAX_CONTEXT_RESTARTS = 3;
/** After an overflow, the prompt budget drops to this share of the prompt that overflowed. */
const OVERFLOW_SHRINK = 0.75;

/** The prompt limits `level` steps shorter than `c`. */
function shrunk(c: LLMExperienceConfig, level: number): LLMExperienceConfig {
  if (level <= 0) return c;
  const f = 2 ** level;
  return {
    ...c,
    topK: Math.floor(c.topK / f),
    maxDemoChars: Math.max(80, Math.floor(c.maxDemoChars / f)),
    maxDemoActions: Math.max(2, Math.floor(c.maxDemoActions / f)),
    maxStateChars: Math.max(400, Math.floor(c.maxStateChars / f)),
    historyWindow: Math.floor(c.historyWindow / f),
    historyStateChars: Math.max(60, Math.floor(c.historyStateChars / f)),
  };
}

/** A prompt to send: the messages before the new user turn, the turn, and the retrieved transitions it shows. */
interface Prompt {
  prefix: ChatCompletionMessageParam[];
  turn: string;
  shownDemos: ReadonlySet<string>;
}

/** The DreamGym experience model on a local LLM. */
export class LLMExperienceModel implements ExperienceModel {
  readonly kind = 'llm';
  readonly config: Readonly<LLMExperienceConfig>;
  private readonly conversations: Lru<Conversation>;
  private readonly cache: Lru<ExperienceStep>;
  private totals = emptyStats();
  private enginePromptCalls = 0;
  /** The longest prompt to send, characters: the context window less the reply, shrunk after each overflow. */
  private promptBudget: number;
  /** The messages of the last request, for telling whether the next one extends it. */
  private lastSent: { messages: ChatCompletionMessageParam[]; reply: string; finishReason: string } | null = null;
  /** Called after every engine request. */
  onCall: ((record: CallRecord) => void) | undefined;

  constructor(
    private readonly engine: ChatEngine,
    config: Partial<LLMExperienceConfig> = {},
  ) {
    if (!engine || typeof engine.chatCompletion !== 'function') throw new LLMConfigError('LLMExperienceModel needs an engine with chatCompletion()');
    if (config === null || typeof config !== 'object') throw new LLMConfigError(`LLMExperienceModel: config must be an object, got ${config === null ? 'null' : typeof config}`);
    checkKeys(config);
    const merged: LLMExperienceConfig = { ...DEFAULT_LLM_EXPERIENCE_CONFIG, ...config };
    checkConfig(merged);
    this.config = Object.freeze(merged);
    this.conversations = new Lru(merged.maxConversations);
    this.cache = new Lru(merged.groupCacheSize);
    this.promptBudget = merged.contextWindowTokens === null ? Infinity : Math.floor((merged.contextWindowTokens - merged.maxTokens - CHAT_TEMPLATE_TOKENS) * merged.charsPerToken);
  }

  /** Totals so far (a copy). */
  get stats(): LLMExperienceStats {
    const s = { ...this.totals };
    s.cacheHitRate = s.cacheLookups > 0 ? s.cacheHits / s.cacheLookups : 0;
    s.promptCharsPerStep = this.enginePromptCalls > 0 ? s.newPromptChars / this.enginePromptCalls : 0;
    s.promptBudgetChars = this.promptBudget;
    return s;
  }

  /** Zeroes the totals. */
  resetStats(): void {
    this.totals = emptyStats();
    this.enginePromptCalls = 0;
  }

  /** Forgets conversations and cached transitions (e.g. between training iterations). */
  clearCache(): void {
    this.conversations.clear();
    this.cache.clear();
  }

  /** A conversation may grow to this many characters before it restarts. */
  private get conversationLimit(): number {
    return Math.min(this.config.maxConversationChars, this.promptBudget);
  }

  /**
   * A fresh prompt (system message and one full user turn) that fits the prompt budget: the
   * retrieved and restated parts shrink step by step until it does (the shortest is returned
   * when none fits; the engine then decides).
   */
  private freshPrompt(system: ChatCompletionMessageParam, build: (config: LLMExperienceConfig) => { turn: string; demos: readonly Demonstration[] }, minLevel = 0): Prompt {
    const systemChars = messageChars([system]);
    let out: Prompt | null = null;
    for (let level = minLevel; level <= MAX_SHRINK; level++) {
      const config = shrunk(this.config, level);
      const { turn, demos } = build(config);
      out = { prefix: [system], turn, shownDemos: new Set(selectDemos(demos, config.topK).map(demoKey)) };
      if (systemChars + turn.length <= this.promptBudget) break;
    }
    return out as Prompt;
  }

  /**
   * The LLM writes the first state of an episode on `task` from its instruction and `demos`
   * (initial states of similar real episodes); with `conversation`, the episode's first step
   * continues this conversation. It always asks the LLM and never runs environment code.
   *
   * Call it only for tasks without a recorded first observation (generated tasks). A seed task's
   * first observation comes from its recorded data (its offline trajectories' first step), which
   * the caller (the training loop) passes straight to {@link step} without calling `reset`.
   *
   * Only {@link agentView}`(task)` is read: a goal, if the caller passed one, is dropped here.
   * Throws {@link ExperienceParseError} when no usable reply came within the retries (or
   * `LLMRequestError` when the engine failed); either is counted in `stats.resetFailures`.
   */
  async reset(task: AgentTask, demos: readonly Demonstration[]): Promise<Observation> {
    checkTask(task, 'reset: task');
    if (!Array.isArray(demos)) throw new LLMConfigError(`reset: demos must be an array, got ${typeof demos}`);
    const view = agentView(task);
    const system: ChatCompletionMessageParam = { role: 'system', content: experienceSystemPrompt(view.env, { reasoning: this.config.reasoning, description: this.config.environmentDescription }) };
    const fresh = (minLevel: number): Prompt => this.freshPrompt(system, (config) => ({ turn: resetTurn(view, demos, config, this.config.reasoning), demos: [] }), minLevel);
    const result = await this.converse('reset', fresh(0), fresh, (reply) => parseResetReply(reply, this.parseOptions()), {}).catch((error: unknown) => {
      this.totals.resetFailures++;
      throw error;
    });
    this.totals.resets++;
    const observation = result.value.observation;
    if (this.config.conversation) {
      this.conversations.set(key(historyParts(view.id, [])), { messages: result.messages, chars: messageChars(result.messages), predicted: observation, shownDemos: new Set() });
    }
    return { text: observation.text, actions: [...observation.actions] };
  }

  /**
   * Predicts the outcome of `request.action`. Only {@link agentView}`(request.task)` is read (a
   * goal, if the caller passed one, is dropped here), with the history, state, action and demos.
   */
  async step(incoming: ExperienceStepRequest, options: StepCallOptions = {}): Promise<ExperienceStep> {
    checkRequest(incoming);
    // Only the fields a step reads, and the task's agent-visible part.
    const request: ExperienceStepRequest = { task: agentView(incoming.task), history: incoming.history, observation: incoming.observation, action: incoming.action, demos: incoming.demos };
    const cacheKey = this.config.groupCache
      ? key([...historyParts(request.task.id, request.history), request.observation.text, request.observation.actions.join('\u0002'), request.action])
      : null;
    if (cacheKey !== null) {
      this.totals.cacheLookups++;
      const hit = this.cache.get(cacheKey);
      if (hit) {
        this.totals.cacheHits++;
        this.totals.steps++;
        return cloneStep(hit);
      }
    }

    const system: ChatCompletionMessageParam = { role: 'system', content: experienceSystemPrompt(request.task.env, { reasoning: this.config.reasoning, description: this.config.environmentDescription }) };
    const fresh = (minLevel: number): Prompt => this.freshPrompt(system, (config) => ({ turn: firstStepTurn(request, config), demos: request.demos }), minLevel);
    const baseKey = key(historyParts(request.task.id, request.history));
    const base = this.config.conversation ? this.conversations.get(baseKey) : undefined;
    let prompt: Prompt | null = null;
    if (base) {
      const turn = followUpStepTurn({ ...request, shownDemos: base.shownDemos }, this.config, sameObservation(base.predicted, request.observation));
      if (base.chars + turn.length > this.conversationLimit) {
        this.totals.conversationRestarts++;
      } else {
        const shownDemos = new Set(base.shownDemos);
        for (const d of selectDemos(request.demos, this.config.topK)) shownDemos.add(demoKey(d));
        prompt = { prefix: base.messages, turn, shownDemos };
      }
    }
    if (prompt === null) {
      prompt = fresh(0);
      this.totals.conversationsStarted++;
    }

    const result = await this.converse('step', prompt, fresh, (reply) => parseStepReply(reply, this.parseOptions()), options);
    const step = result.value;
    this.totals.steps++;
    this.totals.ruleCorrections += result.corrections;
    // An action the state does not list is invalid whatever the model says (DreamGym: it leads to
    // a failure state with reward 0); the policy only proposes listed actions, so this is rare.
    if (step.valid && !isAdmissible(request.observation, request.action, new Set(this.config.freeTextActions))) {
      step.valid = false;
      step.reward = 0;
      this.totals.ruleCorrections++;
    }
    if (this.config.conversation && !step.done) {
      const nextHistory: HistoryStep[] = [...request.history, { observation: request.observation, action: request.action }];
      this.conversations.set(key(historyParts(request.task.id, nextHistory)), { messages: result.messages, chars: messageChars(result.messages), predicted: step.observation, shownDemos: result.shownDemos });
    }
    if (cacheKey !== null) this.cache.set(cacheKey, cloneStep(step));
    return cloneStep(step);
  }

  /**
   * Sends `prompt`, parses the reply, and on an unusable reply appends it with a correction turn
   * and asks again (so the retry extends the same conversation). A prompt the context window
   * cannot hold, a reply cut off by the window or `maxTokens`, or a retry that would outgrow the
   * window is sent again as a `fresh` prompt, shorter each time. Returns the value and the clean
   * conversation `prefix + turn + reply`.
   */
  private async converse<T>(
    kind: 'step' | 'reset',
    first: Prompt,
    fresh: (minLevel: number) => Prompt,
    parse: (reply: string) => { ok: true; value: T; corrections: string[] } | { ok: false; problem: string },
    options: StepCallOptions,
  ): Promise<{ value: T; messages: ChatCompletionMessageParam[]; corrections: number; shownDemos: ReadonlySet<string> }> {
    const maxRetries = options.maxRetries ?? this.config.maxRetries;
    if (!(Number.isInteger(maxRetries) && maxRetries >= 0)) throw new LLMConfigError(`maxRetries must be an integer >= 0, got ${maxRetries}`);
    const temperature = options.temperature ?? this.config.temperature;
    const topP = options.topP ?? this.config.topP;
    const maxTokens = options.maxTokens ?? this.config.maxTokens;
    let prompt = first;
    let userTurn: ChatCompletionMessageParam = { role: 'user', content: prompt.turn };
    let messages: ChatCompletionMessageParam[] = [...prompt.prefix, userTurn];
    const problems: string[] = [];
    let lastReply = '';
    let restarts = 0;
    let level = 0;
    const format = responseFormat(this.config.constraint, kind, this.config.reasoning);
    if (kind === 'step') this.enginePromptCalls++;
    /** Starts over from a fresh prompt one step shorter; false when the restarts are spent. */
    const restart = (): boolean => {
      if (restarts >= MAX_CONTEXT_RESTARTS) return false;
      restarts++;
      level = Math.min(MAX_SHRINK, level + 1);
      this.totals.contextRestarts++;
      prompt = fresh(level);
      userTurn = { role: 'user', content: prompt.turn };
      messages = [...prompt.prefix, userTurn];
      return true;
    };
    for (let attempt = 1; attempt <= maxRetries + 1; ) {
      if (attempt > 1) this.totals.retries++;
      const promptChars = messageChars(messages);
      const extendsPrevious = this.extendsLast(messages);
      const newPromptChars = extendsPrevious && this.lastSent ? promptChars - messageChars(this.lastSent.messages) - this.lastSent.reply.length : promptChars;
      const started = performance.now();
      let reply: string;
      let finishReason: string;
      let promptTokens = 0;
      let completionTokens = 0;
      try {
        const completion = await this.engine.chatCompletion({
          messages,
          ...(this.config.model !== undefined ? { model: this.config.model } : {}),
          stream: false,
          temperature,
          top_p: topP,
          max_tokens: maxTokens,
          ...(format ? { response_format: format } : {}),
        });
        reply = completionText(completion) ?? '';
        finishReason = (completion as Partial<typeof completion> | null)?.choices?.[0]?.finish_reason ?? 'stop';
        promptTokens = completion.usage?.prompt_tokens ?? 0;
        completionTokens = completion.usage?.completion_tokens ?? 0;
      } catch (error) {
        this.lastSent = null;
        // WebLLM refuses the whole prompt: a retry that appended to it would only grow it.
        if (isContextOverflow(error)) {
          this.promptBudget = Math.min(this.promptBudget, Math.floor(promptChars * OVERFLOW_SHRINK));
          if (restart()) continue;
        }
        this.totals.engineErrors++;
        this.totals.failures++;
        throw new LLMRequestError(`the experience model's ${kind} request failed: ${errorText(error)}`, { cause: error });
      }
      const latencyMs = performance.now() - started;
      this.lastSent = { messages, reply, finishReason };
      const cutOff = finishReason === 'length';
      const parsed = cutOff ? ({ ok: false, problem: `the reply was cut off after ${completionTokens} tokens (finish_reason "length")` } as const) : parse(reply);
      const record: CallRecord = {
        kind,
        attempt,
        promptTokens,
        completionTokens,
        latencyMs,
        promptChars,
        newPromptChars,
        extendsPrevious,
        ok: parsed.ok,
        ...(parsed.ok ? {} : { problem: parsed.problem }),
      };
      this.totals.calls++;
      this.totals.promptTokens += promptTokens;
      this.totals.completionTokens += completionTokens;
      this.totals.latencyMs += latencyMs;
      this.totals.promptChars += promptChars;
      this.totals.newPromptChars += newPromptChars;
      if (extendsPrevious) this.totals.extendedCalls++;
      this.onCall?.(record);
      if (parsed.ok) {
        return { value: parsed.value, messages: [...prompt.prefix, userTurn, { role: 'assistant', content: reply }], corrections: parsed.corrections.length, shownDemos: prompt.shownDemos };
      }
      this.totals.parseFailures++;
      problems.push(parsed.problem);
      lastReply = reply;
      if (cutOff) {
        // Cut off before maxTokens: the window is full, so the prompt must leave that much more room.
        if (completionTokens < maxTokens) {
          const room = Math.floor(promptChars - (maxTokens - completionTokens) * this.config.charsPerToken);
          this.promptBudget = Math.min(this.promptBudget, Math.max(0, Math.min(room, Math.floor(promptChars * OVERFLOW_SHRINK))));
        }
        // A cut-off reply is not in WebLLM's KV cache whole (it restarts the conversation anyway): ask afresh, shorter.
        if (restart()) continue;
      }
      attempt++;
      const correction: ChatCompletionMessageParam = { role: 'user', content: correctionTurn(parsed.problem, kind === 'step' ? replyFormat(this.config.reasoning) : resetFormat(this.config.reasoning)) };
      const retried = [...messages, { role: 'assistant' as const, content: reply }, correction];
      if (messageChars(retried) <= this.promptBudget) messages = retried;
      else {
        // The correction would not fit: the same question, fresh and shorter, instead.
        level = Math.min(MAX_SHRINK, level + 1);
        prompt = fresh(level);
        userTurn = { role: 'user', content: prompt.turn };
        messages = [...prompt.prefix, userTurn];
      }
    }
    this.totals.failures++;
    throw new ExperienceParseError(
      `The experience model gave no usable ${kind} reply in ${maxRetries + 1} attempt${maxRetries === 0 ? '' : 's'}: ${problems[problems.length - 1] ?? 'unknown problem'}`,
      maxRetries + 1,
      problems,
      lastReply.slice(0, 500),
    );
  }

  /** How replies are parsed under this config. */
  private parseOptions(): { allowSurroundingText: boolean; reasoning: boolean } {
    return { allowSurroundingText: this.config.constraint === 'none', reasoning: this.config.reasoning };
  }

  /** Whether `messages` is the last request plus its whole reply plus new turns (KV-cache reuse). */
  private extendsLast(messages: readonly ChatCompletionMessageParam[]): boolean {
    const last = this.lastSent;
    // WebLLM restarts the conversation after a reply cut off by length or an interrupt.
    if (!last || last.finishReason !== 'stop') return false;
    const n = last.messages.length;
    if (messages.length !== n + 2) return false;
    for (let i = 0; i < n; i++) {
      const a = messages[i] as ChatCompletionMessageParam;
      const b = last.messages[i] as ChatCompletionMessageParam;
      if (a !== b && (a.role !== b.role || a.content !== b.content)) return false;
    }
    const reply = messages[n] as ChatCompletionMessageParam;
    return reply.role === 'assistant' && reply.content === last.reply;
  }
}
