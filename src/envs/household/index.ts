/**
 * The ALFWorld-like household environment: public API.
 */
import type { EnvSpec } from '../spec.ts';
import { HOUSEHOLD_MAX_STEPS, HouseholdEnv } from './env.ts';
import { createHouseholdExplorer } from './explorer.ts';
import { householdTasks, iterateHouseholdTasks, validateHouseholdTask } from './tasks.ts';

export { admissibleActions, applyAction, invalidReason, normalizeAction } from './actions.ts';
export { HOUSEHOLD_MAX_STEPS, HouseholdEnv } from './env.ts';
export { expertAction } from './expert.ts';
export { createHouseholdExplorer, householdExplorerAction, parseHouseholdInstruction, type ExplorerContext } from './explorer.ts';
export {
  HouseholdGoalSchema,
  TASK_TYPES,
  goalSatisfied,
  instructionFor,
  matchesGoalObject,
  requiredCondition,
  type HouseholdGoal,
  type HouseholdTaskType,
} from './goal.ts';
export { MAX_LAYOUT_SEED, checkLayoutSeed, clearLayoutCache, findReceptacle, generateLayout, type Layout, type PlacedObject, type Receptacle } from './layout.ts';
export { cloneState, heldObject, initialState, isAccessible, objectById, objectsIn, type HouseholdState, type ObjectState } from './state.ts';
export { goalCandidates, goalProblem, householdTask, householdTasks, iterateHouseholdTasks, splitOfLayout, validateHouseholdTask } from './tasks.ts';
export { describeObject, observationText, stateLine } from './text.ts';
export {
  DESKLAMP,
  LAMP_HOSTS,
  OBJECT_TYPES,
  OBJECTS,
  RECEPTACLE_TYPES,
  RECEPTACLES,
  isObjectType,
  isReceptacleType,
  type ObjectKind,
  type ObjectType,
  type ReceptacleKind,
  type ReceptacleType,
} from './vocab.ts';

/** The household environment's spec, for the registry. */
export const householdSpec: EnvSpec = {
  name: 'household',
  description: 'ALFWorld-like household: find, clean, heat, cool, place and examine objects (6 task types, 50 steps)',
  maxSteps: HOUSEHOLD_MAX_STEPS,
  create: () => new HouseholdEnv(),
  tasks: householdTasks,
  iterateTasks: iterateHouseholdTasks,
  validateTask: validateHouseholdTask,
  demonstrator: createHouseholdExplorer,
};
