/**
 * An environment module (`--env-module src/envs/dungeon/index.ts`): a text adventure. Seven rooms
 * joined in a tree on a grid (so most branches end in dead ends the agent must walk back out of),
 * two doors locked by coloured keys, and things hidden in chests (seen only once opened) or behind
 * features such as a loose stone (found only by examining it). The instruction names a treasure to
 * find and place on the altar in the entrance hall, where every episode starts; the keys it needs
 * lie somewhere before the doors they open. Reward 1 when the treasure asked for is placed on the
 * altar, 0 when anything else is or time runs out.
 *
 * It stands alone, as a user's module would: it imports nothing at run time (types only); the map
 * follows from a world seed alone, and the goal only names which of its treasures to bring.
 */
import type { EnvironmentModule, ModuleEnvironment, ModuleStepResult, ModuleTask } from '../module.ts';
import type { Observation, Task, TaskValidation } from '../../core/types.ts';

export const name: EnvironmentModule['name'] = 'dungeon';
export const description: EnvironmentModule['description'] = 'a text adventure: explore rooms, open chests and examine things, unlock coloured doors, and bring the treasure asked for back to the altar';
export const maxSteps: EnvironmentModule['maxSteps'] = 30;

const HALL = 'entrance hall';
const ROOM_NAMES = ['armory', 'library', 'crypt', 'kitchen', 'chapel', 'cellar', 'gallery', 'guard room', 'well room', 'study', 'larder'] as const;
const CHESTS = ['oak chest', 'iron chest', 'wicker basket', 'stone coffer', 'old trunk', 'sea chest'] as const;
const FEATURES = ['loose stone', 'faded tapestry', 'cracked urn', 'heap of straw', 'suit of armor', 'dusty shelf'] as const;
const TREASURES = ['jade idol', 'silver crown', 'amber ring', 'bone flute', 'glass eye', 'gold chalice'] as const;
const COLORS = ['red', 'blue'] as const;
const ROOMS = 8;
const TREASURES_PER_WORLD = 3;
/** A task is kept only when the expert needs at most this many steps, so that looking around fits in the step limit. */
const EXPERT_STEP_LIMIT = 24;

const DIRS = ['north', 'east', 'south', 'west'] as const;
type Dir = (typeof DIRS)[number];
const DELTA: Record<Dir, [number, number]> = { north: [0, -1], east: [1, 0], south: [0, 1], west: [-1, 0] };
const OPPOSITE: Record<Dir, Dir> = { north: 'south', east: 'west', south: 'north', west: 'east' };

interface Goal {
  /** Seed of the map. */
  world: number;
  /** The treasure to bring to the altar. */
  item: string;
}

interface Container {
  kind: 'chest' | 'feature';
  name: string;
  items: string[];
}

interface Room {
  exits: Partial<Record<Dir, string>>;
  container: Container | null;
}

interface World {
  rooms: Map<string, Room>;
  /** The colour of each locked door, keyed by `room|dir` from both sides. */
  locks: Map<string, string>;
  treasures: string[];
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

function shuffled<T>(r: () => number, xs: readonly T[]): T[] {
  const out = [...xs];
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(r() * (i + 1));
    [out[i], out[j]] = [out[j] as T, out[i] as T];
  }
  return out;
}

/** Test tasks play on maps that train tasks never do: one world seed in five. */
function worldSplit(world: number): 'train' | 'test' {
  return Math.floor(rng(world ^ 0x51ed27)() * 5) === 0 ? 'test' : 'train';
}

/** The rooms reachable from the hall through unlocked doors and doors of the `open` colours. */
function reachable(w: World, open: ReadonlySet<string>): Set<string> {
  const seen = new Set([HALL]);
  const queue = [HALL];
  for (let room = queue.shift(); room !== undefined; room = queue.shift()) {
    for (const [dir, next] of Object.entries((w.rooms.get(room) as Room).exits)) {
      const lock = w.locks.get(`${room}|${dir}`);
      if (seen.has(next) || (lock !== undefined && !open.has(lock))) continue;
      seen.add(next);
      queue.push(next);
    }
  }
  return seen;
}

