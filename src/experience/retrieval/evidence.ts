/**
 * Text evidence shared by the retrieval experience model and its reward model: how a piece of
 * agent-visible text (a state, an action, the actions so far) relates to the task instruction.
 * Everything here reads only what the agent sees; nothing is specific to one environment.
 *
 * - `abstractText` rewrites words of the instruction as `qi`, numbers as `qn` and opaque
 *   identifiers (long letter-and-digit tokens) as `qid`, so that what a learner sees is "the
 *   object the task asks for" rather than the object's name, and an id cannot be memorised.
 * - `actionSignature` is an action's template with each entity marked as named by the
 *   instruction (`qi`) or not (`qx`): `move box 1 to rack 2` for "move a box to a rack" is
 *   `move qi to qi`.
 * - `evidenceFeatures` are a few dense figures: how much of the instruction the state, the
 *   action, the history and the actions on this page cover, and whether the numbers asked for
 *   are on screen.
 */
import { tokenize } from '../../policy/hashed-embedder.ts';
import { actionTemplate } from './substitution.ts';

/** English function words and request phrasing, too common to say anything about a task (no domain's vocabulary). */
const STOPWORDS = new Set('a an the i need want some that is are be with and or of for in on at to from it its this these those my me please find get'.split(' '));

/** A word's comparable form: lower case, a plural `s` dropped. */
export function stem(word: string): string {
  const w = word.toLowerCase();
  if (w.length > 3 && w.endsWith('ies')) return `${w.slice(0, -3)}y`;
  if (w.length > 3 && w.endsWith('s') && !w.endsWith('ss')) return w.slice(0, -1);
  return w;
}

const NUMBER_RE = /^\d+(?:\.\d+)?$/;
/** Letters and digits mixed, six or more characters: ids that identify rather than describe. */
const OPAQUE_RE = /^(?=.*\d)(?=.*[a-z])[a-z0-9]{6,}$/;

/** Whether `token` (lower case) is an opaque identifier (a catalogue number, a record id). */
export function isOpaqueToken(token: string): boolean {
  return OPAQUE_RE.test(token);
}

/** The instruction's content words (stemmed, no stopwords, no numbers). */
export function instructionWords(instruction: string): Set<string> {
  const out = new Set<string>();
  for (const t of tokenize(instruction)) {
    if (STOPWORDS.has(t) || NUMBER_RE.test(t)) continue;
    out.add(stem(t));
  }
  return out;
}

/** The numbers the instruction names, as written (`16`, `33.00`). */
export function instructionNumbers(instruction: string): string[] {
  return tokenize(instruction).filter((t) => NUMBER_RE.test(t));
}

/** `text` without the lines that restate the instruction (observations begin with it). */
export function withoutInstruction(text: string, instruction: string): string {
  if (instruction === '') return text;
  return text
    .split('\n')
    .filter((line) => !line.includes(instruction))
    .join('\n');
}

/** Rewrites instruction words as `qi`, numbers as `qn`, opaque ids as `qid`; keeps other words. */
export function abstractText(text: string, words: ReadonlySet<string>): string {
  return tokenize(text)
    .map((t) => (NUMBER_RE.test(t) ? 'qn' : isOpaqueToken(t) ? 'qid' : words.has(stem(t)) ? 'qi' : t))
    .join(' ');
}

/** An action's template with each entity marked `qi` (the instruction names it), `qid` (an opaque id) or `qx`. */
export function actionSignature(action: string, words: ReadonlySet<string>): string {
  const { template, entities } = actionTemplate(action);
  let i = 0;
  return template.replace(/\{\}/g, () => {
    const tokens = tokenize(entities[i++] ?? '');
    if (tokens.some((t) => !NUMBER_RE.test(t) && words.has(stem(t)))) return 'qi';
    return tokens.length === 1 && isOpaqueToken(tokens[0] as string) ? 'qid' : 'qx';
  });
}

/**
 * The instruction's content words and whether any of `texts` shows each (stemmed, as coverage
 * counts them). With `all` false (the default) only the words not shown.
 */
