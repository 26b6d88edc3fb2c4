/**
 * Instruction variants: new tasks written from the recorded tasks' instructions alone, for
 * synthetic phases. Aligning two instructions word by word (longest common subsequence) shows
 * where they differ between shared words: each differing stretch pair is two fillers of one slot,
 * the slot named by the shared words either side ("in black ," and "in red ," make `black` and
 * `red` fillers of "in _ ,"). A variant is a recorded instruction with one or two of its slot
 * fillers swapped for other fillers seen in the same slot.
 *
 * Nothing here reads a goal or environment code, and no rule belongs to a domain: a variant has
 * no goal (`null`), so only an experience model can play it (it starts in its root task's
 * recorded world, see `Task.rootId`), never a real environment nor an evaluation.
 */
import { hashString, Rng } from '../core/rng.ts';
import type { JsonValue, Task } from '../core/types.ts';
import { restoreRngGeneratorState, rngGeneratorState, type GenerationReport, type TaskGenerator } from './generator.ts';

/** Settings of {@link InstructionVariantGenerator}. */
export interface VariantConfig {
  /** Seed of the choices (same seed, same seed tasks in, same variants out). */
  seed: number;
  /** Longest differing stretch, in words, that counts as a slot filler. */
  maxFillerWords: number;
  /** Most slots swapped in one variant. */
  maxSwaps: number;
  /** Tries per requested variant. */
  attemptsPerTask: number;
}

const DEFAULT_VARIANT_CONFIG: VariantConfig = { seed: 0, maxFillerWords: 4, maxSwaps: 2, attemptsPerTask: 20 };

/** A word or a punctuation mark of an instruction, with where it stands in the text. */
interface Token {
  text: string;
  start: number;
  end: number;
}

