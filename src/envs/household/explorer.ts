/**
 * The household's demonstrator: a systematic explorer that acts only on what the agent sees (the
 * instruction, the current observation with its admissible actions, and the episode's own
 * earlier actions), never on the task's goal. It reads the instruction ("put a clean fork in
 * drawer.", "put two pen in desk.", "look at cd under the desklamp.", ...), visits receptacles in
 * listed order (least recently visited first), opens closed ones, takes an object of the named
 * type, cleans / heats / cools it at the first sinkbasin / microwave / fridge when the
 * instruction says so, and puts it in the first receptacle of the named type (the same one for
 * the second object of "put two"); for "look at", it then visits desks and side tables until it
 * sees the desklamp and switches it on.
 *
 * The environment's expert goes straight to the hidden place of the thing, so its episodes never
 * show a place searched in vain or a wrong thing passed over; a policy cloned from this explorer's
 * episodes searches as it does. It is also the experiment table's scripted reference
 * (`src/train/reference.ts`).
 */
import type { Observation } from '../../core/types.ts';
import type { Policy } from '../episode.ts';

/** What the explorer reads at one decision. */
export interface ExplorerContext {
  instruction: string;
  /** The episode's earlier actions, oldest first. */
  history: readonly { action: string }[];
  observation: Observation;
}

type Condition = 'clean' | 'hot' | 'cool';

interface HouseholdIntent {
  object: string;
  /** Receptacle type to put the object in; null for "look at ... under the desklamp". */
  receptacle: string | null;
  condition: Condition | null;
  count: 1 | 2;
}

const APPLIANCE: Readonly<Record<Condition, { verb: string; appliance: string }>> = {
  clean: { verb: 'clean', appliance: 'sinkbasin' },
  hot: { verb: 'heat', appliance: 'microwave' },
  cool: { verb: 'cool', appliance: 'fridge' },
};

/** Receptacle types a desklamp stands on (the README's "a desklamp standing on a desk or side table"). */
const LAMP_HOST_TYPES = new Set(['desk', 'sidetable']);

/** Reads a household instruction; null when it is not one of the six known forms. */
export function parseHouseholdInstruction(instruction: string): HouseholdIntent | null {
  const text = instruction.trim().toLowerCase().replace(/\.$/, '');
  let m: RegExpExecArray | null;
  if ((m = /^put two (\S+) in (\S+)$/.exec(text))) return { object: m[1] as string, receptacle: m[2] as string, condition: null, count: 2 };
  if ((m = /^put an? (clean|hot|cool) (\S+) in (\S+)$/.exec(text))) {
    return { object: m[2] as string, receptacle: m[3] as string, condition: m[1] as Condition, count: 1 };
  }
  if ((m = /^put an? (\S+) in (\S+)$/.exec(text))) return { object: m[1] as string, receptacle: m[2] as string, condition: null, count: 1 };
  if ((m = /^look at (\S+) under the desklamp$/.exec(text))) return { object: m[1] as string, receptacle: null, condition: null, count: 1 };
  return null;
}

interface HouseholdView {
  /** Current receptacle, or null in the middle of the room. */
  location: string | null;
  closed: boolean;
  /** Things visible here, as written ("fork 2 (clean)", "desklamp 1 (off)"). */
  seen: string[];
  held: { id: string; states: string[] } | null;
}

function typeOf(id: string): string {
  return id.replace(/ \d+$/, '');
}

function splitStates(item: string): { id: string; states: string[] } {
  const m = /^(.*?) \(([^)]*)\)$/.exec(item.trim());
  if (!m) return { id: item.trim(), states: [] };
  return { id: m[1] as string, states: (m[2] as string).split(',').map((s) => s.trim()) };
}

/** Reads the state line that ends every household observation. */
function readHouseholdView(text: string): HouseholdView {
  const line = text.split('\n').reverse().find((l) => l.startsWith('Location: ')) ?? '';
  const m = /^Location: (.*)\. Holding: (.*)\.$/.exec(line);
  if (!m) return { location: null, closed: false, seen: [], held: null };
  const [where, seenPart] = (m[1] as string).split('; you see ') as [string, string | undefined];
  const closed = / \(closed\)$/.test(where);
  const loc = where.replace(/ \((?:open|closed)\)$/, '');
  const seen = seenPart === undefined || seenPart === 'nothing' ? [] : seenPart.split(', ');
  const heldText = m[2] as string;
  return {
    location: loc === 'middle of the room' ? null : loc,
    closed,
    seen,
    held: heldText === 'nothing' ? null : splitStates(heldText),
  };
}

/** The explorer's action for one context (see the module comment). */
export function householdExplorerAction(ctx: ExplorerContext): string {
  const { observation, history } = ctx;
  const actions = observation.actions;
  if (actions.length === 0) return 'look';
  const chosen = householdChoice(ctx);
  // Never insist on one action forever: after three identical steps, do something else.
  const last = history.slice(-3).map((h) => h.action);
  if (last.length === 3 && last.every((a) => a === chosen)) return actions.find((a) => a !== chosen && a.startsWith('go to ')) ?? chosen;
  return chosen;
}

