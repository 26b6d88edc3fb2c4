/**
 * Validation shared by the task generators: a candidate becomes a task only if it parses, is
 * not a near-duplicate of a known task (same goal, or instruction token Jaccard >= threshold),
 * its instruction carries none of the goal's hidden fields, and its environment's `validateTask`
 * accepts it. For built-in environments the instruction is rewritten from the goal by the
 * environment's own instruction builder, so what the agent reads always matches what is
 * rewarded (and an instruction the generator wrote, with whatever it carried, is dropped).
 *
 * Declared domain knowledge (DESIGN.md section 4). This module reads `src/envs`: the registry's
 * `validateTask`, the goal schemas, the instruction builders (`shopInstruction`,
 * `instructionFor`) and the shop catalogue (`generateCatalogue`, `satisfiesGoal`, to recompute a
 * goal's `targetId`). The reason: a generated task needs a goal that the real environment can
 * evaluate (for evaluation, S2R and the real-environment baselines), so it is checked against
 * that environment here, when the task is made. None of it reaches a synthetic rollout: the
 * goal of a generated `Task` is ground truth for the real environment only, and what an
 * experience model, reward model or prompt of a rollout receives is `agentView(task)` (the
 * instruction, never the goal). Nothing computed here (the repaired goal, the target product,
 * the validation verdict) is part of that view; the instruction is checked not to carry it.
 */
import { hashString } from '../core/rng.ts';
import { type JsonValue, type Task, TaskSchema } from '../core/types.ts';
import { instructionFor, HouseholdGoalSchema } from '../envs/household/index.ts';
import { getEnvSpec, isBuiltinEnv } from '../envs/registry.ts';
import { generateCatalogue, satisfiesGoal, shopInstruction, ShopGoalSchema } from '../envs/shop/index.ts';

/**
 * Goal fields hidden from the agent, per built-in environment: they identify the answer or the
 * world (the shop's target product and catalogue, the household's layout seed), which the agent
 * must discover by acting; only the real environment reads them. Besides these, any goal key
 * named `id` or `seed`, or ending in one as a word (`fooId`, `fooSeed`, `foo_id`, `foo-seed`),
 * counts as hidden.
 */
export const HIDDEN_GOAL_FIELDS: Readonly<Record<string, readonly string[]>> = {
  shop: ['targetId', 'catalogueSeed'],
  household: ['layoutSeed'],
};

/**
 * Goal fields that fix the world a task lives in, per built-in environment (a subset of the
 * hidden ones): a generated task must keep its parent's, so that its episodes happen where its
 * parent's did and an experience model may ground it in its root task's recorded episodes (see
 * `Task.rootId`). DreamGym's generator varies the task, not the environment.
 */
export const WORLD_GOAL_FIELDS: Readonly<Record<string, readonly string[]>> = {
  shop: ['catalogueSeed'],
  household: ['layoutSeed'],
};

