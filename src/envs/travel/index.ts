/**
 * An environment module (`--env-module src/envs/travel/index.ts`): booking a flight through a
 * four-page form. The instruction names a route, a date, a traveller, a seat, a number of checked
 * bags, a price limit and sometimes a fare condition (non-stop, refundable). Page 1 is the search
 * form; page 2 lists the fares found (airline, times, price only); a fare's small print (stops,
 * bags included, refundability) shows only once it is opened; page 3 is the passenger form;
 * page 4 reviews the booking before it is confirmed. Every page has `back`, and a form submitted
 * with a missing or impossible entry stays put with a validation message. Exactly one fare of the
 * asked-for search fits the request, so other fares under the price limit must be opened and
 * passed over. Reward 1 when the confirmed booking fits the request, 0 otherwise.
 *
 * It stands alone, as a user's module would: it imports nothing at run time (types only); the
 * fares follow from a world seed and the search, never from what is asked for.
 */
import type { EnvironmentModule, ModuleEnvironment, ModuleStepResult, ModuleTask } from '../module.ts';
import type { Observation, Task, TaskValidation } from '../../core/types.ts';

export const name: EnvironmentModule['name'] = 'travel';
export const description: EnvironmentModule['description'] = 'a flight-booking form: search a route and date, open fares to read their small print, fill in the passenger page, review and confirm';
export const maxSteps: EnvironmentModule['maxSteps'] = 24;

const CITIES = ['lisbon', 'rome', 'oslo', 'vienna', 'dublin', 'athens'] as const;
const DATES = ['jun 02', 'jun 03', 'jun 04', 'jun 05', 'jun 06'] as const;
const AIRLINES = ['aerolux', 'skyjet', 'nordair', 'bluewing', 'transalpa', 'coastline'] as const;
const TRAVELLERS = ['mia chen', 'omar haddad', 'lena vogel', 'raj patel'] as const;
const SEATS = ['window', 'aisle'] as const;
const NEEDS = ['non-stop', 'refundable', 'none'] as const;
const FARES_PER_SEARCH = 5;
const MAX_BAGS = 2;

type Need = (typeof NEEDS)[number];

interface Goal {
  /** Seed of the fares every search finds. */
  world: number;
  from: string;
  to: string;
  date: string;
  traveller: string;
  seat: string;
  bags: number;
  maxPrice: number;
  need: Need;
}

