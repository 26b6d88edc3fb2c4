/**
 * From text to policy features: phi(task, history, observation) for the state and psi(a) for
 * each admissible action, through any {@link Embedder} (the hashed one here, WebLLM's later).
 *
 * A candidate's text is the action plus the observation line that describes it: in an abstract
 * textual state ("[ID] description" lines), `click[B04CY8QBR3]` alone says nothing, while its
 * line "[B04CY8QBR3] Yopiyo Cat Litter - Durable | $28.50" says what clicking it leads to. The
 * default `matching` layout ({@link Featurizer}) reads that line through task-relative features
 * (overlap with the instruction, rank, history; see ./matching.ts) rather than embedding it, so
 * that the head learns what makes an item right, not which items were right.
 */
import type { Embedder } from '../core/embedding.ts';
import type { Observation } from '../core/types.ts';
import type { Decision } from './input.ts';
import { tokenize } from './hashed-embedder.ts';
import {
  actionSlots,
  actionTemplate,
  CONJUNCTION_KINDS,
  contentWords,
  conjunctionKeys,
  FEATURE_GROUPS,
  hashKeys,
  instructionProfile,
  MATCH_FEATURES,
  matchFeatureIndices,
  matchFeatures,
  neutralizeIds,
  type ConjunctionKind,
  type FeatureGroup,
  type MatchFeatureName,
} from './matching.ts';

export { FEATURE_GROUPS, MATCH_FEATURES, ID_PLACEHOLDER, isOpaqueId, neutralizeIds, type FeatureGroup, type MatchFeatureName } from './matching.ts';

/** One earlier step of the episode. */
export interface HistoryEntry {
  action: string;
  /** The observation the action was taken on (what the agent saw then); states without it count as elsewhere. */
  observation?: Observation;
}

/** The earlier actions taken in a state that offered exactly the actions `observation` offers. */
export function actionsTakenHere(history: readonly HistoryEntry[], observation: Observation): string[] {
  const now = observation.actions.join('\n');
  return history.filter((h) => h.observation !== undefined && h.observation.actions.join('\n') === now).map((h) => h.action);
}

/** What the policy sees at one decision. */
export interface StateContext {
  instruction: string;
  /** Earlier actions of this episode, oldest first. */
  history?: readonly HistoryEntry[];
  observation: Observation;
}

/** Options of the state text. */
export interface StateTextOptions {
  /** How many of the latest actions to include. Default 3. */
  maxHistory?: number;
}

/** The text embedded as the state: the instruction, the latest actions and the observation. */
export function stateText(ctx: StateContext, options: StateTextOptions = {}): string {
  const maxHistory = options.maxHistory ?? 3;
  if (!(Number.isInteger(maxHistory) && maxHistory >= 0)) throw new RangeError(`maxHistory must be an integer >= 0, got ${maxHistory}`);
  const recent = maxHistory === 0 ? [] : (ctx.history ?? []).slice(-maxHistory).map((h) => h.action);
  const parts = [`Instruction: ${ctx.instruction}`];
  if (recent.length > 0) parts.push(`Previous actions: ${recent.join(' | ')}`);
  parts.push(ctx.observation.text);
  return parts.join('\n');
}

/**
 * The state text of the `matching` layout, where the instruction has a slot of its own: the
 * latest actions and the observation without the lines that repeat the instruction, so that a
 * word of the instruction shows in the state only once the observation itself says it (an object
 * now "clean", a page now showing the product).
 */
export function situationText(ctx: StateContext, options: StateTextOptions = {}): string {
  const maxHistory = options.maxHistory ?? 3;
  if (!(Number.isInteger(maxHistory) && maxHistory >= 0)) throw new RangeError(`maxHistory must be an integer >= 0, got ${maxHistory}`);
  const recent = maxHistory === 0 ? [] : (ctx.history ?? []).slice(-maxHistory).map((h) => h.action);
  const parts: string[] = [];
  if (recent.length > 0) parts.push(`Previous actions: ${recent.join(' | ')}`);
  parts.push(observationWithoutInstruction(ctx));
  return parts.join('\n');
}

