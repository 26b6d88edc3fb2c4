/**
 * The privileged rule-based expert. It plans from the TRUE state (it knows what closed
 * receptacles hold), so it needs no exploration, and because it re-plans from scratch every step
 * it recovers from whatever earlier (e.g. random) actions did.
 */
import type { HouseholdGoal } from './goal.ts';
import { goalSatisfied, requiredCondition } from './goal.ts';
import type { Receptacle } from './layout.ts';
import type { HouseholdState, ObjectState } from './state.ts';
import { heldObject, isAccessible, objectsIn } from './state.ts';

const APPLIANCE = { clean: 'sinkbasin', hot: 'microwave', cool: 'fridge' } as const;
const VERB = { clean: 'clean', hot: 'heat', cool: 'cool' } as const;

/** Steps needed to be able to reach into `r` from the current state (walk there, open it). */
function accessCost(state: HouseholdState, id: string): number {
  return (state.location === id ? 0 : 1) + (isAccessible(state, id) ? 0 : 1);
}

/**
 * Lowest-cost element, earliest on ties (inputs are in layout order, so this is deterministic).
 * Costs are access costs, which only fall for the chosen item as the expert walks to it, so
 * the choice does not flip back and forth between steps.
 */
function cheapest<T>(items: readonly T[], cost: (item: T) => number): T | undefined {
  let best: T | undefined;
  let bestCost = Infinity;
  for (const item of items) {
    const c = cost(item);
    if (c < bestCost) [best, bestCost] = [item, c];
  }
  return best;
}

/** Walk to `id`, open it if needed, then do `then`. */
function reachThen(state: HouseholdState, id: string, then: string): string {
  if (state.location !== id) return `go to ${id}`;
  if (!isAccessible(state, id)) return `open ${id}`;
  return then;
}

/** The receptacle the goal's object(s) should end up in. */
function targetReceptacle(state: HouseholdState, goal: HouseholdGoal): Receptacle {
  const targets = state.layout.receptacles.filter((r) => r.type === goal.receptacle);
  // For two objects: the receptacle that already holds most of them, first on ties. This must
  // not depend on where the agent stands, or the expert would shuttle between two half-filled
  // receptacles; counts only change when an object is taken from a non-target receptacle.
  const already = (r: Receptacle): number => objectsIn(state, r.id).filter((o) => o.type === goal.object).length;
  const best = goal.type === 'pick_two_and_place' ? cheapest(targets, (r) => -already(r)) : cheapest(targets, (r) => accessCost(state, r.id));
  if (!best) throw new RangeError(`layout ${state.layout.seed} has no ${String(goal.receptacle)}`);
  return best;
}

/** The appliance receptacle of `type` to use: the one we stand at, else the first. */
function appliance(state: HouseholdState, type: string): Receptacle {
  const all = state.layout.receptacles.filter((r) => r.type === type);
  const here = all.find((r) => r.id === state.location);
  const chosen = here ?? all[0];
  if (!chosen) throw new RangeError(`layout ${state.layout.seed} has no ${type}`);
  return chosen;
}

/** Puts a wrong held object down where it is cheapest: here if possible. */
function putDown(state: HouseholdState, held: ObjectState): string {
  if (state.location !== null) return reachThen(state, state.location, `put ${held.id} in/on ${state.location}`);
  const spot = state.layout.receptacles.find((r) => !r.openable);
  if (!spot) throw new RangeError(`layout ${state.layout.seed} has no receptacle without a door`);
  return `go to ${spot.id}`;
}

/**
 * The expert's next action for `goal` from `state`; always one of `admissibleActions(state)`.
 * Throws if the goal already holds (the episode is over then).
 */
export function expertAction(state: HouseholdState, goal: HouseholdGoal): string {
  if (goalSatisfied(state, goal)) throw new RangeError('expertAction: the goal already holds');
  const held = heldObject(state);
  const cond = requiredCondition(goal.type);

  if (held && held.type === goal.object) {
    if (goal.type === 'look_at_obj_in_light') {
      const lamp = state.layout.lamp;
      // The lamp is off here, otherwise the goal would hold.
      return state.location === lamp.host ? `use ${lamp.id}` : `go to ${lamp.host}`;
    }
    if (cond !== null && !held[cond]) {
      const app = appliance(state, APPLIANCE[cond]);
      // Appliances work closed or open (ALFWorld's heat/cool/clean are macro actions).
      return state.location === app.id ? `${VERB[cond]} ${held.id} with ${app.id}` : `go to ${app.id}`;
    }
    const target = targetReceptacle(state, goal);
    return reachThen(state, target.id, `put ${held.id} in/on ${target.id}`);
  }
  if (held) return putDown(state, held);

  // Hands empty: fetch the cheapest suitable object.
  const excluded = goal.type === 'pick_two_and_place' ? targetReceptacle(state, goal).id : null;
  const candidates = state.objects.filter((o) => o.type === goal.object && o.location !== null && o.location !== excluded);
  const pick = cheapest(candidates, (o) => accessCost(state, o.location as string) + (cond !== null && !o[cond] ? 2 : 0));
  if (!pick || pick.location === null) throw new RangeError(`expertAction: no ${goal.object} left to fetch in layout ${state.layout.seed}`);
  return reachThen(state, pick.location, `take ${pick.id} from ${pick.location}`);
}