interface Fare {
  label: string;
  arrive: string;
  price: number;
  stops: number;
  bags: number;
  refundable: boolean;
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
const clock = (minutes: number): string => `${String(Math.floor(minutes / 60) % 24).padStart(2, '0')}:${String(minutes % 60).padStart(2, '0')}`;

/** Test tasks ask for (from, to) routes that train tasks never do: 6 of the 30. */
function routeSplit(from: string, to: string): 'train' | 'test' {
  return (CITIES.indexOf(from as (typeof CITIES)[number]) * 6 + CITIES.indexOf(to as (typeof CITIES)[number])) % 5 === 0 ? 'test' : 'train';
}

/** The fares a search finds: a function of the world seed and the search alone, in departure order. */
function faresFor(world: number, from: string, to: string, date: string): Fare[] {
  const r = rng(Math.imul(world ^ 0x27d4eb2d, 31) + CITIES.indexOf(from as (typeof CITIES)[number]) * 1009 + CITIES.indexOf(to as (typeof CITIES)[number]) * 101 + DATES.indexOf(date as (typeof DATES)[number]) * 7);
  const departures = new Set<number>();
  while (departures.size < FARES_PER_SEARCH) departures.add(6 * 60 + Math.floor(r() * 60) * 15);
  return [...departures]
    .sort((a, b) => a - b)
    .map((depart) => {
      const stops = r() < 0.5 ? 0 : 1;
      const duration = 120 + Math.floor(r() * 8) * 15 + stops * 120;
      return { label: `${pick(r, AIRLINES)} ${clock(depart)}`, arrive: clock(depart + duration), price: 90 + Math.floor(r() * 300), stops, bags: Math.floor(r() * (MAX_BAGS + 1)), refundable: r() < 0.4 };
    });
}

const fits = (f: Fare, g: Goal): boolean => f.price <= g.maxPrice && f.bags >= g.bags && (g.need !== 'non-stop' || f.stops === 0) && (g.need !== 'refundable' || f.refundable);

const bagsText = (n: number): string => (n === 0 ? 'no checked bags' : n === 1 ? '1 checked bag' : `${n} checked bags`);

/** The instruction states every field of the goal but the world seed. */
function instructionFor(g: Goal): string {
  const need = g.need === 'non-stop' ? ', non-stop' : g.need === 'refundable' ? ', refundable fare' : '';
  return `book a flight from ${g.from} to ${g.to} on ${g.date} for ${g.traveller}: ${g.seat} seat, ${bagsText(g.bags)}${need}, at most $${g.maxPrice}`;
}

function parseGoal(goal: unknown): Goal | null {
  if (goal === null || typeof goal !== 'object' || Array.isArray(goal)) return null;
  const g = goal as Record<string, unknown>;
  const oneOf = (v: unknown, xs: readonly string[]): v is string => typeof v === 'string' && xs.includes(v);
  if (typeof g.world !== 'number' || !Number.isInteger(g.world)) return null;
  if (!oneOf(g.from, CITIES) || !oneOf(g.to, CITIES) || g.from === g.to || !oneOf(g.date, DATES)) return null;
  if (!oneOf(g.traveller, TRAVELLERS) || !oneOf(g.seat, SEATS) || !oneOf(g.need, NEEDS)) return null;
  if (typeof g.bags !== 'number' || !Number.isInteger(g.bags) || g.bags < 0 || g.bags > MAX_BAGS) return null;
  if (typeof g.maxPrice !== 'number' || !Number.isInteger(g.maxPrice) || g.maxPrice <= 0) return null;
  return { world: g.world, from: g.from, to: g.to, date: g.date, traveller: g.traveller, seat: g.seat, bags: g.bags, maxPrice: g.maxPrice, need: g.need as Need };
}

/** Why a goal cannot be a task (null when it can): exactly one fare fits, and another is under the limit. */
function goalProblem(g: Goal): string | null {
  const fares = faresFor(g.world, g.from, g.to, g.date);
  const fitting = fares.filter((f) => fits(f, g)).length;
  if (fitting !== 1) return `${fitting} fares fit the request, not exactly one`;
  if (fares.filter((f) => f.price <= g.maxPrice).length < 2) return 'no other fare is under the price limit, so nothing needs opening';
  return null;
}

export const tasks: EnvironmentModule['tasks'] = ({ split, count, seed }) => {
  const r = rng((seed * 2654435761) ^ (split === 'test' ? 0x5bd1e995 : 0x1b873593));
  const out: ModuleTask[] = [];
  while (out.length < count) {
    const from = pick(r, CITIES);
    const to = pick(r, CITIES);
    const world = Math.floor(r() * 2 ** 31);
    const date = pick(r, DATES);
    if (from === to || routeSplit(from, to) !== split) continue;
    const target = pick(r, faresFor(world, from, to, date));
    const goal: Goal = { world, from, to, date, traveller: pick(r, TRAVELLERS), seat: pick(r, SEATS), bags: Math.floor(r() * (target.bags + 1)), maxPrice: Math.ceil(target.price / 10) * 10, need: pick(r, NEEDS) };
    if (!fits(target, goal) || goalProblem(goal) !== null) continue;
    out.push({ id: `travel-${split}-${seed}-${out.length}`, instruction: instructionFor(goal), goal: { ...goal } });
  }
  return out;
};

export const validateTask: EnvironmentModule['validateTask'] = (task: Task): TaskValidation => {
  const goal = parseGoal(task.goal);
  if (goal === null) return { ok: false, reason: `the goal must be {world, from, to, date, traveller, seat, bags, maxPrice, need} with known cities (from and to differ), date, traveller, seat (${SEATS.join('/')}), need (${NEEDS.join('/')}), bags 0-${MAX_BAGS} and integers for world and maxPrice` };
  if (routeSplit(goal.from, goal.to) !== task.split) return { ok: false, reason: `the route ${goal.from} to ${goal.to} belongs to the ${routeSplit(goal.from, goal.to)} split` };
  if (task.instruction !== instructionFor(goal)) return { ok: false, reason: `the instruction must state the goal as "${instructionFor(goal)}"` };
  const problem = goalProblem(goal);
  return problem === null ? { ok: true } : { ok: false, reason: problem };
};

type Page = 'search' | 'results' | 'details' | 'passenger' | 'review';

const PAGE_NAMES: Record<Page, string> = { search: 'page 1 of 4', results: 'page 2 of 4', details: 'page 2 of 4', passenger: 'page 3 of 4', review: 'page 4 of 4' };

/** One booking form. */
class Travel implements ModuleEnvironment {
  private goal: Goal | null = null;
  private instruction = '';
  /** What the agent has seen: every observation so far and the action before it (none before the first). */
  private seen: SeenStep[] = [];
  private page: Page = 'search';
  private from: string | null = null;
  private to: string | null = null;
  private date: string | null = null;
  /** The search whose fares page 2 shows. */
  private searched: { from: string; to: string; date: string; fares: Fare[] } | null = null;
  private opened: Fare | null = null;
  private selected: Fare | null = null;
  private traveller: string | null = null;
  private seat: string | null = null;
  private bags = 0;
  private steps = 0;

