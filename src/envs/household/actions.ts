/**
 * The household action language: the admissible actions of a state, how an action changes the
 * state, and, for an inadmissible action, why it cannot be done.
 */
import { findReceptacle } from './layout.ts';
import type { HouseholdState, ObjectState } from './state.ts';
import { heldObject, isAccessible, objectById, objectsIn } from './state.ts';
import { describeObject, listWithArticles, receptacleSentence, roomSentence } from './text.ts';
import { OBJECTS, typeOfInstance } from './vocab.ts';

/** Appliances, and the object property each one acts on. */
const APPLIANCE_VERBS = [
  { verb: 'clean', appliance: 'sinkbasin', property: 'cleanable', state: 'clean' },
  { verb: 'heat', appliance: 'microwave', property: 'heatable', state: 'hot' },
  { verb: 'cool', appliance: 'fridge', property: 'coolable', state: 'cool' },
] as const;

/**
 * Canonical form of a typed action: trimmed, lower case, single spaces, no final period;
 * "put X in Y" and "put X on Y" are read as ALFWorld's "put X in/on Y".
 */
export function normalizeAction(action: string): string {
  let a = action.trim().toLowerCase().replace(/\s+/g, ' ').replace(/\.$/, '').trim();
  if (a.startsWith('put ') && !a.includes(' in/on ')) {
    const m = /^put (.+?) (?:in|on) (.+)$/.exec(a);
    if (m) a = `put ${m[1]} in/on ${m[2]}`;
  }
  return a;
}

/** The exact admissible actions of `state`, in a stable order. */
export function admissibleActions(state: HouseholdState): string[] {
  const out: string[] = [];
  for (const r of state.layout.receptacles) if (r.id !== state.location) out.push(`go to ${r.id}`);
  const held = heldObject(state);
  const loc = state.location === null ? undefined : findReceptacle(state.layout, state.location);
  if (loc) {
    if (loc.openable) out.push(`${state.open[loc.id] ? 'close' : 'open'} ${loc.id}`);
    if (isAccessible(state, loc.id)) {
      if (held) out.push(`put ${held.id} in/on ${loc.id}`);
      else for (const o of objectsIn(state, loc.id)) if (OBJECTS[o.type].pickable) out.push(`take ${o.id} from ${loc.id}`);
    }
    if (held) {
      for (const v of APPLIANCE_VERBS) {
        if (loc.type === v.appliance && OBJECTS[held.type][v.property]) out.push(`${v.verb} ${held.id} with ${loc.id}`);
      }
    }
    if (state.layout.lamp.host === loc.id) out.push(`use ${state.layout.lamp.id}`);
    out.push(`examine ${loc.id}`);
  }
  if (held) out.push(`examine ${held.id}`);
  out.push('inventory', 'look');
  return out;
}

/**
 * Applies an admissible, normalised action to `state` in place and returns ALFWorld's sentence
 * for its effect. Throws on an action that `admissibleActions` would not list (a caller bug).
 */
export function applyAction(state: HouseholdState, action: string): string {
  if (!admissibleActions(state).includes(action)) throw new RangeError(`applyAction: ${JSON.stringify(action)} is not admissible`);
  let m: RegExpExecArray | null;
  if ((m = /^go to (.+)$/.exec(action))) {
    const id = m[1] as string;
    state.location = id;
    return `You arrive at ${id}. ${receptacleSentence(state, id)}`;
  }
  if ((m = /^open (.+)$/.exec(action))) {
    const id = m[1] as string;
    state.open[id] = true;
    return `You open the ${id}. In it, you see ${listWithArticles(objectsIn(state, id).map(describeObject))}.`;
  }
  if ((m = /^close (.+)$/.exec(action))) {
    state.open[m[1] as string] = false;
    return `You close the ${m[1] as string}.`;
  }
  if ((m = /^take (.+) from (.+)$/.exec(action))) {
    const o = objectById(state, m[1] as string) as ObjectState;
    o.location = null;
    state.held = o.id;
    return `You pick up the ${o.id} from the ${m[2] as string}.`;
  }
  if ((m = /^put (.+) in\/on (.+)$/.exec(action))) {
    const o = objectById(state, m[1] as string) as ObjectState;
    o.location = m[2] as string;
    state.held = null;
    return `You put the ${o.id} in/on the ${m[2] as string}.`;
  }
  if ((m = /^(clean|heat|cool) (.+) with (.+)$/.exec(action))) {
    const v = APPLIANCE_VERBS.find((x) => x.verb === m?.[1]);
    const o = objectById(state, m[2] as string) as ObjectState;
    if (v?.state === 'clean') o.clean = true;
    // Heating and cooling undo each other.
    if (v?.state === 'hot') [o.hot, o.cool] = [true, false];
    if (v?.state === 'cool') [o.cool, o.hot] = [true, false];
    return `You ${m[1] as string} the ${o.id} using the ${m[3] as string}.`;
  }
  if ((m = /^use (.+)$/.exec(action))) {
    state.lampOn = !state.lampOn;
    return `You turn ${state.lampOn ? 'on' : 'off'} the ${m[1] as string}.`;
  }
  if ((m = /^examine (.+)$/.exec(action))) {
    const id = m[1] as string;
    if (id === state.location) return receptacleSentence(state, id);
    const o = objectById(state, id) as ObjectState;
    const states = [o.clean && 'clean', o.hot && 'hot', o.cool && 'cool'].filter((s): s is string => typeof s === 'string');
    const about = states.length > 0 ? `It is ${states.join(' and ')}.` : "There's nothing special about it.";
    const lit = state.lampOn && state.location === state.layout.lamp.host ? ` You look at it under the ${state.layout.lamp.id}.` : '';
    return `You examine the ${o.id}. ${about}${lit}`;
  }
  if (action === 'inventory') {
    const held = heldObject(state);
    return held ? `You are carrying: ${listWithArticles([describeObject(held)])}.` : 'You are not carrying anything.';
  }
  // look
  if (state.location === null) return `You are in the middle of a room. ${roomSentence(state.layout)}`;
  return `You are facing the ${state.location}. ${roomSentence(state.layout)}`;
}

