/**
 * Entity substitution for the retrieval experience model: a stored transition is re-used for a
 * new task and a new action by rewriting the entities it mentions. The mapping comes only from
 * agent-visible data (the two tasks' instructions, the two actions' arguments and the entities
 * the two states' admissible actions name), never from a task's hidden goal or an
 * environment's code, so whatever it cannot transfer shows up as a sim-to-real gap.
 */
import type { AgentTask, Observation } from '../../core/types.ts';

/** An ordered list of replacements; earlier entries win when two claim the same text. */
export type Substitution = Array<[from: string, to: string]>;

/** Entities in an action: bracket contents (`pick[red]`) or `word N` references (`box 1`). */
const ENTITY_RE = /\[([^\]]*)\]|\b([a-z][a-z-]*) (\d+)\b/gi;

/** The entities a text names, as {@link actionTemplate} reads them in an action (not cached: texts vary). */
export function entitiesIn(text: string): string[] {
  return [...text.matchAll(ENTITY_RE)].map((m) => m[1] ?? `${m[2]} ${m[3]}`);
}

/**
 * Parsed actions, shared (callers only read them): a simulated step parses the same few hundred
 * admissible actions many times over (alignment, edits, memory, the left-over filter).
 */
const TEMPLATES = new Map<string, { template: string; entities: string[] }>();
const TEMPLATE_CACHE_SIZE = 50_000;

/**
 * An action's template and entities: `move box 1 to rack 2` gives template `move {} to {}`
 * and entities `box 1`, `rack 2`; `pick[red]` gives `pick[{}]`, `red`.
 */
export function actionTemplate(action: string): { template: string; entities: string[] } {
  const hit = TEMPLATES.get(action);
  if (hit) return hit;
  const entities: string[] = [];
  const template = action.trim().replace(ENTITY_RE, (_m, bracket: string | undefined, word: string | undefined, num: string | undefined) => {
    if (bracket !== undefined) {
      entities.push(bracket);
      return '[{}]';
    }
    entities.push(`${word} ${num}`);
    return '{}';
  });
  Object.freeze(entities);
  const parsed = { template, entities };
  if (TEMPLATES.size >= TEMPLATE_CACHE_SIZE) TEMPLATES.clear();
  TEMPLATES.set(action, Object.freeze(parsed));
  return parsed;
}

/** The action's verb: the text before `[`, or its first word (`move` for `move box 1 to rack 2`). */
export function actionVerb(action: string): string {
  const t = action.trim().toLowerCase();
  const bracket = t.indexOf('[');
  if (bracket > 0) return t.slice(0, bracket).trim();
  return t.split(/\s+/, 1)[0] ?? '';
}

/**
 * Replacements that turn text about `(fromTask, fromAction)` into text about `(toTask, toAction)`:
 * the whole instruction first, then action entities (when both actions share a template). Only
 * agent-visible fields are read: the instruction, never the goal.
 */
export function buildSubstitution(fromTask: AgentTask, toTask: AgentTask, fromAction?: string, toAction?: string): Substitution {
  const pairs: Substitution = [];
  if (fromTask.instruction !== toTask.instruction) pairs.push([fromTask.instruction, toTask.instruction]);
  if (fromAction !== undefined && toAction !== undefined) {
    const a = actionTemplate(fromAction);
    const b = actionTemplate(toAction);
    if (a.template === b.template) {
      a.entities.forEach((e, i) => {
        const to = b.entities[i];
        if (to !== undefined && e !== to && e.trim() !== '') pairs.push([e, to]);
      });
    }
  }
  return pairs;
}

/**
 * Replacements that turn what a listing said about the neighbour's chosen entity into what this
 * state's listing says about ours: where a state text has a line `[entity] description | more`
 * (a list of items), the neighbour's description and each `|` field map to ours. An item's page
 * reached from a neighbour's choice then shows the chosen item's own fields, not the neighbour's
 * (which made a random choice look like the one the data's expert made).
 */
