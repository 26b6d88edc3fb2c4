/**
 * What a place holds after the agent picks a thing up there or puts one down, and what it offers
 * to an empty hand on a return: the retrieval model's rules for a place's contents within one
 * episode.
 *
 * A pick-up's next state is a neighbour's (another episode's `take` of the same kind), whose text
 * lists what lay at the neighbour's place: what else lay here vanished with the thing taken, and
 * a return showed that again. Here the sentence that lists the place's things is this episode's own, less
 * the thing taken (or with the thing put down added), wherever the neighbour's step took its own
 * thing out of (or put it into) the same sentence. And a place the agent left with its hand full
 * is remembered without its pick-ups (one hand holds one thing); coming back empty-handed, it
 * offers again the pick-ups of the things the episode saw there and has not taken since (the
 * second of two things asked for). Right after a put-down that empties the hand, the place offers
 * the pick-ups of what its state lists, where the data shows that rule (`learnPutDownPickUps`).
 *
 * Nothing here knows an environment: what picks up and puts down comes from the arrival rules
 * (`lift {} from {}`, `drop {} at {}`), a text is lines of sentences (`sentencesOf`), and the
 * word an emptied list shows ("nothing") is learned from the data.
 */
import type { Observation } from '../../core/types.ts';
import { carriedAfter, placeKind, type ArrivalRules } from './arrival.ts';
import { actionTemplate, entitiesIn } from './substitution.ts';

/** A line's key: its first word ("Place" in "Place: rack 1; ..."). */
export const lineKey = (line: string): string => line.trim().split(/[\s:]/, 1)[0] ?? '';

/**
 * A line's sentences (they end in `. `). A sentence moves as a whole: "Place: rack 1; you see
 * nothing." is about the place, so what one sees there changes with it.
 */
export const sentencesOf = (line: string): string[] => line.split(/(?<=\.) /);

/** A sentence's first word ("Holding" in "Holding: box 1 (clean)."). */
export const sentenceKey = (sentence: string): string => sentence.split(/[\s:]/)[0] ?? '';

/** A step that picks a thing up at a place or puts it down there, by the arrival rules' templates. */
export interface CarryStep {
  up: boolean;
  thing: string;
  place: string;
}

/** The carry step `action` is (`lift box 1 from rack 1`: up), or undefined. */
export function carryStepOf(rules: ArrivalRules, action: string): CarryStep | undefined {
  const { template, entities } = actionTemplate(action);
  const up = rules.pickUp.has(template);
  if (!up && !rules.putDown.has(template)) return undefined;
  const thing = entities[0];
  const place = entities.find((e, i) => i > 0 && rules.places.has(e));
  return thing !== undefined && place !== undefined ? { up, thing, place } : undefined;
}

const WORD_CHAR_START = /^[\p{L}\p{N}]/u;
const WORD_CHAR_END = /[\p{L}\p{N}]$/u;

/** Whether a letter or digit starts at `at` (a two-unit slice keeps a surrogate pair whole). */
const wordCharAt = (text: string, at: number): boolean => at < text.length && WORD_CHAR_START.test(text.slice(at, at + 2));

/**
 * Where `thing` stands in `sentence` as whole words, with what the text says of it in parentheses
 * right after ("thing 2 (clean)"). A scan with indexOf: a pattern built per call was a visible
 * share of a training run's CPU profile. An empty thing stands nowhere.
 */
export function listed(sentence: string, thing: string): { start: number; end: number } | undefined {
  if (thing.length === 0) return undefined;
  for (let start = sentence.indexOf(thing); start >= 0; start = sentence.indexOf(thing, start + 1)) {
    if (start > 0 && WORD_CHAR_END.test(sentence.slice(Math.max(0, start - 2), start))) continue;
    const end = start + thing.length;
    if (sentence.startsWith(' (', end)) {
      const close = sentence.indexOf(')', end + 2);
      if (close >= 0 && !wordCharAt(sentence, close + 1)) return { start, end: close + 1 };
    }
    if (!wordCharAt(sentence, end)) return { start, end };
  }
  return undefined;
}