/** The map of a world seed, or null for a seed whose map cannot hold its keys (the generator skips those). */
function worldOf(seed: number): World | null {
  const r = rng(seed);
  const rooms = new Map<string, Room>([[HALL, { exits: {}, container: null }]]);
  const cells = new Map<string, string>([['0,0', HALL]]);
  const at = new Map<string, [number, number]>([[HALL, [0, 0]]]);
  const children: string[] = [];
  const parent = new Map<string, { room: string; dir: Dir }>();
  for (const room of shuffled(r, ROOM_NAMES).slice(0, ROOMS - 1)) {
    for (;;) {
      const from = pick(r, [...rooms.keys()]);
      const dir = pick(r, DIRS);
      const [x, y] = at.get(from) as [number, number];
      const cell: [number, number] = [x + DELTA[dir][0], y + DELTA[dir][1]];
      if (cells.has(cell.join(','))) continue;
      cells.set(cell.join(','), room);
      at.set(room, cell);
      rooms.set(room, { exits: { [OPPOSITE[dir]]: from }, container: null });
      (rooms.get(from) as Room).exits[dir] = room;
      parent.set(room, { room: from, dir });
      children.push(room);
      break;
    }
  }
  const w: World = { rooms, locks: new Map(), treasures: shuffled(r, TREASURES).slice(0, TREASURES_PER_WORLD) };
  const lockedRooms = shuffled(r, children).slice(0, COLORS.length);
  lockedRooms.forEach((room, i) => {
    const p = parent.get(room) as { room: string; dir: Dir };
    const color = COLORS[i] as string;
    w.locks.set(`${p.room}|${p.dir}`, color);
    w.locks.set(`${room}|${OPPOSITE[p.dir]}`, color);
  });
  const chests = shuffled(r, CHESTS);
  const features = shuffled(r, FEATURES);
  const hide = (room: string, item: string | null): void => {
    const here = rooms.get(room) as Room;
    if (here.container === null) here.container = r() < 0.6 ? { kind: 'chest', name: chests.pop() as string, items: [] } : { kind: 'feature', name: features.pop() as string, items: [] };
    if (item !== null) here.container.items.push(item);
  };
  // Each key lies where the doors of the colours before it suffice to reach it.
  const open = new Set<string>();
  for (const color of COLORS) {
    const region = [...reachable(w, open)].filter((room) => room !== HALL);
    if (region.length === 0) return null;
    hide(pick(r, region), `${color} key`);
    open.add(color);
  }
  for (const treasure of w.treasures) hide(pick(r, children), treasure);
  // An empty chest or feature in one more room, so that not every container pays off.
  const bare = children.filter((room) => (rooms.get(room) as Room).container === null);
  if (bare.length > 0) hide(pick(r, bare), null);
  return w;
}

const instructionFor = (g: Goal): string => `find the ${g.item} and place it on the altar in the ${HALL}`;

function parseGoal(goal: unknown): Goal | null {
  if (goal === null || typeof goal !== 'object' || Array.isArray(goal)) return null;
  const g = goal as Record<string, unknown>;
  if (typeof g.world !== 'number' || !Number.isInteger(g.world)) return null;
  if (typeof g.item !== 'string' || !(TREASURES as readonly string[]).includes(g.item)) return null;
  return { world: g.world, item: g.item };
}

/** Why a goal cannot be a task (null when it can). */
function goalProblem(g: Goal): string | null {
  const w = worldOf(g.world);
  if (w === null) return `world ${g.world} cannot place its keys`;
  if (!w.treasures.includes(g.item)) return `world ${g.world} holds no ${g.item} (it holds ${w.treasures.join(', ')})`;
  const free = reachable(w, new Set());
  for (const [room, r] of w.rooms) if (free.has(room) && (r.container?.items.includes(g.item) ?? false)) return `the ${g.item} lies before every locked door`;
  const env = new Dungeon();
  env.reset({ id: 'check', env: name, instruction: instructionFor(g), goal: { ...g }, split: worldSplit(g.world), origin: 'seed' });
  for (let t = 1; t <= EXPERT_STEP_LIMIT; t++) {
    const r = env.step(env.expertAction());
    if (r.done) return r.info?.success === true ? null : 'the expert fails on it';
  }
  return `the expert needs more than ${EXPERT_STEP_LIMIT} steps`;
}