export function listingAlignment(fromState: string, fromAction: string, toState: string, toAction: string): Substitution {
  const a = actionTemplate(fromAction);
  const b = actionTemplate(toAction);
  if (a.template !== b.template) return [];
  const fieldsOf = (text: string, entity: string): string[] | undefined => {
    const prefix = `[${entity}] `;
    const line = text.split('\n').find((l) => l.startsWith(prefix));
    return line?.slice(prefix.length).split(' | ').map((f) => f.trim());
  };
  const pairs: Substitution = [];
  a.entities.forEach((e, i) => {
    const to = b.entities[i];
    if (to === undefined || to === e || e.trim() === '') return;
    const x = fieldsOf(fromState, e);
    const y = fieldsOf(toState, to);
    if (!x || !y || x.length !== y.length) return;
    x.forEach((f, j) => {
      const g = y[j] as string;
      if (f !== '' && g !== '' && f !== g) pairs.push([f, g]);
    });
  });
  return pairs;
}

/** A word of a state as {@link carriedAlignment} reads it, and whether a clause ends after it. */
interface Token {
  text: string;
  end: boolean;
}

/** Words split at spaces and list punctuation, a sentence's closing stop trimmed; `;`, a line break or a sentence's end closes a clause. */
function tokens(text: string): Token[] {
  const out: Token[] = [];
  for (const m of text.matchAll(/[^\s,;()]+/g)) {
    const raw = m[0];
    const word = raw.replace(/[.:!?]+$/, '');
    const after = text.slice(m.index + raw.length, m.index + raw.length + 2);
    const end = /^[.!?]?(;|\n|$)/.test(after) || (/[.!?]$/.test(raw) && /^(\s|$)/.test(after)) || /^[.!?](\s|$)/.test(after);
    if (word !== '') out.push({ text: word, end });
    else if (end && out.length > 0) (out[out.length - 1] as Token).end = true;
  }
  return out;
}

/** Longest stretch of differing words that {@link carriedAlignment} pairs word by word. */
const MAX_CARRIED_RUN = 8;
/** Most cells of the longest-common-subsequence table it fills for the two states' differing middles. */
const MAX_CARRIED_CELLS = 40_000;

/**
 * Replacements for what a neighbour's next state carries over from its own state: each word of
 * `fromNext` that `fromState` shows in a place where `toState` shows another word becomes that
 * word. Places line up in two ways: the clause each action names (the words after the action's
 * argument in its state, up to `;`, a line break or a sentence's end), when the two clauses have
 * as many words; and the stretches where the two states differ between the words they share (on
 * a longest common subsequence), when the stretches have as many words. An item's page opened
 * from a list then shows the opened item's fields, and a form reached from an item's page names
 * that item, instead of the neighbour's. A word both states show is left alone (the next state
 * may quote it from either place). Nothing here knows a domain: only the texts are read.
 */
