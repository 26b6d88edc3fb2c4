/**
 * Domain-independent lexical matching between a candidate action and the task, for the policy's
 * features (see {@link Featurizer}): opaque identifiers, content words, numbers and numeric
 * bounds, action templates, and the per-candidate match features built from them.
 *
 * Nothing here knows an environment. The rules are about English text in general: an "opaque
 * identifier" is a long token that mixes letters and digits several times (product ids, hashes,
 * serials); a "bound" is a number after "lower than", "under", "at most", ... or "more than",
 * "over", "at least", ...; a "template" is an action with its arguments replaced by slots.
 */
import { fnv1a, tokenize } from './hashed-embedder.ts';

/** What an opaque identifier is replaced by before hashing. */
export const ID_PLACEHOLDER = 'opaqueid';

/**
 * Whether `token` looks like an opaque identifier: at least 6 letters and digits, both kinds
 * present, and at least two changes between a letter run and a digit run (`B0WE9QSUDS`,
 * `3f9a2c1d`), so that words with one number such as `mp3`, `rtx4090` or `covid19` are kept.
 */
export function isOpaqueId(token: string): boolean {
  if (token.length < 6 || !/^[\p{L}\p{N}]+$/u.test(token)) return false;
  // Most tokens are words or numbers: without both kinds the answer is no, before the costly
  // walk below (a regular expression per character).
  if (!/\p{N}/u.test(token) || !/\p{L}/u.test(token)) return false;
  let changes = 0;
  let prev: 'l' | 'd' | null = null;
  for (const ch of token) {
    const kind = /\p{N}/u.test(ch) ? 'd' : 'l';
    if (prev !== null && kind !== prev) changes++;
    prev = kind;
  }
  return changes >= 2;
}

const TOKEN_RE = /[\p{L}\p{N}]+/gu;

/** `text` with every opaque identifier replaced by {@link ID_PLACEHOLDER}. */
export function neutralizeIds(text: string, placeholder = ID_PLACEHOLDER): string {
  return placeholder === ID_PLACEHOLDER ? neutralizeIdsMemo(text) : replaceIds(text, placeholder);
}

const replaceIds = (text: string, placeholder: string): string => text.replace(TOKEN_RE, (t) => (isOpaqueId(t) ? placeholder : t));

/** The opaque identifiers of `text`, lower-cased. */
function opaqueIds(text: string): string[] {
  return (text.match(TOKEN_RE) ?? []).filter(isOpaqueId).map((t) => t.toLowerCase());
}

/** Function words of English that say nothing about what a candidate matches. */
const STOPWORDS = new Set(
  (
    'a an the of in on at to for from with without by and or but not no nor is are was were be been being am ' +
    'it its this that these those there here as into onto over than then so such very too also just only ' +
    'i me my we our you your he she him her they them their what which who whom whose when where why how ' +
    'do does did doing done have has had having can could will would shall should may might must ' +
    'need needs want wants would like looking look find get buy please some any all each every ' +
    'up out about if else while under below above near inside behind between s t'
  ).split(' '),
);

/** Light, language-generic normalisation of a word: lower case, plural `s` dropped. */
function normalizeWord(word: string): string {
  const w = word.toLowerCase();
  if (w.length > 3 && w.endsWith('s') && !w.endsWith('ss')) return w.slice(0, -1);
  return w;
}

const NUMBER_RE = /^\d+(?:\.\d+)?$/;

/** A bounded memo for pure string functions (texts repeat a lot across decisions). */
function memo<T>(fn: (text: string) => T, limit = 20_000): (text: string) => T {
  const cache = new Map<string, T>();
  return (text) => {
    const hit = cache.get(text);
    if (hit !== undefined) return hit;
    const value = fn(text);
    if (cache.size >= limit) cache.clear();
    cache.set(text, value);
    return value;
  };
}

/** Words of `text` that carry content: no function words, no numbers, no opaque ids; normalised. Do not mutate the result. */
export function contentWords(text: string): string[] {
  return contentWordsMemo(text);
}

// The same states and candidates are read at every step of every episode.
const neutralizeIdsMemo = memo((text: string): string => replaceIds(text, ID_PLACEHOLDER));