export const tasks: EnvironmentModule['tasks'] = ({ split, count, seed }) => {
  const r = rng((seed * 2654435761) ^ (split === 'test' ? 0x68e31da4 : 0x3c6ef372));
  const out: ModuleTask[] = [];
  while (out.length < count) {
    const world = Math.floor(r() * 2 ** 31);
    if (worldSplit(world) !== split) continue;
    const w = worldOf(world);
    if (w === null) continue;
    const goal: Goal = { world, item: pick(r, w.treasures) };
    if (goalProblem(goal) !== null) continue;
    out.push({ id: `dungeon-${split}-${seed}-${out.length}`, instruction: instructionFor(goal), goal: { ...goal } });
  }
  return out;
};

export const validateTask: EnvironmentModule['validateTask'] = (task: Task): TaskValidation => {
  const goal = parseGoal(task.goal);
  if (goal === null) return { ok: false, reason: `the goal must be {world, item} with an integer world and item one of ${TREASURES.join(', ')}` };
  if (worldSplit(goal.world) !== task.split) return { ok: false, reason: `world ${goal.world} belongs to the ${worldSplit(goal.world)} split` };
  if (task.instruction !== instructionFor(goal)) return { ok: false, reason: `the instruction must state the goal as "${instructionFor(goal)}"` };
  const problem = goalProblem(goal);
  return problem === null ? { ok: true } : { ok: false, reason: problem };
};

const article = (thing: string): string => (/^[aeiou]/.test(thing) ? `an ${thing}` : `a ${thing}`);
const listed = (items: readonly string[]): string => (items.length <= 1 ? (items[0] ?? '') : `${items.slice(0, -1).join(', ')} and ${items[items.length - 1]}`);

/** One game in a world. */
class Dungeon implements ModuleEnvironment {
  private goal: Goal | null = null;
  private instruction = '';
  /** What the agent has seen: every observation so far and the action before it (none before the first). */
  private seen: SeenStep[] = [];
  private world: World = { rooms: new Map(), locks: new Map(), treasures: [] };
  private room = HALL;
  private carried: string[] = [];
  /** Items lying in each room's open view: found behind a feature. */
  private floor = new Map<string, string[]>();
  /** Opened chests and examined features, by room. */
  private revealed = new Set<string>();
  private unlocked = new Set<string>();
  private steps = 0;

  reset(task: Task): Observation {
    const goal = parseGoal(task.goal);
    if (goal === null) throw new Error(`task ${task.id} has no dungeon goal`);
    const world = worldOf(goal.world);
    if (world === null) throw new Error(`task ${task.id}: world ${goal.world} cannot place its keys`);
    this.goal = goal;
    this.instruction = task.instruction;
    this.world = world;
    this.room = HALL;
    this.carried = [];
    this.floor = new Map();
    this.revealed = new Set();
    this.unlocked = new Set();
    this.steps = 0;
    const first = this.observe('');
    this.seen = [{ action: null, observation: first }];
    return first;
  }

  private here(): Room {
    return this.world.rooms.get(this.room) as Room;
  }

  private lockAt(room: string, dir: string): string | null {
    const color = this.world.locks.get(`${room}|${dir}`);
    return color === undefined || this.unlocked.has(color) ? null : color;
  }

  /** The items the agent can see and take here: on the floor and in an opened chest. */
  private visible(): string[] {
    const c = this.here().container;
    const inChest = c !== null && c.kind === 'chest' && this.revealed.has(this.room) ? c.items : [];
    return [...(this.floor.get(this.room) ?? []), ...inChest];
  }

