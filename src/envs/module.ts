/**
 * The contract of a user's environment module (`--env-module PATH`), and the checks of what such a
 * module exports and returns. Browser-safe: loading and running a module lives in
 * `src/cli/module-host.ts` (Node only, a worker thread, so that a hung call can be stopped; it imports
 * a path known at run time, so it lives outside the statically checked core).
 *
 * A module is an ES module (`.mjs`/`.js`, or `.ts`/`.mts` run through tsx) with these named exports:
 *
 * ```ts
 * export const name = 'library';                       // DOMAIN_NAME_PATTERN, not a built-in name
 * export const description = 'Borrow the book ...';      // one line
 * export const maxSteps = 10;                            // the episode step limit
 * export function create() { return { reset(task) {...}, step(action) {...}, expertAction() {...}, demonstratorAction() {...} }; }
 * export function tasks({ split, count, seed }) { return [{ id, instruction, goal }, ...]; }
 * export function validateTask(task) { return { ok: true }; }
 * export const freeTextActions = ['note[{}]'];           // optional: one-slot actions whose argument is free text
 * ```
 *
 * See {@link EnvironmentModule} for each export, and `src/envs/example/library.ts` for a whole one.
 */
import { z } from 'zod';
import { DOMAIN_NAME_PATTERN, JsonValueSchema, ObservationSchema, TaskSchema, type JsonValue, type Observation, type StepResult, type Task, type TaskValidation } from '../core/types.ts';
import type { Split, TaskGenOptions } from './spec.ts';

/** A task as a module's `tasks()` returns it: `env`, `split` and `origin` may be left out (they are filled in). */
export interface ModuleTask {
  id: string;
  instruction: string;
  /** Anything JSON: the module's own ground truth (never shown to the agent). */
  goal: JsonValue;
  env?: string;
  split?: Split;
  origin?: 'seed';
}

/** What a module's `step()` returns. */
export interface ModuleStepResult {
  observation: Observation;
  /** A finite number; the episode's reward is the sum over its steps. */
  reward: number;
  /** Whether the episode ended: it must be true by the `maxSteps`-th step at the latest. */
  done: boolean;
  info?: {
    /** Whether the action was admissible (default true). An invalid action must not throw. */
    valid?: boolean;
    /**
     * Whether the goal was met; read on the step that ends the episode. When left out there, it is
     * derived from the reward: the episode's reward (the sum over its steps) is at least 1.
     */
    success?: boolean;
    /** Why an action was invalid or the episode ended, in plain words. */
    message?: string;
  };
}

/** One episode's environment, as a module's `create()` returns it. */
export interface ModuleEnvironment {
  /** Starts an episode on `task` (a whole task: the goal included) and returns the first observation. */
  reset(task: Task): Observation;
  /** Applies an action; never throws on an inadmissible one. */
  step(action: string): ModuleStepResult;
  /**
   * The optimal next action from the current state (a rule-based expert that may read the goal).
   * Optional: `data --policy expert|noisy:EPS` and `fidelity` need it; behaviour cloning needs it
   * or {@link demonstratorAction}; the seed data of `train` uses it for its `noisy:0.3` episodes
   * only where there is no demonstrator (or with `offline.noisySource: 'expert'`).
   */
  expertAction?(): string;
  /**
   * A goal-blind demonstrator's next action: a rule that acts only on what the agent has seen this
   * episode (the instruction and the observations), never on the goal, as a person recording
   * demonstrations would. Optional; where there is one, behaviour cloning and the simulator's
   * grounding data use it instead of the expert (as the built-in domains do), and
   * `data --policy demonstrator` records it.
   */
  demonstratorAction?(): string;
}

/** The named exports of an environment module. Every call must return within the host's time limit. */
export interface EnvironmentModule {
  /** The domain's name: matches `DOMAIN_NAME_PATTERN` and is not a built-in environment's. */
  readonly name: string;
  /** One line for `--help` and summaries. */
  readonly description: string;
  /** Episode step limit: the episode ends (done) at this many steps at the latest. */
  readonly maxSteps: number;
  /**
   * Optional: templates with one `{}` slot (`note[{}]`) of actions whose argument is free text:
   * where an observation lists one such action, `step` accepts any non-empty argument (the
   * simulator then does too). Default none.
   */
  readonly freeTextActions?: readonly string[];
  /** A fresh environment; it may be reused for many episodes (`reset` starts each). */
  create(): ModuleEnvironment;
  /** Deterministic seed tasks for a split: the same options give the same tasks; train and test share none. */
  tasks(options: TaskGenOptions): ModuleTask[];
  /** Whether `task` belongs to this domain and its goal is achievable. */
  validateTask(task: Task): TaskValidation;
}