export function uncoveredWords(instruction: string, texts: readonly string[], all = false): { word: string; shown: boolean }[] {
  const seen = new Set(texts.flatMap((t) => tokenize(t).map(stem)));
  const out: { word: string; shown: boolean }[] = [];
  for (const word of instructionWords(instruction)) {
    const shown = seen.has(word);
    if (all || !shown) out.push({ word, shown });
  }
  return out;
}

/** Number of dense evidence features. */
export const EVIDENCE_DIM = 12;

/** Ranks at or beyond this count as the end of a list (see {@link openedRank}). */
const RANK_CAP = 10;

/**
 * Where in its list the latest item the agent opened by an opaque id stood: for the latest
 * earlier step whose action names one opaque id (`open[B0AB12CD34]`), its position among the
 * state's actions of the same template that name one (0 = first), capped at 10, over 10; 0 when
 * no such step. Agent-visible (the order of a list), and telling where successes open the top of a
 * list and failures spread over it: without it a policy learned to end on the last item.
 */
export function openedRank(steps: readonly { observation: { actions: readonly string[] }; action: string }[]): number {
  for (let i = steps.length - 1; i >= 0; i--) {
    const step = steps[i] as (typeof steps)[number];
    const { template, entities } = actionTemplate(step.action);
    if (!opaqueEntity(entities)) continue;
    const items = step.observation.actions.filter((a) => {
      const t = actionTemplate(a);
      return t.template === template && opaqueEntity(t.entities);
    });
    const rank = items.indexOf(step.action);
    if (rank >= 0) return Math.min(rank, RANK_CAP) / RANK_CAP;
  }
  return 0;
}

function opaqueEntity(entities: readonly string[]): boolean {
  if (entities.length !== 1) return false;
  const tokens = tokenize(entities[0] as string);
  return tokens.length === 1 && isOpaqueToken(tokens[0] as string);
}

function coverage(words: ReadonlySet<string>, text: string): number {
  if (words.size === 0) return 0;
  const seen = new Set(tokenize(text).map(stem));
  let hit = 0;
  for (const w of words) if (seen.has(w)) hit++;
  return hit / words.size;
}

/**
 * Dense evidence that the instruction is met: coverage of the instruction's words by the state
 * (without its instruction line), by the action, by the actions so far, and by all three; the
 * share of the instruction's whole numbers on screen; whether every decimal amount on screen is
 * within the largest decimal amount asked for (1, 0 when one exceeds it, 0.5 when none shown);
 * coverage by the actions taken on this page (`pageActions`: since the admissible actions last
 * changed, e.g. the options chosen on a page); how many things the page offers that the
 * instruction asks for by name but that were not chosen on this page (admissible-action entities
 * whose every word, numbers included, is in the instruction: `[8 cm]` for "width 8 cm"),
 * over 5, at most 1; a constant 1; and how many things chosen on this page the instruction did not
 * ask for (offered entities with a word outside the instruction), over 5, at most 1; where
 * the item last opened stood in its list (`rank`: see {@link openedRank}); and how many more
 * things of a kind the instruction asks for ("two") than the step shows.
 */