  private actions(): string[] {
    const room = this.here();
    const c = room.container;
    const out = this.visible().map((item) => `take ${item}`);
    if (c !== null && c.kind === 'chest' && !this.revealed.has(this.room)) out.push(`open ${c.name}`);
    if (c !== null && c.kind === 'feature') out.push(`examine ${c.name}`);
    for (const dir of DIRS) {
      const color = room.exits[dir] === undefined ? null : this.lockAt(this.room, dir);
      if (color !== null) out.push(`unlock ${color} door`);
    }
    if (this.room === HALL) out.push(...this.carried.map((item) => `place ${item} on altar`));
    out.push(...DIRS.filter((d) => room.exits[d] !== undefined).map((d) => `go ${d}`));
    return out;
  }

  private observe(message: string): Observation {
    const room = this.here();
    const c = room.container;
    const sights: string[] = [];
    if (this.room === HALL) sights.push('an altar');
    if (c !== null && c.kind === 'chest') sights.push(!this.revealed.has(this.room) ? `${article(c.name)} (closed)` : c.items.length === 0 ? `${article(c.name)} (open, empty)` : `${article(c.name)} (open), holding ${listed(c.items)}`);
    if (c !== null && c.kind === 'feature') sights.push(article(c.name));
    const floor = this.floor.get(this.room) ?? [];
    const exits = DIRS.filter((d) => room.exits[d] !== undefined).map((d) => {
      const color = this.world.locks.get(`${this.room}|${d}`);
      return color === undefined ? d : `${d} (${this.unlocked.has(color) ? 'open' : 'locked'} ${color} door)`;
    });
    const text = [
      message,
      `You are in the ${this.room}.`,
      sights.length > 0 ? `You see ${listed(sights)}.` : '',
      floor.length > 0 ? `On the floor: ${floor.join(', ')}.` : '',
      `Exits: ${exits.join(', ')}.`,
      `You carry: ${this.carried.length > 0 ? this.carried.join(', ') : 'nothing'}.`,
    ];
    return { text: text.filter((s) => s !== '').join(' '), actions: this.actions() };
  }

  step(action: string): ModuleStepResult {
    const result = this.act(action);
    // The contract: the episode ends at the step limit at the latest, with no reward.
    const out: ModuleStepResult = ++this.steps >= maxSteps && !result.done ? { ...result, observation: { text: `${result.observation.text} Your torch goes out.`, actions: [] }, done: true, info: { ...result.info, success: false, message: 'step limit reached' } } : result;
    this.seen.push({ action, observation: out.observation });
    return out;
  }

  private act(action: string): ModuleStepResult {
    const goal = this.goal;
    if (goal === null) throw new Error('step() before reset()');
    const a = action.trim().toLowerCase();
    const go = (message: string): ModuleStepResult => ({ observation: this.observe(message), reward: 0, done: false });
    if (!this.actions().includes(a)) return { observation: this.observe(`Nothing happens: "${action}" is not possible here.`), reward: 0, done: false, info: { valid: false, message: 'not an admissible action' } };
    const room = this.here();
    const c = room.container as Container;
    if (a.startsWith('go ')) {
      const dir = a.slice('go '.length) as Dir;
      const color = this.lockAt(this.room, dir);
      if (color !== null) return go(`The ${color} door is locked.`);
      this.room = room.exits[dir] as string;
      return go(`You go ${dir}.`);
    }
    if (a.startsWith('unlock ')) {
      const color = a.split(' ')[1] as string;
      if (!this.carried.includes(`${color} key`)) return go(`You need the ${color} key.`);
      this.unlocked.add(color);
      return go(`You unlock the ${color} door.`);
    }
    if (a.startsWith('open ')) {
      this.revealed.add(this.room);
      return go(`You open the ${c.name}.`);
    }
    if (a.startsWith('examine ')) {
      const found = c.items.splice(0);
      this.revealed.add(this.room);
      if (found.length === 0) return go(`You examine the ${c.name}: nothing ${this.floor.has(this.room) ? 'more ' : ''}of interest.`);
      this.floor.set(this.room, [...(this.floor.get(this.room) ?? []), ...found]);
      return go(`You examine the ${c.name} and find ${listed(found.map(article))}.`);
    }
    if (a.startsWith('take ')) {
      const item = a.slice('take '.length);
      const floor = this.floor.get(this.room) ?? [];
      if (floor.includes(item)) this.floor.set(this.room, floor.filter((i) => i !== item));
      else c.items.splice(c.items.indexOf(item), 1);
      this.carried.push(item);
      return go(`You take the ${item}.`);
    }
    // place ITEM on altar: the episode ends either way.
    const item = a.slice('place '.length, -' on altar'.length);
    const right = item === goal.item;
    return {
      observation: { text: `You place the ${item} on the altar. ${right ? 'It is what you were asked to bring.' : 'It is not what you were asked to bring.'}`, actions: [] },
      reward: right ? 1 : 0,
      done: true,
      info: { success: right, message: right ? 'placed the treasure asked for' : 'placed something else' },
    };
  }