/** The observation's text without the lines that repeat the instruction. */
function observationWithoutInstruction(ctx: StateContext): string {
  const instruction = ctx.instruction.trim().toLowerCase();
  if (instruction.length === 0) return ctx.observation.text;
  return ctx.observation.text
    .split('\n')
    .filter((l) => !l.toLowerCase().includes(instruction))
    .join('\n');
}

const BRACKET_ACTION = /^\s*[a-z_]+\s*\[(.*)\]\s*$/i;

/** Whether token list `tokens` holds `needle` as a contiguous run. */
function containsRun(tokens: readonly string[], needle: readonly string[]): boolean {
  for (let i = 0; i + needle.length <= tokens.length; i++) if (needle.every((t, j) => tokens[i + j] === t)) return true;
  return false;
}

/** How a line splits, from coarse to fine: into sentences, their "; " or " | " parts, their ", " parts. */
const CLAUSE_SPLITS = [/(?<=[.!?])\s+/, /;\s+|\s\|\s/, /,\s+/] as const;

/**
 * The observation clauses that name a plain-text action's arguments: for each argument slot
 * ({@link actionSlots}), the coarsest unit (a sentence, its "; " parts, their ", " parts) that
 * holds the slot's words in order, no sibling's slot (`siblings`: the other actions of its
 * template) and some word or number the action lacks; null when none does. Without it "open #4796"
 * says nothing of whose ticket that is, while "#4796 from lena fox: help needed" does, so the
 * match features can compare it with the instruction instead of the head memorising which
 * numbers were right.
 */
export function plainElement(observationText: string, action: string, siblings: readonly string[] = []): string | null {
  return clauseFinder(observationText)(action, siblings);
}

/**
 * {@link plainElement} for many actions of one observation: the observation's sentences and every
 * unit's and action's tokens are worked out once, not once per action.
 */
function clauseFinder(observationText: string): (action: string, siblings: readonly string[]) => string | null {
  const slotCache = new Map<string, string[][]>();
  const slotsOf = (a: string): string[][] => {
    let slots = slotCache.get(a);
    if (!slots) slotCache.set(a, (slots = actionSlots(a).map((slot) => tokenize(slot)).filter((t) => t.length > 0)));
    return slots;
  };
  const tokenCache = new Map<string, string[]>();
  const tokensOf = (unit: string): string[] => {
    let tokens = tokenCache.get(unit);
    if (!tokens) tokenCache.set(unit, (tokens = tokenize(unit)));
    return tokens;
  };
  // From sentences down: a whole line of several sentences says more than the action is about.
  const sentences = observationText.split('\n').flatMap((l) => l.split(CLAUSE_SPLITS[0])).filter((l) => l.trim().length > 0);
  const same = (a: readonly string[], b: readonly string[]): boolean => a.length === b.length && a.every((t, i) => t === b[i]);
  return (action, siblings) => {
    const slots = slotsOf(action);
    if (slots.length === 0) return null;
    const others = siblings.filter((a) => a !== action).flatMap(slotsOf).filter((o) => !slots.some((x) => same(x, o)));
    const own = new Set(tokenize(action));
    // A unit says something of its own with a word or number the action lacks (function words aside).
    const adds = (tokens: readonly string[]): boolean => tokens.some((t) => !own.has(t) && (/\p{N}/u.test(t) || contentWords(t).length > 0));
    const find = (units: readonly string[], level: number, slot: readonly string[]): string | undefined => {
      for (const unit of units) {
        const tokens = tokensOf(unit);
        if (!containsRun(tokens, slot)) continue;
        const alone = !others.some((o) => containsRun(tokens, o));
        if ((alone || level === CLAUSE_SPLITS.length) && adds(tokens)) return unit.trim();
        const split = CLAUSE_SPLITS[level];
        const inner = split === undefined ? undefined : find(unit.split(split), level + 1, slot);
        if (inner !== undefined) return inner;
      }
      return undefined;
    };
    const found: string[] = [];
    for (const slot of slots) {
      const clause = find(sentences, 1, slot);
      if (clause !== undefined && !found.includes(clause)) found.push(clause);
    }
    return found.length > 0 ? found.join(' | ') : null;
  };
}

