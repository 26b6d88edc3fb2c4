import type { DomainName, EnvName, RealEnvironment, Task, TaskValidation } from '../core/types.ts';
import type { Policy } from './episode.ts';

/** Which split a task belongs to. Train and test tasks never share a target product or layout. */
export type Split = 'train' | 'test';

/** Options for generating seed tasks. */
export interface TaskGenOptions {
  split: Split;
  count: number;
  /** Seed of the task sampler; the same seed gives the same tasks. */
  seed: number;
}

/**
 * Everything the rest of the system needs to know about one environment. Each built-in exports one
 * (`shopSpec`, `householdSpec`); a user's module becomes one through `loadEnvModule` (src/cli/module-host.ts).
 */
export interface EnvSpec<N extends DomainName = EnvName> {
  /** A built-in environment's name, or a user module's (see `DOMAIN_NAME_PATTERN`). */
  readonly name: N;
  /** One line for menus and `--help`. */
  readonly description: string;
  /** Episode step limit. */
  readonly maxSteps: number;
  /**
   * Templates with one `{}` slot (`search[{}]`) of actions whose argument is free text: where an
   * observation lists one such action, the environment accepts any non-empty argument. Default none.
   */
  readonly freeTextActions?: readonly string[];
  /** A fresh environment instance (worlds are deterministic functions of the task's goal). */
  create(): RealEnvironment;
  /** Deterministic seed tasks for a split. */
  tasks(options: TaskGenOptions): Task[];
  /** The same tasks as {@link EnvSpec.tasks}, one at a time, so a long stream never holds them all. */
  iterateTasks?(options: TaskGenOptions): Iterable<Task>;
  /** Whether `task` belongs to this environment and its goal is achievable here. */
  validateTask(task: Task): TaskValidation;
  /**
   * A fresh demonstrator for one episode, when the environment has one: a rule that acts only on
   * the observations (never on the task's goal or the expert), as a person recording
   * demonstrations would. The offline data's behaviour-cloning episodes use it (policy
   * `demonstrator`); without one they use the expert.
   */
  demonstrator?(): Policy;
  /**
   * True when the demonstrator's policy asks its environment for the action (a module's
   * `demonstratorAction()` lives on the environment object): it still reads no goal, but cannot
   * act inside a simulator, where there is no such environment.
   */
  readonly demonstratorNeedsEnvironment?: boolean;
  /**
   * False when the environment has no rule-based expert (a module without `expertAction()`): the
   * seed data then leaves out the expert's episodes, and what needs one says so. Default true.
   */
  readonly hasExpert?: boolean;
}

/** An environment of any domain: a built-in one or a user's module (`EnvSpec` alone is a built-in's). */
export type AnyEnvSpec = EnvSpec<DomainName>;