/** `sentence` without `thing` and one of its list separators; the only thing of a list becomes `empty`. Undefined when that cannot be done. */
export function withoutListed(sentence: string, thing: string, empty: string | undefined): string | undefined {
  const at = listed(sentence, thing);
  if (!at) return undefined;
  if (sentence.startsWith(', ', at.end)) return sentence.slice(0, at.start) + sentence.slice(at.end + 2);
  if (sentence.slice(0, at.start).endsWith(', ')) return sentence.slice(0, at.start - 2) + sentence.slice(at.end);
  return empty === undefined ? undefined : sentence.slice(0, at.start) + empty + sentence.slice(at.end);
}

/**
 * `sentence` with `item` added as the last thing of its list, which ends the sentence: in place of
 * `empty` where the list is empty. Undefined when the sentence does not end in a list's last word.
 */
export function withListed(sentence: string, item: string, empty: string | undefined): string | undefined {
  const end = /\.$/.test(sentence) ? sentence.length - 1 : sentence.length;
  if (empty !== undefined && sentence.slice(0, end).endsWith(` ${empty}`)) return `${sentence.slice(0, end - empty.length)}${item}${sentence.slice(end)}`;
  return `${sentence.slice(0, end)}, ${item}${sentence.slice(end)}`;
}

/** The sentence of `text` in the line keyed `line` with the sentence key `key`. */
export function sentenceAt(text: string, line: string, key: string): string | undefined {
  const l = text.split('\n').find((x) => lineKey(x) === line);
  return l === undefined ? undefined : sentencesOf(l).find((s) => sentenceKey(s) === key);
}

/** `text` with the sentence keyed `key` in the line keyed `line` replaced. */
export function replaceSentence(text: string, line: string, key: string, sentence: string): string {
  return text
    .split('\n')
    .map((l) => (lineKey(l) === line ? sentencesOf(l).map((s) => (sentenceKey(s) === key ? sentence : s)).join(' ') : l))
    .join('\n');
}

/**
 * Whether `withThing` is `without` with `thing` added to a list: the thing and one list separator
 * taken out give `without`, or the thing stands where `without` has one word (the empty word). A
 * feedback sentence that names the thing ("You drop box 1 at rack 1." after "You reach rack
 * 1.") is not one.
 */
function listsOnly(withThing: string, without: string, thing: string): boolean {
  const at = listed(withThing, thing);
  if (!at || listed(without, thing)) return false;
  if (withThing.startsWith(', ', at.end)) return withThing.slice(0, at.start) + withThing.slice(at.end + 2) === without;
  if (withThing.slice(0, at.start).endsWith(', ')) return withThing.slice(0, at.start - 2) + withThing.slice(at.end) === without;
  return emptyWordOf(withThing, without, at) !== undefined;
}

/** The one word `without` has where `withThing` lists only the thing (at `at`), or undefined. */
function emptyWordOf(withThing: string, without: string, at: { start: number; end: number }): string | undefined {
  const head = withThing.slice(0, at.start);
  const tail = withThing.slice(at.end);
  const word = without.slice(head.length, without.length - tail.length);
  return without.length > head.length + tail.length && without.startsWith(head) && without.endsWith(tail) && !word.includes(' ') ? word : undefined;
}

/**
 * The sentences of a real carry step's text (`before` -> `after`) that list the place's things:
 * for a pick-up, those that named the thing before and not after; for a put-down, the reverse.
 * The holding sentence goes the other way, so it is never one of them.
 */
function listingSentences(step: CarryStep, before: string, after: string): { line: string; key: string; before: string; after: string }[] {
  const out: { line: string; key: string; before: string; after: string }[] = [];
  for (const l of before.split('\n')) {
    for (const s of sentencesOf(l)) {
      const next = sentenceAt(after, lineKey(l), sentenceKey(s));
      if (next === undefined) continue;
      if (step.up ? listsOnly(s, next, step.thing) : listsOnly(next, s, step.thing)) out.push({ line: lineKey(l), key: sentenceKey(s), before: s, after: next });
    }
  }
  return out;
}

/**
 * The word an emptied list shows ("you see nothing"), learned from real pick-ups that took a
 * list's only thing; undefined when none did.
 */
