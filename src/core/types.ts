/**
 * The core data types shared by environments, the replay buffer, the trainer and the page.
 * The zod schemas are the single source of truth; the TypeScript types are inferred from them
 * so that what we validate on import is exactly what the code works with.
 */
import { z } from 'zod';

/** Names of the built-in environments. */
export const ENV_NAMES = ['shop', 'household'] as const;
const EnvNameSchema = z.enum(ENV_NAMES);
export type EnvName = z.infer<typeof EnvNameSchema>;

/**
 * The pattern every domain (environment) name follows, built-in or not: a lower-case letter, then
 * lower-case letters, digits and hyphens, at most 40 characters (`shop`, `household`, `library`,
 * `travel-booking`). Data, tasks and trajectories carry a domain name; only the built-in registry
 * is limited to {@link ENV_NAMES}.
 */
export const DOMAIN_NAME_PATTERN = /^[a-z][a-z0-9-]{0,39}$/;
export const DomainNameSchema = z.string().regex(DOMAIN_NAME_PATTERN, 'a domain name is a lower-case letter, then lower-case letters, digits or hyphens (at most 40 characters)');
/** A domain name: a built-in environment's or a user's (see {@link DOMAIN_NAME_PATTERN}). */
export type DomainName = string;

/** A JSON value (what a task goal may contain). */
export type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue };
export const JsonValueSchema: z.ZodType<JsonValue> = z.json();

/**
 * An abstract textual state: a compact description of what is on the "screen", and the
 * admissible actions (DreamGym's abstract state space).
 */
export const ObservationSchema = z.object({
  text: z.string(),
  actions: z.array(z.string()),
});
export type Observation = z.infer<typeof ObservationSchema>;

/** A task: an instruction and an environment-specific, JSON-serialisable goal. */
export const TaskSchema = z.object({
  id: z.string().min(1),
  env: DomainNameSchema,
  instruction: z.string().min(1),
  goal: JsonValueSchema,
  split: z.enum(['train', 'test']),
  origin: z.enum(['seed', 'generated']),
  parentId: z.string().min(1).optional(),
  /** 0 for seed tasks, the parent's generation + 1 for generated ones. */
  generation: z.number().int().nonnegative().optional(),
  /**
   * The seed task a generated task descends from (through `parentId`s). A generated task keeps
   * its parent's world (the curriculum's validator enforces it), so its episodes happen where the
   * root's did: an experience model may ground it in the root's recorded episodes.
   */
  rootId: z.string().min(1).optional(),
});
export type Task = z.infer<typeof TaskSchema>;

/**
 * The part of a task that an agent may see, and so the only part that an experience model, a
 * reward model, a policy prior or any prompt may read: never the goal, which is ground truth for
 * the real environment and its evaluation (it holds hidden fields such as the shop's target
 * product or the household's layout seed). This is the one place that decides what is visible.
 */
export interface AgentTask {
  id: string;
  env: DomainName;
  instruction: string;
  split: Task['split'];
  origin: Task['origin'];
  parentId?: string;
  generation?: number;
  rootId?: string;
}

/** The agent-visible view of `task`: a new object without the goal, whatever `task` carries. */
export function agentView(task: AgentTask | Task): AgentTask {
  const view: AgentTask = { id: task.id, env: task.env, instruction: task.instruction, split: task.split, origin: task.origin };
  if (task.parentId !== undefined) view.parentId = task.parentId;
  if (task.generation !== undefined) view.generation = task.generation;
  if (task.rootId !== undefined) view.rootId = task.rootId;
  return view;
}

const finite = z.number().finite();

/** One step of a trajectory: the observation the agent saw, the action it took and what followed. */
const StepSchema = z.object({
  observation: ObservationSchema,
  action: z.string(),
  reward: finite,
  done: z.boolean(),
  valid: z.boolean(),
  reasoning: z.string().optional(),
});
export type Step = z.infer<typeof StepSchema>;

/** Where a trajectory came from. */
export const TrajectorySourceSchema = z.enum(['offline', 'synthetic', 'real']);
export type TrajectorySource = z.infer<typeof TrajectorySourceSchema>;

/** A whole episode. `reward` is the episode's outcome reward; `success` whether the goal was met. */
export const TrajectorySchema = z.object({
  id: z.string().min(1),
  taskId: z.string().min(1),
  env: DomainNameSchema,
  source: TrajectorySourceSchema,
  steps: z.array(StepSchema),
  reward: finite,
  success: z.boolean(),
});
export type Trajectory = z.infer<typeof TrajectorySchema>;

/** What `Environment.step` returns. An invalid action never throws: `info.valid` is false. */
export interface StepResult {
  observation: Observation;
  reward: number;
  done: boolean;
  info: StepInfo;
}

export interface StepInfo {
  /** Whether the action was admissible and had its effect. */
  valid: boolean;
  /** Whether the episode's goal was met (set on the final step). */
  success?: boolean;
  /** Why the action was invalid, or why the episode ended, in plain words. */
  message?: string;
}

/** A text environment. */
export interface Environment {
  readonly name: DomainName;
  /** The maximum number of steps in an episode; the episode ends with reward 0 after it. */
  readonly maxSteps: number;
  /** Starts an episode on `task` and returns the first observation. */
  reset(task: Task): Observation;
  /** Applies an action. Never throws on a bad action. Throws if called before `reset` or after `done`. */
  step(action: string): StepResult;
}

/**
 * A real, rule-based environment: ground truth for offline data, evaluation and S2R.
 * It also knows the optimal next action from its true state (the rule-based expert).
 */
export interface RealEnvironment extends Environment {
  /** The expert's next action from the current state, recovering from any earlier mistakes. */
  expertAction(): string;
}

/** Result of checking whether a task's goal is achievable in its environment. */
export type TaskValidation = { ok: true } | { ok: false; reason: string };

/** Thrown when an environment is used out of order (step before reset, step after done). */
export class EnvironmentStateError extends Error {
  override name = 'EnvironmentStateError';
}

/** Thrown when a task does not belong to, or is not achievable in, an environment. */
export class InvalidTaskError extends Error {
  override name = 'InvalidTaskError';
  constructor(
    readonly taskId: string,
    readonly reason: string,
  ) {
    super(`Task ${JSON.stringify(taskId)} is invalid: ${reason}`);
  }
}
