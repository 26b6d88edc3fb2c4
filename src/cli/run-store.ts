/**
 * The CLI's run store: training runs as plain files under `--store DIR` (default `.dreamgym/`).
 *
 *   DIR/runs/<runId>/run.json        the run: id, created, status (running | stopped | done |
 *                                    failed), config, per-iteration metrics, the held-out
 *                                    evaluation, real/offline transitions, synthetic steps, wall time
 *   DIR/runs/<runId>/snapshot.json   the resume point: the loop's RunSnapshot without its
 *                                    checkpoint, the checkpoint's SHA-256, and the committed
 *                                    length of rollouts.jsonl
 *   DIR/runs/<runId>/checkpoint.bin  the policy checkpoint (`serializeCheckpoint`)
 *   DIR/runs/<runId>/rollouts.jsonl  the run's tasks and trajectories in dreamgym JSONL v1,
 *                                    appended per iteration, each task once
 *   DIR/runs/<runId>/lock            while a `train` process writes the run (its pid)
 *
 * Why files and not the page's replay store over fake-indexeddb: fake-indexeddb keeps everything
 * in memory and has no disk persistence, so a Node process would have to dump and reload the
 * whole database for every run, and a killed process would lose the run. The CLI needs what
 * files give directly: a run survives the process, `--resume` works after SIGINT or kill -9, and
 * the artefacts (summary JSON, checkpoint, JSONL rollouts) are usable by other tools as they are.
 * The retrieval experience model is rebuilt from the offline seed data on every start, which is
 * deterministic for the run's config, so nothing else needs to be stored to resume.
 *
 * Crash safety. Every file except rollouts.jsonl is replaced atomically (temporary file, fsync,
 * rename). A resume point is written checkpoint first: the new checkpoint's bytes go to
 * `checkpoint.next.bin`, then `snapshot.json` (naming that checkpoint's SHA-256) replaces the old
 * one, then `checkpoint.next.bin` is renamed onto `checkpoint.bin`. A reader takes the checkpoint
 * whose hash the snapshot names, so a process killed between any two of these steps leaves a
 * consistent resume point (the old one or the new one). Rollouts are appended before the snapshot
 * and the snapshot records how many bytes of rollouts.jsonl it covers: readers stop there, and a
 * resumed run first cuts off what a killed iteration appended after its last snapshot.
 *
 * Reading (eval, runs, export, and the checks `train --resume` makes before it starts) never
 * modifies the store. Problems are typed: {@link UnknownRunError} lists the known runs,
 * {@link CorruptRunError} names the file and what is wrong with it.
 */
