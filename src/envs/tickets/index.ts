/**
 * An environment module (`--env-module src/envs/tickets/index.ts`): a support-ticket triage queue.
 * The instruction names the customers whose tickets to triage; the queue shows only each ticket's
 * customer and a vague subject, so what a ticket is about (and the customer's plan) shows only once
 * it is opened. Triage is a fixed sequence of choices on an open ticket: classify it, route it to a
 * team, reply from a template, close it; the guide on the queue says which team and template go
 * with each category. Reward 1 when every named ticket was closed with the right category, team and
 * template, 0 otherwise (closing a ticket nobody asked about ends the episode). Every observation
 * lists the admissible actions.
 *
 * Stand-alone like a user's module: types-only imports, its own seeded generator, and the world a
 * deterministic function of the task's goal.
 */
import type { EnvironmentModule, ModuleEnvironment, ModuleStepResult, ModuleTask } from '../module.ts';
import type { Observation, Task, TaskValidation } from '../../core/types.ts';

export const name: EnvironmentModule['name'] = 'tickets';
export const description: EnvironmentModule['description'] = 'a support-ticket queue: open the named tickets, classify each, route it to a team, reply from a template and close it';
export const maxSteps: EnvironmentModule['maxSteps'] = 14;

const CATEGORIES = ['billing', 'access', 'bug', 'shipping', 'howto', 'cancellation'] as const;
type Category = (typeof CATEGORIES)[number];
const TEAM: Record<Category, string> = { billing: 'finance', access: 'accounts', bug: 'engineering', shipping: 'logistics', howto: 'support', cancellation: 'retention' };
const PRIORITY_TEAM = 'priority desk';
const TEAMS = [...CATEGORIES.map((c) => TEAM[c]), PRIORITY_TEAM];
const TEMPLATE: Record<Category, string> = { billing: 'refund-review', access: 'password-reset', bug: 'bug-acknowledged', shipping: 'tracking-info', howto: 'help-article', cancellation: 'cancellation-confirmed' };
const TEMPLATES = CATEGORIES.map((c) => TEMPLATE[c]);
const PLANS = ['free', 'pro', 'enterprise'] as const;
const GUIDE = `Guide: ${CATEGORIES.map((c) => `${c} -> ${TEAM[c]}`).join(', ')}; any ticket on the enterprise plan -> ${PRIORITY_TEAM}. Templates: ${CATEGORIES.map((c) => `${c} -> ${TEMPLATE[c]}`).join(', ')}.`;

/** What customers write, by the category they are really about (some mention another category's words). */
const MESSAGES: Record<Category, readonly string[]> = {
  billing: [
    'I was charged twice for my subscription this month. Please refund the extra charge.',
    'My invoice shows the wrong amount; I was billed for a plan I never chose.',
    'Why did my card get charged after the free trial ended? I want my money back.',
    'The app said my payment failed, but the money still left my bank.',
  ],
  access: [
    'I cannot log in: the password reset email never arrives.',
    'My account is locked after too many login attempts.',
    'The two-factor codes are rejected, so I am locked out.',
    'Since the last update the app logs me out and my password no longer works.',
  ],
  bug: [
    'The app crashes every time I upload a photo.',
    'Clicking export shows error 500 and nothing downloads.',
    'The dashboard charts are blank since the last update.',
    'The checkout page freezes when I type my card number, so I could not pay.',
  ],
  shipping: [
    'My package has not arrived and the tracking number shows nothing.',
    'The parcel was delivered to the wrong address.',
    'My order arrived damaged; the box was crushed.',
    'I paid extra for express delivery, yet my order is a week late. Can you refund that fee?',
  ],
  howto: [
    'How do I export my data to a spreadsheet?',
    'Is there a way to add a second user to my workspace?',
    'Where can I change the language of the interface?',
    'How can I cancel a single order without closing my account?',
  ],
  cancellation: [
    'Please cancel my account at the end of this month.',
    'I want to close my account and have my data deleted.',
    'Stop my subscription, I no longer need the service.',
    'I would like to end my plan; the app keeps crashing anyway.',
  ],
};
const SUBJECTS = ['Help needed', 'Question', 'Problem', 'Urgent', 'Re: my account', 'Please help', 'Issue', 'Hello'] as const;
const CUSTOMERS = ['ada lane', 'omar reyes', 'mina park', 'lev orlov', 'ines costa', 'tom okafor', 'rosa lind', 'kai moreau', 'nora heller', 'sam quint', 'eli marsh', 'yuki sato', 'ivo brandt', 'lena fox', 'raj patel', 'zoe wren'] as const;

