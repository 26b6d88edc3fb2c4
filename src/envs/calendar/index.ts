/**
 * An environment module (`--env-module src/envs/calendar/index.ts`): a meeting scheduler. The
 * instruction asks for a meeting of a given length with two to four people on one of two days; a
 * person's calendar and a room's bookings show only once viewed. The agent selects a start time and
 * books a room that seats everyone; exactly one (day, start, room) suits everyone, so the constraints
 * of several people and rooms must be combined. Booking ends the episode: reward 1 when every
 * attendee and the room are free for the whole meeting and the room seats them all, 0 otherwise.
 * Every observation lists the admissible actions.
 *
 * Stand-alone like a user's module: types-only imports, its own seeded generator, and the world a
 * deterministic function of the task's goal.
 */
import type { EnvironmentModule, ModuleEnvironment, ModuleStepResult, ModuleTask } from '../module.ts';
import type { Observation, Task, TaskValidation } from '../../core/types.ts';

export const name: EnvironmentModule['name'] = 'calendar';
export const description: EnvironmentModule['description'] = "a meeting scheduler: read the attendees' calendars and the rooms' bookings, then book the one slot and room that suit everyone";
export const maxSteps: EnvironmentModule['maxSteps'] = 8;

const DAYS = ['monday', 'tuesday', 'wednesday', 'thursday', 'friday'] as const;
const PEOPLE = ['ada lane', 'omar reyes', 'mina park', 'lev orlov', 'ines costa', 'tom okafor', 'rosa lind', 'kai moreau'] as const;
const ROOMS = ['cedar', 'maple', 'oak', 'pine'] as const;
const CAPACITIES = [2, 3, 4, 6, 8] as const;
/** Meetings start on the hour, 9:00 at the earliest, and end by 17:00. */
const FIRST_HOUR = 9;
const HOURS = 8;

interface Goal {
  attendees: string[];
  /** The two weekdays the meeting may be on, in week order. */
  days: [string, string];
  /** Length in hours (1 or 2). */
  hours: number;
  /** Seed of the calendars. */
  layout: number;
}

/** busy[day][hour - FIRST_HOUR] for each person and room. */
type Grid = boolean[][];

