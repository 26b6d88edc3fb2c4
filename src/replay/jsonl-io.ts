/**
 * Streaming import and export of dreamgym JSONL (format v1, see src/core/jsonl.ts) into and out
 * of a run of the replay store.
 *
 * Import is all or nothing with respect to the file: every line is validated against the
 * Foundation schema (and task references, duplicates and environments are checked against the
 * run) before anything is written, so a file with any bad line writes nothing and the error
 * (`JsonlError`) lists the bad lines. The evictions the whole import needs to fit the run's
 * capacity are planned then too (a `CapacityError` also writes nothing). Then tasks are written,
 * and trajectories in batches (one transaction each, embedded in between) that evict nothing;
 * the planned evictions are done last, as the import's commit. If anything fails before that
 * (e.g. `StorageFullError`, an abort), what this import wrote is deleted again and, since
 * nothing was evicted yet, the run is exactly as it was before the import.
 *
 * Inputs that can be read twice (a string, a Blob/File, or a function returning a fresh stream)
 * are streamed twice (validate, then write) and never held in memory whole; one-shot streams
 * are validated while their parsed records are kept for the write phase.
 */
import type { Embedder } from '../core/embedding.ts';
import { JsonlError, parseJsonlLine, taskLine, trajectoryLine, type JsonlIssue, type JsonlRecord } from '../core/jsonl.ts';
import { TrajectorySchema, type EnvName, type Task, type Trajectory, type TrajectorySource } from '../core/types.ts';
import { EmbedderMismatchError, EmbeddingDimensionError, UnknownRunError } from './errors.ts';
import type { PlannedTrajectory, ReplayStore } from './store.ts';
import type { SkippedRecord } from './types.ts';
import { HouseholdGoalSchema } from '../envs/household/goal.ts';
import { ShopGoalSchema } from '../envs/shop/goal.ts';
import { checkId, checkPositive } from './validate.ts';

/** A stream of text or bytes. */
export type JsonlStream = ReadableStream<Uint8Array> | AsyncIterable<string | Uint8Array> | Iterable<string | Uint8Array>;

/** What `importJsonl` reads: text, a Blob/File, a stream, or a function opening a fresh stream (re-readable). */
export type JsonlInput = string | Blob | JsonlStream | (() => JsonlStream);

/** Progress of an import. */
export interface ImportProgress {
  phase: 'validate' | 'write';
  /** Lines read so far (in this phase). */
  lines: number;
  /** Bytes (for text input: characters) read so far in this phase. */
  bytes: number;
  /** Size of the input when known. */
  totalBytes?: number;
  /** Trajectories written so far (write phase). */
  written: number;
  /** Trajectories in the file (known after validation). */
  totalTrajectories?: number;
}

/** Options of `importJsonl`. */
export interface ImportJsonlOptions {
  /** Embeds each step for retrieval; must match the run's embedder. */
  embedder: Embedder;
  /** Trajectories per transaction (default 256). */
  batchSize?: number;
  /** Trajectory ids already in the run: error (default, nothing is written) or skip. */
  onDuplicate?: 'error' | 'skip';
  /** Pin the imported trajectories (default: offline ones are pinned). */
  pinned?: boolean;
  onProgress?: (progress: ImportProgress) => void;
  /** Cancels the import; what was written is removed again. */
  signal?: AbortSignal;
}

/** What an import wrote. */
export interface ImportSummary {
  tasks: number;
  trajectories: number;
  transitions: number;
  /** Trajectory ids skipped as already stored (`onDuplicate: 'skip'`). */
  skipped: string[];
  /** Trajectories evicted to make room (unpinned data only, evicted once everything is written). */
  evicted: number;
}

const MAX_ISSUES = 50;
const PROGRESS_EVERY_LINES = 2000;

function isReadableStream(x: unknown): x is ReadableStream<Uint8Array> {
  return typeof x === 'object' && x !== null && typeof (x as ReadableStream).getReader === 'function';
}

function isBlob(x: unknown): x is Blob {
  return typeof Blob !== 'undefined' && x instanceof Blob;
}