export function carriedAlignment(fromState: string, fromAction: string, toState: string, toAction: string, fromNext: string): Substitution {
  const shown = new Set(tokens(fromNext).map((t) => t.text));
  const a = tokens(fromState);
  const b = tokens(toState);
  const inFrom = new Set(a.map((t) => t.text));
  const inTo = new Set(b.map((t) => t.text));
  const pairs: Substitution = [];
  const mapped = new Set<string>();
  // A word both states show may be quoted from either place: nothing says which.
  const add = (from: string, to: string): void => {
    if (from === to || mapped.has(from) || !shown.has(from) || inTo.has(from) || inFrom.has(to)) return;
    mapped.add(from);
    pairs.push([from, to]);
  };
  // The clause each action names: where its argument (what follows the words the two actions share at their start) stands.
  const x = tokens(fromAction).map((t) => t.text);
  const y = tokens(toAction).map((t) => t.text);
  let shared = 0;
  while (shared < x.length && shared < y.length && x[shared] === y[shared]) shared++;
  const argFrom = x.slice(shared);
  const argTo = y.slice(shared);
  const at = (words: readonly Token[], arg: readonly string[]): number => {
    if (arg.length === 0) return -1;
    for (let i = 0; i + arg.length <= words.length; i++) if (arg.every((w, k) => words[i + k]?.text === w)) return i;
    return -1;
  };
  const i0 = at(a, argFrom);
  const j0 = at(b, argTo);
  if (i0 >= 0 && j0 >= 0) {
    const clause = (words: readonly Token[], start: number): Token[] => {
      const out: Token[] = [];
      for (let k = start; k < words.length; k++) {
        out.push(words[k] as Token);
        if ((words[k] as Token).end) break;
      }
      return out;
    };
    const ca = clause(a, i0);
    const cb = clause(b, j0);
    if (ca.length === cb.length) ca.forEach((t, k) => add(t.text, (cb[k] as Token).text));
  }
  // The stretches where the two states differ, between what they share.
  let pre = 0;
  while (pre < a.length && pre < b.length && a[pre]?.text === b[pre]?.text) pre++;
  let post = 0;
  while (post < a.length - pre && post < b.length - pre && a[a.length - 1 - post]?.text === b[b.length - 1 - post]?.text) post++;
  const midA = a.slice(pre, a.length - post);
  const midB = b.slice(pre, b.length - post);
  if (midA.length === 0 || midB.length === 0 || midA.length * midB.length > MAX_CARRIED_CELLS) return pairs;
  let lastA = -1;
  let lastB = -1;
  const stretch = (endA: number, endB: number): void => {
    const runA = midA.slice(lastA + 1, endA);
    const runB = midB.slice(lastB + 1, endB);
    if (runA.length === runB.length && runA.length <= MAX_CARRIED_RUN) runA.forEach((w, k) => add(w.text, (runB[k] as Token).text));
  };
  commonWords(midA, midB).forEach((j, i) => {
    if (j < 0) return;
    stretch(i, j);
    lastA = i;
    lastB = j;
  });
  stretch(midA.length, midB.length);
  return pairs;
}

/** Each entity named by a state's admissible actions, with the slots it fills (`move {} to {}#1`). */
function entityRoles(actions: readonly string[]): Map<string, string> {
  const roles = new Map<string, Set<string>>();
  for (const action of actions) {
    const { template, entities } = actionTemplate(action);
    entities.forEach((e, i) => {
      const set = roles.get(e) ?? roles.set(e, new Set()).get(e);
      set?.add(`${template}#${i}`);
    });
  }
  return new Map([...roles].map(([e, set]) => [e, [...set].sort().join('|')]));
}

/** An instance name: a word and its number (`saltshaker 1`), not a label (`red`). */
const INSTANCE_RE = /^\p{L}+ \p{N}+$/u;

/**
 * Pairs the entities of two states that play the same role, as told by the slots of the
 * admissible actions they fill. First an entity whose set of slots no other entity of its state
 * shares (the place the agent stands at may be the only one offered some actions but not the
 * move; the thing it holds the only one offered a put-down) pairs
 * with the entity of the other state that has the same unique set. Then each entity of `from`
 * listed in `involved` (those the transition's edit touches) that is an instance `to` also names
 * in an overlapping role pairs with itself, and the others pair closest first: the entity of
 * `from` with the largest overlap of slots takes its partner in `to`, when exactly one has that
 * overlap, then the next. Entities with a shared role (every place one can go to) stay unpaired.
 */