interface World {
  people: Map<string, Grid>;
  rooms: Map<string, { seats: number; busy: Grid }>;
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
const clock = (hour: number): string => `${hour}:00`;

/** Test tasks invite groups that train tasks never do: about one group in four. */
function groupSplit(attendees: readonly string[]): 'train' | 'test' {
  let h = 2166136261;
  for (const ch of [...attendees].sort().join('|')) h = Math.imul(h ^ ch.charCodeAt(0), 16777619) >>> 0;
  return h % 4 === 0 ? 'test' : 'train';
}

const starts = (hours: number): number[] => Array.from({ length: HOURS - hours + 1 }, (_, i) => FIRST_HOUR + i);
const freeFor = (grid: Grid, day: number, start: number, hours: number): boolean => Array.from({ length: hours }, (_, i) => !grid[day]?.[start - FIRST_HOUR + i]).every(Boolean);

interface Slot {
  day: number;
  start: number;
  room: string;
}

function feasible(world: World, goal: Goal): Slot[] {
  const out: Slot[] = [];
  for (const dayName of goal.days) {
    const day = DAYS.indexOf(dayName as (typeof DAYS)[number]);
    for (const start of starts(goal.hours)) {
      if (!goal.attendees.every((p) => freeFor(world.people.get(p) as Grid, day, start, goal.hours))) continue;
      for (const [room, r] of world.rooms) if (r.seats >= goal.attendees.length && freeFor(r.busy, day, start, goal.hours)) out.push({ day, start, room });
    }
  }
  return out;
}

/** The calendars of a task: random busy hours, then the one chosen slot cleared and every other suitable slot blocked. */
function world(goal: Goal): World {
  const r = rng(goal.layout);
  const randomGrid = (): Grid =>
    DAYS.map(() => {
      const row = Array.from({ length: HOURS }, () => false);
      const blocks = Math.floor(r() * 3);
      for (let b = 0; b < blocks; b++) {
        const at = Math.floor(r() * HOURS);
        row[at] = true;
        if (r() < 0.5 && at + 1 < HOURS) row[at + 1] = true;
      }
      return row;
    });
  const people = new Map<string, Grid>(PEOPLE.map((p) => [p, randomGrid()]));
  const seats: number[] = [...CAPACITIES];
  for (let i = seats.length - 1; i > 0; i--) {
    const j = Math.floor(r() * (i + 1));
    [seats[i], seats[j]] = [seats[j] as number, seats[i] as number];
  }
  // At least two rooms seat everyone, so the room is a real choice.
  const big = seats.filter((s) => s >= goal.attendees.length);
  const roomSeats = [...big.slice(0, 2), ...seats.filter((s) => !big.slice(0, 2).includes(s))].slice(0, ROOMS.length);
  for (let i = roomSeats.length - 1; i > 0; i--) {
    const j = Math.floor(r() * (i + 1));
    [roomSeats[i], roomSeats[j]] = [roomSeats[j] as number, roomSeats[i] as number];
  }
  const rooms = new Map<string, { seats: number; busy: Grid }>(ROOMS.map((name, i) => [name, { seats: roomSeats[i] as number, busy: randomGrid() }]));
  const w: World = { people, rooms };
  const fitting = ROOMS.filter((n) => (rooms.get(n)?.seats ?? 0) >= goal.attendees.length);
  const chosen: Slot = { day: DAYS.indexOf(pick(r, goal.days) as (typeof DAYS)[number]), start: pick(r, starts(goal.hours)), room: pick(r, fitting) };
  const within = (s: Slot): number[] => Array.from({ length: goal.hours }, (_, i) => s.start + i);
  for (const h of within(chosen)) {
    for (const p of goal.attendees) (people.get(p) as Grid)[chosen.day]![h - FIRST_HOUR] = false;
    rooms.get(chosen.room)!.busy[chosen.day]![h - FIRST_HOUR] = false;
  }
  const chosenHours = new Set(within(chosen));
  for (;;) {
    const other = feasible(w, goal).find((s) => s.day !== chosen.day || s.start !== chosen.start || s.room !== chosen.room);
    if (other === undefined) break;
    const hours = within(other).filter((h) => other.day !== chosen.day || !chosenHours.has(h));
    // Block it through an attendee when an hour outside the chosen meeting allows, else through its room.
    if (hours.length > 0 && r() < 0.6) (people.get(pick(r, goal.attendees)) as Grid)[other.day]![pick(r, hours) - FIRST_HOUR] = true;
    else rooms.get(other.room)!.busy[other.day]![pick(r, other.room === chosen.room && hours.length > 0 ? hours : within(other)) - FIRST_HOUR] = true;
  }
  return w;
}

function parseGoal(goal: unknown): Goal | null {
  if (goal === null || typeof goal !== 'object' || Array.isArray(goal)) return null;
  const g = goal as Record<string, unknown>;
  if (!Array.isArray(g.attendees) || g.attendees.length < 2 || g.attendees.length > 4) return null;
  if (!g.attendees.every((p) => typeof p === 'string' && (PEOPLE as readonly string[]).includes(p)) || new Set(g.attendees).size !== g.attendees.length) return null;
  if (!Array.isArray(g.days) || g.days.length !== 2 || !g.days.every((d) => typeof d === 'string' && (DAYS as readonly string[]).includes(d)) || g.days[0] === g.days[1]) return null;
  if (g.hours !== 1 && g.hours !== 2) return null;
  if (typeof g.layout !== 'number' || !Number.isInteger(g.layout)) return null;
  return { attendees: [...(g.attendees as string[])], days: [g.days[0] as string, g.days[1] as string], hours: g.hours, layout: g.layout };
}

function instructionOf(g: Goal): string {
  const who = g.attendees.length === 2 ? g.attendees.join(' and ') : `${g.attendees.slice(0, -1).join(', ')} and ${g.attendees[g.attendees.length - 1]}`;
  return `book a ${g.hours}-hour meeting with ${who} on ${g.days[0]} or ${g.days[1]}`;
}

export const tasks: EnvironmentModule['tasks'] = ({ split, count, seed }) => {
  const r = rng((seed * 2654435761) ^ (split === 'test' ? 0x1f83d9ab : 0x5be0cd19));
  const out: ModuleTask[] = [];
  while (out.length < count) {
    const size = 2 + Math.floor(r() * 3);
    const attendees: string[] = [];
    while (attendees.length < size) {
      const p = pick(r, PEOPLE);
      if (!attendees.includes(p)) attendees.push(p);
    }
    const d1 = Math.floor(r() * DAYS.length);
    const d2 = (d1 + 1 + Math.floor(r() * (DAYS.length - 1))) % DAYS.length;
    const days: [string, string] = [DAYS[Math.min(d1, d2)] as string, DAYS[Math.max(d1, d2)] as string];
    const goal = { attendees, days, hours: r() < 0.5 ? 1 : 2, layout: Math.floor(r() * 2 ** 31) };
    if (groupSplit(attendees) !== split) continue;
    out.push({ id: `calendar-${split}-${seed}-${out.length}`, instruction: instructionOf(goal), goal });
  }
  return out;
};

export const validateTask: EnvironmentModule['validateTask'] = (task: Task): TaskValidation => {
  const goal = parseGoal(task.goal);
  if (goal === null) return { ok: false, reason: 'the goal must be {attendees, days, hours, layout}: two to four distinct known people, two different weekdays, 1 or 2 hours and an integer layout' };
  if (groupSplit(goal.attendees) !== task.split) return { ok: false, reason: `meetings of ${goal.attendees.join(', ')} belong to the ${groupSplit(goal.attendees)} split` };
  if (task.instruction !== instructionOf(goal)) return { ok: false, reason: `the instruction must read "${instructionOf(goal)}" for this goal` };
  return { ok: true };
};

/** What the agent has seen: the instruction, then each observation and the action taken on it. */
interface Transcript {
  instruction: string;
  observations: Observation[];
  actions: string[];
}

/** A day's busy hours as blocks, e.g. "9:00-11:00, 14:00-15:00", or "free". */
function blocks(row: readonly boolean[]): string {
  const out: string[] = [];
  for (let i = 0; i < row.length; i++) {
    if (!row[i] || row[i - 1]) continue;
    let j = i;
    while (row[j + 1]) j++;
    out.push(`${clock(FIRST_HOUR + i)}-${clock(FIRST_HOUR + j + 1)}`);
  }
  return out.length ? `busy ${out.join(', ')}` : 'free';
}

const week = (grid: Grid): string => DAYS.map((d, i) => `${d} ${blocks(grid[i] ?? [])}`).join('; ');

class Scheduler implements ModuleEnvironment {
  private goal: Goal | null = null;
  private world: World = { people: new Map(), rooms: new Map() };
  private selected: { day: number; start: number } | null = null;
  private steps = 0;
  private done = false;
  private seen: Transcript = { instruction: '', observations: [], actions: [] };