import { createHash } from 'node:crypto';
import { createReadStream, rmSync } from 'node:fs';
import { appendFile, lstat, mkdir, open, readdir, readFile, readlink, rename, rm, stat, truncate, writeFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { z } from 'zod';
import { formatIssue, parseJsonlLine, taskLine, trajectoryLine } from '../core/jsonl.ts';
import { TaskSchema, type Task, type Trajectory } from '../core/types.ts';
import { parseCheckpoint, serializeCheckpoint, CheckpointError, type Checkpoint } from '../policy/checkpoint.ts';
import { TrainingConfigSchema, type TrainingConfig } from '../train/config.ts';
import type { EvalResult } from '../train/evaluate.ts';
import type { IterationMetrics, RunSnapshot } from '../train/loop.ts';
import { decodeMetrics, decodeRunState, encodeRunState, RunStateSchema, StoredMetricsSchema, SyntheticValidationSchema } from '../train/run-state.ts';
import { writeFileAtomic } from './output.ts';

/** The store directory used when `--store` is not given. */
export const DEFAULT_STORE_DIR = '.dreamgym';

export const RUN_STATUSES = ['running', 'stopped', 'done', 'failed'] as const;
export type RunStatus = (typeof RUN_STATUSES)[number];

/** A run id: a directory name, never a path. */
const RUN_ID = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;

// ---------------------------------------------------------------------------------------------
// errors

/** Base class of the store's errors. Messages are one line. */
export class RunStoreError extends Error {
  override name = 'RunStoreError';
}

/** No run with this id in the store; the message lists the known ones. */
export class UnknownRunError extends RunStoreError {
  override name = 'UnknownRunError';
  constructor(
    readonly runId: string,
    readonly store: string,
    readonly known: readonly string[],
  ) {
    const shown = known.slice(0, 20).join(', ');
    const more = known.length > 20 ? ` and ${known.length - 20} more` : '';
    super(`unknown run ${JSON.stringify(runId)} in ${store}: ${known.length === 0 ? 'the store has no runs' : `known runs: ${shown}${more}`}`);
  }
}

/** A run directory whose file `file` cannot be used; `problem` says why. */
export class CorruptRunError extends RunStoreError {
  override name = 'CorruptRunError';
  constructor(
    readonly runId: string,
    readonly file: string,
    readonly problem: string,
  ) {
    super(`run ${runId} is corrupt: ${file}: ${problem}`);
  }
}

/** Another process is training this run. */
export class RunBusyError extends RunStoreError {
  override name = 'RunBusyError';
}

/** One line for any value thrown by Node's fs (its message without its own path). */
function reason(e: unknown): string {
  const text = e instanceof Error ? e.message : String(e);
  return text.replace(/, \w+ '[^']*'$/, '').replace(/\s+/g, ' ');
}

function code(e: unknown): string | undefined {
  return (e as NodeJS.ErrnoException | null)?.code;
}

// ---------------------------------------------------------------------------------------------
// records

const IntervalSchema = z.object({ mean: z.number(), low: z.number(), high: z.number() }).strict();

/** A held-out evaluation as stored: `evaluate`'s result plus when and how long. */
export const StoredEvaluationSchema = z
  .object({
    episodes: z.number().int().min(1),
    successRate: z.number(),
    meanReward: z.number(),
    success: IntervalSchema,
    reward: IntervalSchema,
    realSteps: z.number().int().min(0),
    perTask: z.array(z.object({ taskId: z.string(), success: z.boolean(), reward: z.number(), steps: z.number().int().min(0) }).strict()),
    /** Completed training iterations of the evaluated policy. */
    iteration: z.number().int().min(0),
    wallMs: z.number().min(0),
    /** Where the episodes ran: absent or `real` for the real environment; `synthetic` inside the experience model (a data-only run). */
    environment: z.enum(['real', 'synthetic']).optional(),
  })
  .strict();
export type StoredEvaluation = z.infer<typeof StoredEvaluationSchema>;

export const RunRecordSchema = z
  .object({
    format: z.literal('dreamgym-cli-run'),
    version: z.literal(1),
    id: z.string().regex(RUN_ID),
    created: z.iso.datetime(),
    updated: z.iso.datetime(),
    status: z.enum(RUN_STATUSES),
    config: TrainingConfigSchema,
    /** Completed iterations, and how many the config plans. */
    iteration: z.number().int().min(0),
    totalIterations: z.number().int().min(0),
    /** Per-iteration metrics: the loop's figures (numbers; NaN is stored as null). */
    metrics: z.array(StoredMetricsSchema),
    evaluation: StoredEvaluationSchema.nullable(),
    realTransitions: z.number().int().min(0),
    realResets: z.number().int().min(0),
    offlineTransitions: z.number().int().min(0),
    syntheticSteps: z.number().int().min(0),
    /** Why training ended: done, a budget, or null while it has not. */
    stoppedBy: z.enum(['done', 'real-budget', 'wall-budget']).nullable(),
    /** The synthetic phase's validation inside the simulator (see the config's `validation`), once it started. */
    validation: SyntheticValidationSchema.optional(),
    trainWallMs: z.number().min(0),
    evalWallMs: z.number().min(0),
    /** What went wrong, for a failed run. */
    error: z.string().optional(),
    /**
     * The OpenAI-compatible LLM server a run used (`--llm-url`): only the model name, never the
     * URL (it may hold credentials and can move), so resuming needs `--llm-url` again.
     */
    llm: z.object({ model: z.string().nullable() }).strict().optional(),
    /** A data-only run (`--data`): its file's name and how much of the data grounded the model and how much was held out. */
    seedData: z
      .object({
        file: z.string(),
        groundingTasks: z.number().int().min(0),
        groundingTrajectories: z.number().int().min(0),
        groundingTransitions: z.number().int().min(0),
        heldOutTasks: z.number().int().min(0),
        heldOutTrajectories: z.number().int().min(0),
      })
      .strict()
      .optional(),
  })
  .strict();
export type RunRecord = z.infer<typeof RunRecordSchema>;

const SnapshotFileSchema = z
  .object({
    format: z.literal('dreamgym-cli-snapshot'),
    version: z.literal(1),
    runId: z.string(),
    snapshot: RunStateSchema,
    checkpoint: z.object({ sha256: z.string().regex(/^[0-9a-f]{64}$/), bytes: z.number().int().min(0) }).strict(),
    /** Bytes of rollouts.jsonl this snapshot covers. */
    rolloutsBytes: z.number().int().min(0),
  })
  .strict();

/** A resume point as read back. */
export interface StoredSnapshot {
  snapshot: RunSnapshot;
  rolloutsBytes: number;
}

/** The first problem of a zod error, as `field: message`. */
function zodProblem(error: z.ZodError): string {
  const issue = error.issues[0];
  if (!issue) return 'invalid';
  const path = issue.path.map(String).join('.');
  return `${path ? `field ${path}: ` : ''}${issue.message}`;
}

/** A run's metrics in the loop's type. */
export function recordMetrics(record: RunRecord): IterationMetrics[] {
  return decodeMetrics(record.metrics);
}

// ---------------------------------------------------------------------------------------------
// the store

/** One entry of {@link RunStore.list}: a readable run, or the problem with a corrupt one. */
export type RunListing = { id: string; record: RunRecord; problem?: undefined } | { id: string; record?: undefined; problem: string };

const sha256 = (bytes: Uint8Array): string => createHash('sha256').update(bytes).digest('hex');

/** A file-backed store of training runs (see the module comment). */
export class RunStore {
  readonly root: string;
  constructor(root: string = DEFAULT_STORE_DIR) {
    this.root = root;
  }

  get runsDir(): string {
    return join(this.root, 'runs');
  }

  runDir(id: string): string {
    return join(this.runsDir, id);
  }

  /** Ids of the runs in the store (directories under runs/), sorted. */
  async ids(): Promise<string[]> {
    let entries;
    try {
      entries = await readdir(this.runsDir, { withFileTypes: true });
    } catch (e) {
      if (code(e) === 'ENOENT') return [];
      throw new RunStoreError(`cannot read the store ${this.root}: ${reason(e)}`);
    }
    return entries.filter((e) => e.isDirectory() && RUN_ID.test(e.name)).map((e) => e.name).sort();
  }

  /** Throws {@link UnknownRunError} unless `id` names a run directory. */
  async checkId(id: string): Promise<void> {
    if (!RUN_ID.test(id)) throw new UnknownRunError(id, this.root, await this.ids());
    try {
      const info = await stat(this.runDir(id));
      if (info.isDirectory()) return;
    } catch (e) {
      if (code(e) !== 'ENOENT' && code(e) !== 'ENOTDIR') throw new RunStoreError(`cannot read run ${id} in ${this.root}: ${reason(e)}`);
    }
    throw new UnknownRunError(id, this.root, await this.ids());
  }

  private async readText(id: string, file: string): Promise<string | null> {
    try {
      return await readFile(join(this.runDir(id), file), 'utf8');
    } catch (e) {
      if (code(e) === 'ENOENT') return null;
      throw new CorruptRunError(id, join(this.runDir(id), file), `cannot read it: ${reason(e)}`);
    }
  }

  private parseJson(id: string, file: string, text: string): unknown {
    try {
      return JSON.parse(text);
    } catch (e) {
      throw new CorruptRunError(id, join(this.runDir(id), file), `not valid JSON (${reason(e)})`);
    }
  }

  /** The run's record (run.json), validated. */
  async readRecord(id: string): Promise<RunRecord> {
    await this.checkId(id);
    const file = join(this.runDir(id), 'run.json');
    const text = await this.readText(id, 'run.json');
    if (text === null) throw new CorruptRunError(id, file, 'missing');
    const parsed = RunRecordSchema.safeParse(this.parseJson(id, 'run.json', text));
    if (!parsed.success) throw new CorruptRunError(id, file, zodProblem(parsed.error));
    if (parsed.data.id !== id) throw new CorruptRunError(id, file, `it names run ${JSON.stringify(parsed.data.id)}, not the directory's ${JSON.stringify(id)}`);
    return parsed.data;
  }

  /** The run's resume point (snapshot.json and its checkpoint), validated; null when it has none yet. */
  async readSnapshot(id: string): Promise<StoredSnapshot | null> {
    await this.checkId(id);
    const dir = this.runDir(id);
    const text = await this.readText(id, 'snapshot.json');
    if (text === null) return null;
    const parsed = SnapshotFileSchema.safeParse(this.parseJson(id, 'snapshot.json', text));
    if (!parsed.success) throw new CorruptRunError(id, join(dir, 'snapshot.json'), zodProblem(parsed.error));
    const file = parsed.data;
    if (file.runId !== id) throw new CorruptRunError(id, join(dir, 'snapshot.json'), `it names run ${JSON.stringify(file.runId)}`);
    // The checkpoint the snapshot names: checkpoint.bin, or checkpoint.next.bin when a write was cut off before its rename.
    let bytes: Uint8Array | null = null;
    for (const name of ['checkpoint.bin', 'checkpoint.next.bin']) {
      let candidate: Uint8Array;
      try {
        // A copy as a plain Uint8Array: a Node Buffer's slice() shares memory, which parseCheckpoint's views do not expect.
        candidate = new Uint8Array(await readFile(join(dir, name)));
      } catch (e) {
        if (code(e) === 'ENOENT') continue;
        throw new CorruptRunError(id, join(dir, name), `cannot read it: ${reason(e)}`);
      }
      if (candidate.length === file.checkpoint.bytes && sha256(candidate) === file.checkpoint.sha256) {
        bytes = candidate;
        break;
      }
    }
    const cpFile = join(dir, 'checkpoint.bin');
    if (!bytes) throw new CorruptRunError(id, cpFile, 'missing, or not the checkpoint snapshot.json names (its SHA-256 differs)');
    let checkpoint: Checkpoint;
    try {
      checkpoint = parseCheckpoint(bytes);
    } catch (e) {
      throw new CorruptRunError(id, cpFile, e instanceof CheckpointError ? e.message : reason(e));
    }
    const snapshot: RunSnapshot = { ...decodeRunState(file.snapshot), checkpoint };
    return { snapshot, rolloutsBytes: file.rolloutsBytes };
  }

  /** Whether a live process on this host holds the run's lock (a `running` run without one was interrupted). */
  async isActive(id: string): Promise<boolean> {
    let holder: { pid?: unknown; host?: unknown };
    try {
      holder = JSON.parse(await readFile(join(this.runDir(id), 'lock'), 'utf8')) as typeof holder;
    } catch (e) {
      return code(e) !== 'ENOENT';
    }
    if (holder.host !== hostname()) return true;
    return typeof holder.pid === 'number' && alive(holder.pid);
  }

  /** Every run with its record, or the problem that makes it unreadable. */
  async list(): Promise<RunListing[]> {
    const out: RunListing[] = [];
    for (const id of await this.ids()) {
      try {
        out.push({ id, record: await this.readRecord(id) });
      } catch (e) {
        if (!(e instanceof RunStoreError)) throw e;
        out.push({ id, problem: e instanceof CorruptRunError ? `${e.file}: ${e.problem}` : e.message });
      }
    }
    return out;
  }

  /**
   * The run's committed rollouts (dreamgym JSONL lines, validated as they are read), in order:
   * the lines of rollouts.jsonl up to the length the snapshot records. Throws
   * {@link CorruptRunError} naming the line of the first problem.
   */
  async *rollouts(id: string): AsyncGenerator<{ type: 'task'; task: Task } | { type: 'trajectory'; trajectory: Trajectory }> {
    const saved = await this.readSnapshot(id);
    const file = join(this.runDir(id), 'rollouts.jsonl');
    const limit = saved?.rolloutsBytes ?? 0;
    if (limit === 0) return;
    let size: number;
    try {
      size = (await stat(file)).size;
    } catch (e) {
      throw new CorruptRunError(id, file, code(e) === 'ENOENT' ? `missing (snapshot.json says it holds ${limit} bytes)` : `cannot read it: ${reason(e)}`);
    }
    if (size < limit) throw new CorruptRunError(id, file, `${size} bytes, but snapshot.json says it holds ${limit}`);
    const tasks = new Map<string, Task>();
    const trajectories = new Set<string>();
    const lines = createInterface({ input: createReadStream(file, { start: 0, end: limit - 1, encoding: 'utf8' }), crlfDelay: Infinity });
    let n = 0;
    for await (const text of lines) {
      n++;
      const record = parseJsonlLine(text, n);
      if (record === null) continue;
      if (Array.isArray(record)) throw new CorruptRunError(id, file, formatIssue(record[0] as (typeof record)[number]));
      if (record.type === 'task') {
        if (tasks.has(record.task.id)) throw new CorruptRunError(id, file, `line ${n}: task ${JSON.stringify(record.task.id)} appears twice`);
        tasks.set(record.task.id, record.task);
        yield record;
      } else {
        const t = record.trajectory;
        const task = tasks.get(t.taskId);
        if (!task) throw new CorruptRunError(id, file, `line ${n}: trajectory ${JSON.stringify(t.id)} refers to task ${JSON.stringify(t.taskId)}, which no earlier line defines`);
        if (task.env !== t.env) throw new CorruptRunError(id, file, `line ${n}: trajectory ${JSON.stringify(t.id)} is a ${t.env} trajectory of a ${task.env} task`);
        if (trajectories.has(t.id)) throw new CorruptRunError(id, file, `line ${n}: trajectory ${JSON.stringify(t.id)} appears twice`);
        trajectories.add(t.id);
        yield record;
      }
    }
  }

  /** Creates a new run directory (its id from `config` and the time) and takes its lock. */
  async create(config: TrainingConfig, totalIterations: number, now: Date = new Date()): Promise<RunWriter> {
    try {
      await mkdir(this.runsDir, { recursive: true });
    } catch (e) {
      throw new RunStoreError(`cannot create the store ${this.root}: ${reason(e)}`);
    }
    const stamp = now.toISOString().replace(/[-:]/g, '').replace('T', '-').slice(0, 15);
    const base = `${stamp}-${config.env}-${config.mode}-s${config.seed}`;
    let id = base;
    for (let n = 2; ; n++) {
      try {
        await mkdir(this.runDir(id));
        break;
      } catch (e) {
        if (code(e) !== 'EEXIST' || n > 1000) throw new RunStoreError(`cannot create run ${id} in ${this.root}: ${reason(e)}`);
        id = `${base}-${n}`;
      }
    }
    const created = now.toISOString();
    const record: RunRecord = {
      format: 'dreamgym-cli-run',
      version: 1,
      id,
      created,
      updated: created,
      status: 'running',
      config,
      iteration: 0,
      totalIterations,
      metrics: [],
      evaluation: null,
      realTransitions: 0,
      realResets: 0,
      offlineTransitions: 0,
      syntheticSteps: 0,
      stoppedBy: null,
      trainWallMs: 0,
      evalWallMs: 0,
    };
    const writer = new RunWriter(this, id, record, new Set(), 0);
    await writer.lock();
    try {
      await writeFile(join(this.runDir(id), 'rollouts.jsonl'), '');
      await writer.saveRecord();
    } catch (e) {
      await writer.release();
      throw new RunStoreError(`cannot write run ${id} in ${this.root}: ${reason(e)}`);
    }
    return writer;
  }

  /**
   * Takes an existing run for more training: locks it, cuts rollouts.jsonl back to what its
   * resume point covers, and marks it running. `expected` is what the caller read and checked
   * before starting; the run is read again under the lock and must not have moved on.
   */
  async resume(id: string, expected: StoredSnapshot | null): Promise<{ writer: RunWriter; saved: StoredSnapshot | null }> {
    const first = await this.readRecord(id);
    const writer = new RunWriter(this, id, first, new Set(), 0);
    await writer.lock();
    try {
      const record = await this.readRecord(id);
      const saved = await this.readSnapshot(id);
      if ((saved?.snapshot.iteration ?? -1) !== (expected?.snapshot.iteration ?? -1)) {
        throw new RunBusyError(`run ${id} changed while starting (now at iteration ${saved?.snapshot.iteration ?? 0}); try again`);
      }
      const taskIds = new Set<string>();
      const trajectoryIds = new Set<string>();
      for await (const r of this.rollouts(id)) {
        if (r.type === 'task') taskIds.add(r.task.id);
        else trajectoryIds.add(r.trajectory.id);
      }
      const limit = saved?.rolloutsBytes ?? 0;
      const file = join(this.runDir(id), 'rollouts.jsonl');
      try {
        await truncate(file, limit);
      } catch (e) {
        if (code(e) !== 'ENOENT' || limit > 0) throw e;
        await writeFile(file, '');
      }
      writer.adopt(record, taskIds, trajectoryIds, limit);
      return { writer, saved };
    } catch (e) {
      await writer.release();
      throw e;
    }
  }
}

/** Writes one run while its `train` process holds the lock. */
export class RunWriter {
  private locked = false;
  private readonly dir: string;

  constructor(
    readonly store: RunStore,
    readonly id: string,
    public record: RunRecord,
    private taskIds: Set<string>,
    private rolloutsBytes: number,
  ) {
    this.dir = store.runDir(id);
  }

  private trajectoryIds = new Set<string>();

  /** @internal */
  adopt(record: RunRecord, taskIds: Set<string>, trajectoryIds: Set<string>, rolloutsBytes: number): void {
    this.record = record;
    this.taskIds = taskIds;
    this.trajectoryIds = trajectoryIds;
    this.rolloutsBytes = rolloutsBytes;
  }

  private get lockFile(): string {
    return join(this.dir, 'lock');
  }

  /** Takes the run's lock (a file naming this process); a lock left by a dead process on this host is taken over. */
  async lock(): Promise<void> {
    const mine = JSON.stringify({ pid: process.pid, host: hostname(), since: new Date().toISOString() });
    for (let attempt = 0; attempt < 2; attempt++) {
      try {
        await writeFile(this.lockFile, mine, { flag: 'wx' });
        this.locked = true;
        return;
      } catch (e) {
        if (code(e) !== 'EEXIST') throw new RunStoreError(`cannot lock run ${this.id}: ${reason(e)}`);
      }
      let holder: { pid?: unknown; host?: unknown } = {};
      try {
        holder = JSON.parse(await readFile(this.lockFile, 'utf8')) as typeof holder;
      } catch {
        // unreadable lock: treated as stale below only when its holder is known to be gone
      }
      const pid = typeof holder.pid === 'number' ? holder.pid : null;
      const sameHost = holder.host === hostname();
      if (pid !== null && sameHost && !alive(pid)) {
        await rm(this.lockFile, { force: true });
        continue;
      }
      throw new RunBusyError(
        `run ${this.id} is being trained by ${pid !== null ? `process ${pid}${sameHost ? '' : ` on ${String(holder.host)}`}` : 'another process'} ` +
          `(${this.lockFile}); wait for it, or delete that file if no such process runs`,
      );
    }
    throw new RunBusyError(`run ${this.id}: could not take its lock ${this.lockFile}`);
  }

  /** Removes the lock (idempotent; also safe from a synchronous exit path). */
  async release(): Promise<void> {
    if (!this.locked) return;
    this.locked = false;
    await rm(this.lockFile, { force: true });
  }

  releaseSync(): void {
    if (!this.locked) return;
    this.locked = false;
    rmSync(this.lockFile, { force: true });
  }

  /** Replaces run.json with the current record. */
  async saveRecord(): Promise<void> {
    this.record.updated = new Date().toISOString();
    await writeFileAtomic(join(this.dir, 'run.json'), `${JSON.stringify(this.record, null, 2)}\n`);
  }

  /** Updates fields of the record and saves it. */
  async update(patch: Partial<RunRecord>): Promise<void> {
    Object.assign(this.record, patch);
    await this.saveRecord();
  }

  /** Appends an iteration's rollouts (each task once, before its first trajectory). */
  async appendRollouts(trajectories: readonly Trajectory[], tasks: readonly Task[]): Promise<void> {
    const lines: string[] = [];
    const byId = new Map(tasks.map((t) => [t.id, t]));
    for (const t of trajectories) {
      if (this.taskIds.has(t.taskId)) continue;
      const task = byId.get(t.taskId);
      if (!task) throw new RunStoreError(`run ${this.id}: trajectory ${t.id} comes without its task ${t.taskId}`);
      this.taskIds.add(task.id);
      lines.push(taskLine(task));
    }
    for (const t of trajectories) {
      // Ids are unique in the file (import rejects duplicates): a repeat gets a `#n` suffix.
      let id = t.id;
      for (let n = 2; this.trajectoryIds.has(id); n++) id = `${t.id}#${n}`;
      this.trajectoryIds.add(id);
      lines.push(trajectoryLine(id === t.id ? t : { ...t, id }));
    }
    if (lines.length === 0) return;
    const text = `${lines.join('\n')}\n`;
    await appendFile(join(this.dir, 'rollouts.jsonl'), text, 'utf8');
    this.rolloutsBytes += Buffer.byteLength(text, 'utf8');
  }

  /** Writes the resume point: checkpoint bytes, then snapshot.json naming them, then the checkpoint's rename. */
  async persist(snapshot: RunSnapshot): Promise<void> {
    const bytes = serializeCheckpoint(snapshot.checkpoint);
    const next = join(this.dir, 'checkpoint.next.bin');
    await writeFileAtomic(next, bytes);
    const file = {
      format: 'dreamgym-cli-snapshot',
      version: 1,
      runId: this.id,
      snapshot: encodeRunState(snapshot),
      checkpoint: { sha256: sha256(bytes), bytes: bytes.length },
      rolloutsBytes: this.rolloutsBytes,
    };
    await writeFileAtomic(join(this.dir, 'snapshot.json'), `${JSON.stringify(file)}\n`);
    await rename(next, join(this.dir, 'checkpoint.bin'));
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return code(e) === 'EPERM';
  }
}