export function alignEntities(from: Observation, to: Observation, involved: ReadonlySet<string> = new Set()): Substitution {
  const fromRoles = entityRoles(from.actions);
  const toRoles = entityRoles(to.actions);
  const uniqueByRole = (roles: Map<string, string>): Map<string, string> => {
    const byRole = new Map<string, string[]>();
    for (const [e, role] of roles) (byRole.get(role) ?? byRole.set(role, []).get(role))?.push(e);
    return new Map([...byRole].filter(([, es]) => es.length === 1).map(([role, es]) => [role, es[0] as string]));
  };
  const a = uniqueByRole(fromRoles);
  const b = uniqueByRole(toRoles);
  const pairs: Substitution = [];
  const pairedFrom = new Set<string>();
  const pairedTo = new Set<string>();
  for (const [role, e] of a) {
    const f = b.get(role);
    if (f === undefined) continue;
    pairedFrom.add(e);
    pairedTo.add(f);
    if (f !== e) pairs.push([e, f]);
  }
  const slots = (role: string): Set<string> => new Set(role.split('|'));
  const overlap = (a: string, b: string): number => {
    const mine = slots(a);
    const theirs = slots(b);
    let inter = 0;
    for (const x of mine) if (theirs.has(x)) inter++;
    return inter / (mine.size + theirs.size - inter);
  };
  // An instance ("box 1") that this state names too, in a role that shares a slot, is itself (in
  // one world the same instance is the same thing). Without this, a place could take a held thing
  // as its best partner before the held thing took itself, and a move came out as a put-down.
  for (const e of [...involved].sort()) {
    const mine = fromRoles.get(e);
    const theirs = toRoles.get(e);
    if (mine === undefined || theirs === undefined || !INSTANCE_RE.test(e) || pairedFrom.has(e) || pairedTo.has(e) || overlap(mine, theirs) === 0) continue;
    pairedFrom.add(e);
    pairedTo.add(e);
  }
  // The closest pair first, whichever entity it is: in name order, a place took a held thing
  // (a weak overlap) before a closer partner could, and a move to a thing was offered.
  const bestFor = (e: string): { best: number; entity: string | undefined; ties: number } => {
    const role = fromRoles.get(e) as string;
    let best = 0;
    let entity: string | undefined;
    let ties = 0;
    for (const [f, other] of toRoles) {
      if (pairedTo.has(f)) continue;
      const score = overlap(role, other);
      if (score > best) {
        best = score;
        entity = f;
        ties = 1;
      } else if (score === best && score > 0) {
        ties++;
      }
    }
    return { best, entity, ties };
  };
  const pending = [...involved].sort().filter((e) => fromRoles.has(e) && !pairedFrom.has(e));
  while (pending.length > 0) {
    let at = -1;
    let found = { best: 0, entity: undefined as string | undefined, ties: 0 };
    pending.forEach((e, i) => {
      const b = bestFor(e);
      if (b.best > found.best) {
        at = i;
        found = b;
      }
    });
    if (at < 0) break;
    const [e] = pending.splice(at, 1) as [string];
    if (found.entity === undefined || found.ties !== 1) continue;
    pairedFrom.add(e);
    pairedTo.add(found.entity);
    if (found.entity !== e) pairs.push([e, found.entity]);
  }
  return pairs;
}

/**
 * Makes a substitution a permutation: for each `a -> b`, also `b -> a` unless `b` is already
 * mapped. Rewriting a neighbour's "visit place 1" as "visit place 2" must also turn its "visit
 * place 2" into "visit place 1", or one place would be offered twice and the other never.
 */
export function withSwaps(substitution: Substitution): Substitution {
  const from = new Set(substitution.map(([a]) => a));
  const out: Substitution = [...substitution];
  for (const [a, b] of substitution) {
    if (!from.has(b) && b !== '') {
      out.push([b, a]);
      from.add(b);
    }
  }
  return out;
}

/** `s` as a regular expression that matches it literally. */
export const escapeRegExp = (s: string): string => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/**
 * Applies all replacements in one pass (no chains: a replaced text is never replaced again),
 * matching whole words only and preferring the longest match at each position. An indefinite
 * article in front that fitted the text replaced fits the replacement ("an owl 1" -> "a box 1",
 * "a box 1" -> "an owl 1"); one that did not fit stays as it was.
 */