  reset(task: Task): Observation {
    const goal = parseGoal(task.goal);
    if (goal === null) throw new Error(`task ${task.id} has no calendar goal`);
    this.goal = goal;
    this.world = world(goal);
    this.selected = null;
    this.steps = 0;
    this.done = false;
    this.seen = { instruction: task.instruction, observations: [], actions: [] };
    return this.record(this.observe('You open the scheduler.', goal));
  }

  private record(obs: Observation): Observation {
    this.seen.observations.push(obs);
    return obs;
  }

  private actions(goal: Goal): string[] {
    if (this.done) return [];
    const selects = goal.days.flatMap((d) => starts(goal.hours).map((s) => `select ${d} ${clock(s)}`));
    return [
      ...PEOPLE.map((p) => `view ${p}`),
      ...ROOMS.map((r) => `view room ${r}`),
      ...selects,
      ...(this.selected ? ROOMS.map((r) => `book ${r}`) : []),
    ];
  }

  private observe(message: string, goal: Goal, detail = ''): Observation {
    const rooms = ROOMS.map((n) => `${n} (seats ${this.world.rooms.get(n)?.seats})`).join(', ');
    const sel = this.selected ? `${DAYS[this.selected.day]} ${clock(this.selected.start)}-${clock(this.selected.start + goal.hours)}` : 'none';
    return { text: `${message}${detail ? `\n${detail}` : ''}\nRooms: ${rooms}\nMeeting length: ${goal.hours} hour${goal.hours > 1 ? 's' : ''}\nSelected slot: ${sel}`, actions: this.actions(goal) };
  }

  step(action: string): ModuleStepResult {
    const goal = this.goal;
    if (goal === null) throw new Error('step() before reset()');
    if (this.done) throw new Error('step() after the episode ended');
    this.seen.actions.push(action);
    let result = this.act(action.trim(), goal);
    // The contract: the episode ends at the step limit at the latest, with no reward.
    if (++this.steps >= maxSteps && !result.done) {
      this.done = true;
      result = { ...result, observation: { text: `${result.observation.text}\nThe step limit is reached.`, actions: [] }, done: true, info: { ...result.info, success: false, message: 'step limit reached' } };
    }
    this.record(result.observation);
    return result;
  }

  private act(a: string, goal: Goal): ModuleStepResult {
    if (!this.actions(goal).includes(a)) return { observation: this.observe(`Nothing happens: "${a}" is not possible here.`, goal), reward: 0, done: false, info: { valid: false, message: 'not an admissible action' } };
    if (a.startsWith('view room ')) {
      const n = a.slice('view room '.length);
      const room = this.world.rooms.get(n) as { seats: number; busy: Grid };
      return { observation: this.observe(`You look at room ${n}.`, goal, `Room ${n} (seats ${room.seats}): ${week(room.busy)}`), reward: 0, done: false };
    }
    if (a.startsWith('view ')) {
      const p = a.slice('view '.length);
      return { observation: this.observe(`You look at ${p}'s calendar.`, goal, `Calendar of ${p}: ${week(this.world.people.get(p) as Grid)}`), reward: 0, done: false };
    }
    if (a.startsWith('select ')) {
      const [, day, time] = a.split(' ') as [string, string, string];
      this.selected = { day: DAYS.indexOf(day as (typeof DAYS)[number]), start: Number(time.split(':')[0]) };
      return { observation: this.observe(`You select ${day} ${time}.`, goal), reward: 0, done: false };
    }
    const n = a.slice('book '.length);
    const sel = this.selected as { day: number; start: number };
    const ok = feasible(this.world, goal).some((s) => s.day === sel.day && s.start === sel.start && s.room === n);
    this.done = true;
    const verdict = ok ? 'Everyone and the room are free, and the room seats everyone.' : 'The booking clashes with a calendar or the room is too small.';
    return { observation: { text: `You book room ${n} on ${DAYS[sel.day]} at ${clock(sel.start)}. ${verdict}`, actions: [] }, reward: ok ? 1 : 0, done: true, info: { success: ok, message: verdict } };
  }

