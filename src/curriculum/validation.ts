/**
 * Validation shared by the task generators: a candidate becomes a task only if it parses, is
 * not a near-duplicate of a known task (same goal, or instruction token Jaccard >= threshold),
 * and its environment's `validateTask` accepts it. For built-in environments the instruction is
 * rewritten from the goal by the environment's own instruction builder, so what the agent reads
 * always matches what is rewarded.
 */
import { hashString } from '../core/rng.ts';
import { type JsonValue, type Task, TaskSchema } from '../core/types.ts';
import { instructionFor, HouseholdGoalSchema } from '../envs/household/index.ts';
import { getEnvSpec } from '../envs/registry.ts';
import { generateCatalogue, satisfiesGoal, shopInstruction, ShopGoalSchema } from '../envs/shop/index.ts';

/** Default instruction-similarity threshold above which a candidate is a near-duplicate. */
export const NEAR_DUPLICATE_JACCARD = 0.9;

/**
 * Lower-cased word tokens of an instruction, for near-duplicate checks. A number becomes a
 * bucket of width 25% (`~17` for 45.00 and 44.50, `~15` for 30), so a price nudged by a few
 * cents does not make a "different" task.
 */
export function instructionTokens(text: string): Set<string> {
  const words = text.toLowerCase().match(/[\p{L}\p{N}]+(?:\.\d+)?/gu) ?? [];
  return new Set(
    words.map((w) => {
      if (!/^\d+(?:\.\d+)?$/.test(w)) return w;
      const x = Number(w);
      return x > 0 ? `~${Math.round(Math.log(x) / Math.log(1.25))}` : `~${w}`;
    }),
  );
}

/** |a ∩ b| / |a ∪ b| (1 for two empty sets). */
export function jaccard(a: ReadonlySet<string>, b: ReadonlySet<string>): number {
  if (a.size === 0 && b.size === 0) return 1;
  let inter = 0;
  for (const x of a) if (b.has(x)) inter++;
  return inter / (a.size + b.size - inter);
}

