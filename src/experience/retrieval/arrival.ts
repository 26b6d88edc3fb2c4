/**
 * What a place offers for what the agent carries, learned from real states: the retrieval model's
 * rule for the actions of a state reached by a move.
 *
 * A neighbour's next state is a move recorded in another situation: it arrived empty-handed, so
 * it offers pick-ups there and nothing to do with a thing held. Where the agent of this episode
 * arrives holding something, the real environment offers what the place does with it and no
 * pick-up. Nothing here knows an environment: the move is the one-entity action template with
 * the most entities (`visit {}`), places are the entities
 * it moves to, the place where the agent is is the place named by the most of its actions
 * and not offered as a move, and what the agent carries is what a kind of action names alone as it names
 * that place (`inspect box 1` beside `inspect rack 1`). A place's kind is its entity without
 * the instance number (`rack 1` is a `rack`).
 */
import type { Observation } from '../../core/types.ts';
import { actionTemplate } from './substitution.ts';

/** Rules learned by {@link learnArrivalRules}. */
export interface ArrivalRules {
  /** The move template (`visit {}`). */
  move: string;
  /** Entities the move goes to. */
  places: ReadonlySet<string>;
  /**
   * Per kind of place and its own actions (see `placeState`), and per that and the kind of thing
   * carried (`place#thing`), the actions on (the thing, the place) that real states there
   * offered (nearly always per place, mostly per thing), as `template|roles` keys.
   */
  carriedActions: ReadonlyMap<string, readonly string[]>;
  /** `template|roles` keys about other things at the place (`lift {} from {}`) that real states offered often, but never while carrying something. */
  notWhileCarrying: ReadonlySet<string>;
  /**
   * Per kind of place and its own actions, with enough real states carrying something there: every
   * `template|roles` key on (the thing, the place) that any of them offered. A key outside it was
   * never offered there (a put-down at a closed box).
   */
  everCarried: ReadonlyMap<string, ReadonlySet<string>>;
  /** Templates after which real states carried their first entity, not carried before (`lift {} from {}`). */
  pickUp: ReadonlySet<string>;
  /** Templates after which real states no longer carried their first entity (`drop {} at {}`). */
  putDown: ReadonlySet<string>;
}

/** A real step's actions before and after, for learning what picks up and what puts down. */
export interface ArrivalTransition {
  before: readonly string[];
  action: string;
  after: readonly string[];
}

/** Share of real states at a kind of place carrying a kind of thing that must offer an action for it to be added. */
const CARRIED_RATE = 0.5;
/** The same share over every kind of thing, used for things never seen carried there. */
const PLACE_RATE = 0.95;
/** Real states carrying something at a kind of place needed before its rates count. */
const MIN_CARRYING_STATES = 5;
/** Real states carrying a kind of thing at a kind of place needed before its own rates count. */
const MIN_THING_STATES = 2;
/** Real states not carrying that must offer an action kind before "never while carrying" counts. */
const MIN_FREE_OFFERS = 20;
/** Real steps of a template needed before it counts as picking up or putting down. */
const MIN_CARRY_STEPS = 5;

/**
 * A state's move: the one-entity action template filled by the most distinct entities (at least
 * three: `visit {}` beside `open {}`), with those entities (the places it goes to).
 */
export function moveOf(actions: readonly string[]): { move: string; destinations: Set<string> } | undefined {
  const fills = new Map<string, Set<string>>();
  for (const a of actions) {
    const { template, entities } = actionTemplate(a);
    if (entities.length === 1) (fills.get(template) ?? fills.set(template, new Set()).get(template))?.add(entities[0] as string);
  }
  let best: { move: string; destinations: Set<string> } | undefined;
  for (const [move, destinations] of fills) if (destinations.size > (best?.destinations.size ?? 2)) best = { move, destinations };
  return best;
}

/** A place's kind: its entity without the instance number. */
export function placeKind(entity: string): string {
  return entity.replace(/\s+\d+$/, '');
}