export function evidenceFeatures(
  instruction: string,
  state: string,
  action: string,
  history: readonly string[],
  pageActions: readonly string[] = [],
  offered: readonly string[] = [],
  rank = 0,
): Float32Array {
  const words = instructionWords(instruction);
  const screen = withoutInstruction(state, instruction);
  const past = history.join('\n');
  const f = new Float32Array(EVIDENCE_DIM);
  f[0] = coverage(words, screen);
  f[1] = coverage(words, action);
  f[2] = coverage(words, past);
  f[3] = coverage(words, `${screen}\n${action}\n${past}`);
  const asked = instructionNumbers(instruction);
  const whole = asked.filter((t) => !t.includes('.'));
  const shown = tokenize(screen).filter((t) => NUMBER_RE.test(t));
  const shownSet = new Set(shown);
  f[4] = whole.length === 0 ? 1 : whole.filter((n) => shownSet.has(n)).length / whole.length;
  const askedDecimals = asked.filter((t) => t.includes('.')).map(Number);
  const shownDecimals = shown.filter((t) => t.includes('.')).map(Number);
  if (askedDecimals.length === 0 || shownDecimals.length === 0) f[5] = 0.5;
  else f[5] = shownDecimals.every((x) => x <= Math.max(...askedDecimals)) ? 1 : 0;
  f[6] = coverage(words, pageActions.join('\n'));
  const asks = new Set(tokenize(instruction).map(stem));
  const kept = latestChoices(screen, pageActions, offered);
  const chosen = kept.map((e) => new Set(tokenize(e)));
  let notChosen = 0;
  for (const entity of new Set(offered.flatMap((a) => actionTemplate(a).entities))) {
    const tokens = tokenize(entity);
    if (tokens.length === 0 || !tokens.every((t) => asks.has(stem(t)))) continue;
    // Choosing "navy blue" also answers an offered "blue".
    if (!chosen.some((c) => tokens.every((t) => c.has(t)))) notChosen++;
  }
  f[7] = Math.min(notChosen, 5) / 5;
  f[8] = 1;
  // Choices on this page that the instruction did not ask for: an option the page still offers,
  // chosen, with a word the instruction lacks. Without it, choosing every option of a list
  // "covers" the instruction as well as choosing the right one does (GRPO found that shortcut).
  const offeredEntities = new Set(offered.flatMap((a) => actionTemplate(a).entities));
  let unasked = 0;
  for (const entity of new Set(kept)) {
    if (!offeredEntities.has(entity)) continue;
    const tokens = tokenize(entity);
    if (tokens.length > 0 && tokens.some((t) => !asks.has(stem(t)))) unasked++;
  }
  f[9] = Math.min(unasked, 5) / 5;
  f[10] = rank;
  f[11] = owedInstances(instruction, screen, action);
  return f;
}

const COUNT_WORDS: Readonly<Record<string, number>> = { two: 2, three: 3, four: 4, five: 5 };

/**
 * How many more things of a kind the instruction asks for ("two") than the step shows: the
 * instances of the kind the action names ("box" of `move box 2 to rack 1`) on screen or in
 * the action, against the count asked, over 4, at most 1. Every real success owes none, so an
 * action that completed episodes but still owes falls outside their evidence: without it, the
 * first of two moves asked for was called a success. Counting the moves taken instead fails: a
 * second thing already in place needs none.
 */
function owedInstances(instruction: string, screen: string, action: string): number {
  const asked = Math.max(1, ...tokenize(instruction).map((t) => COUNT_WORDS[t] ?? 1));
  if (asked === 1) return 0;
  const asks = new Set(tokenize(instruction));
  let most = 0;
  for (const entity of actionTemplate(action).entities) {
    const m = /^(\p{L}+) \p{N}+$/u.exec(entity);
    if (!m || !asks.has((m[1] as string).toLowerCase())) continue;
    const seen = new Set(screen.toLowerCase().match(new RegExp(`\\b${m[1]} \\d+\\b`, 'g')) ?? []);
    seen.add(entity.toLowerCase());
    most = Math.max(most, seen.size);
  }
  return most === 0 ? 0 : Math.min(Math.max(0, asked - most), 4) / 4;
}

/**
 * The entities of the choices made on this page that still hold: where the screen shows several
 * offered entities on one line (an option list such as "size: [8 inch] [10 inch] [12 inch]"),
 * only the latest choice among them counts, as a page keeps one selection per list. Without
 * this, choosing "10 inch" and then "8 inch" answered an instruction asking for 10 inch.
 */