export function applySubstitution(text: string, substitution: Substitution): string {
  const compiled = compiledSubstitution(substitution);
  if (compiled === null) return text;
  const { re, map } = compiled;
  return text.replace(re, (m, article: string | undefined, from: string) => {
    const to = map.get(from);
    if (to === undefined) return m;
    if (article === undefined) return to;
    const word = article.slice(0, -1);
    if ((word.length === 2) !== startsWithVowel(from)) return `${article}${to}`;
    const fitting = startsWithVowel(to) ? 'an' : 'a';
    return `${word[0] === 'A' ? fitting.replace('a', 'A') : fitting} ${to}`;
  });
}

const startsWithVowel = (word: string): boolean => /^[aeiou]/i.test(word);

/**
 * Compiled substitutions by their pairs: a simulated step applies one substitution to a state
 * and each of its admissible actions, and compiling the pattern was most of the cost.
 */
const COMPILED = new Map<string, { re: RegExp; map: Map<string, string> } | null>();
const COMPILED_CACHE_SIZE = 1_000;

function compiledSubstitution(substitution: Substitution): { re: RegExp; map: Map<string, string> } | null {
  const key = substitution.map(([from, to]) => `${from}\u0001${to}`).join('\u0002');
  const hit = COMPILED.get(key);
  if (hit !== undefined) return hit;
  const map = new Map<string, string>();
  // An empty `from` would match between every two characters and splice `to` in everywhere.
  for (const [from, to] of substitution) if (from !== '' && !map.has(from)) map.set(from, to);
  const keys = [...map.keys()].sort((a, b) => b.length - a.length);
  // A global pattern's lastIndex is reset by every String.replace, so sharing it is safe.
  const compiled = map.size === 0 ? null : { re: new RegExp(`(?<![\\w])(\\b[Aa]n? )?(${keys.map(escapeRegExp).join('|')})(?![\\w])`, 'g'), map };
  if (COMPILED.size >= COMPILED_CACHE_SIZE) COMPILED.delete(COMPILED.keys().next().value as string);
  COMPILED.set(key, compiled);
  return compiled;
}