  /** The rooms and directions from the current room to `to` (the map is a tree, so the path is unique). */
  private path(to: string): { room: string; dir: Dir }[] {
    const back = new Map<string, { room: string; dir: Dir }>();
    const queue = [this.room];
    const seen = new Set(queue);
    for (let room = queue.shift(); room !== undefined; room = queue.shift()) {
      for (const dir of DIRS) {
        const next = (this.world.rooms.get(room) as Room).exits[dir];
        if (next === undefined || seen.has(next)) continue;
        seen.add(next);
        back.set(next, { room, dir });
        queue.push(next);
      }
    }
    const out: { room: string; dir: Dir }[] = [];
    for (let at = to; at !== this.room; ) {
      const b = back.get(at) as { room: string; dir: Dir };
      out.unshift(b);
      at = b.room;
    }
    return out;
  }

  /** The next action towards holding `item`: reach its room (fetching keys for locked doors on the way), reveal it, take it. */
  private fetch(item: string): string {
    let where = '';
    for (const [room, r] of this.world.rooms) if ((this.floor.get(room) ?? []).includes(item) || (r.container?.items.includes(item) ?? false)) where = room;
    const path = this.path(where);
    for (const [i, edge] of path.entries()) {
      const color = this.lockAt(edge.room, edge.dir);
      if (color === null) continue;
      if (!this.carried.includes(`${color} key`)) return this.fetch(`${color} key`);
      return i === 0 ? `unlock ${color} door` : `go ${(path[0] as { dir: Dir }).dir}`;
    }
    if (path.length > 0) return `go ${(path[0] as { dir: Dir }).dir}`;
    const c = this.here().container;
    if (c !== null && c.items.includes(item) && !this.revealed.has(this.room)) return c.kind === 'chest' ? `open ${c.name}` : `examine ${c.name}`;
    return `take ${item}`;
  }

  /** The next action towards the goal from any state (it reads the goal and the whole map). */
  expertAction(): string {
    const g = this.goal;
    if (g === null) throw new Error('expertAction() before reset()');
    if (!this.carried.includes(g.item)) return this.fetch(g.item);
    if (this.room === HALL) return `place ${g.item} on altar`;
    return `go ${(this.path(HALL)[0] as { dir: Dir }).dir}`;
  }

  /** A goal-blind explorer's next action: it reads only the instruction and what was shown so far. */
  demonstratorAction(): string {
    return explore(this.instruction, this.seen);
  }
}

/** One step of what the agent saw: the action taken (null before the first observation) and the observation after it. */
export interface SeenStep {
  action: string | null;
  observation: Observation;
}

const roomOf = (text: string): string | null => /You are in the ([a-z ]+)\./.exec(text)?.[1] ?? null;

