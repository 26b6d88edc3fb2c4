/**
 * The repair path of the replay database: finds every corrupt record (one that fails its kind's
 * validation in `records.ts`, a trajectory whose steps do not assemble, a record whose run or task
 * is gone, a step no trajectory owns), lists it with its store, key and why, and removes it; then
 * rebuilds each run's counters from what is left. A dry run lists only. Browser- and
 * worker-safe (no Node imports), so the page can offer it as a button.
 */
import { assemblyProblem, checkpointProblem, derivedRunProblem, metricProblem, runProblem, taskProblem, tallyTrajectories, trajectoryProblem, usableEvicted } from './records.ts';
import { emptyCounters, runRange, type RunRecord, type TaskRecord, type TrajectoryRecord, type TransitionRecord } from './schema.ts';
import type { MaintenanceTx, ReplayStore } from './store.ts';

/** Options of {@link repairStore}. */
export interface RepairOptions {
  /** List what would be removed or rebuilt, change nothing (default false). */
  dryRun?: boolean;
  /** Also empty the `quarantine` store (records upgrades set aside); default false. */
  clearQuarantine?: boolean;
}

/** One record found corrupt (removed), or one run record rebuilt. */
export interface RepairFinding {
  /** The object store. */
  store: string;
  /** The record's key there. */
  key: IDBValidKey;
  /** What is wrong with it (for a rebuilt run: what was rebuilt and why). */
  problem: string;
}

/** What {@link repairStore} found and did. */
export interface RepairReport {
  dryRun: boolean;
  /** Corrupt records removed (in a dry run: that would be removed). */
  removed: RepairFinding[];
  /** Run records whose counters, sequence numbers or latest checkpoint were (would be) rebuilt from their records. */
  rebuilt: RepairFinding[];
  /** Runs another context trains (it holds their lock): left alone; repair them when it stops. */
  lockedRuns: string[];
  /** Records in the `quarantine` store (before it was cleared, if `clearQuarantine`). */
  quarantined: number;
  /** Whether the quarantine store was emptied. */
  quarantineCleared: boolean;
}

const DATA_STORES = ['tasks', 'trajectories', 'transitions', 'checkpoints', 'metrics'] as const;

/**
 * Lists the corrupt records of the store's database and (unless `dryRun`) removes them, in one
 * transaction: all of it lands or none of it does. Runs another context trains are skipped
 * (`lockedRuns`). Afterwards every read of a repaired run finds nothing to skip.
 */
