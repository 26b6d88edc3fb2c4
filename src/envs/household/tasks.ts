/**
 * Household seed tasks and task validation. Train and test tasks live in disjoint layouts:
 * even layout seeds are train homes, odd layout seeds are test homes.
 */
import { Rng, hashString } from '../../core/rng.ts';
import type { Task, TaskValidation } from '../../core/types.ts';
import { TaskSchema } from '../../core/types.ts';
import type { Split, TaskGenOptions } from '../spec.ts';
import type { HouseholdGoal, HouseholdTaskType } from './goal.ts';
import { HouseholdGoalSchema, TASK_TYPES, goalSatisfied, instructionFor, requiredCondition } from './goal.ts';
import type { Layout } from './layout.ts';
import { generateLayout } from './layout.ts';
import { initialState } from './state.ts';
import { OBJECTS, type ObjectType } from './vocab.ts';

/** The split a layout belongs to: even seeds train, odd seeds test. */
export function splitOfLayout(layoutSeed: number): Split {
  return layoutSeed % 2 === 0 ? 'train' : 'test';
}

const CONDITION_PROPERTY = { clean: 'cleanable', hot: 'heatable', cool: 'coolable' } as const;
const CONDITION_APPLIANCE = { clean: 'sinkbasin', hot: 'microwave', cool: 'fridge' } as const;
const CONDITION_VERB = { clean: 'cleaned', hot: 'heated', cool: 'cooled' } as const;

/**
 * Why `goal` cannot be a task in its layout, or null if it can: the objects and receptacles
 * exist, the object type suits the task type, and the goal does not already hold at reset.
 */
export function goalProblem(goal: HouseholdGoal, layout: Layout = generateLayout(goal.layoutSeed)): string | null {
  const object = goal.object as ObjectType;
  const kind = OBJECTS[object];
  const cond = requiredCondition(goal.type);
  if (!kind.pickable) return `a ${object} cannot be picked up, so it cannot be used in a task`;
  if (cond !== null && !kind[CONDITION_PROPERTY[cond]]) return `a ${object} cannot be ${CONDITION_VERB[cond]}`;
  if (goal.type === 'look_at_obj_in_light' && !kind.examinable) return `a ${object} is not something to look at under the desklamp`;
  const count = layout.objects.filter((o) => o.type === object).length;
  const need = goal.type === 'pick_two_and_place' ? 2 : 1;
  if (count < need) return `layout ${layout.seed} has ${count === 0 ? 'no' : 'only one'} ${object}, the task needs ${need}`;
  if (goal.receptacle !== undefined && !layout.receptacles.some((r) => r.type === goal.receptacle)) {
    return `layout ${layout.seed} has no ${goal.receptacle}`;
  }
  if (cond !== null && !layout.receptacles.some((r) => r.type === CONDITION_APPLIANCE[cond])) {
    return `layout ${layout.seed} has no ${CONDITION_APPLIANCE[cond]}`;
  }
  if (goalSatisfied(initialState(layout), goal)) return `the goal already holds at the start in layout ${layout.seed}`;
  return null;
}

/** Every achievable goal of task type `type` in `layout` (place tasks use plausible receptacles). */
export function goalCandidates(layout: Layout, type: HouseholdTaskType): HouseholdGoal[] {
  const out: HouseholdGoal[] = [];
  const objectTypes = [...new Set(layout.objects.map((o) => o.type))];
  const receptacleTypes = new Set(layout.receptacles.map((r) => r.type));
  for (const object of objectTypes) {
    const targets = type === 'look_at_obj_in_light' ? [undefined] : OBJECTS[object].places.filter((r) => receptacleTypes.has(r));
    for (const receptacle of targets) {
      const goal: HouseholdGoal = receptacle === undefined
        ? { layoutSeed: layout.seed, type, object }
        : { layoutSeed: layout.seed, type, object, receptacle };
      if (goalProblem(goal, layout) === null) out.push(goal);
    }
  }
  return out;
}

/** Builds the task record for `goal`. */
export function householdTask(goal: HouseholdGoal, id: string, split: Split): Task {
  return { id, env: 'household', instruction: instructionFor(goal), goal, split, origin: 'seed' };
}

// Layout seeds drawn for tasks: 2*k + parity for k below this bound.
const LAYOUT_POOL = 1 << 30;
const MAX_ATTEMPTS = 1000;

/**
 * Deterministic seed tasks: the same options give the same tasks. Task types rotate so each
 * of the six is (nearly) equally common; each task sits in its own randomly drawn layout of
 * the split (even layout seeds for train, odd for test).
 */
export function householdTasks(options: TaskGenOptions): Task[] {
  return [...iterateHouseholdTasks(options)];
}

/** The tasks of {@link householdTasks}, one at a time (for streams that must not hold them all). */
export function* iterateHouseholdTasks(options: TaskGenOptions): Generator<Task> {
  const { split, count, seed } = options;
  if (split !== 'train' && split !== 'test') throw new RangeError(`split must be "train" or "test", got ${JSON.stringify(split)}`);
  if (!(Number.isInteger(count) && count >= 0)) throw new RangeError(`count must be a non-negative integer, got ${count}`);
  if (!Number.isSafeInteger(seed)) throw new RangeError(`seed must be a safe integer, got ${seed}`);
  const rng = new Rng((seed ^ hashString(`household-tasks-${split}`)) >>> 0);
  const parity = split === 'train' ? 0 : 1;
  const offset = rng.int(0, TASK_TYPES.length - 1);
  for (let index = 0; index < count; index++) {
    const type = TASK_TYPES[(index + offset) % TASK_TYPES.length] as HouseholdTaskType;
    let goal: HouseholdGoal | undefined;
    for (let attempt = 0; attempt < MAX_ATTEMPTS && !goal; attempt++) {
      const layout = generateLayout(2 * rng.int(0, LAYOUT_POOL - 1) + parity);
      const candidates = goalCandidates(layout, type);
      if (candidates.length > 0) goal = rng.pick(candidates);
    }
    if (!goal) throw new Error(`household: no layout with a ${type} task found after ${MAX_ATTEMPTS} attempts (seed ${seed})`);
    yield householdTask(goal, `household-${split}-${seed}-${index}`, split);
  }
}

/**
 * Whether `task` is a valid, achievable household task: env is "household", the goal parses,
 * its layout belongs to the task's split, the layout has what the goal needs, the object
 * suits the task type, and the goal does not already hold at reset.
 */
export function validateHouseholdTask(task: Task): TaskValidation {
  const parsedTask = TaskSchema.safeParse(task);
  if (!parsedTask.success) return { ok: false, reason: `not a task record: ${parsedTask.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}` };
  if (task.env !== 'household') return { ok: false, reason: `task is for the ${JSON.stringify(task.env)} environment, not household` };
  const parsed = HouseholdGoalSchema.safeParse(task.goal);
  if (!parsed.success) {
    const issues = parsed.error.issues.map((i) => (i.path.length > 0 ? `${i.path.join('.')}: ${i.message}` : i.message)).join('; ');
    return { ok: false, reason: `goal is not a household goal (${issues})` };
  }
  const goal = parsed.data;
  const layoutSplit = splitOfLayout(goal.layoutSeed);
  if (layoutSplit !== task.split) {
    return { ok: false, reason: `layout ${goal.layoutSeed} is a ${layoutSplit} layout but the task is in the ${task.split} split (train layouts have even seeds, test layouts odd)` };
  }
  const problem = goalProblem(goal);
  return problem === null ? { ok: true } : { ok: false, reason: problem };
}
