/**
 * From text to policy features: phi(task, history, observation) for the state and psi(a) for
 * each admissible action, through any {@link Embedder} (the hashed one here, WebLLM's later).
 *
 * A candidate's text is the action plus the observation line that describes it: in an abstract
 * textual state ("[ID] description" lines), `click[B04CY8QBR3]` alone says nothing, while its
 * line "[B04CY8QBR3] Yopiyo Cat Litter - Durable | $28.50" says what clicking it leads to.
 */
import type { Embedder } from '../core/embedding.ts';
import type { Observation } from '../core/types.ts';
import type { Decision } from './input.ts';

/** One earlier step of the episode. */
export interface HistoryEntry {
  action: string;
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
 * Actions without such a line are returned as they are.
 */
export function candidateText(observationText: string, action: string): string {
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

/**
 * Embeds states and candidates into {@link Decision}s, caching embeddings by text (action texts
 * and observations repeat a lot within and across episodes).
 */
export class Featurizer {
  private readonly cache = new Map<string, Float32Array>();

  constructor(
    readonly embedder: Embedder,
    private readonly options: StateTextOptions & { cacheSize?: number } = {},
  ) {
    const size = options.cacheSize ?? 50_000;
    if (!(Number.isInteger(size) && size >= 0)) throw new RangeError(`cacheSize must be an integer >= 0, got ${size}`);
  }

  /** Feature dimension (the embedder's). */
  get dim(): number {
    return this.embedder.dim;
  }

  /** Embeddings of `texts` in order, through the cache. */
  async embed(texts: readonly string[]): Promise<Float32Array[]> {
    const missing = [...new Set(texts.filter((t) => !this.cache.has(t)))];
    const fresh = new Map<string, Float32Array>();
    if (missing.length > 0) {
      const vectors = await this.embedder.embed(missing);
      if (vectors.length !== missing.length) throw new Error(`embedder ${this.embedder.id} returned ${vectors.length} vectors for ${missing.length} texts`);
      missing.forEach((t, i) => fresh.set(t, vectors[i] as Float32Array));
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
    const states = contexts.map((c) => stateText(c, this.options));
    const candidates = contexts.map((c) => {
      if (c.observation.actions.length === 0) throw new RangeError(`a state without admissible actions cannot be a decision: ${JSON.stringify(c.observation.text.slice(0, 80))}`);
      return c.observation.actions.map((a) => candidateText(c.observation.text, a));
    });
    const vectors = await this.embed([...states, ...candidates.flat()]);
    let at = contexts.length;
    return contexts.map((_, i) => {
      const k = (candidates[i] as string[]).length;
      const d: Decision = { state: vectors[i] as Float32Array, candidates: vectors.slice(at, at + k) };
      at += k;
      const prior = priors?.[i];
      if (prior) d.prior = prior;
      return d;
    });
  }
}