async function* chunks(stream: JsonlStream | string | Blob): AsyncGenerator<string | Uint8Array> {
  if (typeof stream === 'string') {
    yield stream;
    return;
  }
  const source = isBlob(stream) ? (stream.stream() as ReadableStream<Uint8Array>) : stream;
  if (isReadableStream(source)) {
    const reader = source.getReader();
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) return;
        yield value;
      }
    } finally {
      reader.releaseLock();
    }
  }
  if (typeof (source as AsyncIterable<unknown>)[Symbol.asyncIterator] === 'function' || typeof (source as Iterable<unknown>)[Symbol.iterator] === 'function') {
    for await (const chunk of source as AsyncIterable<string | Uint8Array>) {
      if (typeof chunk !== 'string' && !(chunk instanceof Uint8Array)) throw new TypeError(`JSONL stream chunks must be strings or Uint8Arrays, got ${Object.prototype.toString.call(chunk)}`);
      yield chunk;
    }
    return;
  }
  throw new TypeError(`cannot read JSONL from ${Object.prototype.toString.call(stream)}`);
}

/**
 * The most characters one JSONL line may have (16 Mi). A line is parsed whole, so without a
 * bound one huge line would take memory several times its size; a record this long is no
 * episode anyone recorded.
 */
export const MAX_JSONL_LINE_CHARS = 16 * 1024 * 1024;

/**
 * Splits a stream into lines (without `\n` or a trailing `\r`), counting bytes. Linear in the
 * input: each chunk is searched once and a line's pieces are joined once. A line longer than
 * {@link MAX_JSONL_LINE_CHARS} ends the read with a `JsonlError` naming it.
 */
async function* lines(stream: JsonlStream | string | Blob, onBytes: (n: number) => void): AsyncGenerator<string> {
  const decoder = new TextDecoder('utf-8', { fatal: true });
  /** Pieces of the line being read, and their length. */
  let parts: string[] = [];
  let pending = 0;
  let lineNo = 0;
  const decode = (bytes: Uint8Array | undefined, final: boolean): string => {
    try {
      return final ? decoder.decode(bytes) : decoder.decode(bytes, { stream: true });
    } catch {
      const bad = bytes ? firstInvalidUtf8(bytes) : 0;
      let before = 0;
      for (let i = 0; bytes && i < bad; i++) if (bytes[i] === 0x0a) before++;
      throw new JsonlError([{ line: lineNo + 1 + before, message: 'not valid UTF-8' }]);
    }
  };
  const tooLong = (): JsonlError => new JsonlError([{ line: lineNo + 1, message: `longer than ${MAX_JSONL_LINE_CHARS} characters, the most a line may have` }]);
  const take = (piece: string): void => {
    if (piece === '') return;
    pending += piece.length;
    if (pending > MAX_JSONL_LINE_CHARS) throw tooLong();
    parts.push(piece);
  };
  const finish = (): string => {
    const raw = parts.length === 1 ? (parts[0] as string) : parts.join('');
    parts = [];
    pending = 0;
    lineNo++;
    return raw.endsWith('\r') ? raw.slice(0, -1) : raw;
  };
  let first = true;
  for await (const chunk of chunks(stream)) {
    onBytes(typeof chunk === 'string' ? chunk.length : chunk.byteLength);
    let text = typeof chunk === 'string' ? chunk : decode(chunk, false);
    // A byte order mark opens many UTF-8 files; the decoder drops it from bytes, text keeps it.
    if (first && text !== '') {
      if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
      first = false;
    }
    let start = 0;
    for (let nl = text.indexOf('\n'); nl >= 0; nl = text.indexOf('\n', start)) {
      take(text.slice(start, nl));
      yield finish();
      start = nl + 1;
    }
    take(text.slice(start));
  }
  take(decode(undefined, true));
  if (pending > 0) yield finish();
}

/** Offset of the first byte that cannot start or continue a UTF-8 sequence (0 when none is found: the fault lies before). */
function firstInvalidUtf8(b: Uint8Array): number {
  for (let i = 0; i < b.length; ) {
    const c = b[i] as number;
    const n = c < 0x80 ? 0 : c >= 0xc2 && c <= 0xdf ? 1 : c >= 0xe0 && c <= 0xef ? 2 : c >= 0xf0 && c <= 0xf4 ? 3 : -1;
    if (n < 0) return i;
    for (let k = 1; k <= n; k++) {
      if (i + k >= b.length) return 0; // cut at the chunk's end: the next chunk continues it
      if (((b[i + k] as number) & 0xc0) !== 0x80) return i;
    }
    i += n + 1;
  }
  return 0;
}

