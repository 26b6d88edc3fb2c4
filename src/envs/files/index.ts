/**
 * An environment module (`--env-module src/envs/files/index.ts`): a file manager. The instruction
 * asks to delete, move or rename "the <party> <kind> from <month>"; the files have generic names
 * (`scan_4821.pdf`), so what a file holds shows only once it is opened. The folder where such a
 * document belongs (invoices in /documents/finance) often holds look-alikes and not the document
 * itself, which was saved elsewhere: a dead end the agent must back out of. Moving is cut, walk to
 * the destination, paste. The first change to the tree ends the episode; reward 1 when it was the
 * asked-for change to the asked-for file, 0 otherwise. Every observation lists the admissible actions.
 *
 * Stand-alone like a user's module: types-only imports, its own seeded generator, and the world a
 * deterministic function of the task's goal.
 */
import type { EnvironmentModule, ModuleEnvironment, ModuleStepResult, ModuleTask } from '../module.ts';
import type { Observation, Task, TaskValidation } from '../../core/types.ts';

export const name: EnvironmentModule['name'] = 'files';
export const description: EnvironmentModule['description'] = 'a file manager: find the document asked for by opening files, then delete, move or rename it';
export const maxSteps: EnvironmentModule['maxSteps'] = 30;

const KINDS = ['invoice', 'receipt', 'payslip', 'contract', 'letter', 'report'] as const;
const PARTIES = ['acme', 'globex', 'initech', 'umbrella', 'hooli', 'vandelay', 'stark', 'wayne'] as const;
const MONTHS = ['january', 'february', 'march', 'april', 'may', 'june', 'july', 'august', 'september', 'october', 'november', 'december'] as const;
const OPS = ['delete', 'move', 'rename'] as const;
const TAGS = ['final', 'draft', 'old', 'keep', 'shared', 'urgent'] as const;
type Kind = (typeof KINDS)[number];
type Op = (typeof OPS)[number];

/** The folder tree (the same in every world; what the folders hold differs). */
const FOLDERS = ['/', '/documents', '/documents/finance', '/documents/legal', '/documents/mail', '/documents/work', '/downloads', '/desktop', '/desktop/scans', '/desktop/temp', '/archive', '/archive/2022', '/archive/2023', '/archive/2024'] as const;
/** Where a person would file each kind of document (and where the demonstrator looks first). */
const HOME: Record<Kind, string> = { invoice: '/documents/finance', receipt: '/documents/finance', payslip: '/documents/finance', contract: '/documents/legal', letter: '/documents/mail', report: '/documents/work' };
const DESTINATIONS = ['/archive/2022', '/archive/2023', '/archive/2024', '/desktop/temp', '/documents/finance', '/documents/legal'] as const;
const FILLER = ['Shopping list: milk, bread, coffee.', 'Meeting notes: nothing decided yet.', 'Wifi password for the guest network.', 'Draft of a holiday plan.'] as const;

interface Goal {
  op: Op;
  kind: Kind;
  party: string;
  month: string;
  /** The destination folder of a move. */
  dest?: string;
  /** The new base name of a rename. */
  tag?: string;
  /** Seed of where the files are. */
  layout: number;
}