interface Goal {
  /** The customers whose tickets to triage (one or two). */
  customers: string[];
  /** Seed of the queue. */
  layout: number;
}

interface Ticket {
  id: string;
  customer: string;
  subject: string;
  plan: string;
  message: string;
  category: Category;
  /** What the agent set. */
  set: { category: string | null; team: string | null; reply: string | null };
  closed: boolean;
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

/** Test tasks name customers that train tasks never do: one customer in four. */
const customerSplit = (customer: string): 'train' | 'test' => (CUSTOMERS.indexOf(customer as (typeof CUSTOMERS)[number]) % 4 === 2 ? 'test' : 'train');

/** The queue of a task: the named customers' tickets among others, each from a different customer. */
function queue(goal: Goal): Ticket[] {
  const r = rng(goal.layout);
  const size = 5 + Math.floor(r() * 3);
  const customers = [...goal.customers];
  while (customers.length < size) {
    const c = pick(r, CUSTOMERS);
    if (!customers.includes(c)) customers.push(c);
  }
  for (let i = customers.length - 1; i > 0; i--) {
    const j = Math.floor(r() * (i + 1));
    [customers[i], customers[j]] = [customers[j] as string, customers[i] as string];
  }
  let id = 1000 + Math.floor(r() * 8000);
  return customers.map((customer) => {
    const category = pick(r, CATEGORIES);
    id += 1 + Math.floor(r() * 40);
    return { id: `#${id}`, customer, subject: pick(r, SUBJECTS), plan: r() < 0.25 ? 'enterprise' : pick(r, PLANS.slice(0, 2)), message: pick(r, MESSAGES[category]), category, set: { category: null, team: null, reply: null }, closed: false };
  });
}

function parseGoal(goal: unknown): Goal | null {
  if (goal === null || typeof goal !== 'object' || Array.isArray(goal)) return null;
  const g = goal as Record<string, unknown>;
  if (!Array.isArray(g.customers) || g.customers.length < 1 || g.customers.length > 2) return null;
  if (!g.customers.every((c) => typeof c === 'string' && (CUSTOMERS as readonly string[]).includes(c)) || new Set(g.customers).size !== g.customers.length) return null;
  if (typeof g.layout !== 'number' || !Number.isInteger(g.layout)) return null;
  return { customers: [...(g.customers as string[])], layout: g.layout };
}

const instructionOf = (g: Goal): string => (g.customers.length === 1 ? `triage the ticket from ${g.customers[0]}` : `triage the tickets from ${g.customers[0]} and ${g.customers[1]}`);

export const tasks: EnvironmentModule['tasks'] = ({ split, count, seed }) => {
  const r = rng((seed * 2654435761) ^ (split === 'test' ? 0x510e527f : 0x9b05688c));
  const pool = CUSTOMERS.filter((c) => customerSplit(c) === split);
  const out: ModuleTask[] = [];
  while (out.length < count) {
    const customers = [pick(r, pool)];
    if (r() < 0.5) {
      const other = pick(r, pool);
      if (other !== customers[0]) customers.push(other);
    }
    const goal = { customers, layout: Math.floor(r() * 2 ** 31) };
    out.push({ id: `tickets-${split}-${seed}-${out.length}`, instruction: instructionOf(goal), goal });
  }
  return out;
};

export const validateTask: EnvironmentModule['validateTask'] = (task: Task): TaskValidation => {
  const goal = parseGoal(task.goal);
  if (goal === null) return { ok: false, reason: 'the goal must be {customers, layout}: one or two distinct known customers and an integer layout' };
  const wrong = goal.customers.find((c) => customerSplit(c) !== task.split);
  if (wrong !== undefined) return { ok: false, reason: `tickets from ${wrong} belong to the ${customerSplit(wrong)} split` };
  if (task.instruction !== instructionOf(goal)) return { ok: false, reason: `the instruction must read "${instructionOf(goal)}" for this goal` };
  return { ok: true };
};

/** What the agent has seen: the instruction, then each observation and the action taken on it. */
interface Transcript {
  instruction: string;
  observations: Observation[];
  actions: string[];
}

const rightTeam = (t: Ticket): string => (t.plan === 'enterprise' ? PRIORITY_TEAM : TEAM[t.category]);

class TicketQueue implements ModuleEnvironment {
  private goal: Goal | null = null;
  private tickets: Ticket[] = [];
  /** The open ticket, or null on the queue. */
  private open: Ticket | null = null;
  private steps = 0;
  private done = false;
  private seen: Transcript = { instruction: '', observations: [], actions: [] };