interface Located<T> {
  line: number;
  value: T;
}

/** What the checks keep of a trajectory: enough to plan and verify the write, never its steps. */
interface TrajectoryRef {
  id: string;
  taskId: string;
  env: Task['env'];
  source: TrajectorySource;
  length: number;
}

/** The problems found, the earliest `MAX_ISSUES` lines kept (constant memory) and all of them counted. */
class IssueList {
  readonly items: JsonlIssue[] = [];
  total = 0;
  add(...issues: JsonlIssue[]): void {
    for (const issue of issues) {
      this.total++;
      if (this.items.length < MAX_ISSUES) {
        this.items.push(issue);
        continue;
      }
      let last = 0;
      for (let i = 1; i < this.items.length; i++) if ((this.items[i] as JsonlIssue).line > (this.items[last] as JsonlIssue).line) last = i;
      if (issue.line < (this.items[last] as JsonlIssue).line) this.items[last] = issue;
    }
  }
  error(): JsonlError {
    return new JsonlError([...this.items].sort((a, b) => a.line - b.line), this.total);
  }
}

/** Each built-in environment's goal schema: a goal that does not parse could never be played. */
const GOAL_SCHEMAS: Record<EnvName, { safeParse(value: unknown): { success: boolean; error?: { issues: readonly { path: PropertyKey[]; message: string }[] } } }> = {
  shop: ShopGoalSchema,
  household: HouseholdGoalSchema,
};

/** Checks of one record beyond its schema, which the domain asks for (the same for validate and import). */
function domainIssues(record: JsonlRecord, line: number): JsonlIssue[] {
  if (record.type === 'task') {
    // Only the built-in domains have a known goal shape; another domain's goal is any JSON value.
    const schema = (GOAL_SCHEMAS as Partial<Record<string, (typeof GOAL_SCHEMAS)[EnvName]>>)[record.task.env];
    if (schema === undefined || !Object.hasOwn(GOAL_SCHEMAS, record.task.env)) return [];
    const parsed = schema.safeParse(record.task.goal);
    if (parsed.success) return [];
    const first = parsed.error?.issues[0];
    const path = first && first.path.length > 0 ? `.${first.path.map(String).join('.')}` : '';
    return [{ line, field: `task.goal${path}`, message: `not a ${record.task.env} goal: ${first?.message ?? 'invalid'}` }];
  }
  const t = record.trajectory;
  const issues: JsonlIssue[] = [];
  if (t.steps.length === 0) issues.push({ line, field: 'trajectory.steps', message: 'a trajectory needs at least one step' });
  // Both built-in environments reward a success with 1 (shop: r = 1; household: the goal holds).
  if (t.success && t.reward < 0) issues.push({ line, field: 'trajectory.reward', message: `a successful ${t.env} episode cannot have a negative reward (${t.reward})` });
  return issues;
}

/** What {@link checkJsonl} found: the problems, the file's tasks, and references to its trajectories. */
interface JsonlCheck {
  issues: IssueList;
  lines: number;
  bytes: number;
  /** The file's tasks by id (the task itself only when `keepTasks`). */
  tasks: Map<string, Located<{ env: Task['env']; task?: Task }>>;
  trajectories: Located<TrajectoryRef>[];
  /** Parsed trajectories, kept only for a one-shot stream (it cannot be read again to write). */
  kept: Trajectory[] | null;
}

interface JsonlCheckOptions {
  /** Tasks stored already (a run's), which trajectories and generated tasks may refer to. */
  knownTask?: (id: string) => Task | undefined;
  keepTasks: boolean;
  keepTrajectories: boolean;
  onProgress?: (lines: number, bytes: number) => void;
}