export function learnEmptyListWord(rules: ArrivalRules, steps: readonly { action: string; before: string; after: string }[]): string | undefined {
  const counts = new Map<string, number>();
  for (const s of steps) {
    const step = carryStepOf(rules, s.action);
    if (!step?.up) continue;
    for (const x of listingSentences(step, s.before, s.after)) {
      const at = listed(x.before, step.thing);
      const word = at && !x.before.startsWith(', ', at.end) && !x.before.slice(0, at.start).endsWith(', ') ? emptyWordOf(x.before, x.after, at) : undefined;
      if (word !== undefined) counts.set(word, (counts.get(word) ?? 0) + 1);
    }
  }
  let best: [string, number] | undefined;
  for (const e of counts) if (!best || e[1] > best[1]) best = e;
  return best?.[0];
}

/**
 * `predicted` (a neighbour's next state, rewritten) with the sentences that list the place's
 * things taken from this episode's state (`ours`), less the thing picked up or with the thing put
 * down, where the neighbour's own carry step (`theirs`: its action and texts) changed the same
 * sentence so. Unchanged for any other step.
 */
export function withPlaceContents(
  rules: ArrivalRules,
  empty: string | undefined,
  ours: Observation,
  action: string,
  theirs: { action: string; before: string; after: string },
  predicted: Observation,
): Observation {
  const step = carryStepOf(rules, action);
  const their = carryStepOf(rules, theirs.action);
  if (!step || !their || step.up !== their.up) return predicted;
  let text = predicted.text;
  for (const x of listingSentences(their, theirs.before, theirs.after)) {
    const mine = sentenceAt(ours.text, x.line, x.key);
    if (mine === undefined || sentenceAt(text, x.line, x.key) === undefined) continue;
    let sentence: string | undefined;
    if (step.up) sentence = withoutListed(mine, step.thing, empty);
    else if (listed(mine, step.thing) === undefined) sentence = withListed(mine, shownAs(ours.text, step.thing), empty);
    if (sentence !== undefined) text = replaceSentence(text, x.line, x.key, sentence);
  }
  return text === predicted.text ? predicted : { text, actions: predicted.actions };
}

/** `thing` as `text` shows it last, with what it says of it in parentheses ("box 2 (clean)" in "Holding: box 2 (clean)."). */
function shownAs(text: string, thing: string): string {
  // From the last line up: the state line, which says what is held, ends the text.
  for (const line of text.split('\n').reverse()) {
    const at = listed(line, thing);
    if (at) return line.slice(at.start, at.end);
  }
  return thing;
}

/**
 * The pick-ups a place offers an empty hand, as this episode left it: those offered there in the
 * episode's states (`seen`, with the actions taken between them, `actions`), less the things
 * picked up there since, plus the things put down there since.
 */
export function remainingPickUps(rules: ArrivalRules, seen: readonly Observation[], actions: readonly string[], place: string): string[] {
  const offers = new Map<string, string>();
  // How a thing put down here is picked up again: the one pick-up of a thing from a place.
  const forms = [...rules.pickUp].filter((t) => t.split('{}').length === 3);
  const template = forms.length === 1 ? forms[0] : undefined;
  const note = (o: Observation | undefined): void => {
    for (const a of o?.actions ?? []) {
      const s = carryStepOf(rules, a);
      if (s?.up && s.place === place) offers.set(s.thing, a);
    }
  };
  seen.forEach((o, i) => {
    note(o);
    const a = actions[i];
    const s = a === undefined ? undefined : carryStepOf(rules, a);
    if (!s || s.place !== place) return;
    if (s.up) offers.delete(s.thing);
    else if (template !== undefined) offers.set(s.thing, template.replace('{}', s.thing).replace('{}', place));
  });
  return [...offers.values()];
}

/** Real put-downs that emptied the hand needed before {@link learnPutDownPickUps} trusts its rule. */
const MIN_PUT_DOWNS = 10;
/** Share of them that must offer exactly the pick-ups the rule gives. */
const PUT_DOWN_RATE = 0.95;

/** What a place offers an empty hand right after a put-down there (see {@link learnPutDownPickUps}). */
export interface PutDownPickUps {
  /** The pick-up form, `lift {} from {}`. */
  form: string;
  /** Kinds of thing (`box` of `box 1`) some real state offered to pick up (a fixture never is). */
  pickable: ReadonlySet<string>;
}