export async function repairStore(store: ReplayStore, options: RepairOptions = {}): Promise<RepairReport> {
  const dryRun = options.dryRun ?? false;
  if (typeof dryRun !== 'boolean') throw new TypeError(`dryRun must be a boolean, got ${JSON.stringify(dryRun)}`);
  // Lock checks are not IndexedDB requests: awaiting one inside the transaction would let it
  // commit early, so they come first.
  const { ids } = await store.maintain(true, async (tx) => ({ changedRuns: [], ids: await tx.objectStore('runs').getAllKeys() }));
  const lockedRuns: string[] = [];
  for (const id of ids) if (typeof id === 'string' && id !== '' && (await store.lockedElsewhere(id))) lockedRuns.push(id);
  const locked = new Set<IDBValidKey>(lockedRuns);
  return store.maintain(dryRun, async (tx) => {
    const report: RepairReport = { dryRun, removed: [], rebuilt: [], lockedRuns, quarantined: 0, quarantineCleared: false };
    const changed = new Set<string>();
    const remove = (storeName: string, key: IDBValidKey, problem: string): void => {
      report.removed.push({ store: storeName, key, problem });
      const runId = Array.isArray(key) ? key[0] : key;
      if (typeof runId === 'string') changed.add(runId);
      if (!dryRun) void (tx.objectStore(storeName as 'runs') as unknown as { delete(k: IDBValidKey): Promise<void> }).delete(key);
    };

    // Run records: a damaged identity or embedding setting makes the run unreadable.
    const good = new Map<string, RunRecord>();
    for (const run of await tx.objectStore('runs').getAll()) {
      const key = (run as { id: IDBValidKey }).id;
      if (locked.has(key)) continue;
      const problem = runProblem(run);
      if (problem) remove('runs', key, problem);
      else good.set(run.id, run);
    }
    // Records of a run that does not exist (or was just removed).
    const keysByStore = new Map<string, IDBValidKey[]>();
    for (const name of DATA_STORES) {
      const keys = (await tx.objectStore(name).getAllKeys()) as IDBValidKey[];
      keysByStore.set(name, keys);
      for (const key of keys) {
        const runId = Array.isArray(key) ? key[0] : undefined;
        if (typeof runId === 'string' && (good.has(runId) || locked.has(runId))) continue;
        remove(name, key, `no run ${JSON.stringify(runId)} in the store`);
      }
    }

    for (const run of good.values()) {
      const runId = run.id;
      const range = runRange(runId);
      // Tasks, in insertion order so that a parent comes before its generated tasks.
      const tasks: TaskRecord[] = [];
      for (const t of await tx.objectStore('tasks').getAll(range)) {
        const problem = taskProblem(t);
        if (problem) remove('tasks', [runId, (t as { id: IDBValidKey }).id], problem);
        else tasks.push(t);
      }
      tasks.sort((a, b) => a.seq - b.seq);
      const keptTasks = new Set<string>();
      for (const t of tasks) {
        if (t.parentId !== undefined && !keptTasks.has(t.parentId)) remove('tasks', [runId, t.id], `its parent task ${JSON.stringify(t.parentId)} is missing or corrupt`);
        else keptTasks.add(t.id);
      }

      // Trajectories: a header must validate, have its task, and assemble with its steps.
      const kept: TrajectoryRecord[] = [];
      const stepReasons = new Map<number, string>();
      for (const h of await tx.objectStore('trajectories').getAll(range)) {
        const key: IDBValidKey = [runId, (h as { id: IDBValidKey }).id];
        const problem = trajectoryProblem(h);
        if (problem) {
          remove('trajectories', key, problem);
          continue;
        }
        const rows = h.length === 0 ? [] : await tx.objectStore('transitions').getAll(IDBKeyRange.bound([runId, h.firstStep], [runId, h.firstStep + h.length - 1]));
        if (!keptTasks.has(h.taskId)) {
          remove('trajectories', key, `refers to task ${JSON.stringify(h.taskId)}, which the run does not have (or which is corrupt)`);
          markSteps(h, rows, stepReasons);
          continue;
        }
        const bad = assemblyProblem(h, rows, run.embeddingDim);
        if (bad === null) {
          kept.push(h);
          continue;
        }
        if (bad.store === 'transitions') {
          stepReasons.set((bad.key as [string, number])[1], bad.problem);
          remove('trajectories', key, `its step ${JSON.stringify(bad.key)} is damaged: ${bad.problem}`);
        } else remove('trajectories', key, bad.problem);
        markSteps(h, rows, stepReasons);
      }

      // Steps: every transition must lie in a kept trajectory's range.
      const covered = kept.map((h): [number, number] => [h.firstStep, h.firstStep + h.length - 1]).sort((a, b) => a[0] - b[0]);
      const seqKeys = (keysByStore.get('transitions') ?? []).filter((k) => Array.isArray(k) && k[0] === runId);
      let at = 0;
      for (const key of seqKeys) {
        const seq = (key as unknown[])[1];
        if (typeof seq === 'number') {
          while (at < covered.length && (covered[at] as [number, number])[1] < seq) at++;
          const span = covered[at];
          if (span && span[0] <= seq) continue;
        }
        remove('transitions', key, (typeof seq === 'number' && stepReasons.get(seq)) || 'a step no trajectory of the run owns');
      }

      const checkpoints: string[] = [];
      for (const c of await tx.objectStore('checkpoints').getAll(range)) {
        const problem = checkpointProblem(c);
        if (problem) remove('checkpoints', [runId, (c as { name: IDBValidKey }).name], problem);
        else checkpoints.push(c.name);
      }
      for (const m of await tx.objectStore('metrics').getAll(range)) {
        const problem = metricProblem(m);
        if (problem) remove('metrics', [runId, (m as { iteration: IDBValidKey }).iteration], problem);
      }

      // The run record: counters and sequence numbers from what is left.
      const rebuilt = rebuildFrom(run, tasks.filter((t) => keptTasks.has(t.id)), kept, checkpoints);
      if (rebuilt.why.length > 0) {
        report.rebuilt.push({ store: 'runs', key: runId, problem: rebuilt.why.join('; ') });
        changed.add(runId);
        if (!dryRun) await (tx as MaintenanceTx & { objectStore(name: 'runs'): { put(r: RunRecord): Promise<unknown> } }).objectStore('runs').put(rebuilt.run);
      }
    }

    report.quarantined = await tx.objectStore('quarantine').count();
    if (options.clearQuarantine === true && !dryRun && report.quarantined > 0) {
      await (tx.objectStore('quarantine') as unknown as { clear(): Promise<void> }).clear();
      report.quarantineCleared = true;
    }
    return { ...report, changedRuns: [...changed] };
  }).then(({ changedRuns: _, ...report }) => report);
}

