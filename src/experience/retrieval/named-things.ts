/**
 * Where a thing the instruction names lies in a world the data never showed: the retrieval
 * model's rule that such a thing is somewhere to be found.
 *
 * A task asks for a thing its world holds (an instruction naming a thing to move: the world has
 * one). Where the data recorded the task's world, the recorded steps show where; elsewhere (a task
 * with no recorded episode, or places its recorded episodes never looked into) each place is a
 * stand-in drawn from other worlds, and the named thing often turned up in none of them.
 * This rule puts it at one place: of the places of the world the agent has seen, those of a kind
 * where the data found that kind of thing, ranked by a draw fixed per task and weighted by how
 * often the data found it there, the first that neither the task's recorded steps nor this episode
 * has shown without it. It reads only the instruction (agent-visible), the episode and the data.
 *
 * Nothing here knows an environment: what picks a thing up comes from the arrival rules
 * (`lift {} from {}`), a kind is an entity without its instance number, and a place shows its
 * contents in the states ("place states", see `placeState`) where the data offered to pick
 * something up from it (an open box, not a closed one).
 */
import type { AgentTask, Observation } from '../../core/types.ts';
import { hashUnit } from '../../core/rng.ts';
import { placeKind, placeState, situationOf, type ArrivalRules } from './arrival.ts';
import { carryStepOf, type CarryStep } from './carried-things.ts';
import { actionTemplate } from './substitution.ts';

/** What {@link learnNamedThings} learned. */
export interface NamedThingRules {
  /** Per kind of thing, per kind of place: the distinct (task, thing, place) the data offered to pick up there. */
  foundAt: ReadonlyMap<string, ReadonlyMap<string, number>>;
  /** Place states in which the data offered to pick something up from the place: it shows its contents. */
  showing: ReadonlySet<string>;
  /** Per task id: the things its recorded states offered to pick up, and the places its recorded actions named. */
  recorded: ReadonlyMap<string, { things: ReadonlySet<string>; places: ReadonlySet<string> }>;
  /**
   * Continuing steps of a one-place action (`visit {}`, `open {}`) whose next state offered to pick
   * up a thing from that place, as indices into the steps learned from, by
   * {@link showingKey} (the step's template, the place's state after it, the thing's kind).
   */
  showingSteps: ReadonlyMap<string, readonly number[]>;
}

/** The key of {@link NamedThingRules.showingSteps}. */
export const showingKey = (template: string, state: string, kind: string): string => `${template}|${state}|${kind}`;

/** A recorded step, as much of it as the rule needs. */
export interface NamedThingStep {
  taskId: string;
  action: string;
  /** Admissible actions of the state before the step. */
  before: readonly string[];
  /** Admissible actions of the state after it, when the episode goes on. */
  after?: readonly string[];
}

/** The thing and place of a pick-up action (`lift box 1 from rack 1`), or undefined (see `carryStepOf`). */
export function pickUpOf(rules: ArrivalRules, action: string): CarryStep | undefined {
  const step = carryStepOf(rules, action);
  return step?.up ? step : undefined;
}

/** Learns the rule from recorded steps; null when the arrival rules know nothing that picks up. */
export function learnNamedThings(rules: ArrivalRules | null, steps: readonly NamedThingStep[]): NamedThingRules | null {
  if (!rules || rules.pickUp.size === 0) return null;
  const triples = new Map<string, Map<string, Set<string>>>();
  const showing = new Set<string>();
  const recorded = new Map<string, { things: Set<string>; places: Set<string> }>();
  const showingSteps = new Map<string, number[]>();
  steps.forEach((step, i) => {
    const mine = recorded.get(step.taskId) ?? (recorded.set(step.taskId, { things: new Set(), places: new Set() }).get(step.taskId) as { things: Set<string>; places: Set<string> });
    const { template, entities } = actionTemplate(step.action);
    for (const e of entities) if (rules.places.has(e)) mine.places.add(e);
    for (const actions of step.after ? [step.before, step.after] : [step.before]) {
      for (const a of actions) {
        const p = pickUpOf(rules, a);
        if (!p) continue;
        const kind = placeKind(p.thing);
        mine.things.add(p.thing);
        const byPlace = triples.get(kind) ?? (triples.set(kind, new Map()).get(kind) as Map<string, Set<string>>);
        const at = placeKind(p.place);
        (byPlace.get(at) ?? (byPlace.set(at, new Set()).get(at) as Set<string>)).add(`${step.taskId}\u0000${p.thing}\u0000${p.place}`);
        showing.add(placeState(p.place, actions));
      }
    }
    const place = entities[0];
    if (!step.after || entities.length !== 1 || place === undefined || !rules.places.has(place)) return;
    const state = placeState(place, step.after);
    const kinds = new Set(step.after.flatMap((a) => {
      const p = pickUpOf(rules, a);
      return p && p.place === place ? [placeKind(p.thing)] : [];
    }));
    for (const kind of kinds) {
      const key = showingKey(template, state, kind);
      (showingSteps.get(key) ?? (showingSteps.set(key, []).get(key) as number[])).push(i);
    }
  });
  const foundAt = new Map<string, Map<string, number>>();
  for (const [kind, byPlace] of triples) foundAt.set(kind, new Map([...byPlace].map(([p, s]) => [p, s.size])));
  return { foundAt, showing, recorded, showingSteps };
}

