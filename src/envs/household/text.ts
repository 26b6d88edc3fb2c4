/**
 * Text rendering: ALFWorld-style sentences for action effects, and the compact state line
 * that ends every observation so that each observation is self-contained.
 */
import type { Layout } from './layout.ts';
import { findReceptacle } from './layout.ts';
import type { HouseholdState, ObjectState } from './state.ts';
import { heldObject, isAccessible, objectsIn } from './state.ts';

/** An object id with its non-default states: "apple 1 (clean, hot)". */
export function describeObject(o: ObjectState): string {
  const states = [o.clean && 'clean', o.hot && 'hot', o.cool && 'cool'].filter((s): s is string => typeof s === 'string');
  return states.length > 0 ? `${o.id} (${states.join(', ')})` : o.id;
}

function withArticle(name: string): string {
  return `${/^[aeiou]/.test(name) ? 'an' : 'a'} ${name}`;
}

/** "a cabinet 1, a countertop 1, and an armchair 1" / "nothing". */
export function listWithArticles(names: readonly string[]): string {
  if (names.length === 0) return 'nothing';
  const items = names.map(withArticle);
  if (items.length === 1) return items[0] as string;
  return `${items.slice(0, -1).join(', ')}, and ${items[items.length - 1] as string}`;
}

/** What can be seen at a receptacle: the lamp (if it stands there) and the objects, if accessible. */
function visibleThings(state: HouseholdState, receptacleId: string): string[] {
  const things: string[] = [];
  if (state.layout.lamp.host === receptacleId) things.push(`${state.layout.lamp.id} (${state.lampOn ? 'on' : 'off'})`);
  if (isAccessible(state, receptacleId)) things.push(...objectsIn(state, receptacleId).map(describeObject));
  return things;
}

/** ALFWorld's sentence about a receptacle: "The fridge 1 is closed." / "On the desk 1, you see a pen 1.". */
export function receptacleSentence(state: HouseholdState, receptacleId: string): string {
  const r = findReceptacle(state.layout, receptacleId);
  if (!r) throw new RangeError(`unknown receptacle ${JSON.stringify(receptacleId)}`);
  const seen = listWithArticles(visibleThings(state, r.id));
  if (!r.openable) return `On the ${r.id}, you see ${seen}.`;
  if (!state.open[r.id]) {
    // A lamp on a closed receptacle is still visible, but openable hosts do not occur.
    return `The ${r.id} is closed.`;
  }
  return `The ${r.id} is open. In it, you see ${seen}.`;
}

/** "Looking quickly around you, you see a cabinet 1, ...". */
export function roomSentence(layout: Layout): string {
  return `Looking quickly around you, you see ${listWithArticles(layout.receptacles.map((r) => r.id))}.`;
}

/**
 * The compact state line: "Location: drawer 1 (open); you see pen 1. Holding: apple 1 (clean)."
 * It is written the same way after every action, so an observation never depends on history.
 */
export function stateLine(state: HouseholdState): string {
  let where: string;
  if (state.location === null) {
    where = 'middle of the room';
  } else {
    const r = findReceptacle(state.layout, state.location);
    const door = r?.openable ? (state.open[state.location] ? ' (open)' : ' (closed)') : '';
    const things = visibleThings(state, state.location);
    const sees = isAccessible(state, state.location) || things.length > 0 ? `; you see ${things.length > 0 ? things.join(', ') : 'nothing'}` : '';
    where = `${state.location}${door}${sees}`;
  }
  const held = heldObject(state);
  return `Location: ${where}. Holding: ${held ? describeObject(held) : 'nothing'}.`;
}

/** A whole observation text: the task, what the last action did, then the state line. */
export function observationText(instruction: string, feedback: string, state: HouseholdState): string {
  return `Your task is to: ${instruction}\n${feedback}\n${stateLine(state)}`;
}