/** The argument of `verb[argument]`, or the whole action. */
function actionArgument(action: string): string {
  const m = /^\s*[a-z_]+\s*\[(.*)\]\s*$/i.exec(action);
  return (m?.[1] ?? action).trim();
}

/**
 * The action plus the observation element it acts on: the line that shows `[argument]`, with the
 * line's other bracketed elements removed. A results line "[B04CY8QBR3] Yopiyo Cat Litter |
 * $28.50" is kept whole; an options line "size: [10 lb] [20 lb] (selected: none)" becomes
 * "size: [20 lb] (selected: none)" for `click[20 lb]`, so that sibling options do not look alike.
 * A plain-text action ("open #4796") gets the clause that names its arguments
 * ({@link plainElement}). Actions without such a line are returned as they are.
 */
export function candidateText(observationText: string, action: string): string {
  if (!BRACKET_ACTION.test(action)) {
    const element = plainElement(observationText, action);
    return element === null ? action : `${action}\n${element}`;
  }
  return bracketText(observationText, action);
}

/**
 * {@link candidateText} of each admissible action, where a plain-text action keeps its clause only
 * when every action of its template ({@link actionTemplate}) has one: siblings described unevenly
 * ("go to cabinet 1" finding "you see a cabinet 1" while "go to drawer 2" finds nothing) would
 * differ by where the observation happens to mention them, not by what they are.
 */
export function candidateTexts(observationText: string, actions: readonly string[]): string[] {
  const byTemplate = new Map<string, string[]>();
  for (const a of actions) {
    const template = actionTemplate(a);
    (byTemplate.get(template) ?? byTemplate.set(template, []).get(template))?.push(a);
  }
  const clauseOf = clauseFinder(observationText);
  const plain = actions.map((a) => (BRACKET_ACTION.test(a) ? null : clauseOf(a, byTemplate.get(actionTemplate(a)) ?? [])));
  const bare = new Set<string>();
  actions.forEach((a, i) => {
    if (!BRACKET_ACTION.test(a) && plain[i] === null) bare.add(actionTemplate(a));
  });
  return actions.map((a, i) => {
    if (BRACKET_ACTION.test(a)) return bracketText(observationText, a);
    const element = plain[i];
    return element === null || element === undefined || bare.has(actionTemplate(a)) ? a : `${a}\n${element}`;
  });
}

function bracketText(observationText: string, action: string): string {
  const arg = actionArgument(action);
  if (arg.length === 0) return action;
  const needle = `[${arg.toLowerCase()}]`;
  const line = observationText.split('\n').find((l) => {
    const t = l.trim().toLowerCase();
    return t.includes(needle) && t !== needle;
  });
  if (!line) return action;
  const element = line
    .replace(/\[[^\]]*\]/g, (m) => (m.toLowerCase() === needle ? m : ''))
    .replace(/\s+/g, ' ')
    .trim();
  return `${action}\n${element}`;
}

/** Writes `source * scale` into `target` from `offset`. */
function setScaled(target: Float32Array, source: Float32Array, offset: number, scale: number): void {
  if (scale === 1) {
    target.set(source, offset);
    return;
  }
  for (let i = 0; i < source.length; i++) target[offset + i] = (source[i] as number) * scale;
}