  reset(task: Task): Observation {
    const goal = parseGoal(task.goal);
    if (goal === null) throw new Error(`task ${task.id} has no travel goal`);
    this.goal = goal;
    this.instruction = task.instruction;
    this.page = 'search';
    this.from = this.to = this.date = null;
    this.searched = this.opened = this.selected = null;
    this.traveller = this.seat = null;
    this.bags = 0;
    this.steps = 0;
    const first = this.observe('');
    this.seen = [{ action: null, observation: first }];
    return first;
  }

  private actions(): string[] {
    switch (this.page) {
      case 'search':
        return [...CITIES.map((c) => `set from ${c}`), ...CITIES.map((c) => `set to ${c}`), ...DATES.map((d) => `set date ${d}`), 'search flights'];
      case 'results':
        return [...(this.searched?.fares ?? []).map((f) => `open ${f.label}`), 'back'];
      case 'details':
        return ['select this fare', 'back'];
      case 'passenger':
        return [...TRAVELLERS.map((t) => `traveller ${t}`), ...SEATS.map((s) => `seat ${s}`), ...Array.from({ length: MAX_BAGS + 1 }, (_, n) => `bags ${n}`), 'continue', 'back'];
      case 'review':
        return ['confirm booking', 'back'];
    }
  }

  private pageText(): string {
    const unset = (v: string | null): string => v ?? '(not set)';
    const where = `Flight booking, ${PAGE_NAMES[this.page]}:`;
    switch (this.page) {
      case 'search':
        return `${where} search. From: ${unset(this.from)}. To: ${unset(this.to)}. Date: ${unset(this.date)}.`;
      case 'results': {
        const s = this.searched as NonNullable<Travel['searched']>;
        return `${where} fares from ${s.from} to ${s.to} on ${s.date}: ${s.fares.map((f) => `${f.label} to ${f.arrive}, $${f.price}`).join('; ')}.`;
      }
      case 'details': {
        const f = this.opened as Fare;
        return `${where} fare ${f.label} to ${f.arrive}, $${f.price}. Stops: ${f.stops === 0 ? 'none' : f.stops}. Checked bags included: ${f.bags}. Refundable: ${f.refundable ? 'yes' : 'no'}.`;
      }
      case 'passenger': {
        const f = this.selected as Fare;
        return `${where} passenger for fare ${f.label}, $${f.price}. Traveller: ${unset(this.traveller)}. Seat: ${unset(this.seat)}. Checked bags: ${this.bags}.`;
      }
      case 'review': {
        const s = this.searched as NonNullable<Travel['searched']>;
        const f = this.selected as Fare;
        return `${where} review. Fare ${f.label} from ${s.from} to ${s.to} on ${s.date}, $${f.price}; traveller ${this.traveller}; ${this.seat} seat; ${bagsText(this.bags)}.`;
      }
    }
  }

