/**
 * Conversions between the Foundation types (Trajectory, Step) and the stored records, and one
 * small validator per record kind. A validator returns what is wrong with a record read back
 * from IndexedDB (a string naming the field), or null when it can be used: stored data may
 * have been edited in devtools, half-lost, or written by a faulty build, and reads must not
 * trust it. They are hand-written rather than zod schemas because the retrieval index validates
 * every transition it loads (millions in a large run).
 */
import { ENV_NAMES, TaskSchema, type Step, type Trajectory } from '../core/types.ts';
import { SOURCES, type RunCounters, type TrajectoryRecord, type TransitionRecord } from './schema.ts';

/** What is wrong with a record, or null. */
export type RecordProblem = string | null;

type Obj = Record<string, unknown>;
const isObject = (x: unknown): x is Obj => typeof x === 'object' && x !== null && !Array.isArray(x);
const isCount = (x: unknown): x is number => typeof x === 'number' && Number.isInteger(x) && x >= 0;
const isFiniteNumber = (x: unknown): x is number => typeof x === 'number' && Number.isFinite(x);
const isId = (x: unknown): x is string => typeof x === 'string' && x !== '';
const isSource = (x: unknown): boolean => (SOURCES as readonly unknown[]).includes(x);
const isStringArray = (x: unknown): x is string[] => Array.isArray(x) && x.every((s) => typeof s === 'string');

/** The first failing check as `field: what it should be`, or null. */
function firstProblem(checks: readonly [string, boolean, string][]): RecordProblem {
  for (const [field, ok, expected] of checks) if (!ok) return `${field}: expected ${expected}`;
  return null;
}

/** The parts of a run record that cannot be rebuilt from the data (its identity and embedding settings). */
export function runProblem(r: unknown): RecordProblem {
  if (!isObject(r)) return 'not an object';
  return firstProblem([
    ['id', isId(r.id), 'a non-empty string'],
    ['embedderId', isId(r.embedderId), 'a non-empty string'],
    ['embeddingDim', isCount(r.embeddingDim) && r.embeddingDim > 0, 'a positive integer'],
    ['maxTransitions', r.maxTransitions === undefined || (typeof r.maxTransitions === 'number' && r.maxTransitions > 0 && (Number.isInteger(r.maxTransitions) || r.maxTransitions === Infinity)), 'a positive integer'],
    ['latestCheckpoint', r.latestCheckpoint === undefined || isId(r.latestCheckpoint), 'a checkpoint name'],
  ]);
}

/** Valid run counters (every count a non-negative integer, sums finite)? */
function countersProblem(c: unknown): RecordProblem {
  if (!isObject(c)) return 'counters: missing';
  if (!isCount(c.tasks)) return 'counters.tasks: expected a count';
  if (!isObject(c.bySource)) return 'counters.bySource: missing';
  for (const s of SOURCES) {
    const b = (c.bySource as Obj)[s];
    if (!isObject(b) || !isCount(b.trajectories) || !isCount(b.transitions) || !isFiniteNumber(b.rewardSum) || !isCount(b.successes)) {
      return `counters.bySource.${s}: expected counts and a finite reward sum`;
    }
  }
  if (!isObject(c.evicted) || !isCount(c.evicted.trajectories) || !isCount(c.evicted.transitions)) return 'counters.evicted: expected counts';
  return null;
}

/** The run fields the store rebuilds from the data when they are damaged: counters, next seqs, times. */
export function derivedRunProblem(r: Obj): RecordProblem {
  const next = r.next;
  return (
    countersProblem(r.counters) ??
    (isObject(next) && isCount(next.task) && isCount(next.trajectory) && isCount(next.transition) ? null : 'next: expected three counts') ??
    (isFiniteNumber(r.createdAt) && isFiniteNumber(r.updatedAt) ? null : 'createdAt/updatedAt: expected times')
  );
}

/** Whether some counters are usable as they are (for keeping the eviction history in a rebuild). */
export function usableEvicted(c: unknown): RunCounters['evicted'] | null {
  if (!isObject(c) || !isObject(c.evicted) || !isCount(c.evicted.trajectories) || !isCount(c.evicted.transitions)) return null;
  return { trajectories: c.evicted.trajectories, transitions: c.evicted.transitions };
}

/**
 * Adds trajectory headers to `counters` (per source: trajectories, transitions, reward, successes)
 * and returns the next free trajectory and transition seqs, at least `transitionFloor`. Headers
 * must be sound (see {@link trajectoryProblem}).
 */
export function tallyTrajectories(counters: RunCounters, headers: Iterable<TrajectoryRecord>, transitionFloor = 0): { nextTrajectory: number; nextTransition: number } {
  let nextTrajectory = 0;
  let nextTransition = transitionFloor;
  for (const h of headers) {
    nextTrajectory = Math.max(nextTrajectory, h.seq + 1);
    nextTransition = Math.max(nextTransition, h.firstStep + h.length);
    const c = counters.bySource[h.source];
    c.trajectories += 1;
    c.transitions += h.length;
    c.rewardSum += h.reward;
    if (h.success) c.successes += 1;
  }
  return { nextTrajectory, nextTransition };
}

