/**
 * Curriculum task generators: `generate(seedTasks, n)` returns up to `n` new tasks derived from
 * the (high reward-variance) seed tasks, each validated (parses, not a near-duplicate, the
 * environment's `validateTask` passes) and carrying `parentId` and `generation`.
 * - {@link LLMTaskGenerator}: the LLM writes variations (DreamGym section 4.2 prompt).
 * - {@link RecombinationTaskGenerator}: no LLM; recombines goal attributes across seed tasks.
 *
 * Declared domain knowledge (DESIGN.md section 4): generators work on whole tasks, goals
 * included, and validate them against the real environment (`validation.ts` reads `src/envs`),
 * because a generated task needs a goal that the real environment can evaluate. The tasks they
 * return keep that goal for the real environment only (evaluation, S2R, real baselines); what is
 * passed on to an experience model, reward model or prompt of a synthetic rollout is
 * `agentView(task)`, never the goal nor anything computed from it here (the repaired goal, the
 * target product, the rejection reasons). A generated instruction carries no hidden goal field
 * (`TaskValidator` rejects one that does).
 */
import { Rng } from '../core/rng.ts';
import type { JsonValue, Task } from '../core/types.ts';
import type { ChatEngine } from '../llm/engine.ts';
import { completionText } from '../llm/engine.ts';
import { LLMConfigError, LLMRequestError, errorText } from '../llm/errors.ts';
import { generatorMessages } from './prompt.ts';
import { type RejectionKind, type TaskCandidate, TaskValidator, canonicalJson } from './validation.ts';

/** What a generation run produced, and what it rejected and why. */
export interface GenerationReport {
  tasks: Task[];
  rejected: { parentId: string; kind: RejectionKind | 'unparsable-reply'; reason: string }[];
  /** Candidates proposed (LLM replies' tasks, or recombinations tried). */
  candidates: number;
}

/** A curriculum task generator. */
export interface TaskGenerator {
  /** 'llm' or 'recombination'. */
  readonly kind: string;
  /** Up to `n` new validated tasks derived from `seedTasks` (fewer when not enough valid ones turn up). */
  generate(seedTasks: readonly Task[], n: number): Promise<Task[]>;
  /** {@link generate} with the rejected candidates and their reasons. */
  generateWithReport(seedTasks: readonly Task[], n: number): Promise<GenerationReport>;
  /**
   * The generator's own state that later calls depend on (a seeded generator's random stream), for
   * a run's snapshot, so that a resumed run generates what an uninterrupted one would. Absent when
   * there is none to keep (the LLM generator samples in the engine).
   */
  saveState?(): JsonValue;
  /** Restores what {@link saveState} returned. */
  restoreState?(state: JsonValue): void;
}

/** A seeded generator's saved state: its random stream's words. */
export function rngGeneratorState(rng: Rng): JsonValue {
  return { rng: rng.state() };
}

/** Restores {@link rngGeneratorState}'s `state` into `rng`; `bad` makes the error for a state of another shape. */
export function restoreRngGeneratorState(rng: Rng, state: JsonValue, bad: (state: JsonValue) => Error): void {
  const words = state !== null && typeof state === 'object' && !Array.isArray(state) ? state.rng : undefined;
  if (!Array.isArray(words)) throw bad(state);
  // setState checks the words themselves.
  rng.setState(words as number[]);
}

function checkArgs(seedTasks: readonly Task[], n: number): void {
  if (!Array.isArray(seedTasks)) throw new LLMConfigError(`seedTasks must be an array of tasks, got ${typeof seedTasks}`);
  if (!(Number.isInteger(n) && n >= 0)) throw new LLMConfigError(`n must be an integer >= 0, got ${n}`);
  if (n > 0 && seedTasks.length === 0) throw new LLMConfigError('generating tasks needs at least one seed task, got 0');
  seedTasks.forEach((t, i) => {
    if (!t || typeof t.id !== 'string' || typeof t.env !== 'string') throw new LLMConfigError(`seedTasks[${i}] is not a task: ${JSON.stringify(t)}`);
  });
}

/** Settings of {@link LLMTaskGenerator}; defaults in {@link DEFAULT_LLM_GENERATOR_CONFIG}. */
export interface LLMTaskGeneratorConfig {
  model?: string;
  temperature: number;
  maxTokens: number;
  /** Variations asked for per request. */
  perSeed: number;
  /** Requests at most, per `generate` call: `maxRequestsFactor * ceil(n / perSeed)` (at least 1). */
  maxRequestsFactor: number;
  nearDuplicateThreshold: number;
}

