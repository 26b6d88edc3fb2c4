/**
 * Household goals: the six ALFWorld task types, their schema, their instructions and the
 * pure success check.
 */
import { z } from 'zod';
import { MAX_LAYOUT_SEED } from './layout.ts';
import type { HouseholdState, ObjectState } from './state.ts';
import { isObjectType, isReceptacleType, typeOfInstance } from './vocab.ts';

/** The six task types of ALFWorld. */
export const TASK_TYPES = [
  'pick_and_place',
  'pick_two_and_place',
  'clean_and_place',
  'heat_and_place',
  'cool_and_place',
  'look_at_obj_in_light',
] as const;
export type HouseholdTaskType = (typeof TASK_TYPES)[number];

/**
 * A household goal (a task's JSON `goal`). `object` and `receptacle` are types, not instances:
 * any apple in any countertop satisfies "put a clean apple in countertop".
 * `receptacle` is required for the five place tasks and absent for `look_at_obj_in_light`.
 */
export const HouseholdGoalSchema = z
  .strictObject({
    layoutSeed: z.number().int().min(0).max(MAX_LAYOUT_SEED),
    type: z.enum(TASK_TYPES),
    object: z.string().min(1),
    receptacle: z.string().min(1).optional(),
  })
  .superRefine((goal, ctx) => {
    if (!isObjectType(goal.object)) {
      ctx.addIssue({ code: 'custom', path: ['object'], message: `unknown object type ${JSON.stringify(goal.object)}` });
    }
    if (goal.type === 'look_at_obj_in_light') {
      if (goal.receptacle !== undefined) {
        ctx.addIssue({ code: 'custom', path: ['receptacle'], message: 'look_at_obj_in_light takes no receptacle' });
      }
    } else if (goal.receptacle === undefined) {
      ctx.addIssue({ code: 'custom', path: ['receptacle'], message: `${goal.type} needs a receptacle` });
    } else if (!isReceptacleType(goal.receptacle)) {
      ctx.addIssue({ code: 'custom', path: ['receptacle'], message: `unknown receptacle type ${JSON.stringify(goal.receptacle)}` });
    }
  });
export type HouseholdGoal = z.infer<typeof HouseholdGoalSchema>;

/** The object state a place task needs before the object is put down, if any. */
export function requiredCondition(type: HouseholdTaskType): 'clean' | 'hot' | 'cool' | null {
  if (type === 'clean_and_place') return 'clean';
  if (type === 'heat_and_place') return 'hot';
  if (type === 'cool_and_place') return 'cool';
  return null;
}

/** Whether object `o` meets the type and condition of `goal` (ignoring where it is). */
export function matchesGoalObject(o: ObjectState, goal: HouseholdGoal): boolean {
  if (o.type !== goal.object) return false;
  const cond = requiredCondition(goal.type);
  return cond === null || o[cond];
}

function article(word: string): string {
  return /^[aeiou]/.test(word) ? 'an' : 'a';
}

/** The ALFWorld-style instruction, e.g. "put a clean apple in countertop.". */
export function instructionFor(goal: HouseholdGoal): string {
  const r = goal.receptacle ?? '';
  switch (goal.type) {
    case 'pick_and_place':
      return `put ${article(goal.object)} ${goal.object} in ${r}.`;
    case 'pick_two_and_place':
      return `put two ${goal.object} in ${r}.`;
    case 'clean_and_place':
      return `put a clean ${goal.object} in ${r}.`;
    case 'heat_and_place':
      return `put a hot ${goal.object} in ${r}.`;
    case 'cool_and_place':
      return `put a cool ${goal.object} in ${r}.`;
    case 'look_at_obj_in_light':
      return `look at ${goal.object} under the desklamp.`;
  }
}

/**
 * Whether `goal` holds in `state` (pure):
 * - place tasks: some object of the goal's type (clean / hot / cool where the type says so)
 *   lies in a receptacle of the goal's receptacle type;
 * - pick_two_and_place: two objects of the type lie in the same receptacle of that type;
 * - look_at_obj_in_light: the agent holds an object of the type, stands where the desklamp is,
 *   and the lamp is on.
 */
export function goalSatisfied(state: HouseholdState, goal: HouseholdGoal): boolean {
  if (goal.layoutSeed !== state.layout.seed) {
    throw new RangeError(`goal is for layout ${goal.layoutSeed} but the state is of layout ${state.layout.seed}`);
  }
  if (goal.type === 'look_at_obj_in_light') {
    const held = state.held === null ? undefined : state.objects.find((o) => o.id === state.held);
    return held !== undefined && held.type === goal.object && state.location === state.layout.lamp.host && state.lampOn;
  }
  const inTarget = state.objects.filter(
    (o) => o.location !== null && typeOfInstance(o.location) === goal.receptacle && matchesGoalObject(o, goal),
  );
  if (goal.type !== 'pick_two_and_place') return inTarget.length > 0;
  const perReceptacle = new Map<string, number>();
  for (const o of inTarget) {
    const loc = o.location as string;
    const n = (perReceptacle.get(loc) ?? 0) + 1;
    if (n >= 2) return true;
    perReceptacle.set(loc, n);
  }
  return false;
}