/**
 * The demonstrator: an explorer who maps the rooms it walks through, takes every key and the
 * treasure named in the instruction, opens every chest, unlocks a door when it holds that door's
 * key, and otherwise walks to the nearest room it knows of with something left to do (a chest or
 * an exit not yet taken, in north-east-south-west order). Like many players it looks behind
 * features (a loose stone, a tapestry) only once nothing else is left, and then the nearest
 * first. With the treasure in hand it walks back to the hall along the rooms it knows. It has no
 * map beyond what it saw, so a treasure found late can outlast the step limit. It sees the
 * instruction and the observations so far, never the goal.
 */
export function explore(instruction: string, seen: readonly SeenStep[]): string {
  const last = seen[seen.length - 1];
  if (last === undefined) throw new Error('explore() needs the first observation');
  const { text, actions } = last.observation;
  const target = /^find the (.+) and place it on the altar/.exec(instruction)?.[1] ?? '';
  // Its map: the exits it walked through, the last view of each room, the features it examined.
  const edges = new Map<string, Map<string, string>>();
  const views = new Map<string, Observation>();
  const examined = new Set<string>();
  let previous: string | null = null;
  for (const step of seen) {
    const room = roomOf(step.observation.text);
    if (room === null) continue;
    if (previous !== null && room !== previous && step.action?.startsWith('go ')) {
      const dir = step.action.slice('go '.length) as Dir;
      edges.set(previous, (edges.get(previous) ?? new Map()).set(dir, room));
      edges.set(room, (edges.get(room) ?? new Map()).set(OPPOSITE[dir], previous));
    }
    if (step.action?.startsWith('examine ')) examined.add(`${room}|${step.action.slice('examine '.length)}`);
    views.set(room, step.observation);
    previous = room;
  }
  const here = roomOf(text);
  if (here === null) return actions[0] ?? 'go north';
  const carried = (/You carry: ([^.]*)\./.exec(text)?.[1] ?? 'nothing').split(', ');

  /** What is left to do in a room, as the action to do it there (null when nothing). */
  const work = (room: string): string | null => {
    const view = views.get(room) as Observation;
    const has = (a: string): boolean => view.actions.includes(a);
    if (has(`take ${target}`)) return `take ${target}`;
    const key = view.actions.find((a) => /^take \S+ key$/.test(a));
    if (key !== undefined) return key;
    const unlock = view.actions.find((a) => a.startsWith('unlock ') && carried.includes(`${a.split(' ')[1]} key`));
    if (unlock !== undefined) return unlock;
    const open = view.actions.find((a) => a.startsWith('open '));
    if (open !== undefined) return open;
    const exits = (/Exits: ([^.]*)\./.exec(view.text)?.[1] ?? '').split(', ');
    const fresh = exits.find((e) => !e.includes('locked') && !edges.get(room)?.has(e.split(' ')[0] as string));
    return fresh === undefined ? null : `go ${fresh.split(' ')[0]}`;
  };
  /** A feature not yet examined in a room: searched only once nothing else is left anywhere it knows. */
  const search = (room: string): string | null => (views.get(room) as Observation).actions.find((a) => a.startsWith('examine ') && !examined.has(`${room}|${a.slice('examine '.length)}`)) ?? null;
  /** The first step towards the nearest known room that `wanted` accepts. */
  const towards = (wanted: (room: string) => boolean): string | null => {
    const first = new Map<string, string>([[here, '']]);
    const queue = [here];
    for (let room = queue.shift(); room !== undefined; room = queue.shift()) {
      if (room !== here && wanted(room)) return first.get(room) as string;
      for (const [dir, next] of edges.get(room) ?? []) {
        if (first.has(next)) continue;
        first.set(next, room === here ? `go ${dir}` : (first.get(room) as string));
        queue.push(next);
      }
    }
    return null;
  };

  if (carried.includes(target)) return actions.includes(`place ${target} on altar`) ? `place ${target} on altar` : (towards((room) => room === HALL) ?? actions[0] ?? 'go north');
  return work(here) ?? towards((room) => work(room) !== null) ?? search(here) ?? towards((room) => search(room) !== null) ?? actions.find((a) => a.startsWith('go ')) ?? actions[0] ?? 'go north';
}

export const create: EnvironmentModule['create'] = () => new Dungeon();