const contentWordsMemo = memo((text: string): string[] => {
  const out: string[] = [];
  for (const t of tokenize(text)) {
    if (NUMBER_RE.test(t) || isOpaqueId(t) || STOPWORDS.has(t) || !/\p{L}/u.test(t)) continue;
    out.push(normalizeWord(t));
  }
  return out;
});

/** The numbers written in `text` (outside opaque ids), as numbers. */
function numbersIn(text: string): number[] {
  const out: number[] = [];
  for (const t of tokenize(neutralizeIds(text))) {
    const plain = t.replace(/,/g, '');
    if (NUMBER_RE.test(plain)) out.push(Number(plain));
  }
  return out;
}

/**
 * Amount-like numbers of `text`: those after a currency sign, or with a decimal part (counts
 * such as "drawer 3" are not amounts). Compared with an instruction's {@link numericBounds}.
 */
export function amountsIn(text: string): number[] {
  const out: number[] = [];
  const re = /([$€£¥₹]\s?)?(\d[\d,]*(?:\.\d+)?)/gu;
  for (const m of neutralizeIds(text).matchAll(re)) {
    const raw = (m[2] as string).replace(/,/g, '');
    if (m[1] !== undefined || raw.includes('.')) out.push(Number(raw));
  }
  return out;
}

/** Numeric bounds stated in an instruction ("lower than 40.00 dollars", "at least 3"). */
export interface NumericBounds {
  upper: number | null;
  lower: number | null;
}

const UPPER = String.raw`(?:lower|less|cheaper|fewer|smaller|below|under|at\s+most|no\s+more\s+than|not\s+more\s+than|up\s+to|maximum(?:\s+of)?|max\.?|<=?)`;
const LOWER = String.raw`(?:higher|greater|more|larger|above|over|at\s+least|no\s+less\s+than|not\s+less\s+than|minimum(?:\s+of)?|min\.?|>=?)`;
const BOUND_NUMBER = String.raw`(?:\s+than)?\s*[$€£¥₹]?\s*(\d[\d,]*(?:\.\d+)?)`;

/** The tightest upper and lower bounds stated in `text`. */
export function numericBounds(text: string): NumericBounds {
  const lower = text.toLowerCase();
  const find = (word: string, pick: (a: number, b: number) => number): number | null => {
    let best: number | null = null;
    for (const m of lower.matchAll(new RegExp(String.raw`(?<![\p{L}])${word}${BOUND_NUMBER}`, 'gu'))) {
      const v = Number((m[1] as string).replace(/,/g, ''));
      if (Number.isFinite(v)) best = best === null ? v : pick(best, v);
    }
    return best;
  };
  return { upper: find(UPPER, Math.min), lower: find(LOWER, Math.max) };
}

/**
 * The template of an action: `verb[argument]` becomes `verb[<id>]` when the argument is an opaque
 * identifier, else `verb[<arg>]`; a plain-text action keeps its first word and its function
 * words, and each run of other words or numbers becomes one `<w>` slot ("go to fridge 1" and
 * "go to drawer 12" are both "go to <w>"). Candidates of one template form a list, in which a
 * candidate's rank is a position feature.
 */
export function actionTemplate(action: string): string {
  return actionTemplateMemo(action);
}

// Every step featurizes the same few hundred admissible actions again.
const actionTemplateMemo = memo((action: string): string => {
  const bracket = /^\s*([\p{L}_ -]+?)\s*\[(.*)\]\s*$/su.exec(action);
  if (bracket) {
    const arg = (bracket[2] as string).trim();
    const slot = isOpaqueId(arg) ? '<id>' : '<arg>';
    return `${(bracket[1] as string).toLowerCase()}[${slot}]`;
  }
  const tokens = tokenize(action);
  if (tokens.length === 0) return action.trim().toLowerCase();
  const out: string[] = [tokens[0] as string];
  for (const t of tokens.slice(1)) {
    const slot = STOPWORDS.has(t) ? t : isOpaqueId(t) ? '<id>' : '<w>';
    if (slot === '<w>' && out[out.length - 1] === '<w>') continue;
    out.push(slot);
  }
  return out.join(' ');
});

/**
 * The argument slots of an action, in order: the argument of `verb[argument]`; for a plain-text
 * action, each run of words after the first word that are not function words ("take potato 1
 * from countertop 1": "potato 1", "countertop 1").
 */
export function actionSlots(action: string): readonly string[] {
  return actionSlotsMemo(action);
}