interface File {
  name: string;
  contents: string;
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
const parentOf = (path: string): string => (path.lastIndexOf('/') <= 0 ? '/' : path.slice(0, path.lastIndexOf('/')));
const childrenOf = (path: string): string[] => FOLDERS.filter((f) => f !== '/' && parentOf(f) === path).map((f) => f.slice(f.lastIndexOf('/') + 1));
const join = (folder: string, child: string): string => (folder === '/' ? `/${child}` : `${folder}/${child}`);

function contentsOf(kind: Kind, party: string, month: string, amount: number): string {
  switch (kind) {
    case 'invoice': return `Invoice billed by ${party} for ${month}. Amount due: ${amount} euros.`;
    case 'receipt': return `Receipt from ${party}, paid in ${month}. Total: ${amount} euros.`;
    case 'payslip': return `Payslip paid by ${party} for ${month}. Net pay: ${amount * 10} euros.`;
    case 'contract': return `Service contract with ${party}, signed in ${month}, running ${amount % 24 + 1} months.`;
    case 'letter': return `Letter from ${party}, written in ${month}. Dear customer, thank you for your patience.`;
    case 'report': return `Quarterly report on ${party}, prepared in ${month}: ${amount} pages.`;
  }
}

/** Test tasks ask about (kind, party) pairs that train tasks never do: one pair in four. */
function pairSplit(kind: string, party: string): 'train' | 'test' {
  return (KINDS.indexOf(kind as Kind) * PARTIES.length + PARTIES.indexOf(party as (typeof PARTIES)[number])) % 4 === 1 ? 'test' : 'train';
}

/** The files of a task's world, by folder; the asked-for document is the only one matching all three of kind, party and month. */
function world(goal: Goal): Map<string, File[]> {
  const r = rng(goal.layout);
  const used = new Set<string>();
  const fileName = (): string => {
    for (;;) {
      const n = 100 + Math.floor(r() * 9900);
      const f = pick(r, [`scan_${n}.pdf`, `doc_${n}.txt`, `file_${n}.pdf`, `untitled_${n}.doc`]);
      if (!used.has(f)) {
        used.add(f);
        return f;
      }
    }
  };
  const amount = (): number => 20 + Math.floor(r() * 900);
  const out = new Map<string, File[]>(FOLDERS.map((f) => [f, []]));
  const put = (folder: string, contents: string): void => void (out.get(folder) as File[]).push({ name: fileName(), contents });
  const home = HOME[goal.kind];
  // Half the time the document is where it belongs; otherwise anywhere else but the move's destination.
  const elsewhere = FOLDERS.filter((f) => f !== '/' && f !== home && f !== goal.dest);
  const targetFolder = r() < 0.5 && home !== goal.dest ? home : pick(r, elsewhere);
  put(targetFolder, contentsOf(goal.kind, goal.party, goal.month, amount()));
  const otherMonth = (): string => pick(r, MONTHS.filter((m) => m !== goal.month));
  // Look-alikes: two share all but one of kind, party and month, and sit where the document belongs.
  put(home, contentsOf(goal.kind, goal.party, otherMonth(), amount()));
  put(home, contentsOf(goal.kind, pick(r, PARTIES.filter((p) => p !== goal.party)), goal.month, amount()));
  put(pick(r, FOLDERS.slice(1)), contentsOf(goal.kind, goal.party, otherMonth(), amount()));
  put(pick(r, FOLDERS.slice(1)), contentsOf(pick(r, KINDS.filter((k) => k !== goal.kind)), goal.party, goal.month, amount()));
  const fillers = 12 + Math.floor(r() * 6);
  for (let i = 0; i < fillers; i++) {
    const folder = pick(r, FOLDERS.slice(1));
    if (r() < 0.2) {
      put(folder, pick(r, FILLER));
      continue;
    }
    const kind = pick(r, KINDS);
    const party = pick(r, PARTIES);
    const month = pick(r, MONTHS);
    if (kind === goal.kind && party === goal.party && month === goal.month) continue;
    put(kind === goal.kind ? folder : r() < 0.6 ? HOME[kind] : folder, contentsOf(kind, party, month, amount()));
  }
  for (const files of out.values()) {
    for (let i = files.length - 1; i > 0; i--) {
      const j = Math.floor(r() * (i + 1));
      [files[i], files[j]] = [files[j] as File, files[i] as File];
    }
  }
  return out;
}

function parseGoal(goal: unknown): Goal | null {
  if (goal === null || typeof goal !== 'object' || Array.isArray(goal)) return null;
  const g = goal as Record<string, unknown>;
  if (typeof g.op !== 'string' || !(OPS as readonly string[]).includes(g.op)) return null;
  if (typeof g.kind !== 'string' || !(KINDS as readonly string[]).includes(g.kind)) return null;
  if (typeof g.party !== 'string' || !(PARTIES as readonly string[]).includes(g.party)) return null;
  if (typeof g.month !== 'string' || !(MONTHS as readonly string[]).includes(g.month)) return null;
  if (typeof g.layout !== 'number' || !Number.isInteger(g.layout)) return null;
  const out: Goal = { op: g.op as Op, kind: g.kind as Kind, party: g.party, month: g.month, layout: g.layout };
  if (out.op === 'move') {
    if (typeof g.dest !== 'string' || !(DESTINATIONS as readonly string[]).includes(g.dest)) return null;
    out.dest = g.dest;
  }
  if (out.op === 'rename') {
    if (typeof g.tag !== 'string' || !(TAGS as readonly string[]).includes(g.tag)) return null;
    out.tag = g.tag;
  }
  return out;
}

function instructionOf(g: Goal): string {
  const doc = `the ${g.party} ${g.kind} from ${g.month}`;
  return g.op === 'move' ? `move ${doc} into ${g.dest}` : g.op === 'rename' ? `rename ${doc} to ${g.tag}` : `delete ${doc}`;
}

export const tasks: EnvironmentModule['tasks'] = ({ split, count, seed }) => {
  const r = rng((seed * 2654435761) ^ (split === 'test' ? 0x3c6ef372 : 0xa54ff53a));
  const out: ModuleTask[] = [];
  while (out.length < count) {
    const kind = pick(r, KINDS);
    const party = pick(r, PARTIES);
    const g: Goal = { op: pick(r, OPS), kind, party, month: pick(r, MONTHS), layout: Math.floor(r() * 2 ** 31) };
    if (g.op === 'move') g.dest = pick(r, DESTINATIONS);
    if (g.op === 'rename') g.tag = pick(r, TAGS);
    if (pairSplit(kind, party) !== split) continue;
    const goal: Record<string, string | number> = { op: g.op, kind, party, month: g.month, layout: g.layout };
    if (g.dest !== undefined) goal.dest = g.dest;
    if (g.tag !== undefined) goal.tag = g.tag;
    out.push({ id: `files-${split}-${seed}-${out.length}`, instruction: instructionOf(g), goal });
  }
  return out;
};

export const validateTask: EnvironmentModule['validateTask'] = (task: Task): TaskValidation => {
  const goal = parseGoal(task.goal);
  if (goal === null) return { ok: false, reason: 'the goal must be {op, kind, party, month, layout} with known values, plus dest for a move (one of the destination folders) and tag for a rename' };
  if (pairSplit(goal.kind, goal.party) !== task.split) return { ok: false, reason: `${goal.party} ${goal.kind}s belong to the ${pairSplit(goal.kind, goal.party)} split` };
  if (task.instruction !== instructionOf(goal)) return { ok: false, reason: `the instruction must read "${instructionOf(goal)}" for this goal` };
  return { ok: true };
};

/** What the agent has seen: the instruction, then each observation and the action taken on it. */
interface Transcript {
  instruction: string;
  observations: Observation[];
  actions: string[];
}

class FileManager implements ModuleEnvironment {
  private goal: Goal | null = null;
  private files = new Map<string, File[]>();
  private folder = '/';
  /** The open file's name, or null in a folder view. */
  private open: string | null = null;
  private clipboard: { folder: string; name: string } | null = null;
  private steps = 0;
  private done = false;
  private seen: Transcript = { instruction: '', observations: [], actions: [] };