const WORD_RE = /[\p{L}\p{N}]+(?:[.'][\p{L}\p{N}]+)*/gu;
const FILLER = new Set(['a', 'an', 'the', 'some', 'in', 'of', 'and', 'that', 'is', 'are', 'to']);

interface Word {
  text: string;
  start: number;
  end: number;
}

function words(text: string): Word[] {
  return [...text.matchAll(WORD_RE)].map((m) => ({ text: m[0].toLowerCase(), start: m.index, end: m.index + m[0].length }));
}

/** Longest-common-subsequence lengths over words: `[i][j]` for `a` from word i and `b` from word j. */
function commonLengths(a: readonly { text: string }[], b: readonly { text: string }[]): number[][] {
  const dp: number[][] = Array.from({ length: a.length + 1 }, () => new Array<number>(b.length + 1).fill(0));
  for (let i = a.length - 1; i >= 0; i--) {
    for (let j = b.length - 1; j >= 0; j--) {
      dp[i]![j] = a[i]!.text === b[j]!.text ? dp[i + 1]![j + 1]! + 1 : Math.max(dp[i + 1]![j]!, dp[i]![j + 1]!);
    }
  }
  return dp;
}

/** For each word of `a`, the index of the word of `b` it is matched to on a longest common subsequence, or -1. */
function commonWords(a: readonly { text: string }[], b: readonly { text: string }[]): Int32Array {
  const n = a.length;
  const m = b.length;
  const dp = commonLengths(a, b);
  const match = new Int32Array(n).fill(-1);
  let i = 0;
  let j = 0;
  while (i < n && j < m) {
    if (a[i]!.text === b[j]!.text) match[i++] = j++;
    else if (dp[i + 1]![j]! >= dp[i]![j + 1]!) i++;
    else j++;
  }
  return match;
}

/**
 * What the bracketed text `quote` of a state about the instruction `from` says about the
 * instruction `to`, where `quote` quotes `from`: a stretch of it word for word (a suggested
 * `find[blue mugs that are ..., in glass]`), or the words of a stretch with some left out
 * (`find[blue mugs glass ...]`). The stretch of `to` is the one between
 * the words the two instructions share on either side of the quoted stretch; a shortened quote
 * leaves out of it the words the original left out. Undefined when `quote` does not quote `from`
 * in one of these two ways.
 */
export function requote(from: string, to: string, quote: string): string | undefined {
  const a = words(from);
  const q = words(quote);
  if (q.length === 0 || from === to) return undefined;
  // The quoted words in `from`: where the quote stands in it word for word, else its words in order, leftmost first.
  const at = from.indexOf(quote);
  let kept = at < 0 ? [] : a.flatMap((w, i) => (w.start >= at && w.end <= at + quote.length ? [i] : []));
  const verbatim = kept.length === q.length && a[kept[0] as number]?.start === at && a[kept[kept.length - 1] as number]?.end === at + quote.length;
  if (!verbatim) {
    kept = [];
    for (let i = 0; i < a.length && kept.length < q.length; i++) if (a[i]!.text === q[kept.length]!.text) kept.push(i);
    if (kept.length !== q.length || joinWords(from, a, kept) !== quote) return undefined;
  }
  const first = kept[0] as number;
  const last = kept[kept.length - 1] as number;
  const keptSet = new Set(kept);
  const b = words(to);
  const match = commonWords(a, b);
  let left = -1; // the last shared word before the stretch, in `to`
  for (let i = first - 1; i >= 0 && left < 0; i--) left = match[i] as number;
  let right = b.length; // the first shared word after it
  for (let i = last + 1; i < a.length && right === b.length; i++) if ((match[i] as number) >= 0) right = match[i] as number;
  const keptWords = new Set(kept.map((i) => a[i]!.text));
  let s = left + 1;
  let e = right - 1;
  // "i need a stapler" quoted after "i need": not the article.
  while (s <= e && FILLER.has(b[s]!.text) && !keptWords.has(b[s]!.text)) s++;
  while (e >= s && FILLER.has(b[e]!.text) && !keptWords.has(b[e]!.text)) e--;
  if (s > e) return undefined;
  if (verbatim) return to.slice(b[s]!.start, b[e]!.end);
  // Words the original left out of its stretch ("that", "are", "and") stay out; so do filler words it did not keep.
  const dropped = new Set<string>();
  for (let i = first; i <= last; i++) if (!keptSet.has(i)) dropped.add(a[i]!.text);
  const source = new Int32Array(b.length).fill(-1);
  match.forEach((j, i) => {
    if (j >= 0) source[j] = i;
  });
  // What the new instruction adds after the last word the two quotes share ends where a new
  // section starts with a filler word: a colour section ", in green" that the stored instruction
  // lacked is not one more attribute (", creative play" is).
  let lastShared = s - 1;
  for (let j = s; j <= e; j++) if ((source[j] as number) >= 0 && keptSet.has(source[j] as number)) lastShared = j;
  const out: number[] = [];
  for (let j = s; j <= e; j++) {
    const w = b[j] as Word;
    if (j > lastShared && j > s && FILLER.has(w.text) && to.slice((b[j - 1] as Word).end, w.start).includes(',')) break;
    const i = source[j] as number;
    const keep = i >= 0 ? keptSet.has(i) : !dropped.has(w.text) && !(FILLER.has(w.text) && !keptWords.has(w.text));
    if (keep) out.push(j);
  }
  return out.length > 0 ? joinWords(to, b, out) : undefined;
}

/** The words at `at` of `text`, each two next to each other in it joined as there when nothing but a mark joins them (`t-shirt`), the rest by a space. */
function joinWords(text: string, all: readonly Word[], at: readonly number[]): string {
  let out = '';
  at.forEach((i, k) => {
    const w = all[i] as Word;
    if (k > 0) {
      const before = at[k - 1] as number;
      const between = text.slice((all[before] as Word).end, w.start);
      out += before === i - 1 && between !== '' && !/[\s,]/.test(between) ? between : ' ';
    }
    out += text.slice(w.start, w.end);
  });
  return out;
}

/**
 * `text` and `actions` of a state about the instruction `from`, made about `to`: bracketed texts
 * of the `quotable` actions that quote `from` ({@link requote}) are quoted again from `to`, and
 * `substitution` rewrites the rest (never the new quotes).
 */
export function requoteState(from: string, to: string, state: { text: string; actions: readonly string[] }, substitution: Substitution, quotable: (action: string) => boolean = () => true): { text: string; actions: string[] } {
  const quotes = new Map<string, string>();
  for (const action of state.actions) {
    if (!quotable(action)) continue;
    for (const m of action.matchAll(/\[([^\]]*)\]/g)) {
      const quote = m[1] as string;
      if (quotes.has(quote)) continue;
      const again = requote(from, to, quote);
      if (again !== undefined && again !== quote) quotes.set(quote, again);
    }
  }
  const rewrite = (text: string): string => {
    if (quotes.size === 0) return applySubstitution(text, substitution);
    let out = '';
    let at = 0;
    for (const m of text.matchAll(/\[([^\]]*)\]/g)) {
      const again = quotes.get(m[1] as string);
      if (again === undefined) continue;
      out += `${applySubstitution(text.slice(at, m.index), substitution)}[${again}]`;
      at = m.index + m[0].length;
    }
    return out + applySubstitution(text.slice(at), substitution);
  };
  return { text: rewrite(state.text), actions: state.actions.map(rewrite) };
}

