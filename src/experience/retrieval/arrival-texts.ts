/**
 * What a move says on arrival, learned from real arrivals: the retrieval model's rule for the
 * first line of a state reached by coming back to a place the agent changed.
 *
 * Coming back to a place, the model shows the place as the agent left it (episode memory in
 * ./retrieval.ts). When the agent changed it before leaving (opened it, took something), the last
 * state of that stay is what it remembers, and its first line is what the last action said,
 * where the real environment says what one sees on arriving: most wrong revisits were that line
 * alone, their other lines right.
 *
 * A move's first line is a function of the rest of the state it reaches: in the real arrivals of
 * the data, the same sentences about the place reached, with their entities abstracted, give the
 * same first line (nearly all of a shape's arrivals; the rest is left alone). This learns that
 * function and applies it. Nothing here knows an environment: the move is the arrival rules'
 * (./arrival.ts), an entity is what ./substitution.ts reads as one (an action's argument, a
 * `word N` reference), the first line is the first one that does not restate the instruction.
 */
import type { Observation } from '../../core/types.ts';
import { sentencesOf } from './carried-things.ts';
import { withoutInstruction } from './evidence.ts';
import { actionTemplate, applySubstitution, entitiesIn, escapeRegExp, type Substitution } from './substitution.ts';

/** A real arrival: the move taken and the state it reached. */
export interface ArrivalExample {
  instruction: string;
  action: string;
  next: Observation;
}

/** First lines of arrivals by the shape of the rest of their state (see {@link arrivalShape}). */
export interface ArrivalTexts {
  /** The move template these were learned for (`visit {}`). */
  move: string;
  /** Per shape (of the sentences about the place reached): a real first line, and the entities in the shape's order. */
  byShape: ReadonlyMap<string, { firstLine: string; entities: readonly string[] }>;
}

/** Share of the arrivals of a shape whose first line must have the shape's most common form. */
const AGREEMENT = 0.95;
/** Arrivals of a shape needed before it counts. */
const MIN_EXAMPLES = 2;

/** A state's first line (the first that does not restate the instruction) and the lines after it. */
export function splitFirstLine(text: string, instruction: string): { firstLine: string; rest: string } | undefined {
  const lines = withoutInstruction(text, instruction).split('\n');
  const firstLine = lines[0];
  if (firstLine === undefined || lines.length < 2) return undefined;
  return { firstLine, rest: lines.slice(1).join('\n') };
}

/**
 * `text` with the entities (whole words, the longest first) replaced by their order of first
 * appearance, and that order. Entities that do not occur are left out of it.
 */
export function arrivalShape(text: string, entities: readonly string[]): { shape: string; order: string[] } {
  const sorted = [...new Set(entities)].filter((e) => e !== '').sort((a, b) => b.length - a.length);
  if (sorted.length === 0) return { shape: text, order: [] };
  const re = new RegExp(`(?<![\\p{L}\\p{N}])(${sorted.map(escapeRegExp).join('|')})(?![\\p{L}\\p{N}])`, 'gu');
  const order: string[] = [];
  const shape = text.replace(re, (e: string) => {
    let at = order.indexOf(e);
    if (at < 0) at = order.push(e) - 1;
    return `\u0000${at}\u0000`;
  });
  return { shape, order };
}

/**
 * What of the rest of a state the first line can depend on: its sentences that name the place
 * moved to (the place and what is there, not what the agent holds), or all of it when none does.
 */
function aboutPlace(rest: string, action: string): string {
  const place = actionTemplate(action).entities[0];
  if (place === undefined) return rest;
  const re = new RegExp(`(?<![\\p{L}\\p{N}])${escapeRegExp(place)}(?![\\p{L}\\p{N}])`, 'u');
  const own = rest.split('\n').flatMap(sentencesOf).filter((sentence) => re.test(sentence));
  return own.length > 0 ? own.join(' ') : rest;
}

/** The entities of `about` (see {@link aboutPlace}), a state's actions and the place moved to: what is listed there may be offered to no action (nothing is taken while the hands are full). */
function entitiesOf(about: string, next: Observation, action: string): string[] {
  return [...actionTemplate(action).entities, ...next.actions.flatMap((a) => actionTemplate(a).entities), ...entitiesIn(about)];
}

/** A first line's form, for counting: its entities numbered as in the rest, "an" read as "a". */
function firstLineForm(firstLine: string, order: readonly string[]): string | undefined {
  const { shape, order: own } = arrivalShape(firstLine, order);
  // An entity the rest does not show could not be filled in.
  if (own.some((e) => !order.includes(e))) return undefined;
  const numbered = shape.replace(/\u0000(\d+)\u0000/g, (_m, i: string) => `\u0001${order.indexOf(own[Number(i)] as string)}\u0001`);
  return numbered.replace(/\b(a|an|A|An) (?=\u0001)/g, 'a ');
}

/** Learns first lines of arrivals from real ones; null when none is consistent enough. */
export function learnArrivalTexts(move: string, examples: readonly ArrivalExample[]): ArrivalTexts | null {
  const tally = new Map<string, { n: number; forms: Map<string, { n: number; firstLine: string; entities: string[] }> }>();
  for (const { instruction, action, next } of examples) {
    if (actionTemplate(action).template !== move) continue;
    const split = splitFirstLine(next.text, instruction);
    if (!split) continue;
    const about = aboutPlace(split.rest, action);
    const { shape, order } = arrivalShape(about, entitiesOf(about, next, action));
    const form = firstLineForm(split.firstLine, order);
    const t = tally.get(shape) ?? (tally.set(shape, { n: 0, forms: new Map() }).get(shape) as { n: number; forms: Map<string, { n: number; firstLine: string; entities: string[] }> });
    t.n++;
    if (form === undefined) continue;
    const f = t.forms.get(form) ?? (t.forms.set(form, { n: 0, firstLine: split.firstLine, entities: order }).get(form) as { n: number; firstLine: string; entities: string[] });
    f.n++;
  }
  const byShape = new Map<string, { firstLine: string; entities: readonly string[] }>();
  for (const [shape, t] of tally) {
    if (t.n < MIN_EXAMPLES) continue;
    const best = [...t.forms.values()].reduce<{ n: number; firstLine: string; entities: string[] } | undefined>((a, b) => (a === undefined || b.n > a.n ? b : a), undefined);
    if (best && best.n / t.n >= AGREEMENT) byShape.set(shape, { firstLine: best.firstLine, entities: best.entities });
  }
  return byShape.size === 0 ? null : { move, byShape };
}

/**
 * `state` (reached by `action`, a move) with the first line real arrivals show for the rest of
 * it; the state itself where the move is another or no learned shape fits.
 */
export function withArrivalText(texts: ArrivalTexts | null, instruction: string, action: string, state: Observation): Observation {
  if (!texts || actionTemplate(action).template !== texts.move) return state;
  const split = splitFirstLine(state.text, instruction);
  if (!split) return state;
  const about = aboutPlace(split.rest, action);
  const { shape, order } = arrivalShape(about, entitiesOf(about, state, action));
  const learned = texts.byShape.get(shape);
  if (!learned || learned.entities.length !== order.length) return state;
  const substitution: Substitution = learned.entities.map((e, i) => [e, order[i] as string]);
  const firstLine = applySubstitution(learned.firstLine, substitution);
  if (firstLine === split.firstLine) return state;
  const lines = state.text.split('\n');
  const at = lines.indexOf(split.firstLine);
  lines[at] = firstLine;
  return { text: lines.join('\n'), actions: state.actions };
}
