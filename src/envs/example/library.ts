/**
 * An example environment module (`--env-module src/envs/example/library.ts`): a small library.
 * The agent is asked to borrow "the <genre> book by <author>": it walks to the right shelf, takes
 * the book by that author (the same author may have books on other shelves), carries it to the
 * front desk and checks it out. Every observation lists the admissible actions. Reward 1 when the
 * checked-out book is the one asked for, 0 otherwise; at most 10 steps. It has an expert, which
 * reads the goal, and a goal-blind demonstrator, which reads only the instruction and what it is
 * shown.
 *
 * It stands alone, as a user's module would: it imports nothing at run time (types only), and
 * everything follows from each task's goal, so the same task always plays the same way.
 */
import type { EnvironmentModule, ModuleEnvironment, ModuleStepResult, ModuleTask } from '../module.ts';
import type { Observation, Task, TaskValidation } from '../../core/types.ts';

export const name: EnvironmentModule['name'] = 'library';
export const description: EnvironmentModule['description'] = 'a small library: find the book asked for on its shelf and check it out at the front desk';
export const maxSteps: EnvironmentModule['maxSteps'] = 10;

const GENRES = ['fantasy', 'history', 'science', 'poetry', 'travel', 'cooking'] as const;
const AUTHORS = ['ada lane', 'omar reyes', 'mina park', 'lev orlov', 'ines costa', 'tom okafor', 'rosa lind', 'kai moreau', 'nora heller', 'sam quint', 'eli marsh', 'yuki sato'] as const;
const ADJECTIVES = ['silent', 'golden', 'hidden', 'last', 'northern', 'bright', 'quiet', 'broken', 'patient', 'distant'] as const;
const NOUNS = ['river', 'garden', 'lantern', 'harbor', 'mountain', 'kitchen', 'archive', 'orchard', 'compass', 'island'] as const;
const BOOKS_PER_SHELF = 4;

interface Goal {
  genre: string;
  author: string;
  /** Seed of the shelves' layout. */
  layout: number;
}

interface Book {
  title: string;
  author: string;
}

/** A small deterministic generator (mulberry32): the module needs no library. */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const pick = <T>(r: () => number, xs: readonly T[]): T => xs[Math.floor(r() * xs.length)] as T;

/** Test tasks ask for (genre, author) pairs that train tasks never do: one pair in four. */
function pairSplit(genre: string, author: string): 'train' | 'test' {
  return (GENRES.indexOf(genre as (typeof GENRES)[number]) * 5 + AUTHORS.indexOf(author as (typeof AUTHORS)[number])) % 4 === 0 ? 'test' : 'train';
}

/** The shelves of a task: the asked-for book on its genre's shelf, the author's other books elsewhere, distinct titles. */
function shelves(goal: Goal): Map<string, Book[]> {
  const r = rng(goal.layout);
  const used = new Set<string>();
  const title = (): string => {
    for (;;) {
      const t = `the ${pick(r, ADJECTIVES)} ${pick(r, NOUNS)}`;
      if (!used.has(t)) {
        used.add(t);
        return t;
      }
    }
  };
  const result = new Map<string, Book[]>();
  for (const genre of GENRES) {
    const authors = new Set<string>();
    const books: Book[] = [];
    while (books.length < BOOKS_PER_SHELF) {
      const author = pick(r, AUTHORS);
      // One book per author on a shelf, and the asked-for author only on the asked-for shelf's target slot or as a decoy elsewhere.
      if (authors.has(author) || (genre === goal.genre && author === goal.author)) continue;
      authors.add(author);
      books.push({ title: title(), author });
    }
    if (genre === goal.genre) books[Math.floor(r() * BOOKS_PER_SHELF)] = { title: title(), author: goal.author };
    result.set(genre, books);
  }
  return result;
}

function parseGoal(goal: unknown): Goal | null {
  if (goal === null || typeof goal !== 'object' || Array.isArray(goal)) return null;
  const g = goal as Record<string, unknown>;
  if (typeof g.genre !== 'string' || !(GENRES as readonly string[]).includes(g.genre)) return null;
  if (typeof g.author !== 'string' || !(AUTHORS as readonly string[]).includes(g.author)) return null;
  if (typeof g.layout !== 'number' || !Number.isInteger(g.layout)) return null;
  return { genre: g.genre, author: g.author, layout: g.layout };
}

export const tasks: EnvironmentModule['tasks'] = ({ split, count, seed }) => {
  const r = rng((seed * 2654435761) ^ (split === 'test' ? 0x9e3779b9 : 0x85ebca6b));
  const out: ModuleTask[] = [];
  for (let i = 0; out.length < count; i++) {
    const genre = pick(r, GENRES);
    const author = pick(r, AUTHORS);
    const layout = Math.floor(r() * 2 ** 31);
    if (pairSplit(genre, author) !== split) continue;
    out.push({ id: `library-${split}-${seed}-${out.length}`, instruction: `borrow the ${genre} book by ${author}`, goal: { genre, author, layout } });
  }
  return out;
};