  private observe(message: string): Observation {
    return { text: message === '' ? this.pageText() : `${this.pageText()} ${message}`, actions: this.actions() };
  }

  step(action: string): ModuleStepResult {
    const result = this.act(action);
    // The contract: the episode ends at the step limit at the latest, with no reward.
    const out: ModuleStepResult = ++this.steps >= maxSteps && !result.done ? { ...result, observation: { text: `${result.observation.text} The booking page timed out.`, actions: [] }, done: true, info: { ...result.info, success: false, message: 'step limit reached' } } : result;
    this.seen.push({ action, observation: out.observation });
    return out;
  }

  private stay(message: string): ModuleStepResult {
    return { observation: this.observe(message), reward: 0, done: false, info: { message } };
  }

  private act(action: string): ModuleStepResult {
    if (this.goal === null) throw new Error('step() before reset()');
    const a = action.trim().toLowerCase();
    if (!this.actions().includes(a)) return { observation: this.observe(`Nothing happens: "${action}" is not possible on this page.`), reward: 0, done: false, info: { valid: false, message: 'not an admissible action' } };
    if (a === 'back') {
      this.page = this.page === 'results' ? 'search' : this.page === 'details' ? 'results' : this.page === 'passenger' ? 'details' : 'passenger';
      if (this.page === 'details') this.opened = this.selected;
      return { observation: this.observe(''), reward: 0, done: false };
    }
    if (a.startsWith('set ')) {
      const [, field, ...rest] = a.split(' ');
      const value = rest.join(' ');
      if (field === 'from') this.from = value;
      else if (field === 'to') this.to = value;
      else this.date = value;
      return { observation: this.observe(''), reward: 0, done: false };
    }
    if (a === 'search flights') {
      const missing = [this.from === null ? 'from' : '', this.to === null ? 'to' : '', this.date === null ? 'date' : ''].filter((m) => m !== '');
      if (missing.length > 0) return this.stay(`Error: please fill in ${missing.join(', ')}.`);
      if (this.from === this.to) return this.stay('Error: from and to must be different cities.');
      const [from, to, date] = [this.from as string, this.to as string, this.date as string];
      this.searched = { from, to, date, fares: faresFor(this.goal.world, from, to, date) };
      this.page = 'results';
      return { observation: this.observe(''), reward: 0, done: false };
    }
    if (a.startsWith('open ')) {
      this.opened = (this.searched?.fares ?? []).find((f) => `open ${f.label}` === a) as Fare;
      this.page = 'details';
      return { observation: this.observe(''), reward: 0, done: false };
    }
    if (a === 'select this fare') {
      this.selected = this.opened;
      this.page = 'passenger';
      return { observation: this.observe(''), reward: 0, done: false };
    }
    if (a.startsWith('traveller ') || a.startsWith('seat ') || a.startsWith('bags ')) {
      const value = a.slice(a.indexOf(' ') + 1);
      if (a.startsWith('traveller ')) this.traveller = value;
      else if (a.startsWith('seat ')) this.seat = value;
      else this.bags = Number(value);
      return { observation: this.observe(''), reward: 0, done: false };
    }
    if (a === 'continue') {
      const missing = [this.traveller === null ? 'traveller' : '', this.seat === null ? 'seat' : ''].filter((m) => m !== '');
      if (missing.length > 0) return this.stay(`Error: please choose ${missing.join(', ')}.`);
      const allowed = (this.selected as Fare).bags;
      if (this.bags > allowed) return this.stay(`Error: this fare includes only ${bagsText(allowed).replace('no checked bags', '0 checked bags')}.`);
      this.page = 'review';
      return { observation: this.observe(''), reward: 0, done: false };
    }
    // confirm booking: the episode ends either way.
    const g = this.goal;
    const s = this.searched as NonNullable<Travel['searched']>;
    const right = s.from === g.from && s.to === g.to && s.date === g.date && fits(this.selected as Fare, g) && this.traveller === g.traveller && this.seat === g.seat && this.bags === g.bags;
    return {
      observation: { text: `Booking confirmed: ${(this.selected as Fare).label} from ${s.from} to ${s.to} on ${s.date} for ${this.traveller}. ${right ? 'It is the booking you were asked for.' : 'It is not the booking you were asked for.'}`, actions: [] },
      reward: right ? 1 : 0,
      done: true,
      info: { success: right, message: right ? 'booked what was asked for' : 'booked something else' },
    };
  }