/** How each command is written, for messages about malformed actions. */
const FORMS: Readonly<Record<string, string>> = {
  go: 'go to RECEPTACLE',
  open: 'open RECEPTACLE',
  close: 'close RECEPTACLE',
  take: 'take OBJECT from RECEPTACLE',
  put: 'put OBJECT in/on RECEPTACLE',
  clean: 'clean OBJECT with sinkbasin N',
  heat: 'heat OBJECT with microwave N',
  cool: 'cool OBJECT with fridge N',
  use: 'use desklamp N',
  examine: 'examine RECEPTACLE or OBJECT',
  inventory: 'inventory',
  look: 'look',
};

/** Plain-words reason why `action` (already normalised, and not admissible) cannot be done. */
export function invalidReason(state: HouseholdState, action: string): string {
  if (action === '') return 'the action is empty';
  const q = JSON.stringify(action);
  const layout = state.layout;
  const held = heldObject(state);
  const isRec = (id: string): boolean => findReceptacle(layout, id) !== undefined;
  const notHere = (id: string): string | null => {
    if (!isRec(id)) return `there is no receptacle called ${JSON.stringify(id)} here`;
    if (state.location !== id) return `you are not at ${id}; go to it first`;
    return null;
  };
  const closed = (id: string): string | null => (isAccessible(state, id) ? null : `${id} is closed; open it first`);
  const holding = (id: string): string | null => {
    if (!held) return `you are not holding anything`;
    if (held.id !== id) return `you are holding ${held.id}, not ${id}`;
    return null;
  };
  let m: RegExpExecArray | null;
  if ((m = /^go to (.+)$/.exec(action))) {
    const id = m[1] as string;
    if (!isRec(id)) return `there is no receptacle called ${JSON.stringify(id)} here`;
    if (state.location === id) return `you are already at ${id}`;
  } else if ((m = /^(open|close) (.+)$/.exec(action))) {
    const id = m[2] as string;
    const r = findReceptacle(layout, id);
    const why = notHere(id);
    if (why) return why;
    if (!r?.openable) return `${id} cannot be opened or closed`;
    return `${id} is already ${state.open[id] ? 'open' : 'closed'}`;
  } else if ((m = /^take (.+) from (.+)$/.exec(action))) {
    const [, oid, rid] = m as unknown as [string, string, string];
    if (held) return `you are already holding ${held.id}; put it down first (you can hold only one object)`;
    const why = notHere(rid) ?? closed(rid);
    if (why) return why;
    const o = objectById(state, oid);
    if (!o || o.location !== rid) return `there is no ${oid} in/on ${rid}`;
    return `${oid} cannot be picked up`;
  } else if ((m = /^put (.+) in\/on (.+)$/.exec(action))) {
    const [, oid, rid] = m as unknown as [string, string, string];
    const why = holding(oid) ?? notHere(rid) ?? closed(rid);
    if (why) return why;
  } else if ((m = /^(clean|heat|cool) (.+) with (.+)$/.exec(action))) {
    const [, verb, oid, rid] = m as unknown as [string, string, string, string];
    const v = APPLIANCE_VERBS.find((x) => x.verb === verb);
    const why = holding(oid) ?? notHere(rid);
    if (why) return why;
    if (v && typeOfInstance(rid) !== v.appliance) return `you can only ${verb} with a ${v.appliance}`;
    if (v && held && !OBJECTS[held.type][v.property]) return `${oid} cannot be ${v.state === 'clean' ? 'cleaned' : v.state === 'hot' ? 'heated' : 'cooled'}`;
  } else if ((m = /^use (.+)$/.exec(action))) {
    const id = m[1] as string;
    if (id !== layout.lamp.id) return `${id} is not something you can use; only ${layout.lamp.id} can be used`;
    return `you are not where ${layout.lamp.id} is; go to ${layout.lamp.host} first`;
  } else if ((m = /^examine (.+)$/.exec(action))) {
    return `you can only examine the receptacle you are at or the object you hold, not ${m[1] as string}`;
  } else {
    const verb = action.split(' ')[0] ?? '';
    const form = Object.hasOwn(FORMS, verb) ? FORMS[verb] : undefined;
    if (form !== undefined) return `${q} is malformed; write it as "${form}"`;
    return `${q} is not a known command; use one of the listed actions (go to, open, close, take, put, clean, heat, cool, use, examine, inventory, look)`;
  }
  return `${q} is not applicable in the current state`;
}