/** The hidden fields (see {@link HIDDEN_GOAL_FIELDS}) that `goal` has, with their values. */
export function hiddenGoalFields(env: string, goal: unknown): { name: string; value: unknown }[] {
  if (goal === null || typeof goal !== 'object' || Array.isArray(goal)) return [];
  const declared = new Set(HIDDEN_GOAL_FIELDS[env] ?? []);
  return Object.entries(goal as Record<string, unknown>)
    .filter(([name]) => declared.has(name) || /^(?:id|seed)$|[a-z0-9](?:Id|ID|Seed|SEED)$|[_-](?:id|ID|Id|seed|Seed|SEED)$/.test(name))
    .map(([name, value]) => ({ name, value }));
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/**
 * Why `instruction` carries a hidden field of `goal`, or null when it carries none. A field is
 * carried when the instruction names it (`targetId`, "target id", `target_id`, any case) or holds
 * its value as a whole word: a text value of 3 or more characters, or a number of 4 or more
 * digits (smaller numbers, like a catalogue seed of 0, occur in ordinary instructions: "size 0").
 */
export function hiddenFieldLeak(env: string, instruction: string, goal: unknown): string | null {
  for (const { name, value } of hiddenGoalFields(env, goal)) {
    const words = name.replace(/([a-z0-9])([A-Z])/g, '$1 $2').split(/[\s_-]+/).filter((w) => w !== '');
    const named = new RegExp(`(?<![\\p{L}\\p{N}])${words.map(escapeRegExp).join('[\\s_-]*')}(?![\\p{L}\\p{N}])`, 'iu');
    if (named.test(instruction)) return `the instruction names the goal's hidden field ${name}`;
    let valuePattern: RegExp | null = null;
    if (typeof value === 'string' && value.trim().length >= 3) {
      valuePattern = new RegExp(`(?<![\\p{L}\\p{N}])${escapeRegExp(value.trim())}(?![\\p{L}\\p{N}])`, 'iu');
    } else if (typeof value === 'number' && Number.isFinite(value) && String(Math.abs(Math.trunc(value))).length >= 4) {
      valuePattern = new RegExp(`(?<![\\p{N}.])${escapeRegExp(String(value))}(?![\\p{N}]|\\.\\d)`, 'u');
    }
    if (valuePattern?.test(instruction)) return `the instruction holds the value of the goal's hidden field ${name}`;
  }
  return null;
}

/** Default instruction-similarity threshold above which a candidate is a near-duplicate. */
const NEAR_DUPLICATE_JACCARD = 0.9;

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

/** Whether `text` holds `value` (a string or finite number) as a whole word or phrase, any case. */
function quotes(text: string, value: unknown): boolean {
  return quotePattern(value)?.test(text) ?? false;
}

function quotePattern(value: unknown): RegExp | null {
  if (typeof value === 'string' && value.trim() !== '') return new RegExp(`(?<![\\p{L}\\p{N}])${escapeRegExp(value.trim())}(?![\\p{L}\\p{N}])`, 'iu');
  if (typeof value === 'number' && Number.isFinite(value)) return new RegExp(`(?<![\\p{N}.])${escapeRegExp(String(value))}(?![\\p{N}]|\\.\\d)`, 'iu');
  return null;
}

/** Every string and number inside a JSON value. */
function leaves(value: unknown): unknown[] {
  if (Array.isArray(value)) return value.flatMap(leaves);
  if (value !== null && typeof value === 'object') return Object.values(value).flatMap(leaves);
  return typeof value === 'string' || typeof value === 'number' ? [value] : [];
}

/**
 * The instruction and goal of a candidate for a user's module, which writes no instructions of
 * its own: the parent's instruction with each goal value it quotes replaced by the candidate's.
 * A field the instruction does not quote keeps the parent's value: the agent is never told it, so
 * it is the world the task lives in (a layout, a seed), which a generated task does not change.
 * Null, with a reason, when the instruction cannot be rewritten (a quoted list or object changed,
 * a quoted field removed or given a value of another kind, two fields quoted by the same words).
 */
export function rewriteFromParent(parent: Task, goal: Record<string, unknown>): { instruction: string; goal: Record<string, JsonValue> } | { reason: string } {
  const parentGoal = parent.goal !== null && typeof parent.goal === 'object' && !Array.isArray(parent.goal) ? (parent.goal as Record<string, JsonValue>) : {};
  const said = (v: unknown): boolean => {
    const xs = leaves(v);
    return xs.length > 0 && xs.every((x) => quotes(parent.instruction, x));
  };
  const out: Record<string, JsonValue> = {};
  const swaps: { value: string | number; to: string }[] = [];
  for (const key of new Set([...Object.keys(parentGoal), ...Object.keys(goal)])) {
    const before = parentGoal[key];
    const after = goal[key];
    if (before === undefined || !said(before)) {
      if (before !== undefined) out[key] = before;
      continue;
    }
    if (after === undefined) return { reason: `the goal drops ${key}, which the instruction states` };
    if (canonicalJson(after) === canonicalJson(before)) {
      out[key] = before;
      continue;
    }
    if (!((typeof before === 'string' && typeof after === 'string' && after.trim() !== '') || (typeof before === 'number' && typeof after === 'number' && Number.isFinite(after)))) {
      return { reason: `cannot write the instruction for the new ${key} (${JSON.stringify(after)}): only a quoted text or number is replaced` };
    }
    swaps.push({ value: before, to: String(after).trim() });
    out[key] = after;
  }
  if (swaps.length === 0) return { instruction: parent.instruction, goal: out };
  const froms = swaps.map((w) => String(w.value).trim().toLowerCase());
  if (new Set(froms).size < froms.length) return { reason: 'two changed goal fields are quoted by the same words in the instruction' };
  // One pass over every quoted value at once, so that swapped values (a -> b, b -> a) do not run into each other.
  const all = new RegExp(swaps.map((w) => `(?:${(quotePattern(w.value) as RegExp).source})`).sort((a, b) => b.length - a.length).join('|'), 'giu');
  const instruction = parent.instruction.replace(all, (m) => swaps[froms.indexOf(m.toLowerCase())]?.to ?? m);
  return { instruction, goal: out };
}

/** A proposed task: an instruction (optional for built-in environments) and a goal. */
export interface TaskCandidate {
  instruction?: unknown;
  goal: unknown;
}

/** Why a candidate was rejected, in broad classes (for statistics). */
export type RejectionKind = 'malformed' | 'duplicate' | 'near-duplicate' | 'hidden-field' | 'invalid';

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
    let goal = repairGoal(parent.env, candidate.goal);
    if (goal === null || typeof goal !== 'object' || Array.isArray(goal)) return { ok: false, kind: 'malformed', reason: `the goal must be a JSON object, got ${JSON.stringify(candidate.goal)}` };
    // Built-in environments write the instruction from the goal; the generator's own wording is dropped.
    let instruction = canonicalInstruction(parent.env, goal) ?? candidate.instruction;
    if (instruction === undefined && !isBuiltinEnv(parent.env)) {
      // A module writes no instructions: the parent's, with the values it quotes replaced.
      const rewritten = rewriteFromParent(parent, goal as Record<string, unknown>);
      if ('reason' in rewritten) return { ok: false, kind: 'malformed', reason: rewritten.reason };
      ({ instruction, goal } = rewritten);
    }
    if (typeof instruction !== 'string' || instruction.trim() === '') return { ok: false, kind: 'malformed', reason: `the instruction must be a non-empty string, got ${JSON.stringify(candidate.instruction)}` };
    // The agent reads the instruction: it must not give away what only the real environment may know.
    const leak = hiddenFieldLeak(parent.env, instruction, goal);
    if (leak !== null) return { ok: false, kind: 'hidden-field', reason: leak };
    const parentGoal = parent.goal !== null && typeof parent.goal === 'object' && !Array.isArray(parent.goal) ? (parent.goal as Record<string, JsonValue>) : {};
    for (const field of WORLD_GOAL_FIELDS[parent.env] ?? []) {
      const own = (goal as Record<string, unknown>)[field];
      if (canonicalJson(own) !== canonicalJson(parentGoal[field])) {
        return { ok: false, kind: 'invalid', reason: `a generated task keeps its parent's world: ${field} is ${JSON.stringify(own)}, the parent's ${JSON.stringify(parentGoal[field])}` };
      }
    }
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
    const rootId = parent.origin === 'seed' ? parent.id : parent.rootId;
    if (rootId !== undefined) task.rootId = rootId;
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