/** Words (numbers with their decimals kept whole) and single punctuation marks. */
export function tokenize(text: string): Token[] {
  return [...text.matchAll(/\p{N}+(?:[.,]\p{N}+)*|[\p{L}\p{N}'_-]+|[^\s\p{L}\p{N}]/gu)].map((m) => ({ text: m[0].toLowerCase(), start: m.index, end: m.index + m[0].length }));
}

/** Pairs of indices of a longest common subsequence of the two token lists. */
function commonSubsequence(a: readonly Token[], b: readonly Token[]): [number, number][] {
  const n = a.length;
  const m = b.length;
  const table = Array.from({ length: n + 1 }, () => new Int32Array(m + 1));
  for (let i = n - 1; i >= 0; i--) {
    const row = table[i] as Int32Array;
    const below = table[i + 1] as Int32Array;
    for (let j = m - 1; j >= 0; j--) row[j] = (a[i] as Token).text === (b[j] as Token).text ? (below[j + 1] as number) + 1 : Math.max(below[j] as number, row[j + 1] as number);
  }
  const pairs: [number, number][] = [];
  let i = 0;
  let j = 0;
  while (i < n && j < m) {
    if ((a[i] as Token).text === (b[j] as Token).text) {
      pairs.push([i, j]);
      i++;
      j++;
    } else if ((table[i + 1] as Int32Array)[j] as number >= ((table[i] as Int32Array)[j + 1] as number)) i++;
    else j++;
  }
  return pairs;
}

const slotKey = (left: string, right: string): string => `${left}\u0000${right}`;
const fillerKey = (tokens: readonly Token[]): string => tokens.map((t) => t.text).join(' ');

/**
 * The slots of a set of instructions: for each (left word, right word) context, the fillers seen
 * between them (normalized text -> the text as written), from every pair's differing stretches.
 */
export function learnSlots(instructions: readonly string[], maxFillerWords = DEFAULT_VARIANT_CONFIG.maxFillerWords): Map<string, Map<string, string>> {
  const slots = new Map<string, Map<string, string>>();
  const tokenized = instructions.map((text) => ({ text, tokens: tokenize(text) }));
  const add = (key: string, source: { text: string; tokens: Token[] }, from: number, to: number): void => {
    const stretch = source.tokens.slice(from, to);
    const filler = fillerKey(stretch);
    let fillers = slots.get(key);
    if (!fillers) slots.set(key, (fillers = new Map()));
    if (!fillers.has(filler)) fillers.set(filler, source.text.slice((stretch[0] as Token).start, (stretch[stretch.length - 1] as Token).end));
  };
  for (let x = 0; x < tokenized.length; x++) {
    for (let y = x + 1; y < tokenized.length; y++) {
      const a = tokenized[x] as { text: string; tokens: Token[] };
      const b = tokenized[y] as { text: string; tokens: Token[] };
      const pairs = commonSubsequence(a.tokens, b.tokens);
      // Consecutive matched words bound a differing stretch on both sides.
      for (let p = 0; p + 1 < pairs.length; p++) {
        const [ai, bi] = pairs[p] as [number, number];
        const [aj, bj] = pairs[p + 1] as [number, number];
        const lengthA = aj - ai - 1;
        const lengthB = bj - bi - 1;
        if (lengthA < 1 || lengthB < 1 || lengthA > maxFillerWords || lengthB > maxFillerWords) continue;
        const key = slotKey((a.tokens[ai] as Token).text, (a.tokens[aj] as Token).text);
        add(key, a, ai + 1, aj);
        add(key, b, bi + 1, bj);
      }
    }
  }
  return slots;
}

/** Where a slot's filler stands in an instruction, and which slot it is. */
interface Occurrence {
  key: string;
  filler: string;
  start: number;
  end: number;
}

function occurrences(tokens: readonly Token[], slots: ReadonlyMap<string, ReadonlyMap<string, string>>, maxFillerWords: number): Occurrence[] {
  const found: Occurrence[] = [];
  for (let l = 0; l < tokens.length; l++) {
    for (let len = 1; len <= maxFillerWords && l + len + 1 < tokens.length; len++) {
      const r = l + len + 1;
      const fillers = slots.get(slotKey((tokens[l] as Token).text, (tokens[r] as Token).text));
      if (!fillers || fillers.size < 2) continue;
      const stretch = tokens.slice(l + 1, r);
      const filler = fillerKey(stretch);
      if (fillers.has(filler)) found.push({ key: slotKey((tokens[l] as Token).text, (tokens[r] as Token).text), filler, start: (stretch[0] as Token).start, end: (stretch[stretch.length - 1] as Token).end });
    }
  }
  return found;
}

const normalized = (text: string): string => tokenize(text).map((t) => t.text).join(' ');

/**
 * The curriculum's data-only generator: variants of the seed tasks' instructions (see the module
 * comment). Slots are learnt from all the seed tasks of one call, so a variant recombines words
 * seen across the recorded instructions. Its random stream carries over between calls.
 */
export class InstructionVariantGenerator implements TaskGenerator {
  readonly kind = 'variants';
  readonly config: Readonly<VariantConfig>;
  private readonly rng: Rng;

  constructor(config: Partial<VariantConfig> = {}) {
    const c = { ...DEFAULT_VARIANT_CONFIG, ...config };
    if (!Number.isFinite(c.seed)) throw new RangeError(`seed must be a finite number, got ${c.seed}`);
    for (const k of ['maxFillerWords', 'maxSwaps', 'attemptsPerTask'] as const) {
      if (!(Number.isInteger(c[k]) && c[k] >= 1)) throw new RangeError(`${k} must be an integer >= 1, got ${c[k]}`);
    }
    this.config = Object.freeze(c);
    this.rng = new Rng(c.seed);
  }

  saveState(): JsonValue {
    return rngGeneratorState(this.rng);
  }

  restoreState(state: JsonValue): void {
    restoreRngGeneratorState(this.rng, state, (s) => new RangeError(`not a variant generator state: ${JSON.stringify(s)}`));
  }

  async generate(seedTasks: readonly Task[], n: number): Promise<Task[]> {
    return (await this.generateWithReport(seedTasks, n)).tasks;
  }

  async generateWithReport(seedTasks: readonly Task[], n: number): Promise<GenerationReport> {
    return this.variants(seedTasks, n);
  }

  /** Synchronous {@link generate} with its report: up to `n` variants, none repeating a seed's or another variant's instruction. */
  variants(seedTasks: readonly Task[], n: number): GenerationReport {
    if (!(Number.isInteger(n) && n >= 0)) throw new RangeError(`n must be an integer >= 0, got ${n}`);
    const report: GenerationReport = { tasks: [], rejected: [], candidates: 0 };
    if (n === 0 || seedTasks.length < 2) return report;
    const { maxFillerWords, maxSwaps } = this.config;
    const slots = learnSlots(seedTasks.map((t) => t.instruction), maxFillerWords);
    const parents = seedTasks
      .map((task) => ({ task, places: occurrences(tokenize(task.instruction), slots, maxFillerWords) }))
      .filter((p) => p.places.length > 0);
    if (parents.length === 0) return report;
    const known = new Set(seedTasks.map((t) => normalized(t.instruction)));
    const attempts = this.config.attemptsPerTask * n;
    for (let a = 0; a < attempts && report.tasks.length < n; a++) {
      const { task: parent, places } = this.rng.pick(parents);
      // One or more slots, not overlapping, each given another filler of its own slot.
      const swaps = this.rng.int(1, Math.min(maxSwaps, places.length));
      const chosen: Occurrence[] = [];
      for (const place of this.rng.sample(places, places.length)) {
        if (chosen.length >= swaps) break;
        if (chosen.some((c) => place.start < c.end && c.start < place.end)) continue;
        chosen.push(place);
      }
      chosen.sort((x, y) => y.start - x.start);
      let instruction = parent.instruction;
      for (const place of chosen) {
        const others = [...(slots.get(place.key) as Map<string, string>).entries()].filter(([f]) => f !== place.filler);
        const [, written] = this.rng.pick(others);
        instruction = instruction.slice(0, place.start) + written + instruction.slice(place.end);
      }
      report.candidates++;
      const key = normalized(instruction);
      if (known.has(key)) {
        report.rejected.push({ parentId: parent.id, kind: 'near-duplicate', reason: 'the variant repeats a known instruction' });
        continue;
      }
      known.add(key);
      report.tasks.push({
        id: `${parent.rootId ?? parent.id}~v${hashString(`${parent.env}:${key}`).toString(36)}`,
        env: parent.env,
        instruction,
        goal: null,
        split: parent.split,
        origin: 'generated',
        parentId: parent.id,
        generation: (parent.generation ?? 0) + 1,
        rootId: parent.rootId ?? parent.id,
      });
    }
    return report;
  }
}