/**
 * Records why the steps of a removed trajectory go (a damaged step keeps its own reason). Only
 * records that name the trajectory: with a wrong length its range may hold other trajectories' steps.
 */
function markSteps(h: TrajectoryRecord, rows: readonly TransitionRecord[], reasons: Map<number, string>): void {
  const why = `a step of trajectory ${JSON.stringify(h.id)}, which is removed`;
  for (const r of rows) if (typeof r?.seq === 'number' && r.trajectoryId === h.id && !reasons.has(r.seq)) reasons.set(r.seq, why);
}

/** The run record with counters, next seqs and latest checkpoint that match its kept records; `why` is empty when nothing changes. */
function rebuildFrom(run: RunRecord, tasks: readonly TaskRecord[], headers: readonly TrajectoryRecord[], checkpoints: readonly string[]): { run: RunRecord; why: string[] } {
  const why: string[] = [];
  const counters = emptyCounters();
  counters.evicted = usableEvicted(run.counters) ?? counters.evicted;
  counters.tasks = tasks.length;
  let nextTask = 0;
  for (const t of tasks) nextTask = Math.max(nextTask, t.seq + 1);
  const { nextTrajectory, nextTransition } = tallyTrajectories(counters, headers);
  const derived = derivedRunProblem(run as unknown as Record<string, unknown>);
  if (derived) why.push(`damaged: ${derived}`);
  else if (JSON.stringify(run.counters) !== JSON.stringify(counters)) why.push('counters did not match the records');
  const old = derived === null ? run.next : undefined;
  const keep = (n: number | undefined, floor: number): number => (n !== undefined && n >= floor ? n : floor);
  const next = { task: keep(old?.task, nextTask), trajectory: keep(old?.trajectory, nextTrajectory), transition: keep(old?.transition, nextTransition) };
  if (old && (next.task !== old.task || next.trajectory !== old.trajectory || next.transition !== old.transition)) why.push('next sequence numbers were below ones in use');
  const out: RunRecord = { ...run, counters, next };
  const now = Date.now();
  if (!Number.isFinite(out.createdAt)) out.createdAt = now;
  if (!Number.isFinite(out.updatedAt)) out.updatedAt = now;
  if (run.latestCheckpoint !== undefined && !checkpoints.includes(run.latestCheckpoint)) {
    delete out.latestCheckpoint;
    why.push(`its latest checkpoint ${JSON.stringify(run.latestCheckpoint)} is missing or corrupt`);
  }
  return { run: out, why };
}