  reset(task: Task): Observation {
    const goal = parseGoal(task.goal);
    if (goal === null) throw new Error(`task ${task.id} has no files goal`);
    this.goal = goal;
    this.files = world(goal);
    this.folder = '/';
    this.open = null;
    this.clipboard = null;
    this.steps = 0;
    this.done = false;
    this.seen = { instruction: task.instruction, observations: [], actions: [] };
    return this.record(this.observe('You open the file manager.'));
  }

  private record(obs: Observation): Observation {
    this.seen.observations.push(obs);
    return obs;
  }

  private here(): File[] {
    return this.files.get(this.folder) ?? [];
  }

  private actions(): string[] {
    if (this.done) return [];
    if (this.open !== null) {
      const f = this.open;
      const ext = f.slice(f.lastIndexOf('.'));
      return ['close', `delete ${f}`, `cut ${f}`, ...TAGS.map((t) => `rename ${f} to ${t}${ext}`)];
    }
    return [
      ...childrenOf(this.folder).map((c) => `open ${c}`),
      ...this.here().map((f) => `open ${f.name}`),
      ...(this.folder === '/' ? [] : ['go up']),
      ...(this.clipboard ? ['paste'] : []),
    ];
  }

  private observe(message: string): Observation {
    const clip = `Clipboard: ${this.clipboard ? this.clipboard.name : 'empty'}`;
    let view: string;
    if (this.open !== null) {
      const file = this.here().find((f) => f.name === this.open) as File;
      view = `Viewing file ${join(this.folder, file.name)}\nContents: ${file.contents}`;
    } else {
      const folders = childrenOf(this.folder);
      const files = this.here().map((f) => f.name);
      view = `In folder ${this.folder}\nFolders: ${folders.length ? folders.join(', ') : 'none'}\nFiles: ${files.length ? files.join(', ') : 'none'}`;
    }
    return { text: `${message}\n${view}\n${clip}`, actions: this.actions() };
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
    const verdict = success ? 'That was the change asked for.' : 'That was not the change asked for.';
    return { observation: { text: `${message} ${verdict}`, actions: [] }, reward: success ? 1 : 0, done: true, info: { success, message: verdict } };
  }