/**
 * The one validation path of dreamgym JSONL, shared by `validateJsonl` (the CLI's `validate`)
 * and `importJsonl`: streams the input line by line (never the whole text in memory), and checks
 * every line against the schema (strict UTF-8, a BOM allowed, bounded nesting), the domain
 * (goals that parse for their environment, at least one step, no successful episode with a
 * negative reward), duplicate ids, and references (every trajectory's task and every generated
 * task's parent in the file or stored, with the same environment).
 */
async function checkJsonl(input: JsonlStream | string | Blob, options: JsonlCheckOptions): Promise<JsonlCheck> {
  const issues = new IssueList();
  const tasks = new Map<string, Located<{ env: Task['env']; task?: Task; parentId?: string }>>();
  const trajectoryLines = new Map<string, number>();
  const trajectories: Located<TrajectoryRef>[] = [];
  const kept: Trajectory[] | null = options.keepTrajectories ? [] : null;
  let lineNo = 0;
  let bytes = 0;
  try {
    for await (const text of lines(input, (n) => (bytes += n))) {
      lineNo++;
      if (lineNo % PROGRESS_EVERY_LINES === 0) options.onProgress?.(lineNo, bytes);
      const result = parseJsonlLine(text, lineNo);
      if (result === null) continue;
      if (Array.isArray(result)) {
        issues.add(...result);
        continue;
      }
      issues.add(...domainIssues(result, lineNo));
      if (result.type === 'task') {
        const task = result.task;
        const first = tasks.get(task.id);
        if (first) issues.add({ line: lineNo, field: 'task.id', message: `duplicate task id ${JSON.stringify(task.id)} (first on line ${first.line})` });
        else {
          const value: { env: Task['env']; task?: Task; parentId?: string } = { env: task.env };
          if (options.keepTasks) value.task = task;
          if (task.parentId !== undefined) value.parentId = task.parentId;
          tasks.set(task.id, { line: lineNo, value });
        }
      } else {
        const t = result.trajectory;
        const first = trajectoryLines.get(t.id);
        if (first !== undefined) issues.add({ line: lineNo, field: 'trajectory.id', message: `duplicate trajectory id ${JSON.stringify(t.id)} (first on line ${first})` });
        else trajectoryLines.set(t.id, lineNo);
        trajectories.push({ line: lineNo, value: { id: t.id, taskId: t.taskId, env: t.env, source: t.source, length: t.steps.length } });
        kept?.push(t);
      }
    }
  } catch (e) {
    // Invalid UTF-8 ends the read: report it with what was found before it.
    if (!(e instanceof JsonlError)) throw e;
    issues.add(...e.issues);
  }
  options.onProgress?.(lineNo, bytes);

  // References, once the whole file is known (a task may come after its trajectories).
  const envOf = (id: string): Task['env'] | undefined => tasks.get(id)?.value.env ?? options.knownTask?.(id)?.env;
  for (const { line, value } of tasks.values()) {
    if (value.parentId !== undefined && !envOf(value.parentId)) {
      issues.add({ line, field: 'task.parentId', message: `unknown parent task ${JSON.stringify(value.parentId)}: not in this file${options.knownTask ? ' nor in the run' : ''}` });
    }
  }
  for (const { line, value: ref } of trajectories) {
    const env = envOf(ref.taskId);
    if (!env) issues.add({ line, field: 'trajectory.taskId', message: `unknown task ${JSON.stringify(ref.taskId)}: not in this file${options.knownTask ? ' nor in the run' : ''}` });
    else if (env !== ref.env) issues.add({ line, field: 'trajectory.env', message: `trajectory is in env ${ref.env} but task ${JSON.stringify(ref.taskId)} is in ${env}` });
  }
  return { issues, lines: lineNo, bytes, tasks, trajectories, kept };
}

/** What {@link validateJsonl} counted in a valid file. */
export interface JsonlValidation {
  tasks: number;
  trajectories: number;
  lines: number;
}

/**
 * Checks dreamgym JSONL exactly as {@link importJsonl} does for a fresh run (the same code):
 * returns the counts of a file import would accept, or throws `JsonlError` listing the problems
 * (the first 50 by line, with how many there were in all). Streams the input.
 */