  reset(task: Task): Observation {
    const goal = parseGoal(task.goal);
    if (goal === null) throw new Error(`task ${task.id} has no tickets goal`);
    this.goal = goal;
    this.tickets = queue(goal);
    this.open = null;
    this.steps = 0;
    this.done = false;
    this.seen = { instruction: task.instruction, observations: [], actions: [] };
    return this.record(this.observe('You open the support queue.'));
  }

  private record(obs: Observation): Observation {
    this.seen.observations.push(obs);
    return obs;
  }

  private actions(): string[] {
    if (this.done) return [];
    const t = this.open;
    if (t === null) return this.tickets.filter((x) => !x.closed).map((x) => `open ${x.id}`);
    const next = t.set.category === null ? CATEGORIES.map((c) => `classify as ${c}`) : t.set.team === null ? TEAMS.map((x) => `route to ${x}`) : t.set.reply === null ? TEMPLATES.map((x) => `reply with ${x}`) : ['close ticket'];
    return [...next, 'back to queue'];
  }

  private observe(message: string): Observation {
    const t = this.open;
    let view: string;
    if (t === null) {
      const open = this.tickets.filter((x) => !x.closed);
      const status = (x: Ticket): string => (x.set.category === null ? 'new' : [x.set.category, x.set.team, x.set.reply].filter((v) => v !== null).join(', '));
      view = `Ticket queue (${open.length} open)\n${open.map((x) => `${x.id} from ${x.customer}: ${x.subject} [${status(x)}]`).join('\n')}\n${GUIDE}`;
    } else {
      view = `Ticket ${t.id} from ${t.customer}: ${t.subject}\nPlan: ${t.plan}\nMessage: ${t.message}\nCategory: ${t.set.category ?? 'none'}\nTeam: ${t.set.team ?? 'none'}\nReply: ${t.set.reply ?? 'none'}`;
    }
    return { text: `${message}\n${view}`, actions: this.actions() };
  }

  step(action: string): ModuleStepResult {
    if (this.goal === null) throw new Error('step() before reset()');
    if (this.done) throw new Error('step() after the episode ended');
    this.seen.actions.push(action);
    let result = this.act(action.trim(), this.goal);
    // The contract: the episode ends at the step limit at the latest, with no reward.
    if (++this.steps >= maxSteps && !result.done) {
      this.done = true;
      result = { ...result, observation: { text: `${result.observation.text}\nThe step limit is reached.`, actions: [] }, done: true, info: { ...result.info, success: false, message: 'step limit reached' } };
    }
    this.record(result.observation);
    return result;
  }

  private finish(message: string, success: boolean): ModuleStepResult {
    this.done = true;
    const verdict = success ? 'Every ticket asked about was triaged correctly.' : 'The triage was not what was asked for.';
    return { observation: { text: `${message} ${verdict}`, actions: [] }, reward: success ? 1 : 0, done: true, info: { success, message: verdict } };
  }

  private act(a: string, goal: Goal): ModuleStepResult {
    if (!this.actions().includes(a)) return { observation: this.observe(`Nothing happens: "${a}" is not possible here.`), reward: 0, done: false, info: { valid: false, message: 'not an admissible action' } };
    const t = this.open;
    if (t === null) {
      this.open = this.tickets.find((x) => `open ${x.id}` === a) as Ticket;
      return { observation: this.observe(`You open ticket ${this.open.id}.`), reward: 0, done: false };
    }
    if (a === 'back to queue') {
      this.open = null;
      return { observation: this.observe('You go back to the queue.'), reward: 0, done: false };
    }
    if (a.startsWith('classify as ')) t.set.category = a.slice('classify as '.length);
    else if (a.startsWith('route to ')) t.set.team = a.slice('route to '.length);
    else if (a.startsWith('reply with ')) t.set.reply = a.slice('reply with '.length);
    else {
      t.closed = true;
      this.open = null;
      const asked = this.tickets.filter((x) => goal.customers.includes(x.customer));
      if (!goal.customers.includes(t.customer)) return this.finish(`You close ticket ${t.id}, which nobody asked you to triage.`, false);
      if (asked.every((x) => x.closed)) return this.finish(`You close ticket ${t.id}.`, asked.every((x) => x.set.category === x.category && x.set.team === rightTeam(x) && x.set.reply === TEMPLATE[x.category]));
      return { observation: this.observe(`You close ticket ${t.id}.`), reward: 0, done: false };
    }
    return { observation: this.observe(`You update ticket ${t.id}.`), reward: 0, done: false };
  }