  private isTarget(folder: string, name: string, goal: Goal): boolean {
    const file = (this.files.get(folder) ?? []).find((f) => f.name === name);
    return file !== undefined && matches(file.contents, goal.kind, goal.party, goal.month);
  }

  private act(a: string, goal: Goal): ModuleStepResult {
    if (!this.actions().includes(a)) return { observation: this.observe(`Nothing happens: "${a}" is not possible here.`), reward: 0, done: false, info: { valid: false, message: 'not an admissible action' } };
    if (a === 'close') {
      this.open = null;
      return { observation: this.observe('You close the file.'), reward: 0, done: false };
    }
    if (a === 'go up') {
      this.folder = parentOf(this.folder);
      return { observation: this.observe('You go up one folder.'), reward: 0, done: false };
    }
    if (a.startsWith('open ')) {
      const target = a.slice('open '.length);
      if (childrenOf(this.folder).includes(target)) {
        this.folder = join(this.folder, target);
        return { observation: this.observe(`You open the folder ${target}.`), reward: 0, done: false };
      }
      this.open = target;
      return { observation: this.observe(`You open ${target}.`), reward: 0, done: false };
    }
    const name = this.open as string;
    if (a.startsWith('cut ')) {
      this.clipboard = { folder: this.folder, name };
      this.open = null;
      return { observation: this.observe(`You cut ${name}; paste it in another folder to move it.`), reward: 0, done: false };
    }
    if (a === 'paste') {
      const clip = this.clipboard as { folder: string; name: string };
      const ok = goal.op === 'move' && this.folder === goal.dest && this.isTarget(clip.folder, clip.name, goal);
      return this.finish(`You move ${clip.name} into ${this.folder}.`, ok);
    }
    if (a.startsWith('delete ')) return this.finish(`You delete ${name}.`, goal.op === 'delete' && this.isTarget(this.folder, name, goal));
    const newName = a.slice(a.lastIndexOf(' to ') + ' to '.length);
    return this.finish(`You rename ${name} to ${newName}.`, goal.op === 'rename' && newName.startsWith(`${goal.tag}.`) && this.isTarget(this.folder, name, goal));
  }

  expertAction(): string {
    const goal = this.goal;
    if (goal === null) throw new Error('expertAction() before reset()');
    if (this.clipboard !== null) {
      if (this.open !== null) return 'close';
      if (this.isTarget(this.clipboard.folder, this.clipboard.name, goal) && goal.dest !== undefined) return walk(this.folder, goal.dest) ?? 'paste';
    }
    let where = '';
    let file = '';
    for (const [folder, files] of this.files) {
      const hit = files.find((f) => matches(f.contents, goal.kind, goal.party, goal.month));
      if (hit) [where, file] = [folder, hit.name];
    }
    if (this.open !== null && (this.folder !== where || this.open !== file)) return 'close';
    if (this.open === null) return walk(this.folder, where) ?? `open ${file}`;
    if (goal.op === 'delete') return `delete ${file}`;
    if (goal.op === 'move') return `cut ${file}`;
    return `rename ${file} to ${goal.tag}${file.slice(file.lastIndexOf('.'))}`;
  }