/**
 * The things a state lists that can be picked up, in the order of the line that lists the most
 * things, the last of equals (not places: `bin 1` in "you see box 1, bin 1" is a place).
 */
function pickableListed(rule: PutDownPickUps, places: ReadonlySet<string>, text: string): string[] {
  let best: string[] = [];
  for (const line of text.split('\n')) {
    const things = [...new Set(entitiesIn(line).filter((e) => !places.has(e)))];
    // The last of equals: the state line, which lists a place's things, ends the text.
    if (things.length > 0 && things.length >= best.length) best = things;
  }
  return best.filter((t) => rule.pickable.has(placeKind(t)));
}

/** The put-down `action` is when it leaves the hand empty after the episode's actions `before`, or undefined. */
function emptyingPutDown(rules: ArrivalRules, action: string, before: readonly string[]): CarryStep | undefined {
  const step = carryStepOf(rules, action);
  if (!step || step.up || carriedAfter(rules, [...before, action])?.size !== 0) return undefined;
  return step;
}

/** `state`'s actions with its pick-ups replaced by one of each of `things` at `place`, where its first pick-up stood. */
function withPickUps(rules: ArrivalRules, form: string, state: Observation, things: readonly string[], place: string): string[] {
  const rest: string[] = [];
  let at = -1;
  for (const a of state.actions) {
    if (carryStepOf(rules, a)?.up) {
      if (at < 0) at = rest.length;
    } else rest.push(a);
  }
  const pickUps = things.map((t) => form.replace('{}', t).replace('{}', place));
  return at < 0 ? [...rest, ...pickUps] : [...rest.slice(0, at), ...pickUps, ...rest.slice(at)];
}

const sameList = (a: readonly string[], b: readonly string[]): boolean => a.length === b.length && a.every((x, i) => x === b[i]);

/**
 * The rule "right after a put-down that leaves the hand empty, the place offers one pick-up of
 * each thing its state lists that can be picked up, and no other", learned from real states'
 * actions (`states`: which kinds of thing are ever offered to pick up) and real steps (the action,
 * the episode's actions before it, the next state); undefined unless nearly all the put-downs
 * among `steps` show it. A neighbour's put-down offers the pick-ups of what lay at its own place:
 * a thing listed here not offered, and a thing not here offered.
 */
export function learnPutDownPickUps(
  rules: ArrivalRules,
  states: readonly (readonly string[])[],
  steps: readonly { action: string; before: readonly string[]; after: Observation }[],
): PutDownPickUps | undefined {
  const forms = [...rules.pickUp].filter((t) => t.split('{}').length === 3);
  const form = forms.length === 1 ? forms[0] : undefined;
  if (form === undefined) return undefined;
  const pickable = new Set<string>();
  for (const actions of states) {
    for (const a of actions) {
      const s = carryStepOf(rules, a);
      if (s?.up) pickable.add(placeKind(s.thing));
    }
  }
  const rule = { form, pickable };
  let seen = 0;
  let held = 0;
  for (const s of steps) {
    const step = emptyingPutDown(rules, s.action, s.before);
    if (!step) continue;
    seen++;
    if (sameList(withPickUps(rules, form, s.after, pickableListed(rule, rules.places, s.after.text), step.place), s.after.actions)) held++;
  }
  return seen >= MIN_PUT_DOWNS && held / seen >= PUT_DOWN_RATE ? rule : undefined;
}

/**
 * `next` (the state after `action`, with the episode's actions `before` it) offering the pick-ups
 * of {@link learnPutDownPickUps}'s rule where `action` is a put-down that leaves the hand empty;
 * `next` itself otherwise, or where its text does not list the thing put down.
 */
export function withPutDownPickUps(rules: ArrivalRules, rule: PutDownPickUps, action: string, before: readonly string[], next: Observation): Observation {
  const step = emptyingPutDown(rules, action, before);
  if (!step || !rule.pickable.has(placeKind(step.thing))) return next;
  const things = pickableListed(rule, rules.places, next.text);
  if (!things.includes(step.thing)) return next;
  const actions = withPickUps(rules, rule.form, next, things, step.place);
  return sameList(actions, next.actions) ? next : { text: next.text, actions };
}