const actionSlotsMemo = memo((action: string): readonly string[] => {
  const bracket = /^\s*[\p{L}_ -]+?\s*\[(.*)\]\s*$/su.exec(action);
  if (bracket) {
    const arg = (bracket[1] as string).trim();
    return arg.length > 0 ? [arg] : [];
  }
  const tokens = tokenize(action);
  const slots: string[] = [];
  let run: string[] = [];
  for (const t of tokens.slice(1)) {
    if (STOPWORDS.has(t)) {
      if (run.length > 0) slots.push(run.join(' '));
      run = [];
    } else run.push(t);
  }
  if (run.length > 0) slots.push(run.join(' '));
  return Object.freeze(slots);
});

/** Names of the match features, in their order in a candidate vector's match block. */
export const MATCH_FEATURES = [
  // Word overlap with the instruction.
  'overlap.action', // share of the action's content words found in the instruction
  'overlap.candidate', // share of the candidate text's content words found in the instruction
  'overlap.coverage', // share of the instruction's content words the candidate text covers
  'overlap.count', // matched instruction words, log-scaled to [0, 1]
  'overlap.bigrams', // share of the instruction's content bigrams found in the candidate text
  'overlap.gapToBest', // coverage minus the best coverage among candidates of the same template (<= 0)
  'overlap.isBest', // 1 when the coverage is the best of its template (and > 0)
  // Per argument slot of the action (see actionSlots).
  'slots.first', // share of the first slot's content words found in the instruction
  'slots.last', // the same for the last slot, when there are two or more
  'slots.allMatched', // every slot with content words has one in the instruction
  'slots.someUnmatched', // some slot with content words has none in the instruction
  'slots.firstIsBest', // slots.first is the best of its template (and > 0)
  // Numbers.
  'numbers.matched', // share of the candidate's numbers that the instruction states too
  'numbers.any', // 1 when some number is shared
  'numbers.withinBound', // the candidate states an amount that satisfies the instruction's bounds
  'numbers.violatesBound', // the candidate states amounts and none satisfies the bounds
  // Embedding similarity (any embedder).
  'similarity.cosine', // cosine between the candidate and the instruction embeddings
  'similarity.gapToBest', // minus the best of its template (<= 0)
  'similarity.isBest', // 1 when the best of its template
  // Opaque identifiers.
  'ids.has', // the candidate names an opaque identifier
  'ids.inInstruction', // and the instruction names it too
  // Position among candidates of the same template.
  'position.rank', // rank / (size - 1), 0 for the first, 1 for the last
  'position.isFirst',
  'position.isLast',
  'position.inverseRank', // 1 / (1 + rank)
  'position.groupSize', // log-scaled size of the template's list
  'position.overall', // index among all candidates / (count - 1)
  // History of the episode.
  'history.taken', // this exact action was taken earlier in the episode
  'history.count', // how many times, / 3, at most 1
  'history.isLast', // it was the latest action
  'history.recency', // 1 / (steps since it was last taken), 0 if never
  'history.slotsSeen', // share of its argument slots that earlier actions named
] as const;
export type MatchFeatureName = (typeof MATCH_FEATURES)[number];

const INDEX = new Map<string, number>(MATCH_FEATURES.map((name, i) => [name, i]));

/** Groups of features that can be switched off (for ablations); see {@link Featurizer}. */
export const FEATURE_GROUPS = ['ids', 'instruction', 'situation', 'candidate', 'overlap', 'numbers', 'similarity', 'position', 'history', 'conjunctions'] as const;
export type FeatureGroup = (typeof FEATURE_GROUPS)[number];

const GROUP_OF: Record<string, FeatureGroup> = { overlap: 'overlap', slots: 'overlap', numbers: 'numbers', similarity: 'similarity', ids: 'ids', position: 'position', history: 'history' };

/** Indices of the match features of one group. */
export function matchFeatureIndices(group: FeatureGroup): number[] {
  return MATCH_FEATURES.flatMap((name, i) => (GROUP_OF[name.split('.')[0] as string] === group ? [i] : []));
}

/** One candidate as the match features see it. */
export interface MatchCandidate {
  /** The raw action. */
  action: string;
  /** The action plus the observation line it acts on. */
  text: string;
}