  /**
   * A goal-blind demonstrator: it reads only the transcript of what the agent saw (the instruction
   * and the observations so far), never the goal or the tree it has not opened.
   */
  demonstratorAction(): string {
    return demonstrate(this.seen);
  }
}

function matches(contents: string, kind: string, party: string, month: string): boolean {
  const words = new Set(contents.toLowerCase().replace(/[^a-z0-9 ]/g, ' ').split(/\s+/));
  return words.has(kind) && words.has(party) && words.has(month);
}

/** The next step from folder `from` towards folder `to`, or null when already there. */
function walk(from: string, to: string): string | null {
  if (from === to) return null;
  if (to.startsWith(from === '/' ? '/' : `${from}/`)) {
    const rest = to.slice(from === '/' ? 1 : from.length + 1);
    return `open ${rest.split('/')[0]}`;
  }
  return 'go up';
}

const INSTRUCTION_RE = /^(delete|move|rename) the (\S+) (\S+) from (\S+)(?: into (\S+)| to (\S+))?$/;

/**
 * The demonstrator's rule, a person tidying up: open the folder where such a document belongs
 * first, open every file in each folder visited, then try the other folders in listed order, going
 * up when a folder is used up; act on the first file whose contents match the instruction.
 */
function demonstrate(seen: Transcript): string {
  const last = seen.observations[seen.observations.length - 1];
  if (last === undefined || last.actions.length === 0) return '';
  const m = INSTRUCTION_RE.exec(seen.instruction.trim().toLowerCase());
  if (m === null) return last.actions[0] as string;
  const [, op, party, kind, month, dest, tag] = m as unknown as [string, string, string, string, string, string | undefined, string | undefined];
  const line = (text: string, prefix: string): string | null => text.split('\n').find((l) => l.startsWith(prefix))?.slice(prefix.length) ?? null;
  const list = (v: string | null): string[] => (v === null || v === 'none' ? [] : v.split(', '));
  const visited = new Set<string>();
  const opened = new Set<string>();
  for (const o of seen.observations) {
    const folder = line(o.text, 'In folder ');
    if (folder !== null) visited.add(folder);
    const file = line(o.text, 'Viewing file ');
    if (file !== null) opened.add(file);
  }
  const has = (a: string): string | null => (last.actions.includes(a) ? a : null);
  const viewing = line(last.text, 'Viewing file ');
  if (viewing !== null) {
    const fname = viewing.slice(viewing.lastIndexOf('/') + 1);
    if (!matches(line(last.text, 'Contents: ') ?? '', kind, party, month)) return 'close';
    if (op === 'delete') return has(`delete ${fname}`) ?? 'close';
    if (op === 'move') return has(`cut ${fname}`) ?? 'close';
    return last.actions.find((a) => a.startsWith(`rename ${fname} to ${tag}.`)) ?? 'close';
  }
  const folder = line(last.text, 'In folder ') ?? '/';
  if (line(last.text, 'Clipboard: ') !== 'empty' && dest !== undefined) return walk(folder, dest) === null ? (has('paste') ?? last.actions[0] as string) : (walk(folder, dest) as string);
  const unopened = list(line(last.text, 'Files: ')).filter((f) => !opened.has(join(folder, f)));
  if (unopened.length > 0) return `open ${unopened[0]}`;
  const subfolders = list(line(last.text, 'Folders: ')).filter((c) => !visited.has(join(folder, c)));
  const home = HOME[kind as Kind] as string | undefined;
  const towardsHome = home !== undefined && !visited.has(home) ? walk(folder, home) : null;
  if (towardsHome !== null && towardsHome !== 'go up' && subfolders.includes(towardsHome.slice('open '.length))) return towardsHome;
  if (towardsHome === 'go up' && has('go up')) return 'go up';
  if (subfolders.length > 0) return `open ${subfolders[0]}`;
  return has('go up') ?? (last.actions[0] as string);
}

export const create: EnvironmentModule['create'] = () => new FileManager();
