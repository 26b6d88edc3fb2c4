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
 * rename, fsync of the directory). Appended rollouts are synced before the snapshot that commits
 * their length is written, so a committed length never covers bytes a crash lost. A resume point
 * is written checkpoint first: the new checkpoint's bytes go to
 * `checkpoint.next.bin`, then `snapshot.json` (naming that checkpoint's SHA-256) replaces the old
 * one, then `checkpoint.next.bin` is renamed onto `checkpoint.bin`. A reader takes the checkpoint
 * whose hash the snapshot names, so a process killed between any two of these steps leaves a
 * consistent resume point (the old one or the new one). Rollouts are appended before the snapshot
 * and the snapshot records how many bytes of rollouts.jsonl it covers: readers stop there, and a
 * resumed run first cuts off what a killed iteration appended after its last snapshot.
 *
 * A run that once had a resume point (run.json counts completed iterations or says done, or
 * checkpoint.bin exists) and has no snapshot.json lost it: every reader reports the run as
 * damaged and nothing of rollouts.jsonl is cut. {@link RunStore.rebuild} (`dreamgym doctor
 * --rebuild`) makes it consistent again from run.json, the checkpoint and the complete lines of
 * rollouts.jsonl; such a run can be listed, evaluated and exported, but not resumed (the
 * curriculum's state is gone).
 *
 * Reading (eval, runs, export, and the checks `train --resume` makes before it starts) never
 * modifies the store. Problems are typed: {@link UnknownRunError} lists the known runs,
 * {@link CorruptRunError} names the file and what is wrong with it.
 */
import { createHash } from 'node:crypto';
import { constants, createReadStream, rmSync } from 'node:fs';
import { copyFile, mkdir, open, readdir, readFile, rename, rm, stat, truncate, writeFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { z } from 'zod';
import { formatIssue, parseJsonlLine, taskLine, trajectoryLine } from '../core/jsonl.ts';
import { TaskSchema, type Task, type Trajectory } from '../core/types.ts';
import { parseCheckpoint, serializeCheckpoint, CheckpointError, type Checkpoint } from '../policy/checkpoint.ts';
import { UnknownRunError } from '../replay/errors.ts';
import { StoredTrainingConfigSchema, type TrainingConfig } from '../train/config.ts';
import type { EvalResult } from '../train/evaluate.ts';
import type { IterationMetrics, RunSnapshot } from '../train/loop.ts';
import { decodeMetrics, decodeRunState, encodeRunState, RunStateSchema, StoredMetricsSchema, SyntheticValidationSchema } from '../train/run-state.ts';
import { openOutput, syncDir, writeFileAtomic } from './output.ts';

/** The store directory used when `--store` is not given. */
export const DEFAULT_STORE_DIR = '.dreamgym';

export const RUN_STATUSES = ['running', 'stopped', 'done', 'failed'] as const;

/** A run id: a directory name, never a path. */
const RUN_ID = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;

// ---------------------------------------------------------------------------------------------
// errors

/** Base class of the store's errors. Messages are one line. */
export class RunStoreError extends Error {
  override name = 'RunStoreError';
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
const StoredEvaluationSchema = z
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
    /** A synthetic evaluation's grounding and replay estimate, and what keeps it from ranking policies (see `syntheticTrust`). */
    trust: z
      .object({
        unknownShare: z.number().min(0).max(1).nullable(),
        doubtfulShare: z.number().min(0).max(1).optional(),
        recorded: z.object({ episodes: z.number().int().min(1), replayed: IntervalSchema, agreement: z.number().min(0).max(1) }).strict().nullable(),
        flags: z.array(z.enum(['grounding-unreported', 'grounding-thin', 'few-recorded', 'claim-above-recorded'])),
      })
      .strict()
      .optional(),
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
    config: StoredTrainingConfigSchema,
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
        /** Tasks whose recorded successes were held out for model selection. */
        selectionTasks: z.number().int().min(0).optional(),
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
    /** Set when `doctor --rebuild` wrote this snapshot after the run's own was lost: when, and from what. */
    rebuilt: z.object({ at: z.iso.datetime(), from: z.string() }).strict().optional(),
  })
  .strict();

/** A resume point as read back. */
export interface StoredSnapshot {
  snapshot: RunSnapshot;
  rolloutsBytes: number;
  /** Present when the snapshot was rebuilt after a loss (see {@link RunStore.rebuild}): such a run cannot be resumed. */
  rebuilt?: { at: string; from: string };
}

/** What {@link RunStore.rebuild} did. */
export interface RebuildReport {
  /** Complete, valid lines of rollouts.jsonl now committed, and their bytes. */
  lines: number;
  bytes: number;
  tasks: number;
  trajectories: number;
  /** Lines left out (an incomplete last line included), each `line N: problem`; at most 20 listed. */
  dropped: string[];
  droppedCount: number;
  /** The untouched original of rollouts.jsonl, when lines were left out (a file name in the run directory). */
  original: string | null;
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
    if (text === null) {
      const lost = await this.lostSnapshot(id);
      if (lost !== null) throw new CorruptRunError(id, join(dir, 'snapshot.json'), lost);
      return null;
    }
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
    return { snapshot, rolloutsBytes: file.rolloutsBytes, ...(file.rebuilt ? { rebuilt: file.rebuilt } : {}) };
  }

  /**
   * Why a run without snapshot.json must have had one (so the file was lost, not yet written), as
   * the problem to report; null for a run that never committed an iteration.
   */
  private async lostSnapshot(id: string): Promise<string | null> {
    const dir = this.runDir(id);
    const signs: string[] = [];
    try {
      const record = JSON.parse(await readFile(join(dir, 'run.json'), 'utf8')) as { iteration?: unknown; status?: unknown };
      if (typeof record.iteration === 'number' && record.iteration > 0) signs.push(`run.json records ${record.iteration} completed iterations`);
      else if (record.status === 'done') signs.push('run.json says the run is done');
    } catch {
      // An unreadable run.json is reported on its own.
    }
    if (await stat(join(dir, 'checkpoint.bin')).then(() => true, () => false)) signs.push('checkpoint.bin exists');
    if (signs.length === 0) return null;
    const size = await stat(join(dir, 'rollouts.jsonl')).then((i) => i.size, () => null);
    return (
      `missing, though ${signs.join(' and ')}: the run's resume point is lost; rollouts.jsonl${size === null ? '' : ` (${size} bytes)`} is kept as it is, ` +
      `and \`dreamgym doctor --store ${this.root} --rebuild ${id}\` recovers its complete lines into a consistent run`
    );
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
        const record = await this.readRecord(id);
        // A lost snapshot.json makes the run unreadable for resume, eval and export: say so here too.
        const snapshotFile = join(this.runDir(id), 'snapshot.json');
        if (!(await stat(snapshotFile).then(() => true, () => false))) {
          const lost = await this.lostSnapshot(id);
          if (lost !== null) throw new CorruptRunError(id, snapshotFile, lost);
        }
        out.push({ id, record });
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
   * {@link CorruptRunError} naming the line of the first problem; with `onBad`, a bad line is
   * handed to it (`line N: problem`) and left out instead, and so is a trajectory of a task left out.
   */
  async *rollouts(id: string, options: { onBad?: (problem: string) => void } = {}): AsyncGenerator<{ type: 'task'; task: Task } | { type: 'trajectory'; trajectory: Trajectory }> {
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
      const problem = checkRolloutLine(text, n, tasks, trajectories);
      if (typeof problem === 'string') {
        if (!options.onBad) throw new CorruptRunError(id, file, problem);
        options.onBad(problem);
        continue;
      }
      if (problem !== null) yield problem;
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
      await syncDir(this.runsDir);
    } catch (e) {
      await writer.release();
      throw new RunStoreError(`cannot write run ${id} in ${this.root}: ${reason(e)}`);
    }
    return writer;
  }

  /**
   * Makes a run whose snapshot.json is lost (or unreadable) consistent again, under its lock:
   * rollouts.jsonl keeps its complete lines that read back (each task once, before its
   * trajectories); when a line has to be left out, the original file is kept next to it first
   * (`rollouts.before-rebuild-STAMP.jsonl`). A new snapshot.json then commits those lines, names
   * the checkpoint that parses (checkpoint.bin, else checkpoint.next.bin) and carries run.json's
   * iteration, metrics and counts, marked `rebuilt` (the curriculum's state is not recoverable,
   * so the run cannot be resumed). A running run becomes stopped. Throws {@link RunStoreError}
   * saying why when the run has its resume point or cannot be rebuilt; then nothing is changed.
   */
  async rebuild(id: string, now: Date = new Date()): Promise<RebuildReport> {
    const record = await this.readRecord(id).catch((e: unknown) => {
      throw new RunStoreError(`cannot rebuild run ${id}: ${e instanceof CorruptRunError ? `${e.file}: ${e.problem}` : reason(e)} (its configuration and counts come from run.json)`);
    });
    const writer = new RunWriter(this, id, record, new Set(), 0);
    await writer.lock();
    try {
      const dir = this.runDir(id);
      try {
        await this.readSnapshot(id);
        throw new RunStoreError(`run ${id} has its resume point (snapshot.json reads back): nothing to rebuild`);
      } catch (e) {
        if (!(e instanceof CorruptRunError) || e.file !== join(dir, 'snapshot.json')) {
          if (e instanceof RunStoreError && !(e instanceof CorruptRunError)) throw e;
          throw new RunStoreError(`cannot rebuild run ${id}: ${e instanceof CorruptRunError ? `${e.file}: ${e.problem}` : reason(e)}`);
        }
      }
      let checkpoint: Uint8Array | null = null;
      for (const name of ['checkpoint.bin', 'checkpoint.next.bin']) {
        const bytes = await readFile(join(dir, name)).then((b) => new Uint8Array(b), () => null);
        if (bytes === null) continue;
        try {
          parseCheckpoint(bytes);
          checkpoint = bytes;
          break;
        } catch {
          // try the other one
        }
      }
      if (checkpoint === null) throw new RunStoreError(`cannot rebuild run ${id}: neither checkpoint.bin nor checkpoint.next.bin holds a checkpoint that reads back; nothing changed`);

      // The complete lines that read back, in order.
      const file = join(dir, 'rollouts.jsonl');
      const tasks = new Map<string, Task>();
      const trajectories = new Set<string>();
      const report: RebuildReport = { lines: 0, bytes: 0, tasks: 0, trajectories: 0, dropped: [], droppedCount: 0, original: null };
      const drop = (problem: string): void => {
        report.droppedCount++;
        if (report.dropped.length < 20) report.dropped.push(problem);
      };
      const decoder = new TextDecoder('utf-8', { fatal: true });
      let n = 0;
      const exists = await stat(file).then(() => true, () => false);
      // The kept lines stream into a temporary file, which replaces rollouts.jsonl only when a line was left out.
      const out = await openOutput({ kind: 'file', name: file, path: file });
      try {
        if (exists) {
          for await (const { bytes, complete } of byteLines(file)) {
            n++;
            if (!complete) {
              drop(`line ${n}: incomplete (no newline at its end: a write cut off)`);
              continue;
            }
            let text: string;
            try {
              text = decoder.decode(bytes.subarray(0, bytes.length - 1));
            } catch {
              drop(`line ${n}: not valid UTF-8`);
              continue;
            }
            const checked = checkRolloutLine(text.endsWith('\r') ? text.slice(0, -1) : text, n, tasks, trajectories);
            if (typeof checked === 'string') {
              drop(checked);
              continue;
            }
            // A blank line is kept too: the committed length must end where the kept lines do.
            await out.write(bytes.toString('utf8'));
            report.bytes += bytes.length;
            if (checked === null) continue;
            report.lines++;
            if (checked.type === 'task') report.tasks++;
            else report.trajectories++;
          }
        }
        if (report.droppedCount > 0 || !exists) {
          if (exists) {
            // Every byte of the original stays, under a name of its own, before the file is replaced.
            report.original = `rollouts.before-rebuild-${stamp(now)}.jsonl`;
            await copyFile(file, join(dir, report.original), constants.COPYFILE_EXCL);
          }
          await out.commit();
        } else {
          await out.abort();
        }
      } catch (e) {
        await out.abort();
        throw e;
      }
      const state = {
        format: 'dreamgym-run',
        version: 1,
        config: record.config,
        iteration: record.iteration,
        pool: [...tasks.values()],
        lastSeen: {},
        metrics: record.metrics,
        realTransitions: record.realTransitions,
        realResets: record.realResets,
        syntheticSteps: record.syntheticSteps,
        wallMs: record.trainWallMs,
        ...(record.validation ? { validation: record.validation } : {}),
      };
      const snapshotFile = SnapshotFileSchema.parse({
        format: 'dreamgym-cli-snapshot',
        version: 1,
        runId: id,
        snapshot: state,
        checkpoint: { sha256: sha256(checkpoint), bytes: checkpoint.length },
        rolloutsBytes: report.bytes,
        rebuilt: { at: now.toISOString(), from: 'run.json, the checkpoint and the complete lines of rollouts.jsonl' },
      });
      const old = join(dir, 'snapshot.json');
      if (await stat(old).then(() => true, () => false)) {
        // An unreadable snapshot.json is kept too, next to the new one.
        await rename(old, join(dir, `snapshot.before-rebuild-${stamp(now)}.json`));
      }
      await writeFileAtomic(old, `${JSON.stringify(snapshotFile)}\n`);
      if (record.status === 'running') await writer.update({ status: 'stopped' });
      return report;
    } finally {
      await writer.release();
    }
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

/** `20250102-030405`: a time as part of a file name. */
function stamp(now: Date): string {
  return now.toISOString().replace(/[-:]/g, '').replace('T', '-').slice(0, 15);
}

type RolloutRecord = { type: 'task'; task: Task } | { type: 'trajectory'; trajectory: Trajectory };

/**
 * Checks one line of rollouts.jsonl against the lines before it (`tasks` and `trajectories` are
 * updated when it is good): the record, null for a blank line, or the problem as `line N: ...`.
 */
function checkRolloutLine(text: string, n: number, tasks: Map<string, Task>, trajectories: Set<string>): RolloutRecord | null | string {
  const record = parseJsonlLine(text, n);
  if (record === null) return null;
  if (Array.isArray(record)) return formatIssue(record[0] as (typeof record)[number]);
  if (record.type === 'task') {
    if (tasks.has(record.task.id)) return `line ${n}: task ${JSON.stringify(record.task.id)} appears twice`;
    tasks.set(record.task.id, record.task);
    return record;
  }
  const t = record.trajectory;
  const task = tasks.get(t.taskId);
  if (!task) return `line ${n}: trajectory ${JSON.stringify(t.id)} refers to task ${JSON.stringify(t.taskId)}, which no earlier line defines`;
  if (task.env !== t.env) return `line ${n}: trajectory ${JSON.stringify(t.id)} is a ${t.env} trajectory of a ${task.env} task`;
  if (trajectories.has(t.id)) return `line ${n}: trajectory ${JSON.stringify(t.id)} appears twice`;
  trajectories.add(t.id);
  return record;
}

/** The complete lines (ending in a newline) of a file, as bytes, streamed; the incomplete tail last, flagged. */
async function* byteLines(file: string): AsyncGenerator<{ bytes: Buffer; complete: boolean }> {
  let pending: Buffer[] = [];
  for await (const chunk of createReadStream(file) as AsyncIterable<Buffer>) {
    let start = 0;
    for (let nl = chunk.indexOf(0x0a); nl >= 0; nl = chunk.indexOf(0x0a, start)) {
      pending.push(chunk.subarray(start, nl + 1));
      yield { bytes: Buffer.concat(pending), complete: true };
      pending = [];
      start = nl + 1;
    }
    if (start < chunk.length) pending.push(chunk.subarray(start));
  }
  if (pending.length > 0) yield { bytes: Buffer.concat(pending), complete: false };
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
    // Synced before the snapshot that will commit these bytes is written.
    const handle = await open(join(this.dir, 'rollouts.jsonl'), 'a');
    try {
      await handle.writeFile(text, 'utf8');
      await handle.sync();
    } finally {
      await handle.close();
    }
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
    await syncDir(this.dir);
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