/** The instruction, pre-processed once per decision. */
export interface InstructionProfile {
  words: Set<string>;
  bigrams: Set<string>;
  numbers: Set<number>;
  ids: Set<string>;
  bounds: NumericBounds;
}

/**
 * Pre-processes an instruction for {@link matchFeatures}. The same instruction gives the same
 * (frozen) profile object, which matchFeatures recognises to reuse what it found per candidate.
 */
export function instructionProfile(instruction: string): InstructionProfile {
  return profileMemo(instruction);
}

/** Serial numbers of the memoised profiles (the key of their candidates' word features). */
const profileSerial = new WeakMap<InstructionProfile, number>();
let nextSerial = 0;

// A run's task pool holds a few hundred instructions.
const profileMemo = memo((instruction: string): InstructionProfile => {
  const words = contentWords(instruction);
  const bigrams = new Set<string>();
  for (let i = 1; i < words.length; i++) bigrams.add(`${words[i - 1] as string} ${words[i] as string}`);
  const profile: InstructionProfile = Object.freeze({ words: new Set(words), bigrams, numbers: new Set(numbersIn(instruction)), ids: new Set(opaqueIds(instruction)), bounds: numericBounds(instruction) });
  profileSerial.set(profile, nextSerial++);
  return profile;
}, 4096);

/** What a candidate's words say against an instruction (history and list position aside). */
interface CandidateStatics {
  /** The word-based features, by index; 0 where unset. */
  values: Float32Array;
  coverage: number;
  firstSlot: number;
}

/** Word features by (profile serial, action, text), bounded like the other memos (about 10 MB when full). */
const staticsCache = new Map<string, CandidateStatics>();
const STATICS_CACHE_SIZE = 50_000;

/** The word-based features of one candidate (a pure function of the profile, action and text). */
function candidateStatics(profile: InstructionProfile, c: MatchCandidate): CandidateStatics {
  const serial = profileSerial.get(profile);
  const key = serial === undefined ? undefined : `${serial}\u0000${c.action}\u0000${c.text}`;
  const known = key === undefined ? undefined : staticsCache.get(key);
  if (known) return known;
  const v = new Float32Array(MATCH_FEATURES.length);
  const set = (name: MatchFeatureName, value: number): void => {
    v[INDEX.get(name) as number] = value;
  };
  const actionWords = contentWords(c.action);
  const words = contentWords(c.text);
  const wordSet = new Set(words);
  if (actionWords.length > 0) set('overlap.action', actionWords.filter((w) => profile.words.has(w)).length / actionWords.length);
  if (words.length > 0) set('overlap.candidate', words.filter((w) => profile.words.has(w)).length / words.length);
  let covered = 0;
  for (const w of profile.words) if (wordSet.has(w)) covered++;
  const coverage = profile.words.size > 0 ? covered / profile.words.size : 0;
  set('overlap.coverage', coverage);
  set('overlap.count', Math.min(1, Math.log1p(covered) / LOG_COUNT_SCALE));
  const slotShares = actionSlots(c.action)
    .map(contentWords)
    .filter((ws) => ws.length > 0)
    .map((ws) => ws.filter((w) => profile.words.has(w)).length / ws.length);
  let firstSlot = 0;
  if (slotShares.length > 0) {
    firstSlot = slotShares[0] as number;
    set('slots.first', firstSlot);
    if (slotShares.length > 1) set('slots.last', slotShares[slotShares.length - 1] as number);
    set(slotShares.every((x) => x > 0) ? 'slots.allMatched' : 'slots.someUnmatched', 1);
  }
  if (profile.bigrams.size > 0) {
    const own = new Set<string>();
    for (let k = 1; k < words.length; k++) own.add(`${words[k - 1] as string} ${words[k] as string}`);
    let hit = 0;
    for (const b of profile.bigrams) if (own.has(b)) hit++;
    set('overlap.bigrams', hit / profile.bigrams.size);
  }
  const numbers = numbersIn(c.text);
  if (numbers.length > 0) {
    const shared = numbers.filter((x) => profile.numbers.has(x)).length;
    set('numbers.matched', shared / numbers.length);
    set('numbers.any', shared > 0 ? 1 : 0);
  }
  if (profile.bounds.upper !== null || profile.bounds.lower !== null) {
    const amounts = amountsIn(c.text);
    if (amounts.length > 0) {
      const ok = amounts.some((x) => (profile.bounds.upper === null || x <= profile.bounds.upper) && (profile.bounds.lower === null || x >= profile.bounds.lower));
      set(ok ? 'numbers.withinBound' : 'numbers.violatesBound', 1);
    }
  }
  const ids = opaqueIds(c.text);
  if (ids.length > 0) {
    set('ids.has', 1);
    if (ids.some((id) => profile.ids.has(id))) set('ids.inInstruction', 1);
  }
  const statics = { values: v, coverage, firstSlot };
  if (key !== undefined) {
    if (staticsCache.size >= STATICS_CACHE_SIZE) staticsCache.clear();
    staticsCache.set(key, statics);
  }
  return statics;
}