/** Settings of a {@link Featurizer}. */
export interface FeaturizerOptions extends StateTextOptions {
  /** Embeddings kept in the cache (by text). Default 50,000. */
  cacheSize?: number;
  /**
   * `matching` (default): the layout below, with instruction matching, position and history
   * features and opaque identifiers neutralised. `text`: the earlier plain layout, the state
   * text's and each candidate text's embeddings as they are (stateDim = actionDim = dim).
   */
  mode?: 'matching' | 'text';
  /** Feature groups or single match features to switch off (ablations): their slots stay, filled with zeros. */
  disable?: readonly (FeatureGroup | MatchFeatureName | `conjunctions.${ConjunctionKind}`)[];
  /** Multiplier of the match block in candidate vectors. Default 1. */
  matchScale?: number;
  /**
   * Multiplier of the embedded slots (instruction, situation, candidate) in `matching` mode.
   * Below 1 the head learns from the embeddings more slowly than from the match features, which
   * limits how much it can memorise tasks by their texts. Default 1.
   */
  embeddingScale?: number;
  /**
   * What a candidate's embedding slot holds (`matching` mode): `action`, the action text alone
   * (ids neutralised); `element`, the action plus the observation line it acts on
   * ({@link candidateText}). The match features always read the element line. Default `action`:
   * with the element line, a list item's own words (a product's brand and title) let the head
   * memorise which items were right in training, and held-out tasks lose.
   */
  candidateSlot?: 'element' | 'action';
  /** Width of the hashed template-conjunction block ({@link conjunctionKeys}); 0 turns it off. Default 64. */
  conjunctionDim?: number;
  /** `matching` mode: embed {@link situationText} (default) or, with false, {@link stateText} as the state. */
  situation?: boolean;
}

/**
 * Embeds states and candidates into {@link Decision}s, caching embeddings by text (action texts
 * and observations repeat a lot within and across episodes).
 *
 * Layout in the default `matching` mode, with D = {@link dim} (the embedder's), F =
 * {@link MATCH_FEATURES}.length and C = {@link conjunctionDim} (so {@link matchDim} = F + C):
 *
 *   candidate (actionDim = D + F + C):  [ embed(action)       | match features (F) | conjunctions (C) ]
 *   state     (stateDim = 2D + F + C):  [ embed(instruction)  | ones (F + C)                          | embed(situation) ]
 *
 * - Opaque identifiers ({@link isOpaqueId}: product ids, hashes) are replaced by a placeholder in
 *   every embedded text, so candidates that differ only by an id get the same embedding.
 * - The match features compare the candidate (the action and the observation line it acts on,
 *   {@link candidateText}) with the instruction: word, slot, bigram and number overlap, numeric
 *   bounds, embedding cosine; its rank among candidates of the same template; whether and how
 *   recently it was taken in the episode. See {@link MATCH_FEATURES}.
 * - The conjunction block hashes template-specific keys ({@link conjunctionKeys}).
 * - The situation is the latest actions and the observation without the instruction's lines
 *   ({@link situationText}); the instruction has its own slot.
 *
 * The head's `product` interaction multiplies a candidate with the first actionDim state
 * features: the instruction's embedding (a candidate-versus-instruction term) and ones (the
 * match and conjunction features as they are). Any {@link Embedder} (hashed, WebLLM) fills the
 * D-wide slots; the match features are lexical, except `similarity.*` (cosines of the same
 * embeddings). `text` mode keeps the earlier layout: [embed(state text)] and
 * [embed(candidate text)], stateDim = actionDim = D, nothing neutralised.
 */
export class Featurizer {
  private readonly cache = new Map<string, Float32Array>();
  private readonly options: FeaturizerOptions;
  private readonly disabled: ReadonlySet<string>;
  private readonly conjunctionKinds: ReadonlySet<ConjunctionKind>;
  private readonly zeroed: readonly number[];