/** Defaults of {@link LLMTaskGeneratorConfig}. */
const DEFAULT_LLM_GENERATOR_CONFIG: LLMTaskGeneratorConfig = {
  temperature: 0.9,
  maxTokens: 1024,
  perSeed: 3,
  maxRequestsFactor: 3,
  nearDuplicateThreshold: 0.9,
};

/** Counters of an {@link LLMTaskGenerator}. */
export interface LLMGeneratorStats {
  requests: number;
  unparsableReplies: number;
  candidates: number;
  accepted: number;
  rejected: number;
  promptTokens: number;
  completionTokens: number;
  latencyMs: number;
}

/** Reads `{"tasks": [...]}` (or a bare array) from a reply; null when it is not that. */
export function parseGeneratorReply(reply: string): TaskCandidate[] | null {
  const text = reply.trim().replace(/^```(?:json)?\s*([\s\S]*?)\s*```$/i, '$1');
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    const start = text.search(/[[{]/);
    if (start < 0) return null;
    try {
      value = JSON.parse(text.slice(start, Math.max(text.lastIndexOf('}'), text.lastIndexOf(']')) + 1));
    } catch {
      return null;
    }
  }
  const list = Array.isArray(value) ? value : value !== null && typeof value === 'object' ? (value as { tasks?: unknown }).tasks : undefined;
  if (!Array.isArray(list)) return null;
  return list.map((item: unknown) => (item !== null && typeof item === 'object' ? (item as TaskCandidate) : { goal: item }));
}

/** Longest instruction a generated task may have (the environments' own run to about 200 characters). */
const GENERATED_INSTRUCTION_MAX_CHARS = 400;

/**
 * The `response_format` of a generator request: `{"tasks": [...]}` with 1 to `count` tasks.
 * WebLLM compiles the `schema` of every `json_object` request and fails without one. The goal
 * stays any JSON object: its fields are the seed environment's, checked by `TaskValidator`.
 */
function generatorResponseFormat(count: number): { type: 'json_object'; schema: string } {
  if (!(Number.isInteger(count) && count >= 1)) throw new LLMConfigError(`count must be an integer >= 1, got ${count}`);
  const task = {
    type: 'object',
    properties: { instruction: { type: 'string', minLength: 1, maxLength: GENERATED_INSTRUCTION_MAX_CHARS }, goal: { type: 'object' } },
    required: ['instruction', 'goal'],
  };
  return { type: 'json_object', schema: JSON.stringify({ type: 'object', properties: { tasks: { type: 'array', items: task, minItems: 1, maxItems: count } }, required: ['tasks'] }) };
}

/** The LLM task generator (DreamGym's curriculum task variation). */
export class LLMTaskGenerator implements TaskGenerator {
  readonly kind = 'llm';
  readonly config: Readonly<LLMTaskGeneratorConfig>;
  readonly stats: LLMGeneratorStats = { requests: 0, unparsableReplies: 0, candidates: 0, accepted: 0, rejected: 0, promptTokens: 0, completionTokens: 0, latencyMs: 0 };

  constructor(
    private readonly engine: ChatEngine,
    config: Partial<LLMTaskGeneratorConfig> = {},
  ) {
    if (!engine || typeof engine.chatCompletion !== 'function') throw new LLMConfigError('LLMTaskGenerator needs an engine with chatCompletion()');
    const c = { ...DEFAULT_LLM_GENERATOR_CONFIG, ...config };
    if (!(Number.isInteger(c.perSeed) && c.perSeed >= 1)) throw new LLMConfigError(`perSeed must be an integer >= 1, got ${c.perSeed}`);
    if (!(Number.isInteger(c.maxRequestsFactor) && c.maxRequestsFactor >= 1)) throw new LLMConfigError(`maxRequestsFactor must be an integer >= 1, got ${c.maxRequestsFactor}`);
    if (!(Number.isInteger(c.maxTokens) && c.maxTokens >= 16)) throw new LLMConfigError(`maxTokens must be an integer >= 16, got ${c.maxTokens}`);
    if (!(Number.isFinite(c.temperature) && c.temperature >= 0 && c.temperature <= 2)) throw new LLMConfigError(`temperature must be in [0, 2], got ${c.temperature}`);
    this.config = Object.freeze(c);
  }

  async generate(seedTasks: readonly Task[], n: number): Promise<Task[]> {
    return (await this.generateWithReport(seedTasks, n)).tasks;
  }

  async generateWithReport(seedTasks: readonly Task[], n: number): Promise<GenerationReport> {
    checkArgs(seedTasks, n);
    const report: GenerationReport = { tasks: [], rejected: [], candidates: 0 };
    if (n === 0) return report;
    const validator = new TaskValidator(seedTasks, { nearDuplicateThreshold: this.config.nearDuplicateThreshold });
    const maxRequests = Math.max(1, this.config.maxRequestsFactor * Math.ceil(n / this.config.perSeed));
    for (let r = 0; r < maxRequests && report.tasks.length < n; r++) {
      const parent = seedTasks[r % seedTasks.length] as Task;
      const count = Math.min(this.config.perSeed, n - report.tasks.length);
      const started = performance.now();
      let reply: string;
      try {
        const completion = await this.engine.chatCompletion({
          messages: generatorMessages(parent, count),
          ...(this.config.model !== undefined ? { model: this.config.model } : {}),
          stream: false,
          temperature: this.config.temperature,
          max_tokens: this.config.maxTokens,
          response_format: generatorResponseFormat(count),
        });
        reply = completionText(completion) ?? '';
        this.stats.promptTokens += completion.usage?.prompt_tokens ?? 0;
        this.stats.completionTokens += completion.usage?.completion_tokens ?? 0;
      } catch (error) {
        throw new LLMRequestError(`the task generator's request failed: ${errorText(error)}`, { cause: error });
      } finally {
        this.stats.requests++;
        this.stats.latencyMs += performance.now() - started;
      }
      const candidates = parseGeneratorReply(reply);
      if (candidates === null) {
        this.stats.unparsableReplies++;
        report.rejected.push({ parentId: parent.id, kind: 'unparsable-reply', reason: `the reply is not {"tasks": [...]}: ${JSON.stringify(reply.slice(0, 120))}` });
        continue;
      }
      for (const candidate of candidates) {
        if (report.tasks.length >= n) break;
        report.candidates++;
        this.stats.candidates++;
        const verdict = validator.check(candidate, parent);
        if (verdict.ok) {
          report.tasks.push(verdict.task);
          this.stats.accepted++;
        } else {
          report.rejected.push({ parentId: parent.id, kind: verdict.kind, reason: verdict.reason });
          this.stats.rejected++;
        }
      }
    }
    return report;
  }
}

/** Settings of {@link RecombinationTaskGenerator}. */
export interface RecombinationConfig {
  /** Seed of the recombination choices (same seed, same seeds in, same tasks out). */
  seed: number;
  /** Recombinations tried per requested task. */
  attemptsPerTask: number;
  nearDuplicateThreshold: number;
}

/** Defaults of {@link RecombinationConfig}. */
const DEFAULT_RECOMBINATION_CONFIG: RecombinationConfig = { seed: 0, attemptsPerTask: 40, nearDuplicateThreshold: 0.9 };

/** Goal fields kept from the parent: they fix the world the goal lives in. */
const PINNED_FIELDS: Record<string, readonly string[]> = {
  shop: ['catalogueSeed', 'category', 'productType', 'targetId'],
  household: ['layoutSeed'],
};

type GoalObject = { [key: string]: JsonValue };

function isObject(v: JsonValue | undefined): v is GoalObject {
  return v !== null && v !== undefined && typeof v === 'object' && !Array.isArray(v);
}

/** How much two goals share (pinned fields count double): partners that share more recombine into valid goals more often. */
function affinity(env: string, a: GoalObject, b: GoalObject): number {
  const pinned = PINNED_FIELDS[env] ?? [];
  let score = 0;
  for (const k of Object.keys(a)) if (canonicalJson(a[k]) === canonicalJson(b[k])) score += pinned.includes(k) ? 2 : 1;
  return score;
}

/**
 * Crosses `parent` with `partner`: pinned fields from the parent; every other field from either
 * (arrays: the parent's plus one of the partner's new elements; nested objects field by field;
 * numbers: the stricter, i.e. smaller, one half of the time). At least one field changes when
 * the partner differs.
 */
export function recombineGoals(env: string, parent: GoalObject, partner: GoalObject, rng: Rng): GoalObject {
  const pinned = new Set(PINNED_FIELDS[env] ?? []);
  const mix = (a: JsonValue | undefined, b: JsonValue | undefined, top: boolean, key: string): JsonValue | undefined => {
    if (top && pinned.has(key)) return a;
    if (b === undefined) return a;
    if (a === undefined) return rng.chance(0.5) ? b : undefined;
    if (Array.isArray(a) && Array.isArray(b)) {
      const fresh = b.filter((x) => !a.some((y) => canonicalJson(y) === canonicalJson(x)));
      return fresh.length > 0 && rng.chance(0.7) ? [...a, rng.pick(fresh)] : a;
    }
    if (isObject(a) && isObject(b)) {
      const out: GoalObject = {};
      for (const k of new Set([...Object.keys(a), ...Object.keys(b)])) {
        const v = mix(a[k], b[k], false, k);
        if (v !== undefined) out[k] = v;
      }
      return out;
    }
    if (typeof a === 'number' && typeof b === 'number') return rng.chance(0.5) ? Math.min(a, b) : a;
    return rng.chance(0.5) ? b : a;
  };
  const out: GoalObject = {};
  for (const k of new Set([...Object.keys(parent), ...Object.keys(partner)])) {
    const v = mix(parent[k], partner[k], true, k);
    if (v !== undefined) out[k] = v;
  }
  return out;
}

/**
 * The no-LLM generator: recombines goal attributes across seed tasks of the same environment.
 * Its random stream carries over between calls, so a sequence of calls is reproducible from the
 * seed, and a repeated call gives new tasks rather than the same ones; `saveState` and
 * `restoreState` carry it over a resume.
 */
export class RecombinationTaskGenerator implements TaskGenerator {
  readonly kind = 'recombination';
  readonly config: Readonly<RecombinationConfig>;
  private readonly rng: Rng;

  constructor(config: Partial<RecombinationConfig> = {}) {
    const c = { ...DEFAULT_RECOMBINATION_CONFIG, ...config };
    if (!Number.isFinite(c.seed)) throw new LLMConfigError(`seed must be a finite number, got ${c.seed}`);
    if (!(Number.isInteger(c.attemptsPerTask) && c.attemptsPerTask >= 1)) throw new LLMConfigError(`attemptsPerTask must be an integer >= 1, got ${c.attemptsPerTask}`);
    this.config = Object.freeze(c);
    this.rng = new Rng(c.seed);
  }

  saveState(): JsonValue {
    return rngGeneratorState(this.rng);
  }

  restoreState(state: JsonValue): void {
    restoreRngGeneratorState(this.rng, state, (s) => new LLMConfigError(`not a recombination generator state: ${JSON.stringify(s)}`));
  }

  async generate(seedTasks: readonly Task[], n: number): Promise<Task[]> {
    return (await this.generateWithReport(seedTasks, n)).tasks;
  }

  async generateWithReport(seedTasks: readonly Task[], n: number): Promise<GenerationReport> {
    checkArgs(seedTasks, n);
    const report: GenerationReport = { tasks: [], rejected: [], candidates: 0 };
    if (n === 0) return report;
    const validator = new TaskValidator(seedTasks, { nearDuplicateThreshold: this.config.nearDuplicateThreshold });
    const usable = seedTasks.filter((t) => isObject(t.goal));
    if (usable.length === 0) return report;
    const attempts = this.config.attemptsPerTask * n;
    for (let a = 0; a < attempts && report.tasks.length < n; a++) {
      const parent = this.rng.pick(usable);
      const parentGoal = parent.goal as GoalObject;
      const others = usable.filter((t) => t.env === parent.env && t.id !== parent.id);
      if (others.length === 0) continue;
      // Prefer partners close to the parent (same product type, same home), but not only them.
      const ranked = others.map((t) => ({ t, s: affinity(parent.env, parentGoal, t.goal as GoalObject) + this.rng.next() * 2 })).sort((x, y) => y.s - x.s);
      const partner = (ranked[Math.min(ranked.length - 1, this.rng.int(0, 2))] as { t: Task }).t;
      const goal = recombineGoals(parent.env, parentGoal, partner.goal as GoalObject, this.rng);
      report.candidates++;
      const verdict = validator.check({ goal }, parent);
      if (verdict.ok) report.tasks.push(verdict.task);
      else report.rejected.push({ parentId: parent.id, kind: verdict.kind, reason: verdict.reason });
    }
    return report;
  }
}