function householdChoice(ctx: ExplorerContext): string {
  const { instruction, observation, history } = ctx;
  const actions = observation.actions;
  const has = (a: string): boolean => actions.includes(a);
  const view = readHouseholdView(observation.text);
  const intent = parseHouseholdInstruction(instruction);
  const goTargets = actions.filter((a) => a.startsWith('go to ')).map((a) => a.slice('go to '.length));

  /** Index in history of the last visit to each receptacle (-1: never). */
  const lastVisit = (id: string, since = 0): number => {
    for (let i = history.length - 1; i >= since; i--) if (history[i]?.action === `go to ${id}`) return i;
    return -1;
  };
  /** The least recently visited receptacle (since `since`), preferring `prefer`, in listed order. */
  const explore = (since = 0, prefer: (id: string) => boolean = () => false): string | null => {
    let best: string | null = null;
    let bestKey = Number.POSITIVE_INFINITY;
    for (const id of goTargets) {
      const key = (prefer(id) ? 0 : 1e6) + lastVisit(id, since);
      if (key < bestKey) [best, bestKey] = [id, key];
    }
    return best === null ? null : `go to ${best}`;
  };
  const fallback = (): string => explore() ?? (actions[0] as string);

  if (intent === null) return fallback();
  const here = view.location;

  // Objects this episode has already put where they belong (for "put two": do not take them back).
  const placed = new Set<string>();
  let placeTarget: string | null = null;
  for (const { action } of history) {
    const m = /^put (.+) in\/on (.+)$/.exec(action);
    if (m && typeOf(m[1] as string) === intent.object && typeOf(m[2] as string) === intent.receptacle) {
      placed.add(m[1] as string);
      placeTarget = m[2] as string;
    }
  }

  const held = view.held;
  if (held === null) {
    // Look for an object of the named type here; open a closed receptacle; else move on.
    for (const a of actions) {
      const m = /^take (.+) from (.+)$/.exec(a);
      if (m && typeOf(m[1] as string) === intent.object && !placed.has(m[1] as string)) return a;
    }
    if (here !== null && view.closed && has(`open ${here}`)) return `open ${here}`;
    return fallback();
  }

  if (typeOf(held.id) !== intent.object) {
    // Holding something else: put it down here if possible.
    if (here !== null && has(`put ${held.id} in/on ${here}`)) return `put ${held.id} in/on ${here}`;
    if (here !== null && view.closed && has(`open ${here}`)) return `open ${here}`;
    return fallback();
  }

  if (intent.condition !== null && !held.states.includes(intent.condition)) {
    const { verb, appliance } = APPLIANCE[intent.condition];
    const apply = actions.find((a) => a.startsWith(`${verb} ${held.id} with `));
    if (apply !== undefined) return apply;
    const target = goTargets.find((id) => typeOf(id) === appliance);
    return target !== undefined ? `go to ${target}` : fallback();
  }

  if (intent.receptacle === null) {
    // Look at the object under the desklamp: find the lamp, switch it on.
    const lamp = view.seen.map(splitStates).find((t) => typeOf(t.id) === 'desklamp');
    if (lamp !== undefined && !lamp.states.includes('on') && has(`use ${lamp.id}`)) return `use ${lamp.id}`;
    let took = 0;
    for (let i = history.length - 1; i >= 0; i--) {
      if (history[i]?.action.startsWith(`take ${held.id} from `)) {
        took = i;
        break;
      }
    }
    return explore(took, (id) => LAMP_HOST_TYPES.has(typeOf(id))) ?? fallback();
  }

  const fits = (id: string): boolean => (placeTarget !== null ? id === placeTarget : typeOf(id) === intent.receptacle);
  if (here !== null && fits(here)) {
    if (has(`put ${held.id} in/on ${here}`)) return `put ${held.id} in/on ${here}`;
    if (view.closed && has(`open ${here}`)) return `open ${here}`;
  }
  const target = goTargets.find(fits);
  return target !== undefined ? `go to ${target}` : fallback();
}

/** The instruction an observation repeats ("Your task is to: ..."), or null. */
function instructionOf(text: string): string | null {
  const m = /^Your task is to: (.*)$/m.exec(text);
  return m ? (m[1] as string).trim() : null;
}

/**
 * A fresh explorer for one episode, as a {@link Policy}: it keeps the episode's actions and reads
 * the instruction from the first observation. It never calls the environment.
 */
export function createHouseholdExplorer(): Policy {
  const history: { action: string }[] = [];
  let instruction = '';
  return (_env, observation) => {
    if (history.length === 0) instruction = instructionOf(observation.text) ?? '';
    const action = householdExplorerAction({ instruction, history, observation });
    history.push({ action });
    return action;
  };
}