/**
 * A place's kind and what its own one-entity actions say of it (`open {}` offered: closed): a
 * closed box may offer no put-down where an open one does.
 */
export function placeState(here: string, actions: readonly string[]): string {
  const own = actions.map(actionTemplate).filter((t) => t.entities.length === 1 && t.entities[0] === here).map((t) => t.template);
  return `${placeKind(here)}|${[...new Set(own)].sort().join(',')}`;
}

/** Where the agent is (unless `knownHere` says) and what it carries, read off a state's actions. */
export function situationOf(actions: readonly string[], move: string, places: ReadonlySet<string>, knownHere?: string): { here: string | undefined; carried: Set<string> } {
  const destinations = new Set<string>();
  const lists: string[][] = [];
  for (const a of actions) {
    const { template, entities } = actionTemplate(a);
    if (template === move) for (const e of entities) destinations.add(e);
    else lists.push(entities as string[]);
  }
  // The place named by the most actions, when one is: a simulated state may keep an action of a
  // place left before (`open bin 2` at bin 3), never more of them than the place it is at.
  const count = new Map<string, number>();
  for (const es of lists) for (const e of new Set(es)) if (places.has(e) && !destinations.has(e)) count.set(e, (count.get(e) ?? 0) + 1);
  const ranked = [...count].sort((a, b) => b[1] - a[1]);
  if (knownHere === undefined && (ranked.length === 0 || (ranked.length > 1 && ranked[1]?.[1] === ranked[0]?.[1]))) return { here: undefined, carried: new Set() };
  const here = knownHere ?? (ranked[0] as [string, number])[0];
  // Carried: a thing named alone by a kind of action that names the place too (`inspect box 1`
  // beside `inspect rack 1`), and not named with the place only (`lift box 1 from rack 1`).
  const aboutHere = new Set<string>();
  for (const a of actions) {
    const { template, entities } = actionTemplate(a);
    if (entities.length === 1 && entities[0] === here) aboutHere.add(template);
  }
  const carried = new Set<string>();
  for (const a of actions) {
    const { template, entities } = actionTemplate(a);
    const e = entities[0];
    if (entities.length === 1 && e !== undefined && e !== here && !places.has(e) && aboutHere.has(template)) carried.add(e);
  }
  return { here, carried };
}

/** The `template|roles` key of an action on the place `here`: each entity is c(arried), h(ere) or o(ther). */
function roleKey(action: string, here: string, carried: ReadonlySet<string>): string | undefined {
  const { template, entities } = actionTemplate(action);
  if (!entities.includes(here) || entities.length < 2) return undefined;
  return `${template}|${entities.map((e) => (e === here ? 'h' : carried.has(e) ? 'c' : 'o')).join('')}`;
}

const rolesOf = (key: string): string => key.slice(key.lastIndexOf('|') + 1);

/** Fills a template's `{}` slots in order. */
function fill(template: string, entities: readonly string[]): string {
  let i = 0;
  return template.replace(/\{\}/g, () => entities[i++] ?? '');
}

/**
 * Learns the rules from real states' admissible actions and, for what picks a thing up and what
 * puts it down, from real steps. Null when no state has a move ({@link moveOf}).
 */