  /** The next action towards the goal from any state (it reads the goal). */
  expertAction(): string {
    const g = this.goal;
    if (g === null) throw new Error('expertAction() before reset()');
    const routeRight = this.searched !== null && this.searched.from === g.from && this.searched.to === g.to && this.searched.date === g.date;
    const target = routeRight ? (this.searched?.fares.find((f) => fits(f, g)) ?? null) : null;
    switch (this.page) {
      case 'search':
        if (this.from !== g.from) return `set from ${g.from}`;
        if (this.to !== g.to) return `set to ${g.to}`;
        if (this.date !== g.date) return `set date ${g.date}`;
        return 'search flights';
      case 'results':
        return target === null ? 'back' : `open ${target.label}`;
      case 'details':
        return target !== null && this.opened === target ? 'select this fare' : 'back';
      case 'passenger':
        if (target === null || this.selected !== target) return 'back';
        if (this.traveller !== g.traveller) return `traveller ${g.traveller}`;
        if (this.seat !== g.seat) return `seat ${g.seat}`;
        if (this.bags !== g.bags) return `bags ${g.bags}`;
        return 'continue';
      case 'review':
        return target !== null && this.selected === target && this.traveller === g.traveller && this.seat === g.seat && this.bags === g.bags ? 'confirm booking' : 'back';
    }
  }