export async function validateJsonl(input: JsonlInput): Promise<JsonlValidation> {
  const check = await checkJsonl(typeof input === 'function' ? input() : input, { keepTasks: false, keepTrajectories: false });
  if (check.issues.total > 0) throw check.issues.error();
  return { tasks: check.tasks.size, trajectories: check.trajectories.length, lines: check.lines };
}

/**
 * Imports tasks and trajectories from dreamgym JSONL into an existing run. See the module
 * comment for the all-or-nothing guarantees. Throws `JsonlError` (with line numbers) when any
 * line is bad, `UnknownRunError`, `EmbedderMismatchError`/`EmbeddingDimensionError`,
 * `CapacityError` (before writing) when pinned data would not fit, or the write's error (e.g.
 * `StorageFullError`) after removing what it had written (nothing was evicted by then).
 */
export async function importJsonl(store: ReplayStore, runId: string, input: JsonlInput, options: ImportJsonlOptions): Promise<ImportSummary> {
  checkId('run id', runId);
  if (typeof options !== 'object' || options === null || !options.embedder) throw new TypeError('importJsonl needs options.embedder');
  const batchSize = options.batchSize ?? 256;
  checkPositive('batchSize', batchSize);
  const run = await store.getRun(runId);
  if (!run) throw new UnknownRunError(runId);
  const { embedder } = options;
  if (embedder.id !== run.embedderId) throw new EmbedderMismatchError(runId, run.embedderId, embedder.id);
  if (embedder.dim !== run.embeddingDim) throw new EmbeddingDimensionError(runId, run.embeddingDim, embedder.dim, `embedder ${JSON.stringify(embedder.id)}`);

  const rereadable = typeof input === 'string' || isBlob(input) || typeof input === 'function';
  const open = (): JsonlStream | string | Blob => (typeof input === 'function' ? input() : input);
  const totalBytes = typeof input === 'string' ? input.length : isBlob(input) ? input.size : undefined;
  const progress = (p: Omit<ImportProgress, 'totalBytes'>): void => {
    if (!options.onProgress) return;
    const full: ImportProgress = { ...p };
    if (totalBytes !== undefined) full.totalBytes = totalBytes;
    options.onProgress(full);
  };
  const checkAborted = (): void => {
    if (options.signal?.aborted) throw options.signal.reason ?? new DOMException('import aborted', 'AbortError');
  };

  // ---- Phase 1: validate every line (schema, domain, references, duplicates) before writing anything.
  const runTasks = new Map((await store.getTasks(runId)).map((r) => [r.id, r.task]));
  const check = await checkJsonl(open(), {
    knownTask: (id) => runTasks.get(id),
    keepTasks: true,
    keepTrajectories: !rereadable,
    onProgress: (lines, bytes) => {
      checkAborted();
      progress({ phase: 'validate', lines, bytes, written: 0 });
    },
  });
  const issues = check.issues;
  const fileTasks = new Map([...check.tasks].map(([id, t]) => [id, { line: t.line, value: t.value.task as Task }]));
  const trajectoryRefs = check.trajectories;
  const lineNo = check.lines;
  const kept = check.kept ? { trajectories: check.kept } : null;
  const stored = new Set((await store.getTrajectoryRecords({ runId })).map((h) => h.id));
  const skipIds = new Set<string>();
  for (const { line, value: ref } of trajectoryRefs) {
    if (stored.has(ref.id)) {
      if ((options.onDuplicate ?? 'error') === 'error') issues.add({ line, field: 'trajectory.id', message: `run ${JSON.stringify(runId)} already has trajectory ${JSON.stringify(ref.id)}` });
      else skipIds.add(ref.id);
    }
  }
  if (issues.total > 0) throw issues.error();
  const planned = trajectoryRefs.filter((r) => !skipIds.has(r.value.id));
  const totalTrajectories = planned.length;

  // Evictions are planned now and done only at the end: done batch by batch, a later failure
  // could not undo them (the evicted data would be gone).
  const batches: PlannedTrajectory[][] = [];
  for (let i = 0; i < planned.length; i += batchSize) batches.push(planned.slice(i, i + batchSize).map((r) => r.value));
  const evictionPlan = await store.planEvictions(runId, batches, options.pinned === undefined ? {} : { pinned: options.pinned });

  // ---- Phase 2: write, then evict; on failure remove what this import wrote.
  const replacedTasks = [...fileTasks.keys()].map((id) => runTasks.get(id)).filter((t): t is Task => t !== undefined);
  const newTaskIds = [...fileTasks.keys()].filter((id) => !runTasks.has(id));
  const written: string[] = [];
  const summary: ImportSummary = { tasks: 0, trajectories: 0, transitions: 0, skipped: [...skipIds], evicted: 0 };
  let tasksWritten = false;
  try {
    checkAborted();
    if (fileTasks.size > 0) {
      await store.putTasks(runId, [...fileTasks.values()].map((t) => t.value));
      tasksWritten = true;
      summary.tasks = fileTasks.size;
    }
    let batch: Trajectory[] = [];
    let lines2 = 0;
    let bytes2 = 0;
    const flush = async (): Promise<void> => {
      if (batch.length === 0) return;
      checkAborted();
      const result = await store.putTrajectories(runId, batch, { embedder, pinned: options.pinned, onDuplicate: 'error', evict: false });
      written.push(...result.added);
      summary.trajectories += result.added.length;
      summary.transitions += result.transitions;
      batch = [];
      progress({ phase: 'write', lines: lines2, bytes: bytes2, written: written.length, totalTrajectories });
    };
    let taken = 0;
    const take = async (t: Trajectory, line: number): Promise<void> => {
      if (skipIds.has(t.id)) return;
      // The eviction plan holds only if the batches are the validated ones.
      const expected = planned[taken++]?.value;
      if (expected?.id !== t.id || expected.length !== t.steps.length) {
        throw new JsonlError([{ line, field: 'trajectory', message: `the input changed while importing: expected trajectory ${JSON.stringify(expected?.id)} of ${expected?.length} steps, read ${JSON.stringify(t.id)} of ${t.steps.length}` }]);
      }
      batch.push(t);
      if (batch.length >= batchSize) await flush();
    };
    if (kept) {
      for (const [i, t] of kept.trajectories.entries()) await take(t, (trajectoryRefs[i] as Located<unknown>).line);
    } else {
      // Re-read; a line that changed since validation still fails loudly.
      const again: JsonlIssue[] = [];
      for await (const text of lines(open(), (n) => (bytes2 += n))) {
        lines2++;
        const result: JsonlRecord | JsonlIssue[] | null = parseJsonlLine(text, lines2);
        if (result === null) continue;
        if (Array.isArray(result)) {
          again.push(...result);
          break;
        }
        if (result.type === 'trajectory') await take(result.trajectory, lines2);
      }
      if (again.length > 0 || lines2 !== lineNo) {
        throw new JsonlError(again.length > 0 ? again : [{ line: lines2, message: `the input changed while importing (${lineNo} lines validated, ${lines2} read)` }]);
      }
    }
    if (taken !== planned.length) throw new JsonlError([{ line: lineNo, message: `the input changed while importing (${planned.length} trajectories validated, ${taken} read)` }]);
    await flush();
    // Commit: only now is older data evicted to make room.
    checkAborted();
    summary.evicted = (await store.evictTrajectories(runId, evictionPlan.trajectoryIds)).trajectoryIds.length;
  } catch (err) {
    // Undo: trajectories written by this import, then the tasks it created or replaced.
    try {
      if (written.length > 0) await store.deleteTrajectories(runId, written);
      if (tasksWritten) {
        if (newTaskIds.length > 0) await store.deleteTasks(runId, newTaskIds);
        if (replacedTasks.length > 0) await store.putTasks(runId, replacedTasks);
      }
    } catch (undoError) {
      throw new AggregateError([err, undoError], `import failed (${String((err as Error)?.message ?? err)}) and undoing it failed too (${String((undoError as Error)?.message ?? undoError)})`);
    }
    throw err;
  }
  return summary;
}