export function learnArrivalRules(states: readonly (readonly string[])[], transitions: readonly ArrivalTransition[] = []): ArrivalRules | null {
  // The move of the state that offers the most places.
  let widest: { move: string; destinations: Set<string> } | undefined;
  for (const actions of states) {
    const m = moveOf(actions);
    if (m && m.destinations.size > (widest?.destinations.size ?? 0)) widest = m;
  }
  if (widest === undefined) return null;
  const move = widest.move;
  const places = new Set<string>();
  for (const actions of states) for (const a of actions) {
    const { template, entities } = actionTemplate(a);
    if (template === move) places.add(entities[0] as string);
  }
  // Carrying states per place state, and per place state and kind of thing carried.
  const carrying = new Map<string, { n: number; offered: Map<string, number> }>();
  const tally = (key: string, offered: readonly string[]): void => {
    const c = carrying.get(key) ?? carrying.set(key, { n: 0, offered: new Map() }).get(key) as { n: number; offered: Map<string, number> };
    c.n++;
    for (const k of offered) c.offered.set(k, (c.offered.get(k) ?? 0) + 1);
  };
  const otherCarrying = new Map<string, number>();
  const otherFree = new Map<string, number>();
  for (const actions of states) {
    const { here, carried } = situationOf(actions, move, places);
    if (here === undefined) continue;
    const place = placeState(here, actions);
    const roles = (a: string): string | undefined => roleKey(a, here, carried);
    const keys = new Set(actions.map(roles).filter((k): k is string => k !== undefined));
    const withOther = [...keys].filter((k) => rolesOf(k).includes('o'));
    if (carried.size === 1) {
      const thing = [...carried][0] as string;
      const own = [...keys].filter((k) => rolesOf(k).includes('c') && !rolesOf(k).includes('o'));
      tally(place, own);
      tally(`${place}#${placeKind(thing)}`, own);
    }
    if (carried.size > 0) for (const k of withOther) otherCarrying.set(k, (otherCarrying.get(k) ?? 0) + 1);
    else for (const k of withOther) otherFree.set(k, (otherFree.get(k) ?? 0) + 1);
  }
  const carriedActions = new Map<string, string[]>();
  for (const [key, c] of carrying) {
    // Per kind of thing: most of its states there offered it. Per place alone (a thing never
    // seen carried there): all but a few did (a place may act on some kinds of thing only).
    const perThing = key.includes('#');
    if (c.n < (perThing ? MIN_THING_STATES : MIN_CARRYING_STATES)) continue;
    const rate = perThing ? CARRIED_RATE : PLACE_RATE;
    const keys = [...c.offered].filter(([, k]) => k / c.n >= rate).map(([k]) => k);
    carriedActions.set(key, keys.sort());
  }
  const notWhileCarrying = new Set([...otherFree].filter(([k, c]) => c >= MIN_FREE_OFFERS && !otherCarrying.has(k)).map(([k]) => k));
  const everCarried = new Map([...carrying].filter(([key, c]) => !key.includes('#') && c.n >= MIN_CARRYING_STATES).map(([key, c]) => [key, new Set(c.offered.keys())]));
  // What picks up and what puts down: a template most of whose real steps made its first entity
  // carried (or no longer carried).
  const carrySteps = new Map<string, { n: number; up: number; down: number }>();
  for (const t of transitions) {
    const { template, entities } = actionTemplate(t.action);
    const thing = entities[0];
    if (template === move || thing === undefined || entities.length < 2) continue;
    const was = situationOf(t.before, move, places).carried.has(thing);
    const is = situationOf(t.after, move, places).carried.has(thing);
    const c = carrySteps.get(template) ?? carrySteps.set(template, { n: 0, up: 0, down: 0 }).get(template) as { n: number; up: number; down: number };
    c.n++;
    if (!was && is) c.up++;
    if (was && !is) c.down++;
  }
  const pickUp = new Set([...carrySteps].filter(([, c]) => c.n >= MIN_CARRY_STEPS && c.up / c.n >= 0.5).map(([t]) => t));
  const putDown = new Set([...carrySteps].filter(([, c]) => c.n >= MIN_CARRY_STEPS && c.down / c.n >= 0.5).map(([t]) => t));
  return { move, places, carriedActions, notWhileCarrying, everCarried, pickUp, putDown };
}

/**
 * What the agent carries after taking `actions` (its episode so far, oldest first), by the
 * rules' pick-up and put-down templates; null when the rules learned neither.
 */
export function carriedAfter(rules: ArrivalRules, actions: readonly string[]): Set<string> | null {
  if (rules.pickUp.size === 0 || rules.putDown.size === 0) return null;
  const carried = new Set<string>();
  for (const a of actions) {
    const { template, entities } = actionTemplate(a);
    const thing = entities[0];
    if (thing === undefined) continue;
    if (rules.pickUp.has(template)) carried.add(thing);
    else if (rules.putDown.has(template)) carried.delete(thing);
  }
  return carried;
}