  /** A goal-blind traveller's next action: it reads only the instruction and what was shown so far. */
  demonstratorAction(): string {
    return demonstrate(this.instruction, this.seen);
  }
}

/** One step of what the agent saw: the action taken (null before the first observation) and the observation after it. */
export interface SeenStep {
  action: string | null;
  observation: Observation;
}

/** How many fares the demonstrator opens before it settles for the cheapest it opened. */
const PATIENCE = 3;

const INSTRUCTION_RE = /^book a flight from (\S+) to (\S+) on (\S+ \d+) for (.+): (\S+) seat, (no|\d) checked bags?(, non-stop|, refundable fare)?, at most \$(\d+)$/;
const FARE_RE = /^(\S+ \d\d:\d\d) to \d\d:\d\d, \$(\d+)$/;
const RESULTS_RE = /: fares from (\S+) to (\S+) on (\S+ \d+): ([^.]*)\./;
const DETAIL_RE = /: fare (\S+ \d\d:\d\d) to \d\d:\d\d, \$\d+\. Stops/;
const PASSENGER_RE = /: passenger for fare (\S+ \d\d:\d\d),/;

/** The fares a results page lists, in its order. */
function parseFares(list: string): { label: string; price: number }[] {
  return list.split('; ').flatMap((s) => {
    const f = FARE_RE.exec(s);
    return f ? [{ label: f[1] as string, price: Number(f[2]) }] : [];
  });
}

/**
 * The demonstrator: a traveller who fills the search form, opens the fares under the price limit
 * in the listed order, reads each one's stops and refundability (not the baggage line), and
 * selects the first that fits; a bag error on the passenger page sends it back to the next fare.
 * After {@link PATIENCE} fares, or when none is left to open, it settles for the cheapest it
 * opened, dropping bags if it must. It sees the instruction and the observations so far, never
 * the goal.
 */
export function demonstrate(instruction: string, seen: readonly SeenStep[]): string {
  const last = seen[seen.length - 1];
  if (last === undefined) throw new Error('demonstrate() needs the first observation');
  const { text, actions } = last.observation;
  const m = INSTRUCTION_RE.exec(instruction);
  if (m === null) return actions[0] ?? 'back';
  const [, from, to, date, traveller, seat, bagWord, needWord, limit] = m as unknown as string[];
  const bags = bagWord === 'no' ? 0 : Number(bagWord);
  const maxPrice = Number(limit);
  const need = needWord === ', non-stop' ? 'non-stop' : needWord === ', refundable fare' ? 'refundable' : 'none';
  const field = (label: string, within = text): string | null => new RegExp(`${label}: ([^.]+)\\.`).exec(within)?.[1] ?? null;

  // What it remembers: the fares listed for its search, the fares it opened and what their pages said, which failed on bags.
  let listed: { label: string; price: number }[] = [];
  const details = new Map<string, string>();
  const bagRejected = new Set<string>();
  for (const step of seen) {
    const t = step.observation.text;
    const results = RESULTS_RE.exec(t);
    if (results && results[1] === from && results[2] === to && results[3] === date) listed = parseFares(results[4] as string);
    const detail = DETAIL_RE.exec(t);
    if (step.action?.startsWith('open ') && detail) details.set(detail[1] as string, t);
    const bagError = PASSENGER_RE.exec(t);
    if (step.action === 'continue' && bagError && t.includes('this fare includes only')) bagRejected.add(bagError[1] as string);
  }
  const price = (label: string): number => Number(/\$(\d+)/.exec(details.get(label) ?? '')?.[1] ?? Infinity);
  const looksRight = (label: string): boolean => {
    const d = details.get(label) ?? '';
    return price(label) <= maxPrice && !bagRejected.has(label) && (need !== 'non-stop' || d.includes('Stops: none.')) && (need !== 'refundable' || d.includes('Refundable: yes.'));
  };
  const opened = [...details.keys()];
  const unopened = listed.filter((f) => f.price <= maxPrice && !details.has(f.label));
  const settled = opened.length >= PATIENCE || unopened.length === 0 ? ([...opened].sort((a, b) => Number(bagRejected.has(a)) - Number(bagRejected.has(b)) || price(a) - price(b))[0] ?? null) : null;

  if (text.includes(': search.')) {
    if (field('From') !== from) return `set from ${from}`;
    if (field('To') !== to) return `set to ${to}`;
    if (field('Date') !== date) return `set date ${date}`;
    return 'search flights';
  }
  const results = RESULTS_RE.exec(text);
  if (results) {
    if (results[1] !== from || results[2] !== to || results[3] !== date) return 'back';
    const good = opened.find(looksRight);
    if (good !== undefined) return `open ${good}`;
    if (settled !== null) return `open ${settled}`;
    const next = unopened[0] ?? [...listed].sort((a, b) => a.price - b.price)[0];
    return next === undefined ? 'back' : `open ${next.label}`;
  }
  const detail = DETAIL_RE.exec(text);
  if (detail && actions.includes('select this fare')) {
    const label = detail[1] as string;
    return looksRight(label) || label === settled ? 'select this fare' : 'back';
  }
  const passenger = PASSENGER_RE.exec(text);
  if (passenger) {
    const label = passenger[1] as string;
    if (bagRejected.has(label) && label !== settled) return 'back';
    // Settling for a fare that failed on bags: as many bags as it includes.
    const allowed = Number(field('Checked bags included', details.get(label) ?? '') ?? MAX_BAGS);
    const wantBags = bagRejected.has(label) ? Math.min(bags, allowed) : bags;
    if (field('Traveller') !== traveller) return `traveller ${traveller}`;
    if (field('Seat') !== seat) return `seat ${seat}`;
    if (Number(field('Checked bags')) !== wantBags) return `bags ${wantBags}`;
    return 'continue';
  }
  if (text.includes(': review.')) return 'confirm booking';
  return actions[0] ?? 'back';
}

export const create: EnvironmentModule['create'] = () => new Travel();