const LOG_COUNT_SCALE = Math.log(9);
const LOG_GROUP_SCALE = Math.log(51);

function dot(a: Float32Array, b: Float32Array): number {
  let s = 0;
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) s += (a[i] as number) * (b[i] as number);
  return s;
}

/**
 * The match block of every candidate of one decision, `MATCH_FEATURES.length` values each.
 * `candidateVectors` and `instructionVector` are embeddings (for the similarity features);
 * `history` are the episode's earlier actions, oldest first.
 */
export function matchFeatures(
  profile: InstructionProfile,
  candidates: readonly MatchCandidate[],
  history: readonly string[],
  candidateVectors: readonly Float32Array[],
  instructionVector: Float32Array,
): Float32Array[] {
  const n = candidates.length;
  const f = MATCH_FEATURES.length;
  const out = candidates.map(() => new Float32Array(f));
  const templates = candidates.map((c) => actionTemplate(c.action));
  const coverage = new Float64Array(n);
  const cosine = new Float64Array(n);
  const firstSlot = new Float64Array(n);
  const counts = new Map<string, number>();
  const lastAt = new Map<string, number>();
  const seenSlots = new Set<string>();
  history.forEach((a, t) => {
    counts.set(a, (counts.get(a) ?? 0) + 1);
    lastAt.set(a, t);
    for (const slot of actionSlots(a)) seenSlots.add(slot.toLowerCase());
  });
  const last = history.length > 0 ? (history[history.length - 1] as string) : null;

  candidates.forEach((c, i) => {
    const v = out[i] as Float32Array;
    const set = (name: MatchFeatureName, value: number): void => {
      v[INDEX.get(name) as number] = value;
    };
    const statics = candidateStatics(profile, c);
    v.set(statics.values);
    coverage[i] = statics.coverage;
    firstSlot[i] = statics.firstSlot;
    cosine[i] = dot(candidateVectors[i] as Float32Array, instructionVector);
    set('similarity.cosine', cosine[i] as number);

    const times = counts.get(c.action) ?? 0;
    if (times > 0) {
      set('history.taken', 1);
      set('history.count', Math.min(1, times / 3));
    }
    if (last !== null && c.action === last) set('history.isLast', 1);
    const at = lastAt.get(c.action);
    if (at !== undefined) set('history.recency', 1 / (history.length - at));
    const slots = actionSlots(c.action);
    if (slots.length > 0) set('history.slotsSeen', slots.filter((x) => seenSlots.has(x.toLowerCase())).length / slots.length);
  });

  // Per-template lists: rank, and each candidate against the best of its list.
  const groups = new Map<string, number[]>();
  templates.forEach((t, i) => {
    const g = groups.get(t);
    if (g) g.push(i);
    else groups.set(t, [i]);
  });
  for (const members of groups.values()) {
    const size = members.length;
    let bestCoverage = 0;
    let bestCosine = -Infinity;
    let bestSlot = 0;
    for (const i of members) {
      bestSlot = Math.max(bestSlot, firstSlot[i] as number);
      bestCoverage = Math.max(bestCoverage, coverage[i] as number);
      bestCosine = Math.max(bestCosine, cosine[i] as number);
    }
    members.forEach((i, rank) => {
      const v = out[i] as Float32Array;
      const set = (name: MatchFeatureName, value: number): void => {
        v[INDEX.get(name) as number] = value;
      };
      set('overlap.gapToBest', (coverage[i] as number) - bestCoverage);
      if (bestCoverage > 0 && (coverage[i] as number) === bestCoverage) set('overlap.isBest', 1);
      if (bestSlot > 0 && (firstSlot[i] as number) === bestSlot) set('slots.firstIsBest', 1);
      set('similarity.gapToBest', (cosine[i] as number) - bestCosine);
      if ((cosine[i] as number) === bestCosine) set('similarity.isBest', 1);
      set('position.rank', size > 1 ? rank / (size - 1) : 0);
      set('position.isFirst', rank === 0 ? 1 : 0);
      set('position.isLast', rank === size - 1 ? 1 : 0);
      set('position.inverseRank', 1 / (1 + rank));
      set('position.groupSize', Math.min(1, Math.log(size) / LOG_GROUP_SCALE));
    });
  }
  candidates.forEach((_, i) => {
    (out[i] as Float32Array)[INDEX.get('position.overall') as number] = n > 1 ? i / (n - 1) : 0;
  });
  return out;
}