  expertAction(): string {
    const goal = this.goal;
    if (goal === null) throw new Error('expertAction() before reset()');
    const s = feasible(this.world, goal)[0] as Slot;
    if (this.selected?.day !== s.day || this.selected.start !== s.start) return `select ${DAYS[s.day]} ${clock(s.start)}`;
    return `book ${s.room}`;
  }

  /**
   * A goal-blind demonstrator: it reads only the transcript of what the agent saw (the instruction
   * and the observations so far), never the goal or a calendar it has not viewed.
   */
  demonstratorAction(): string {
    return demonstrate(this.seen);
  }
}

const INSTRUCTION_RE = /^book a (\d)-hour meeting with (.+) on (\S+) or (\S+)$/;

/** Busy hours of one day as read from a "busy 9:00-11:00, 14:00-15:00" text. */
function readBusy(text: string): Set<number> {
  const out = new Set<number>();
  for (const m of text.matchAll(/(\d+):00-(\d+):00/g)) for (let h = Number(m[1]); h < Number(m[2]); h++) out.add(h);
  return out;
}

/**
 * The demonstrator's rule, an assistant booking a meeting: view each attendee's calendar, then go
 * through the slots free for everyone in time order and the rooms that seat everyone from the
 * smallest, viewing a room's bookings when it comes to it; select the first slot with a free room
 * and book it. It spends no step on planning which room to view first, so it can run out of steps.
 */
function demonstrate(seen: Transcript): string {
  const last = seen.observations[seen.observations.length - 1];
  if (last === undefined || last.actions.length === 0) return '';
  const m = INSTRUCTION_RE.exec(seen.instruction.trim().toLowerCase());
  if (m === null) return last.actions[0] as string;
  const hours = Number(m[1]);
  const attendees = (m[2] as string).split(/, | and /);
  const days = [m[3] as string, m[4] as string];
  const calendars = new Map<string, string>();
  for (const o of seen.observations) {
    for (const line of o.text.split('\n')) {
      const c = /^(?:Calendar of|Room) ([a-z ]+?)(?: \(seats \d+\))?: (.*)$/.exec(line);
      if (c) calendars.set(line.startsWith('Room') ? `room ${c[1]}` : (c[1] as string), c[2] as string);
    }
  }
  const unseen = attendees.find((p) => !calendars.has(p));
  if (unseen !== undefined) return `view ${unseen}`;
  const busyOn = (who: string, day: string): Set<number> => readBusy(/^(?:busy (.*)|free)$/.exec((calendars.get(who) ?? '').split('; ').find((d) => d.startsWith(`${day} `))?.slice(day.length + 1) ?? 'free')?.[1] ?? '');
  const fits = (busy: Set<number>, start: number): boolean => Array.from({ length: hours }, (_, i) => !busy.has(start + i)).every(Boolean);
  const roomsLine = last.text.split('\n').find((l) => l.startsWith('Rooms: '))?.slice('Rooms: '.length) ?? '';
  const rooms = [...roomsLine.matchAll(/([a-z]+) \(seats (\d+)\)/g)].map((x) => ({ name: x[1] as string, seats: Number(x[2]) })).filter((x) => x.seats >= attendees.length).sort((a, b) => a.seats - b.seats);
  const selected = /^Selected slot: (\S+) (\d+):00/m.exec(last.text);
  for (const day of days) {
    for (const start of starts(hours)) {
      if (!attendees.every((p) => fits(busyOn(p, day), start))) continue;
      for (const room of rooms) {
        if (!calendars.has(`room ${room.name}`)) return `view room ${room.name}`;
        if (!fits(busyOn(`room ${room.name}`, day), start)) continue;
        if (selected?.[1] === day && Number(selected[2]) === start) return `book ${room.name}`;
        return `select ${day} ${clock(start)}`;
      }
    }
  }
  return last.actions[0] as string;
}

export const create: EnvironmentModule['create'] = () => new Scheduler();