/** The exports a module must have, with what each must be (for messages). */
export const MODULE_EXPORTS = {
  name: 'a string matching /^[a-z][a-z0-9-]{0,39}$/ that is not a built-in name (shop, household)',
  description: 'a non-empty string',
  maxSteps: 'a positive integer (the episode step limit)',
  create: 'a function returning an environment with reset(task) and step(action)',
  tasks: 'a function tasks({split, count, seed}) of one options object, returning tasks',
  validateTask: 'a function validateTask(task) returning {ok: true} or {ok: false, reason}',
} as const;
export type ModuleExportName = keyof typeof MODULE_EXPORTS;

/** How an export looks from outside the module's thread: a function (with its declared parameter count), or a copyable value. */
export type ExportShape = { kind: 'missing' } | { kind: 'function'; arity?: number } | { kind: 'value'; value: unknown };

/** A module's checked plain exports. */
export interface ModuleHeader {
  name: string;
  description: string;
  maxSteps: number;
  freeTextActions?: string[];
}

/** Whether `v` is a list of one-slot templates (`verb[{}]`, `say {}`). */
function isTemplateList(v: unknown): v is string[] {
  return Array.isArray(v) && v.every((t) => typeof t === 'string' && t.split('{}').length === 2 && t.replace('{}', '').trim() !== '');
}

/** Thrown for a broken environment module; the message names the module, the export and (when known) the task. */
export class EnvModuleError extends Error {
  override name = 'EnvModuleError';
}

/**
 * Checks every export of a module (described by {@link ExportShape}s) and returns its plain ones,
 * or throws one {@link EnvModuleError} that lists every problem.
 */
export function checkModuleExports(where: string, shapes: Readonly<Record<string, ExportShape>>, builtinNames: readonly string[]): ModuleHeader {
  const problems: string[] = [];
  const value = (key: ModuleExportName): unknown => {
    const s = shapes[key];
    return s?.kind === 'value' ? s.value : undefined;
  };
  for (const key of Object.keys(MODULE_EXPORTS) as ModuleExportName[]) {
    const shape = shapes[key] ?? { kind: 'missing' };
    const wanted = MODULE_EXPORTS[key];
    const isFunction = key === 'create' || key === 'tasks' || key === 'validateTask';
    if (shape.kind === 'missing') {
      problems.push(`export "${key}" is missing (${wanted})`);
      continue;
    }
    if (isFunction !== (shape.kind === 'function')) {
      problems.push(`export "${key}" must be ${wanted}, got ${shape.kind === 'function' ? 'a function' : describe(value(key))}`);
      continue;
    }
    if (isFunction) {
      // A positional tasks(split, count, seed) would get the options object as its split.
      if (key === 'tasks' && shape.kind === 'function' && (shape.arity ?? 1) > 1) {
        problems.push(`export "tasks" declares ${shape.arity} parameters, but it is called as tasks({split, count, seed}) with one options object`);
      }
      continue;
    }
    const v = value(key);
    const ok =
      key === 'name'
        ? typeof v === 'string' && DOMAIN_NAME_PATTERN.test(v) && !builtinNames.includes(v)
        : key === 'description'
          ? typeof v === 'string' && v.trim() !== ''
          : typeof v === 'number' && Number.isInteger(v) && v >= 1;
    if (!ok) problems.push(`export "${key}" must be ${wanted}, got ${describe(v)}`);
  }
  const free = shapes.freeTextActions;
  if (free !== undefined && free.kind !== 'missing' && !(free.kind === 'value' && isTemplateList(free.value))) {
    problems.push(`export "freeTextActions" (optional) must be a list of action templates with one {} slot each, such as ["note[{}]"], got ${free.kind === 'function' ? 'a function' : describe(free.value)}`);
  }
  if (problems.length > 0) throw new EnvModuleError(`environment module ${where}: ${problems.join('; ')}`);
  const header: ModuleHeader = { name: value('name') as string, description: (value('description') as string).trim(), maxSteps: value('maxSteps') as number };
  if (free?.kind === 'value' && isTemplateList(free.value)) header.freeTextActions = [...free.value];
  return header;
}

function describe(v: unknown): string {
  if (v === undefined) return 'undefined';
  const text = JSON.stringify(v);
  return text === undefined ? typeof v : text.length > 80 ? `${text.slice(0, 77)}...` : text;
}

/**
 * Where `value` stops being JSON, as `goal.layout is undefined (...)`, or null when it is JSON.
 * Keys whose value is undefined are the usual cause: a field read from something that lacks it.
 */
export function notJson(value: unknown, path: string): string | null {
  if (value === undefined) return `${path} is undefined: a goal must be JSON (drop the key, or give it a value such as null)`;
  if (value === null || typeof value === 'string' || typeof value === 'boolean') return null;
  if (typeof value === 'number') return Number.isFinite(value) ? null : `${path} is ${value}: JSON numbers are finite`;
  if (typeof value !== 'object') return `${path} is a ${typeof value}: a goal must be JSON`;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const inner = notJson(value[i], `${path}[${i}]`);
      if (inner !== null) return inner;
    }
    return null;
  }
  const proto = Object.getPrototypeOf(value) as unknown;
  if (proto !== Object.prototype && proto !== null) return `${path} is a ${(value as object).constructor?.name ?? 'non-plain object'}: a goal must be JSON (plain objects, arrays, strings, finite numbers, booleans, null)`;
  for (const [k, v] of Object.entries(value)) {
    const inner = notJson(v, /^[A-Za-z_$][\w$]*$/.test(k) ? `${path}.${k}` : `${path}[${JSON.stringify(k)}]`);
    if (inner !== null) return inner;
  }
  return null;
}