/** A task record. */
export function taskProblem(r: unknown): RecordProblem {
  if (!isObject(r)) return 'not an object';
  const stats = r.stats;
  const base = firstProblem([
    ['runId', isId(r.runId), 'a non-empty string'],
    ['id', isId(r.id), 'a non-empty string'],
    ['seq', isCount(r.seq), 'a count'],
    ['generation', isCount(r.generation), 'a count'],
    ['stats', isObject(stats) && isCount(stats.count) && isFiniteNumber(stats.rewardSum) && isFiniteNumber(stats.rewardSumSq) && isCount(stats.successes), 'counts and finite sums'],
  ]);
  if (base) return base;
  const task = TaskSchema.safeParse(r.task);
  if (!task.success) {
    const issue = task.error.issues[0];
    return `task${issue && issue.path.length > 0 ? `.${issue.path.map(String).join('.')}` : ''}: ${issue?.message ?? 'invalid'}`;
  }
  if (task.data.id !== r.id) return `task.id: ${JSON.stringify(task.data.id)} differs from the record's id`;
  if (task.data.origin !== r.origin) return 'origin: differs from task.origin';
  if (task.data.parentId !== r.parentId) return 'parentId: differs from task.parentId';
  return null;
}

/** The fields a trajectory header had in schema version 1. */
export function trajectoryV1Problem(r: unknown): RecordProblem {
  if (!isObject(r)) return 'not an object';
  return firstProblem([
    ['runId', isId(r.runId), 'a non-empty string'],
    ['id', isId(r.id), 'a non-empty string'],
    ['seq', isCount(r.seq), 'a count'],
    ['taskId', isId(r.taskId), 'a non-empty string'],
    ['env', (ENV_NAMES as readonly unknown[]).includes(r.env), ENV_NAMES.join(' | ')],
    ['source', isSource(r.source), SOURCES.join(' | ')],
    ['reward', isFiniteNumber(r.reward), 'a finite number'],
    ['success', typeof r.success === 'boolean', 'a boolean'],
    ['length', isCount(r.length), 'a count'],
    ['firstStep', isCount(r.firstStep), 'a count'],
  ]);
}

/** A trajectory header (schema version 2 and later). */
export function trajectoryProblem(r: unknown): RecordProblem {
  const v1 = trajectoryV1Problem(r);
  if (v1) return v1;
  const h = r as Obj;
  return firstProblem([
    ['pinned', typeof h.pinned === 'boolean', 'a boolean'],
    ['evictRank', h.pinned === true ? h.evictRank === undefined : h.evictRank === 0 || h.evictRank === 1, h.pinned === true ? 'none on a pinned trajectory' : '0 or 1'],
  ]);
}

/** A transition; `dim`, when known, is the run's embedding dimension. */
export function transitionProblem(r: unknown, dim?: number): RecordProblem {
  if (!isObject(r)) return 'not an object';
  const base = firstProblem([
    ['runId', isId(r.runId), 'a non-empty string'],
    ['seq', isCount(r.seq), 'a count'],
    ['trajectoryId', isId(r.trajectoryId), 'a non-empty string'],
    ['taskId', isId(r.taskId), 'a non-empty string'],
    ['source', isSource(r.source), SOURCES.join(' | ')],
    ['step', isCount(r.step), 'a count'],
    ['state', typeof r.state === 'string', 'a string'],
    ['actions', isStringArray(r.actions), 'an array of strings'],
    ['action', typeof r.action === 'string', 'a string'],
    ['nextState', r.nextState === null || typeof r.nextState === 'string', 'a string or null'],
    ['nextActions', r.nextActions === null || isStringArray(r.nextActions), 'an array of strings or null'],
    ['reward', isFiniteNumber(r.reward), 'a finite number'],
    ['done', typeof r.done === 'boolean', 'a boolean'],
    ['valid', typeof r.valid === 'boolean', 'a boolean'],
    ['reasoning', r.reasoning === undefined || typeof r.reasoning === 'string', 'a string'],
    ['embedding', r.embedding instanceof Float32Array, 'a Float32Array'],
  ]);
  if (base) return base;
  const e = r.embedding as Float32Array;
  if (dim !== undefined && e.length !== dim) return `embedding: ${e.length} components, the run stores ${dim}`;
  for (let i = 0; i < e.length; i++) if (!Number.isFinite(e[i])) return `embedding: component ${i} is ${e[i]}`;
  return null;
}

const TENSOR_ARRAYS: Record<string, (d: unknown) => boolean> = {
  float32: (d) => d instanceof Float32Array,
  int32: (d) => d instanceof Int32Array,
  bool: (d) => d instanceof Uint8Array,
};