export function latestChoices(screen: string, pageActions: readonly string[], offered: readonly string[]): string[] {
  const listOf = choiceLists(screen, offered);
  const entities = pageActions.map((a) => actionTemplate(a).entities);
  const latestOfList = new Map<number, number>();
  entities.forEach((es, k) => {
    for (const e of es) {
      const list = listOf.get(e);
      if (list !== undefined) latestOfList.set(list, k);
    }
  });
  const kept: string[] = [];
  entities.forEach((es, k) => {
    for (const e of es) {
      const list = listOf.get(e);
      if (list === undefined || latestOfList.get(list) === k) kept.push(e);
    }
  });
  return kept;
}

/**
 * The offered entities that the screen shows as one of several on one line (an option list such
 * as "size: [8 inch] [10 inch] [12 inch]"), each with the index of its line. Only the first
 * occurrence on a line counts, and only a bracket that stands alone.
 */
export function choiceLists(screen: string, offered: readonly string[]): Map<string, number> {
  const offeredEntities = [...new Set(offered.flatMap((a) => actionTemplate(a).entities))].filter((e) => e.trim() !== '');
  const listOf = new Map<string, number>();
  screen.split('\n').forEach((line, i) => {
    // `[x]` standing alone: a line of actions (`pick[x] pick[y]`) names actions, not a list.
    const lower = ` ${line.toLowerCase()}`;
    const onLine = offeredEntities.filter((e) => /\s/.test(lower[lower.indexOf(`[${e.toLowerCase()}]`) - 1] ?? ''));
    if (onLine.length >= 2) for (const e of onLine) if (!listOf.has(e)) listOf.set(e, i);
  });
  return listOf;
}

/**
 * The values of `known` (values option lists showed somewhere in the data, see `choiceLists`)
 * that the instruction names: their words appear in order in the instruction ("in silver",
 * "width 8 cm"). A value inside a longer named one ("gray" in "space gray") is left out.
 */
export function namedChoices(instruction: string, known: Iterable<string>): string[] {
  const text = ` ${tokenize(instruction).join(' ')} `;
  const named = [...known].map((v) => ` ${tokenize(v).join(' ')} `).filter((v) => v.trim() !== '' && text.includes(v));
  return named.filter((v) => !named.some((o) => o.length > v.length && o.includes(v))).map((v) => v.trim());
}

/**
 * How many choices the instruction names (`namedChoices` of `known`, counting only values in
 * `reliable`, default all) that the state neither offers nor mentions anywhere on its screen
 * (`screen`: the state text without its instruction line): a page without the colour asked for
 * is not the thing asked for, whatever its title says. A value the screen mentions elsewhere
 * ("olive" in "Olive Oil") is not counted: the instruction may have named the thing, not a choice.
 * Inside another offered choice it is no mention: a page offering "navy blue" lacks "blue".
 */
export function unofferedChoices(instruction: string, screen: string, offered: readonly string[], known: Iterable<string>, reliable?: ReadonlySet<string>): number {
  const entities = new Set(offered.flatMap((a) => actionTemplate(a).entities));
  const here = new Set([...entities].map((e) => tokenize(e).join(' ')));
  // Mentions outside the offered choices: "blue" inside an offered "[navy blue]" is no blue on offer.
  const shown = ` ${tokenize([...entities].reduce((text, e) => text.split(`[${e}]`).join(' '), screen)).join(' ')} `;
  return namedChoices(instruction, known).filter((v) => (reliable === undefined || reliable.has(v)) && !here.has(v) && !shown.includes(` ${v} `)).length;
}

/**
 * The actions taken on the current page: those taken in earlier states of the episode that
 * offered exactly the same admissible actions as `current` and after which the page stayed the
 * same (options chosen on a page, including before a look at its details and back). An action
 * that led away is not a choice made on the page, even when the agent came back (counted as an
 * unasked choice, it turned real successes down).
 */
export function actionsOnPage(history: readonly { observation: { actions: readonly string[] }; action: string }[], current: { actions: readonly string[] }): string[] {
  const same = (a: readonly string[]): boolean => a.length === current.actions.length && a.every((x, i) => x === current.actions[i]);
  return history.filter((h, i) => same(h.observation.actions) && same((history[i + 1]?.observation ?? current).actions)).map((h) => h.action);
}