  expertAction(): string {
    const goal = this.goal;
    if (goal === null) throw new Error('expertAction() before reset()');
    const t = this.open;
    if (t === null || !goal.customers.includes(t.customer)) {
      if (t !== null) return 'back to queue';
      const next = this.tickets.find((x) => !x.closed && goal.customers.includes(x.customer)) as Ticket;
      return `open ${next.id}`;
    }
    if (t.set.category === null) return `classify as ${t.category}`;
    if (t.set.team === null) return `route to ${rightTeam(t)}`;
    if (t.set.reply === null) return `reply with ${TEMPLATE[t.category]}`;
    return 'close ticket';
  }

  /**
   * A goal-blind demonstrator: it reads only the transcript of what the agent saw (the instruction
   * and the observations so far), never the goal or a ticket it has not opened.
   */
  demonstratorAction(): string {
    return demonstrate(this.seen);
  }
}

/** The words a support agent skims for, by category. */
const CUES: Record<Category, readonly string[]> = {
  billing: ['charged', 'refund', 'invoice', 'billed', 'payment', 'money', 'card', 'pay', 'paid'],
  access: ['log in', 'login', 'password', 'locked', 'two-factor', 'logs me out'],
  bug: ['crash', 'error', 'blank', 'freezes', 'update', 'failed'],
  shipping: ['package', 'parcel', 'tracking', 'delivered', 'delivery', 'order', 'arrived'],
  howto: ['how do', 'how can', 'is there a way', 'where can'],
  cancellation: ['cancel', 'close my account', 'end my plan', 'subscription', 'deleted'],
};

/** The category whose cue words the message mentions most (the first such on a tie). */
function skim(message: string): Category {
  const m = message.toLowerCase();
  let best: Category = 'howto';
  let bestCount = 0;
  for (const c of CATEGORIES) {
    const n = CUES[c].filter((w) => m.includes(w)).length;
    if (n > bestCount) [best, bestCount] = [c, n];
  }
  return best;
}

/**
 * The demonstrator's rule, a support agent who skims: open each named customer's ticket in queue
 * order, classify it by the category whose words the message mentions most, then route it and reply
 * as the guide on the queue says, and close it.
 */
function demonstrate(seen: Transcript): string {
  const last = seen.observations[seen.observations.length - 1];
  if (last === undefined || last.actions.length === 0) return '';
  const wanted = /^triage the tickets? from (.+?)(?: and (.+))?$/.exec(seen.instruction.trim().toLowerCase());
  const names = wanted === null ? [] : [wanted[1], wanted[2]].filter((n): n is string => n !== undefined);
  const guide = seen.observations.map((o) => o.text.split('\n').find((l) => l.startsWith('Guide: '))).find((l) => l !== undefined) ?? '';
  const rule = (from: string): string | null => new RegExp(`${from} -> ([a-z -]+?)[,.;]`).exec(guide)?.[1] ?? null;
  const lines = last.text.split('\n');
  const header = lines.find((l) => l.startsWith('Ticket #'));
  if (header === undefined) {
    const row = lines.find((l) => /^#\d+ from /.test(l) && names.some((n) => l.includes(` from ${n}:`)));
    return row === undefined ? (last.actions[0] as string) : `open ${row.split(' ')[0]}`;
  }
  if (!names.some((n) => header.includes(` from ${n}:`))) return 'back to queue';
  const field = (prefix: string): string => lines.find((l) => l.startsWith(prefix))?.slice(prefix.length) ?? '';
  const category = field('Category: ') === 'none' ? skim(field('Message: ')) : field('Category: ');
  const choose = (a: string): string => (last.actions.includes(a) ? a : (last.actions[0] as string));
  if (field('Category: ') === 'none') return choose(`classify as ${category}`);
  if (field('Team: ') === 'none') return choose(`route to ${field('Plan: ') === 'enterprise' ? (rule('enterprise plan') ?? '') : (rule(category) ?? '')}`);
  if (field('Reply: ') === 'none') return choose(`reply with ${new RegExp(`Templates: .*?${category} -> ([a-z-]+)`).exec(guide)?.[1] ?? ''}`);
  return choose('close ticket');
}

export const create: EnvironmentModule['create'] = () => new TicketQueue();