  constructor(
    readonly embedder: Embedder,
    options: FeaturizerOptions = {},
  ) {
    this.options = options;
    const size = options.cacheSize ?? 50_000;
    if (!(Number.isInteger(size) && size >= 0)) throw new RangeError(`cacheSize must be an integer >= 0, got ${size}`);
    const mode = options.mode ?? 'matching';
    if (mode !== 'matching' && mode !== 'text') throw new RangeError(`mode must be 'matching' or 'text', got ${JSON.stringify(mode)}`);
    const scale = options.matchScale ?? 1;
    if (!(Number.isFinite(scale) && scale >= 0)) throw new RangeError(`matchScale must be a finite number >= 0, got ${scale}`);
    const conj = options.conjunctionDim ?? 64;
    if (!(Number.isInteger(conj) && conj >= 0)) throw new RangeError(`conjunctionDim must be an integer >= 0, got ${conj}`);
    const embeddingScale = options.embeddingScale ?? 1;
    if (!(Number.isFinite(embeddingScale) && embeddingScale >= 0)) throw new RangeError(`embeddingScale must be a finite number >= 0, got ${embeddingScale}`);
    this.disabled = new Set(options.disable ?? []);
    this.conjunctionKinds = new Set(CONJUNCTION_KINDS.filter((k) => !this.disabled.has(`conjunctions.${k}`)));
    this.zeroed = [...this.disabled].flatMap((g) => {
      if (g.startsWith('conjunctions.')) {
        if (!(CONJUNCTION_KINDS as readonly string[]).includes(g.slice('conjunctions.'.length))) throw new RangeError(`unknown conjunction kind ${JSON.stringify(g)}`);
        return [];
      }
      const single = (MATCH_FEATURES as readonly string[]).indexOf(g);
      if (single >= 0) return [single];
      if (!FEATURE_GROUPS.includes(g as FeatureGroup)) throw new RangeError(`unknown feature group or match feature ${JSON.stringify(g)}`);
      return matchFeatureIndices(g as FeatureGroup);
    });
  }

  /** `matching` or `text` (see {@link FeaturizerOptions.mode}). */
  get mode(): 'matching' | 'text' {
    return this.options.mode ?? 'matching';
  }

  /** Width of one embedded text (the embedder's dim): the instruction, state and candidate slots. */
  get dim(): number {
    return this.embedder.dim;
  }

  /** Width of the hashed conjunction block (0 in `text` mode). */
  get conjunctionDim(): number {
    return this.mode === 'text' ? 0 : (this.options.conjunctionDim ?? 64);
  }

  /** Length of the feature block of a candidate vector: the match features and the conjunction block (0 in `text` mode). */
  get matchDim(): number {
    return this.mode === 'text' ? 0 : MATCH_FEATURES.length + this.conjunctionDim;
  }

  /** Where match feature `name` sits in a candidate vector (`matching` mode). */
  featureIndex(name: MatchFeatureName): number {
    if (this.mode === 'text') throw new RangeError("a 'text' featurizer has no match features");
    const i = (MATCH_FEATURES as readonly string[]).indexOf(name);
    if (i < 0) throw new RangeError(`unknown match feature ${JSON.stringify(name)}`);
    return this.dim + i;
  }

  /** Length of a candidate vector: dim + matchDim. */
  get actionDim(): number {
    return this.dim + this.matchDim;
  }

  /** Length of a state vector: 2 dim + matchDim (`text` mode: dim). */
  get stateDim(): number {
    return this.mode === 'text' ? this.dim : 2 * this.dim + this.matchDim;
  }

  /** Embeddings of `texts` in order, through the cache. */
  async embed(texts: readonly string[]): Promise<Float32Array[]> {
    const missing = [...new Set(texts.filter((t) => !this.cache.has(t)))];
    const fresh = new Map<string, Float32Array>();
    if (missing.length > 0) {
      const vectors = await this.embedder.embed(missing);
      if (vectors.length !== missing.length) throw new Error(`embedder ${this.embedder.id} returned ${vectors.length} vectors for ${missing.length} texts`);
      missing.forEach((t, i) => {
        const v = vectors[i] as Float32Array;
        if (v.length !== this.dim) throw new Error(`embedder ${this.embedder.id} returned a vector of length ${v.length}, expected ${this.dim}`);
        fresh.set(t, v);
      });
    }
    const out = texts.map((t) => fresh.get(t) ?? (this.cache.get(t) as Float32Array));
    const limit = this.options.cacheSize ?? 50_000;
    for (const [t, v] of fresh) {
      if (limit === 0) break;
      if (this.cache.size >= limit) this.cache.delete(this.cache.keys().next().value as string);
      this.cache.set(t, v);
    }
    return out;
  }

