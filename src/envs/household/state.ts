/**
 * The true, mutable state of a household episode and small queries over it.
 */
import type { Layout } from './layout.ts';
import { findReceptacle } from './layout.ts';
import type { ObjectType } from './vocab.ts';

/** One object instance during an episode. */
export interface ObjectState {
  readonly id: string;
  readonly type: ObjectType;
  /** Receptacle id it lies in, or null while the agent holds it. */
  location: string | null;
  clean: boolean;
  hot: boolean;
  cool: boolean;
}

/** Everything that can change during an episode, plus the (immutable) layout it started from. */
export interface HouseholdState {
  readonly layout: Layout;
  /** Receptacle id the agent stands at, or null in the middle of the room. */
  location: string | null;
  /** Open/closed for each openable receptacle id. */
  readonly open: Record<string, boolean>;
  /** Objects in layout order (so listings are stable). */
  readonly objects: ObjectState[];
  /** Id of the one object the agent holds, or null. */
  held: string | null;
  lampOn: boolean;
}

/** The state at reset: agent in the middle of the room, hands empty, everything closed, lamp off. */
export function initialState(layout: Layout): HouseholdState {
  const open: Record<string, boolean> = {};
  for (const r of layout.receptacles) if (r.openable) open[r.id] = false;
  return {
    layout,
    location: null,
    open,
    objects: layout.objects.map((o) => ({ id: o.id, type: o.type, location: o.location, clean: false, hot: false, cool: false })),
    held: null,
    lampOn: false,
  };
}

/** A deep copy that shares only the immutable layout. */
export function cloneState(state: HouseholdState): HouseholdState {
  return {
    layout: state.layout,
    location: state.location,
    open: { ...state.open },
    objects: state.objects.map((o) => ({ ...o })),
    held: state.held,
    lampOn: state.lampOn,
  };
}

/** The object with id `id`, or undefined. */
export function objectById(state: HouseholdState, id: string): ObjectState | undefined {
  return state.objects.find((o) => o.id === id);
}

/** The object the agent holds, or undefined. */
export function heldObject(state: HouseholdState): ObjectState | undefined {
  return state.held === null ? undefined : objectById(state, state.held);
}

/** Objects lying in receptacle `receptacleId` (visible or not). */
export function objectsIn(state: HouseholdState, receptacleId: string): ObjectState[] {
  return state.objects.filter((o) => o.location === receptacleId);
}

/** Whether one can see into and put things in `receptacleId`: it has no door, or its door is open. */
export function isAccessible(state: HouseholdState, receptacleId: string): boolean {
  const r = findReceptacle(state.layout, receptacleId);
  if (!r) return false;
  return !r.openable || state.open[r.id] === true;
}