/** Options of `exportJsonl`. */
export interface ExportJsonlOptions {
  /** Only trajectories from these sources (default all). */
  source?: TrajectorySource | readonly TrajectorySource[];
  /** Write the run's tasks first (default true). */
  includeTasks?: boolean;
  /** Trajectories read per transaction (default 256). */
  pageSize?: number;
  /** `trajectories` exported so far; `skipped`: trajectories left out (see {@link exportJsonl}). */
  onProgress?: (progress: { trajectories: number; totalTrajectories: number; skipped: number }) => void;
  /** Called for each trajectory left out, with why. */
  onSkip?: (trajectoryId: string, reason: string) => void;
  /** Called for each corrupt stored record left out (a task, a trajectory header, a transition), with its store and key. */
  onSkipRecord?: (record: SkippedRecord) => void;
}

/**
 * Streams a run as dreamgym JSONL: tasks first (in insertion order), then trajectories (oldest
 * first), one newline-terminated line per yield. A trajectory import would refuse (a damaged
 * record, such as a NaN reward, or one without steps) is skipped and counted (`onProgress`'s
 * `skipped`, `onSkip`), so what is exported imports again. Reads page by page, so a large run is never
 * held in memory whole.
 */
export async function* exportJsonl(store: ReplayStore, runId: string, options: ExportJsonlOptions = {}): AsyncGenerator<string> {
  checkId('run id', runId);
  const pageSize = options.pageSize ?? 256;
  checkPositive('pageSize', pageSize);
  if (!(await store.getRun(runId))) throw new UnknownRunError(runId);
  let done = 0;
  let skipped = 0;
  const skipTrajectory = (id: string, reason: string): void => {
    skipped++;
    options.onSkip?.(id, reason);
  };
  // Corrupt stored records are left out and reported; a trajectory left out for one of its own
  // records is counted as skipped like one import would refuse.
  const onSkip = (record: SkippedRecord): void => {
    options.onSkipRecord?.(record);
    const id = record.store === 'trajectories' && Array.isArray(record.key) ? record.key[1] : record.trajectoryId;
    if (typeof id === 'string') skipTrajectory(id, `corrupt record in ${record.store} at ${JSON.stringify(record.key)}: ${record.problem}`);
  };
  // A task left out (corrupt) takes its generated tasks and its trajectories with it: import
  // would refuse them without it.
  const exported = new Set<string>();
  for (const record of await store.getTasks(runId, {}, { onSkip })) {
    if (record.parentId !== undefined && !exported.has(record.parentId)) {
      options.onSkipRecord?.({ store: 'tasks', key: [runId, record.id], problem: `its parent task ${JSON.stringify(record.parentId)} is not exported` });
      continue;
    }
    exported.add(record.id);
    if (options.includeTasks ?? true) yield `${taskLine(record.task)}\n`;
  }
  const filter = options.source === undefined ? { runId } : { runId, source: options.source };
  const headers = await store.getTrajectoryRecords(filter, { onSkip });
  for (let i = 0; i < headers.length; i += pageSize) {
    const ids = headers.slice(i, i + pageSize).map((h) => h.id);
    const page = await store.getTrajectories({ runId, ids }, { onSkip });
    for (const t of page) {
      // What import would refuse is left out and counted, never written: a damaged record (a NaN
      // reward would become `null` in JSON), an episode without steps, one whose task is not exported.
      const reason = t.steps.length === 0 ? 'no steps' : !exported.has(t.taskId) ? `its task ${JSON.stringify(t.taskId)} is not exported (a corrupt record)` : exportProblem(t);
      if (reason !== null) {
        skipTrajectory(t.id, reason);
        continue;
      }
      yield `${trajectoryLine(t)}\n`;
      done++;
    }
    options.onProgress?.({ trajectories: done, totalTrajectories: headers.length, skipped });
  }
}

/** Why a stored trajectory cannot be exported as valid JSONL, or null. */
function exportProblem(t: Trajectory): string | null {
  const parsed = TrajectorySchema.safeParse(t);
  if (parsed.success) return null;
  const first = parsed.error.issues[0];
  return `${first?.path.map(String).join('.') || 'trajectory'}: ${first?.message ?? 'invalid'}`;
}

/** The whole export as one string (convenient for small runs and tests). */
export async function exportJsonlToString(store: ReplayStore, runId: string, options: ExportJsonlOptions = {}): Promise<string> {
  const parts: string[] = [];
  for await (const line of exportJsonl(store, runId, options)) parts.push(line);
  return parts.join('');
}