const COUNT_WORDS: Readonly<Record<string, number>> = { two: 2, three: 3, four: 4 };

/**
 * The kinds of things the instruction names (a word, or a word with a plural "s", equal to a kind
 * the data picked up), each with how many it asks for ("move two box": 2; else 1).
 */
export function namedThingKinds(rules: NamedThingRules, instruction: string): { kind: string; count: number }[] {
  const out: { kind: string; count: number }[] = [];
  const words = instruction.toLowerCase().split(/[^\p{L}\p{N}]+/u);
  words.forEach((word, i) => {
    const kind = rules.foundAt.has(word) ? word : word.endsWith('s') && rules.foundAt.has(word.slice(0, -1)) ? word.slice(0, -1) : undefined;
    if (kind === undefined || out.some((k) => k.kind === kind)) return;
    const before = words[i - 1] ?? '';
    const count = COUNT_WORDS[before] ?? (/^[2-9]$/.test(before) ? Number(before) : 1);
    out.push({ kind, count });
  });
  return out;
}

/**
 * The kind of thing the rule puts at `place`, when the agent is about to see `place`'s contents
 * for the first time in this episode (`shown`: the state the model predicts, already at `place`)
 * and `place` is where the rule says a named thing lies that neither the task's recorded steps
 * nor this episode (`seen`, its states so far) has offered to pick up. Undefined otherwise.
 */
export function thingToShow(
  named: NamedThingRules,
  arrival: ArrivalRules,
  task: AgentTask,
  seen: readonly Observation[],
  place: string,
  shown: Observation,
): string | undefined {
  if (!arrival.places.has(place) || !named.showing.has(placeState(place, shown.actions))) return undefined;
  const own = [named.recorded.get(task.id), task.rootId !== undefined ? named.recorded.get(task.rootId) : undefined].filter((r) => r !== undefined);
  if (own.some((r) => r.places.has(place))) return undefined;
  // Only kinds that could lie here (this is on every step's path: the episode is read only then).
  const kinds = namedThingKinds(named, task.instruction).filter(({ kind }) => (named.foundAt.get(kind)?.get(placeKind(place)) ?? 0) > 0);
  // Things already offered by the task's recorded steps or in this episode, and places already shown.
  const offered = new Set<string>(own.flatMap((r) => [...r.things]));
  const lacking = (kind: string, count: number): boolean => [...offered].filter((t) => placeKind(t) === kind).length < count;
  if (!kinds.some(({ kind, count }) => lacking(kind, count))) return undefined;
  const shownBefore = new Set<string>();
  const world = new Set<string>();
  for (const o of seen) {
    for (const a of o.actions) {
      const p = pickUpOf(arrival, a);
      if (p) offered.add(p.thing);
      const { template, entities } = actionTemplate(a);
      if (template === arrival.move && entities[0] !== undefined) world.add(entities[0]);
    }
    const { here } = situationOf(o.actions, arrival.move, arrival.places);
    if (here !== undefined) {
      world.add(here);
      if (named.showing.has(placeState(here, o.actions))) shownBefore.add(here);
    }
  }
  world.add(place);
  for (const { kind, count } of kinds) {
    if (!lacking(kind, count)) continue;
    const weights = named.foundAt.get(kind) as ReadonlyMap<string, number>;
    // A weighted draw without replacement, fixed per task and kind: key u^(1/w), largest first.
    let best: { at: string; key: number } | undefined;
    for (const candidate of world) {
      const w = weights.get(placeKind(candidate)) ?? 0;
      if (w <= 0 || shownBefore.has(candidate) || own.some((r) => r.places.has(candidate))) continue;
      const u = hashUnit(`${task.id}\u0000${kind}\u0000${candidate}`);
      const key = Math.log(u) / w;
      if (!best || key > best.key) best = { at: candidate, key };
    }
    if (best?.at === place) return kind;
  }
  return undefined;
}