/**
 * Replacements that turn text written for one instruction into text for another, from the two
 * instructions alone: the words they share (longest common subsequence) anchor the alignment,
 * and each stretch between anchors maps to the other's stretch, without leading and trailing
 * filler words ("some blue paint" -> "a glass jar" gives "blue paint" -> "glass jar"). Text
 * derived from an instruction (search suggestions on a first page) then follows the new one.
 */
export function instructionAlignment(from: string, to: string): Substitution {
  const a = words(from);
  const b = words(to);
  const n = a.length;
  const m = b.length;
  const dp = commonLengths(a, b);
  const pairs: Substitution = [];
  const flush = (ra: Word[], rb: Word[]): void => {
    const trim = (r: Word[]): Word[] => {
      let s = 0;
      let e = r.length;
      while (s < e && FILLER.has(r[s]!.text)) s++;
      while (e > s && FILLER.has(r[e - 1]!.text)) e--;
      return r.slice(s, e);
    };
    const x = trim(ra);
    const y = trim(rb);
    if (x.length === 0 || y.length === 0) return;
    const fromText = from.slice(x[0]!.start, x[x.length - 1]!.end);
    const toText = to.slice(y[0]!.start, y[y.length - 1]!.end);
    if (fromText !== toText) pairs.push([fromText, toText]);
  };
  let i = 0;
  let j = 0;
  let ra: Word[] = [];
  let rb: Word[] = [];
  while (i < n || j < m) {
    if (i < n && j < m && a[i]!.text === b[j]!.text) {
      flush(ra, rb);
      ra = [];
      rb = [];
      i++;
      j++;
    } else if (j >= m || (i < n && dp[i + 1]![j]! >= dp[i]![j + 1]!)) {
      ra.push(a[i++]!);
    } else {
      rb.push(b[j++]!);
    }
  }
  flush(ra, rb);
  return pairs;
}