/**
 * `state` (the agent at `there`) without actions on a carried thing and `there` that no real
 * state at such a place offered while carrying (`drop box 1 at bin 1` at a closed bin);
 * `state` itself where the rules know too little of the place or nothing is carried. The last step of
 * {@link completeArrival}: a place remembered from earlier in the episode gets the actions of what
 * the agent carries now moved to it from where it was.
 */
export function withoutUnofferedCarriedActions(rules: ArrivalRules | null, there: string, state: Observation): Observation {
  if (!rules || !rules.places.has(there)) return state;
  const { carried } = situationOf(state.actions, rules.move, rules.places, there);
  if (carried.size === 0) return state;
  const place = placeState(there, state.actions);
  const actions = state.actions.filter((a) => {
    const key = roleKey(a, there, carried);
    if (key === undefined || rolesOf(key) !== 'ch') return true;
    const ever = rules.everCarried.get(place);
    return ever === undefined || ever.has(key);
  });
  return actions.length === state.actions.length ? state : { text: state.text, actions };
}

/**
 * `next` (a predicted state after `action`) as the rules say a place looks to an agent that
 * arrives there carrying what it carried `before`: the carried things' actions the place's kind
 * offers are added, and actions on other things there that real states never offered while
 * carrying go. With `history` (the episode's actions so far), what is carried comes from the
 * actions taken (see {@link carriedAfter}) rather than from `before`, and a thing `next` shows as
 * carried that the agent does not carry loses its actions there (a place remembered from a visit
 * with it in hand, or a neighbour's walk, had brought back what was put down since). Unchanged
 * unless `action` is a move to a place.
 */
export function completeArrival(rules: ArrivalRules | null, before: readonly string[], action: string, next: Observation, history?: readonly string[]): Observation {
  if (!rules) return next;
  const { template, entities } = actionTemplate(action);
  const there = entities[0];
  if (template !== rules.move || there === undefined || !rules.places.has(there)) return next;
  const tracked = history ? carriedAfter(rules, history) : null;
  const carried = tracked ?? situationOf(before, rules.move, rules.places).carried;
  if (tracked) {
    const phantoms = [...situationOf(next.actions, rules.move, rules.places, there).carried].filter((c) => !tracked.has(c));
    if (phantoms.length > 0) {
      const gone = new Set(phantoms);
      next = { text: next.text, actions: next.actions.filter((a) => !actionTemplate(a).entities.some((e) => gone.has(e))) };
    }
  }
  if (carried.size === 0) return next;
  // Only what the agent still carries there: the next state still names it.
  const named = new Set(next.actions.flatMap((a) => actionTemplate(a).entities));
  const still = [...carried].filter((c) => named.has(c) || next.text.includes(c));
  if (still.length === 0) return next;
  const keep = new Set(still);
  const actions = next.actions.filter((a) => {
    const k = roleKey(a, there, keep);
    return k === undefined || !rules.notWhileCarrying.has(k);
  });
  const place = placeState(there, actions);
  // What acts on a carried thing alone (`inspect box 1`) goes with it: a neighbour that arrived
  // carrying nothing, or something else, does not offer it.
  for (const a of before) {
    const own = actionTemplate(a).entities;
    if (own.length === 1 && keep.has(own[0] as string) && !actions.includes(a)) actions.push(a);
  }
  for (const c of still) {
    for (const key of rules.carriedActions.get(`${place}#${placeKind(c)}`) ?? rules.carriedActions.get(place) ?? []) {
      const a = fill(key.slice(0, key.lastIndexOf('|')), [...rolesOf(key)].map((r) => (r === 'h' ? there : c)));
      if (!actions.includes(a)) actions.push(a);
    }
  }
  const completed = actions.length === next.actions.length && actions.every((a, i) => a === next.actions[i]) ? next : { text: next.text, actions };
  return withoutUnofferedCarriedActions(rules, there, completed);
}