/** The first problems of a failed zod parse, with their paths. */
function issuesOf(error: z.ZodError): string {
  return error.issues
    .slice(0, 3)
    .map((i) => `${i.path.length > 0 ? i.path.map(String).join('.') : '(root)'}: ${i.message}`)
    .join('; ');
}

/** A checked observation, or an {@link EnvModuleError} saying which call returned what. */
export function checkObservation(what: string, value: unknown): Observation {
  const parsed = ObservationSchema.safeParse(value);
  if (!parsed.success) throw new EnvModuleError(`${what} returned a malformed observation (want {text: string, actions: string[]}): ${issuesOf(parsed.error)}`);
  return { text: parsed.data.text, actions: [...parsed.data.actions] };
}

const StepResultSchema = z.object({
  observation: z.unknown(),
  reward: z.number().finite(),
  done: z.boolean(),
  info: z
    .object({ valid: z.boolean().optional(), success: z.boolean().optional(), message: z.string().optional() })
    .optional(),
});

/** A checked step result in the core's shape, or an {@link EnvModuleError}. */
export function checkStepResult(what: string, value: unknown): StepResult {
  const parsed = StepResultSchema.safeParse(value);
  if (!parsed.success) throw new EnvModuleError(`${what} returned a malformed step result (want {observation, reward: number, done: boolean, info?}): ${issuesOf(parsed.error)}`);
  const r = parsed.data;
  const observation = checkObservation(what, r.observation);
  const info: StepResult['info'] = { valid: r.info?.valid ?? true };
  if (r.info?.success !== undefined) info.success = r.info.success;
  if (r.info?.message !== undefined) info.message = r.info.message;
  return { observation, reward: r.reward, done: r.done, info };
}

const ModuleTaskSchema = z.object({
  id: z.string().min(1),
  instruction: z.string().min(1),
  goal: JsonValueSchema,
  env: z.string().optional(),
  split: z.enum(['train', 'test']).optional(),
  origin: z.literal('seed').optional(),
});

/** Checks what `tasks(options)` returned and fills in `env`, `split` and `origin`. */
export function checkTasks(what: string, name: string, options: TaskGenOptions, value: unknown): Task[] {
  if (!Array.isArray(value)) throw new EnvModuleError(`${what} must return an array of tasks, got ${describe(value)}`);
  if (value.length === 0 && options.count > 0) {
    throw new EnvModuleError(`${what} returned no tasks (asked for ${options.count}); the expected signature is tasks({split, count, seed}): one options object, returning up to count tasks of that split`);
  }
  if (value.length > options.count) throw new EnvModuleError(`${what} returned ${value.length} tasks, more than the ${options.count} asked for`);
  const ids = new Set<string>();
  return value.map((item: unknown, i) => {
    const parsed = ModuleTaskSchema.safeParse(item);
    if (!parsed.success) {
      // zod says only "Invalid input" for a goal that is not JSON: name the key and its value.
      const goal = item !== null && typeof item === 'object' ? notJson((item as { goal: unknown }).goal, 'goal') : null;
      throw new EnvModuleError(`${what}: task #${i} is malformed: ${goal ?? issuesOf(parsed.error)}`);
    }
    const t = parsed.data;
    if (t.env !== undefined && t.env !== name) throw new EnvModuleError(`${what}: task ${JSON.stringify(t.id)} has env ${JSON.stringify(t.env)}, not the module's name ${JSON.stringify(name)}`);
    if (t.split !== undefined && t.split !== options.split) throw new EnvModuleError(`${what}: task ${JSON.stringify(t.id)} has split ${t.split}, asked for ${options.split}`);
    if (ids.has(t.id)) throw new EnvModuleError(`${what}: task id ${JSON.stringify(t.id)} appears twice`);
    ids.add(t.id);
    return TaskSchema.parse({ id: t.id, env: name, instruction: t.instruction, goal: t.goal, split: options.split, origin: 'seed' });
  });
}

const TaskValidationSchema = z.union([z.object({ ok: z.literal(true) }), z.object({ ok: z.literal(false), reason: z.string() })]);

/** Checks what `validateTask(task)` returned. */
export function checkTaskValidation(what: string, value: unknown): TaskValidation {
  const parsed = TaskValidationSchema.safeParse(value);
  if (!parsed.success) throw new EnvModuleError(`${what} must return {ok: true} or {ok: false, reason: string}, got ${describe(value)}`);
  return parsed.data.ok ? { ok: true } : { ok: false, reason: parsed.data.reason };
}