function tensorsProblem(field: string, ts: unknown): RecordProblem {
  if (!Array.isArray(ts)) return `${field}: expected an array of tensors`;
  for (const [i, t] of ts.entries()) {
    const ok =
      isObject(t) &&
      isId(t.name) &&
      typeof t.dtype === 'string' &&
      TENSOR_ARRAYS[t.dtype]?.(t.data) === true &&
      Array.isArray(t.shape) &&
      t.shape.every(isCount) &&
      (t.shape as number[]).reduce((a, b) => a * b, 1) === (t.data as Float32Array).length;
    if (!ok) return `${field}.${i}: expected a tensor whose data matches its dtype and shape`;
  }
  return null;
}

/** A checkpoint record. */
export function checkpointProblem(r: unknown): RecordProblem {
  if (!isObject(r)) return 'not an object';
  const base = firstProblem([
    ['runId', isId(r.runId), 'a non-empty string'],
    ['name', isId(r.name), 'a non-empty string'],
    ['iteration', isCount(r.iteration), 'a count'],
    ['createdAt', isFiniteNumber(r.createdAt), 'a time'],
    ['optimizer', isObject(r.optimizer), 'an object'],
  ]);
  return base ?? tensorsProblem('tensors', r.tensors) ?? tensorsProblem('optimizer.tensors', (r.optimizer as Obj).tensors);
}

/** A metric record (values may be NaN: a loss can be undefined for an iteration). */
export function metricProblem(r: unknown): RecordProblem {
  if (!isObject(r)) return 'not an object';
  return firstProblem([
    ['runId', isId(r.runId), 'a non-empty string'],
    ['iteration', isCount(r.iteration), 'a count'],
    ['time', isFiniteNumber(r.time), 'a time'],
    ['values', isObject(r.values) && Object.values(r.values).every((v) => typeof v === 'number'), 'an object of numbers'],
  ]);
}

/**
 * Whether a (valid) header and the transitions stored in its range make a whole trajectory.
 * Returns the first problem and the record it lies in: the header (steps missing or extra) or
 * one transition (damaged, or belonging to another trajectory).
 */
export function assemblyProblem(
  header: TrajectoryRecord,
  transitions: readonly unknown[],
  dim?: number,
): { store: 'trajectories' | 'transitions'; key: IDBValidKey; problem: string } | null {
  if (transitions.length !== header.length) {
    return { store: 'trajectories', key: [header.runId, header.id], problem: `trajectory ${JSON.stringify(header.id)} has ${transitions.length} stored steps, expected ${header.length}` };
  }
  for (const [i, t] of transitions.entries()) {
    const seq = header.firstStep + i;
    const problem = transitionProblem(t, dim);
    if (problem) return { store: 'transitions', key: [header.runId, seq], problem };
    const r = t as TransitionRecord;
    if (r.seq !== seq || r.trajectoryId !== header.id || r.step !== i) {
      return { store: 'transitions', key: [header.runId, seq], problem: `holds step ${r.step} of trajectory ${JSON.stringify(r.trajectoryId)}, expected step ${i} of ${JSON.stringify(header.id)}` };
    }
  }
  return null;
}

/** The transitions of one trajectory, seqs `firstStep ...`, with their embeddings. */
export function toTransitionRecords(runId: string, trajectory: Trajectory, firstStep: number, embeddings: readonly Float32Array[]): TransitionRecord[] {
  const steps = trajectory.steps;
  return steps.map((step, i) => {
    const next = steps[i + 1];
    const record: TransitionRecord = {
      runId,
      seq: firstStep + i,
      trajectoryId: trajectory.id,
      taskId: trajectory.taskId,
      source: trajectory.source,
      step: i,
      state: step.observation.text,
      actions: step.observation.actions,
      action: step.action,
      nextState: next ? next.observation.text : null,
      nextActions: next ? next.observation.actions : null,
      reward: step.reward,
      done: step.done,
      valid: step.valid,
      embedding: embeddings[i] as Float32Array,
    };
    if (step.reasoning !== undefined) record.reasoning = step.reasoning;
    return record;
  });
}

/** The step a transition stores (fields in schema order, `reasoning` only when present). */
function stepOf(t: TransitionRecord): Step {
  const step: Step = {
    observation: { text: t.state, actions: t.actions },
    action: t.action,
    reward: t.reward,
    done: t.done,
    valid: t.valid,
  };
  if (t.reasoning !== undefined) step.reasoning = t.reasoning;
  return step;
}

/** Reassembles a trajectory from its header and its transitions in step order. */
export function trajectoryOf(header: TrajectoryRecord, transitions: readonly TransitionRecord[]): Trajectory {
  if (transitions.length !== header.length) {
    throw new Error(`trajectory ${JSON.stringify(header.id)} of run ${JSON.stringify(header.runId)} has ${transitions.length} stored steps, expected ${header.length}`);
  }
  return {
    id: header.id,
    taskId: header.taskId,
    env: header.env,
    source: header.source,
    steps: transitions.map(stepOf),
    reward: header.reward,
    success: header.success,
  };
}