  /** One decision per context (candidates: the observation's admissible actions, in order). */
  async decisions(contexts: readonly StateContext[], priors?: readonly (Float32Array | undefined)[]): Promise<Decision[]> {
    for (const c of contexts) {
      if (c.observation.actions.length === 0) throw new RangeError(`a state without admissible actions cannot be a decision: ${JSON.stringify(c.observation.text.slice(0, 80))}`);
    }
    const decisions = this.mode === 'text' ? await this.textDecisions(contexts) : await this.matchingDecisions(contexts);
    decisions.forEach((d, i) => {
      const prior = priors?.[i];
      if (prior) d.prior = prior;
    });
    return decisions;
  }

  private async textDecisions(contexts: readonly StateContext[]): Promise<Decision[]> {
    const states = contexts.map((c) => stateText(c, this.options));
    const candidates = contexts.map((c) => candidateTexts(c.observation.text, c.observation.actions));
    const vectors = await this.embed([...states, ...candidates.flat()]);
    let at = contexts.length;
    return contexts.map((_, i) => {
      const k = (candidates[i] as string[]).length;
      const d: Decision = { state: vectors[i] as Float32Array, candidates: vectors.slice(at, at + k) };
      at += k;
      return d;
    });
  }

  private async matchingDecisions(contexts: readonly StateContext[]): Promise<Decision[]> {
    const clean = this.disabled.has('ids') ? (t: string) => t : (t: string) => neutralizeIds(t);
    const raw = contexts.map((c) => candidateTexts(c.observation.text, c.observation.actions));
    const n = contexts.length;
    const actionSlot = (this.options.candidateSlot ?? 'action') === 'action';
    const texts = [...contexts.map((c) => clean(c.instruction)), ...contexts.map((c) => clean(this.options.situation === false ? stateText(c, this.options) : situationText(c, this.options))), ...raw.flat().map(clean)];
    const total = raw.reduce((a, r) => a + r.length, 0);
    // A loop, not push(...all): behaviour cloning featurizes every candidate of the offline data at
    // once (household: about 90k), more arguments than a worker's stack holds.
    if (actionSlot) for (const c of contexts) for (const a of c.observation.actions) texts.push(clean(a));
    const vectors = await this.embed(texts);
    const d = this.dim;
    const f = this.matchDim;
    const scale = this.options.matchScale ?? 1;
    const useInstruction = !this.disabled.has('instruction');
    const es = this.options.embeddingScale ?? 1;
    const useSituation = !this.disabled.has('situation');
    const useCandidate = !this.disabled.has('candidate');
    const useConjunctions = !this.disabled.has('conjunctions');
    let at = 2 * n;
    return contexts.map((c, i) => {
      const instruction = vectors[i] as Float32Array;
      const state = new Float32Array(this.stateDim);
      if (useInstruction) setScaled(state, instruction, 0, es);
      state.fill(1, d, d + f);
      if (useSituation) setScaled(state, vectors[n + i] as Float32Array, d + f, es);
      const elementTexts = raw[i] as string[];
      const k = elementTexts.length;
      const elements = vectors.slice(at, at + k);
      const slots = actionSlot ? vectors.slice(at + total, at + total + k) : elements;
      at += k;
      const profile = instructionProfile(c.instruction);
      const history = (c.history ?? []).map((h) => h.action);
      const match = matchFeatures(
        profile,
        c.observation.actions.map((action, j) => ({ action, text: elementTexts[j] as string })),
        history,
        elements,
        instruction,
      );
      const keys = useConjunctions ? conjunctionKeys(profile, c.observation.actions, history, observationWithoutInstruction(c), this.conjunctionKinds, actionsTakenHere(c.history ?? [], c.observation)) : null;
      const candidateVectors = slots.map((e, j) => {
        const v = new Float32Array(d + f);
        if (useCandidate) setScaled(v, e, 0, es);
        const m = match[j] as Float32Array;
        for (const z of this.zeroed) m[z] = 0;
        for (let x = 0; x < m.length; x++) v[d + x] = (m[x] as number) * scale;
        const own = keys?.[j];
        if (own && own.length > 0) hashKeys(own, v.subarray(d + m.length, d + f), scale / Math.sqrt(own.length));
        return v;
      });
      return { state, candidates: candidateVectors };
    });
  }
}