/** How the content words of one slot relate to the instruction: all (`m`), some (`p`), none (`u`), no content word (`-`). */
function slotPattern(slot: string, words: ReadonlySet<string>): string {
  const ws = contentWords(slot);
  if (ws.length === 0) return '-';
  const hit = ws.filter((w) => words.has(w)).length;
  return hit === ws.length ? 'm' : hit > 0 ? 'p' : 'u';
}

/**
 * Conjunction keys of each candidate: its template combined with (a) how each argument slot
 * matches the instruction, (b) whether the exact action was taken before, (c) how many
 * instruction words the `situation` (the observation without the instruction) does not show
 * yet, and whether the action names one of them, (d) whether the exact action was taken before in a
 * state that offered the same actions (`here`: the same place of a map, the same page of a form,
 * so that an explored exit or a tried fare looks tried there and not everywhere). (The template of the latest action was tried
 * too and dropped: demonstrations never follow "go to" with "go to", so it taught the policy
 * not to move on from a place where the goal's object is not.) Hashed into a small block ({@link hashKeys}), they let a linear layer give
 * "take <w> from <w> with an unmatched object" its own weight, which word-level features cannot:
 * a combination that the demonstrations never choose gets a low score on unseen tasks too.
 */
export const CONJUNCTION_KINDS = ['slots', 'taken', 'pending', 'here'] as const;
export type ConjunctionKind = (typeof CONJUNCTION_KINDS)[number];

export function conjunctionKeys(
  profile: InstructionProfile,
  actions: readonly string[],
  history: readonly string[],
  situation = '',
  kinds: ReadonlySet<ConjunctionKind> = new Set(CONJUNCTION_KINDS),
  here: readonly string[] = [],
): string[][] {
  const shown = new Set(contentWords(situation));
  const pending = new Set([...profile.words].filter((w) => !shown.has(w)));
  const taken = new Map<string, number>();
  for (const a of history) taken.set(a, (taken.get(a) ?? 0) + 1);
  const takenHere = new Map<string, number>();
  for (const a of here) takenHere.set(a, (takenHere.get(a) ?? 0) + 1);
  return actions.map((action) => {
    const template = actionTemplate(action);
    const slots = actionSlots(action).map((slot) => (isOpaqueId(slot.trim()) ? (profile.ids.has(slot.trim().toLowerCase()) ? 'm' : 'u') : slotPattern(slot, profile.words)));
    const times = taken.get(action) ?? 0;
    const covers = contentWords(action).some((w) => pending.has(w)) ? 1 : 0;
    const keys: string[] = [];
    if (kinds.has('slots')) keys.push(`${template}|slots:${slots.join(',')}`);
    if (kinds.has('taken')) keys.push(`${template}|taken:${times === 0 ? 0 : times === 1 ? 1 : 2}`);
    if (kinds.has('pending')) keys.push(`${template}|pending:${Math.min(pending.size, 3)}|covers:${covers}`);
    if (kinds.has('here')) keys.push(`${template}|here:${Math.min(takenHere.get(action) ?? 0, 2)}`);
    return keys;
  });
}

/** Signed feature hashing of `keys` into `out` (length = the block's width), each key with weight `weight`. */
export function hashKeys(keys: readonly string[], out: Float32Array, weight = 1): void {
  if (out.length === 0) return;
  for (const key of keys) {
    const h = fnv1a(key, 0);
    const index = h % out.length;
    out[index] = (out[index] as number) + ((h >>> 31) === 0 ? weight : -weight);
  }
}