export const validateTask: EnvironmentModule['validateTask'] = (task: Task): TaskValidation => {
  const goal = parseGoal(task.goal);
  if (goal === null) return { ok: false, reason: 'the goal must be {genre, author, layout} with a known genre and author and an integer layout' };
  if (pairSplit(goal.genre, goal.author) !== task.split) return { ok: false, reason: `${goal.genre} books by ${goal.author} belong to the ${pairSplit(goal.genre, goal.author)} split` };
  return { ok: true };
};

const bookLabel = (b: Book): string => `${b.title} by ${b.author}`;

class Library implements ModuleEnvironment {
  private goal: Goal | null = null;
  private books = new Map<string, Book[]>();
  /** 'lobby', 'desk' or a genre (its shelf). */
  private place = 'lobby';
  private holding: Book | null = null;
  private steps = 0;
  /** What the agent reads: the demonstrator's only source besides the observations. */
  private instruction = '';

  reset(task: Task): Observation {
    const goal = parseGoal(task.goal);
    if (goal === null) throw new Error(`task ${task.id} has no library goal`);
    this.goal = goal;
    this.instruction = task.instruction;
    this.books = shelves(goal);
    this.place = 'lobby';
    this.holding = null;
    this.steps = 0;
    return this.observe('You are in the library lobby.');
  }

  private actions(): string[] {
    const moves = [...GENRES.filter((g) => g !== this.place).map((g) => `go to ${g} shelf`), ...(this.place === 'desk' ? [] : ['go to front desk'])];
    const shelf = this.books.get(this.place);
    const here = shelf ? shelf.filter((b) => b !== this.holding).map((b) => `take ${bookLabel(b)}`) : [];
    const desk = this.place === 'desk' && this.holding ? [`check out ${this.holding.title}`] : [];
    return [...desk, ...here, ...moves];
  }

  private observe(text: string): Observation {
    const shelf = this.books.get(this.place);
    const where = shelf ? ` The ${this.place} shelf holds: ${shelf.map(bookLabel).join('; ')}.` : this.place === 'desk' ? ' The librarian waits at the front desk.' : '';
    const hands = this.holding ? ` You hold ${bookLabel(this.holding)}.` : ' Your hands are empty.';
    return { text: `${text}${where}${hands}`, actions: this.actions() };
  }

  step(action: string): ModuleStepResult {
    const result = this.act(action);
    // The contract: the episode ends at the step limit at the latest, with no reward.
    if (++this.steps >= maxSteps && !result.done) return { ...result, observation: { text: `${result.observation.text} The library closes.`, actions: [] }, done: true, info: { ...result.info, success: false, message: 'step limit reached' } };
    return result;
  }

  private act(action: string): ModuleStepResult {
    if (this.goal === null) throw new Error('step() before reset()');
    const a = action.trim().toLowerCase();
    if (!this.actions().includes(a)) return { observation: this.observe(`Nothing happens: "${action}" is not possible here.`), reward: 0, done: false, info: { valid: false, message: 'not an admissible action' } };
    if (a.startsWith('go to ')) {
      this.place = a === 'go to front desk' ? 'desk' : a.slice('go to '.length, -' shelf'.length);
      return { observation: this.observe(`You walk to the ${this.place === 'desk' ? 'front desk' : `${this.place} shelf`}.`), reward: 0, done: false };
    }
    if (a.startsWith('take ')) {
      const book = (this.books.get(this.place) ?? []).find((b) => `take ${bookLabel(b)}` === a) as Book;
      const put = this.holding ? ` You put back ${this.holding.title}.` : '';
      this.holding = book;
      return { observation: this.observe(`You take ${book.title}.${put}`), reward: 0, done: false };
    }
    // check out: the episode ends either way.
    const right = this.holding !== null && this.holding.author === this.goal.author && (this.books.get(this.goal.genre) ?? []).includes(this.holding);
    return {
      observation: { text: `You check out ${this.holding?.title ?? 'nothing'}. ${right ? 'It is the book you were asked for.' : 'It is not the book you were asked for.'}`, actions: [] },
      reward: right ? 1 : 0,
      done: true,
      info: { success: right, message: right ? 'checked out the right book' : 'checked out the wrong book' },
    };
  }

  expertAction(): string {
    if (this.goal === null) throw new Error('expertAction() before reset()');
    const target = (this.books.get(this.goal.genre) ?? []).find((b) => b.author === this.goal?.author) as Book;
    if (this.holding !== target) return this.place === this.goal.genre ? `take ${bookLabel(target)}` : `go to ${this.goal.genre} shelf`;
    return this.place === 'desk' ? `check out ${target.title}` : 'go to front desk';
  }

  /** Goal-blind: the genre and author come from the instruction, the book from the shelf it is shown. */
  demonstratorAction(): string {
    const asked = /the (\S+) book by (.+)$/.exec(this.instruction);
    const actions = this.actions();
    if (asked === null) return actions[0] ?? '';
    const [, genre, author] = asked as unknown as [string, string, string];
    if (this.holding !== null && this.holding.author === author) return this.place === 'desk' ? `check out ${this.holding.title}` : 'go to front desk';
    if (this.place !== genre) return `go to ${genre} shelf`;
    return actions.find((a) => a.startsWith('take ') && a.endsWith(` by ${author}`)) ?? actions[0] ?? '';
  }
}

export const create: EnvironmentModule['create'] = () => new Library();