/** JSON with object keys sorted, so equal goals give equal strings. */
export function canonicalJson(value: JsonValue | unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

/** The generation of a task: its `generation` field, else 0 for a seed task and 1 for a generated one. */
export function taskGeneration(task: Task): number {
  return task.generation ?? (task.origin === 'seed' ? 0 : 1);
}

/**
 * Makes a goal consistent where an environment derives fields from others (the shop's
 * `targetId`: a product that satisfies the goal). Returns the goal unchanged when it cannot.
 */
export function repairGoal(env: string, goal: unknown): unknown {
  if (env === 'shop') {
    const parsed = ShopGoalSchema.safeParse(goal);
    if (!parsed.success) return goal;
    const g = parsed.data;
    const catalogue = generateCatalogue(g.catalogueSeed);
    const current = catalogue.byId.get(g.targetId);
    if (current && satisfiesGoal(current, g)) return g;
    const target = catalogue.products.find((p) => satisfiesGoal(p, g));
    return target ? { ...g, targetId: target.id } : g;
  }
  if (env === 'household' && goal !== null && typeof goal === 'object' && !Array.isArray(goal)) {
    const g = { ...(goal as Record<string, unknown>) };
    if (g.type === 'look_at_obj_in_light') delete g.receptacle;
    return g;
  }
  return goal;
}

/** The instruction a built-in environment writes for `goal`, or null (unknown env or bad goal). */
export function canonicalInstruction(env: string, goal: unknown): string | null {
  if (env === 'shop') {
    const g = ShopGoalSchema.safeParse(goal);
    return g.success ? shopInstruction(g.data) : null;
  }
  if (env === 'household') {
    const g = HouseholdGoalSchema.safeParse(goal);
    return g.success ? instructionFor(g.data) : null;
  }
  return null;
}

/** A proposed task: an instruction (optional for built-in environments) and a goal. */
export interface TaskCandidate {
  instruction?: unknown;
  goal: unknown;
}

/** Why a candidate was rejected, in broad classes (for statistics). */
export type RejectionKind = 'malformed' | 'duplicate' | 'near-duplicate' | 'invalid';

/** The verdict on a candidate. */
export type CandidateVerdict = { ok: true; task: Task } | { ok: false; kind: RejectionKind; reason: string };

/** Options of a {@link TaskValidator}. */
export interface TaskValidatorOptions {
  /** Instruction token Jaccard at or above which a candidate is a near-duplicate (default 0.9). */
  nearDuplicateThreshold?: number;
}

/**
 * Checks candidates against the tasks known so far (the seeds and every accepted candidate).
 * Accepted tasks are remembered, so a batch never holds two near-duplicates.
 */
export class TaskValidator {
  private readonly goals = new Map<string, string>();
  private readonly instructions: { id: string; tokens: Set<string> }[] = [];
  private readonly threshold: number;

  constructor(known: readonly Task[], options: TaskValidatorOptions = {}) {
    this.threshold = options.nearDuplicateThreshold ?? NEAR_DUPLICATE_JACCARD;
    if (!(Number.isFinite(this.threshold) && this.threshold > 0 && this.threshold <= 1)) {
      throw new RangeError(`nearDuplicateThreshold must be in (0, 1], got ${options.nearDuplicateThreshold}`);
    }
    for (const t of known) this.remember(t);
  }

  private remember(task: Task): void {
    this.goals.set(`${task.env}:${canonicalJson(task.goal)}`, task.id);
    this.instructions.push({ id: task.id, tokens: instructionTokens(task.instruction) });
  }

  /** Builds the task for `candidate` as a child of `parent` and checks it; remembers it when accepted. */
  check(candidate: TaskCandidate, parent: Task): CandidateVerdict {
    if (candidate === null || typeof candidate !== 'object') return { ok: false, kind: 'malformed', reason: `a candidate must be an object with a goal, got ${JSON.stringify(candidate)}` };
    const goal = repairGoal(parent.env, candidate.goal);
    if (goal === null || typeof goal !== 'object' || Array.isArray(goal)) return { ok: false, kind: 'malformed', reason: `the goal must be a JSON object, got ${JSON.stringify(candidate.goal)}` };
    const canonical = canonicalInstruction(parent.env, goal);
    const instruction = canonical ?? candidate.instruction;
    if (typeof instruction !== 'string' || instruction.trim() === '') return { ok: false, kind: 'malformed', reason: `the instruction must be a non-empty string, got ${JSON.stringify(candidate.instruction)}` };
    const generation = taskGeneration(parent) + 1;
    const goalKey = canonicalJson(goal);
    const task: Task = {
      id: `${parent.env}-${parent.split}-gen${generation}-${hashString(`${parent.env}:${goalKey}`).toString(36)}`,
      env: parent.env,
      instruction: instruction.trim(),
      goal: goal as JsonValue,
      split: parent.split,
      origin: 'generated',
      parentId: parent.id,
      generation,
    };
    const shape = TaskSchema.safeParse(task);
    if (!shape.success) return { ok: false, kind: 'malformed', reason: `not a valid task: ${shape.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}` };
    const same = this.goals.get(`${task.env}:${goalKey}`);
    if (same !== undefined) return { ok: false, kind: 'duplicate', reason: `the goal is the same as task ${same}'s` };
    const tokens = instructionTokens(task.instruction);
    for (const known of this.instructions) {
      const sim = jaccard(tokens, known.tokens);
      if (sim >= this.threshold) return { ok: false, kind: 'near-duplicate', reason: `the instruction is a near-duplicate of task ${known.id}'s (word overlap ${sim.toFixed(2)})` };
    }
    let validation;
    try {
      validation = getEnvSpec(task.env).validateTask(task);
    } catch (error) {
      return { ok: false, kind: 'invalid', reason: `validation failed: ${error instanceof Error ? error.message : String(error)}` };
    }
    if (!validation.ok) return { ok: false, kind: 'invalid', reason: validation.reason };
    this.remember(task);
    return { ok: true, task };
  }
}
