/**
 * `dreamgym doctor --store DIR [--dry-run] [--rebuild [RUN]]`: checks every run of the CLI's
 * file-backed run store (src/cli/run-store.ts) and removes what is safely removable from the
 * runs that read back, saying what it did.
 *
 * Per run it reads what the other commands read (run.json, snapshot.json with the checkpoint it
 * names, the committed part of rollouts.jsonl) and reports the first problem of each. What it
 * removes is only debris that no reader uses and that `train --resume` would discard anyway:
 * - a lock file left by a process that is gone (on this host);
 * - the bytes of rollouts.jsonl after the length snapshot.json commits (an iteration killed
 *   before its snapshot);
 * - a `checkpoint.next.bin` that snapshot.json does not name (or, when it names it, the rename
 *   that a killed `persist` did not make);
 * - temporary `*.partial-PID-N` files of processes that are gone.
 * A run with a damaged run.json, snapshot.json, checkpoint or committed rollouts line is reported
 * and nothing of it is changed, debris included: what looks like debris is judged by the very
 * files that are damaged. A lost snapshot.json is such damage (rollouts.jsonl keeps every byte);
 * `--rebuild` makes that run consistent again ({@link RunStore.rebuild}). A run whose lock is held
 * by a live process is not touched.
 */
import { createHash } from 'node:crypto';
import { readdir, readFile, rename, rm, stat, truncate } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { CorruptRunError, RunStore, RunStoreError, type RebuildReport } from './run-store.ts';

/** What doctor found in one run, and what it did (or, in a dry run, would do). */
export interface RunCheck {
  id: string;
  /** Problems that make the run unusable, each `file: problem`; left in place. */
  damaged: string[];
  /** Debris removed (or that would be removed in a dry run), in words; nothing for a damaged run. */
  fixed: string[];
  /** A rebuild done (or, in a dry run, that `--rebuild` would be tried), in words, or null. */
  rebuilt: string | null;
  /** Why a rebuild asked for could not be done, or null. */
  rebuildFailed: string | null;
  /** Why the run was not checked (a live process trains it), or null. */
  busy: string | null;
}

/** The whole report. */
export interface DoctorReport {
  store: string;
  dryRun: boolean;
  /** The run to rebuild, `true` for every run that needs it, or null when not asked. */
  rebuild: string | true | null;
  runs: RunCheck[];
  /** Entries under runs/ that are not run directories (left alone). */
  strays: string[];
}

const PARTIAL = /\.partial-(\d+)-\d+$/;

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function problemOf(e: unknown): string {
  if (e instanceof CorruptRunError) return `${e.file}: ${e.problem}`;
  if (e instanceof Error) return e.message;
  return String(e);
}

async function exists(path: string): Promise<boolean> {
  return stat(path).then(
    () => true,
    () => false,
  );
}

const sha256 = (bytes: Uint8Array): string => createHash('sha256').update(bytes).digest('hex');

/**
 * Checks (and unless `dryRun`, cleans) every run of the store at `root`. `rebuild` (a run id, or
 * true for all) asks for runs whose snapshot.json is lost or unreadable to be rebuilt.
 */
export async function doctorStore(root: string, dryRun: boolean, rebuild: string | true | null = null): Promise<DoctorReport> {
  const info = await stat(root).catch(() => null);
  if (!info?.isDirectory()) throw new RunStoreError(`no run store at ${root} (no such directory)`);
  const store = new RunStore(root);
  const report: DoctorReport = { store: root, dryRun, rebuild, runs: [], strays: [] };
  const ids = await store.ids();
  if (typeof rebuild === 'string') await store.checkId(rebuild);
  const entries = await readdir(store.runsDir).catch(() => [] as string[]);
  report.strays = entries.filter((e) => !ids.includes(e)).sort();
  for (const id of ids) {
    let check = await checkRun(store, id, dryRun);
    if ((rebuild === true || rebuild === id) && check.busy === null && check.damaged.some((d) => d.startsWith(`${join(store.runDir(id), 'snapshot.json')}:`))) {
      if (dryRun) {
        check.rebuilt = 'would rebuild its snapshot.json from run.json, the checkpoint and the complete lines of rollouts.jsonl';
      } else {
        try {
          const done = await store.rebuild(id);
          check = await checkRun(store, id, dryRun);
          check.rebuilt = rebuiltText(done);
        } catch (e) {
          check.rebuildFailed = problemOf(e);
        }
      }
    } else if (rebuild === id) {
      check.rebuildFailed = check.busy ?? 'its snapshot.json is not lost: nothing to rebuild';
    }
    report.runs.push(check);
  }
  return report;
}

function rebuiltText(r: RebuildReport): string {
  const dropped = r.droppedCount > 0 ? `; left out ${r.droppedCount} line${r.droppedCount === 1 ? '' : 's'} (${r.dropped.join('; ')}${r.droppedCount > r.dropped.length ? '; ...' : ''}), the original kept as ${r.original}` : '';
  return `rebuilt snapshot.json: ${r.tasks} tasks and ${r.trajectories} trajectories (${r.bytes} bytes of rollouts.jsonl) committed${dropped}; it can be listed, evaluated and exported, not resumed`;
}

async function checkRun(store: RunStore, id: string, dryRun: boolean): Promise<RunCheck> {
  const dir = store.runDir(id);
  const check: RunCheck = { id, damaged: [], fixed: [], busy: null, rebuilt: null, rebuildFailed: null };
  // What to remove is planned first and done only when the run reads back undamaged.
  const planned: { what: string; action: () => Promise<unknown> }[] = [];
  const act = async (what: string, action: () => Promise<unknown>): Promise<void> => {
    planned.push({ what, action });
  };

  // The lock: a live holder means the run is being written; leave everything alone.
  const lockFile = join(dir, 'lock');
  const lockText = await readFile(lockFile, 'utf8').catch(() => null);
  if (lockText !== null) {
    let holder: { pid?: unknown; host?: unknown } | null = null;
    try {
      holder = JSON.parse(lockText) as { pid?: unknown; host?: unknown };
    } catch {
      holder = null;
    }
    const pid = typeof holder?.pid === 'number' ? holder.pid : null;
    if (pid !== null && holder?.host === hostname() && !alive(pid)) {
      await act(`removed the stale lock of process ${pid}, which is gone`, () => rm(lockFile, { force: true }));
    } else {
      check.busy = pid !== null ? `locked by process ${pid}${holder?.host === hostname() ? '' : ` on ${String(holder?.host)}`}, which may be training it` : `its lock file ${lockFile} is unreadable`;
      return check;
    }
  }

  try {
    await store.readRecord(id);
  } catch (e) {
    check.damaged.push(problemOf(e));
  }
  let rolloutsBytes: number | null = null;
  let snapshotOk = false;
  try {
    const saved = await store.readSnapshot(id);
    snapshotOk = saved !== null;
    rolloutsBytes = saved?.rolloutsBytes ?? 0;
  } catch (e) {
    check.damaged.push(problemOf(e));
  }
  if (rolloutsBytes !== null) {
    try {
      for await (const _ of store.rollouts(id)) {
        // Reading validates every committed line.
      }
    } catch (e) {
      check.damaged.push(problemOf(e));
    }
  }

  // Debris. Only with a readable resume point: it says what is committed and which checkpoint counts.
  if (rolloutsBytes !== null) {
    const file = join(dir, 'rollouts.jsonl');
    const size = (await stat(file).catch(() => null))?.size;
    if (size !== undefined && size > rolloutsBytes) {
      await act(`cut rollouts.jsonl back to the ${rolloutsBytes} bytes snapshot.json commits (${size - rolloutsBytes} uncommitted bytes of an interrupted iteration)`, () => truncate(file, rolloutsBytes as number));
    }
  }
  const next = join(dir, 'checkpoint.next.bin');
  if (snapshotOk && (await exists(next))) {
    const named = (JSON.parse(await readFile(join(dir, 'snapshot.json'), 'utf8')) as { checkpoint: { sha256: string } }).checkpoint.sha256;
    const current = await readFile(join(dir, 'checkpoint.bin')).catch(() => null);
    if (current !== null && sha256(current) === named) await act('removed checkpoint.next.bin, which snapshot.json does not name', () => rm(next, { force: true }));
    else await act('renamed checkpoint.next.bin to checkpoint.bin (the checkpoint snapshot.json names; an interrupted save)', () => rename(next, join(dir, 'checkpoint.bin')));
  }
  for (const name of (await readdir(dir).catch(() => [] as string[])).sort()) {
    const m = PARTIAL.exec(name);
    if (m && !alive(Number(m[1]))) await act(`removed ${name}, a temporary file of process ${m[1]}, which is gone`, () => rm(join(dir, name), { force: true }));
  }
  if (check.damaged.length > 0) return check;
  for (const { what, action } of planned) {
    if (!dryRun) await action();
    check.fixed.push(what);
  }
  return check;
}

/** The report as lines for the terminal. */
export function formatDoctor(report: DoctorReport): string {
  const lines: string[] = [];
  const tense: Record<string, string> = { removed: 'would remove', cut: 'would cut', renamed: 'would rename' };
  const verb = (text: string): string => (report.dryRun ? text.replace(/^(removed|cut|renamed)/, (w) => tense[w] ?? w) : text);
  for (const run of report.runs) {
    if (run.busy) {
      lines.push(`${run.id}: not checked: ${run.busy}`);
      continue;
    }
    if (run.rebuilt) lines.push(`${run.id}: ${run.rebuilt}`);
    if (run.rebuildFailed) lines.push(`${run.id}: not rebuilt: ${run.rebuildFailed}`);
    for (const f of run.fixed) lines.push(`${run.id}: ${verb(f)}`);
    for (const d of run.damaged) lines.push(`${run.id}: damaged: ${d}`);
    if (run.damaged.length > 0) lines.push(`${run.id}: left as it is (nothing of it changed); delete ${join(report.store, 'runs', run.id)} to discard the run`);
    if (run.damaged.length === 0 && run.fixed.length === 0 && !run.rebuilt) lines.push(`${run.id}: ok`);
  }
  for (const s of report.strays) lines.push(`${s}: not a run directory, left alone`);
  const damaged = report.runs.filter((r) => r.damaged.length > 0).length;
  const fixed = report.runs.filter((r) => r.fixed.length > 0).length;
  const busy = report.runs.filter((r) => r.busy).length;
  lines.push(
    `${report.store}: ${report.runs.length} runs, ${report.runs.length - damaged - busy} usable, ${damaged} damaged, ${busy} not checked; ` +
      `${report.dryRun ? `dry run: ${fixed} runs have debris to remove, nothing changed` : `removed debris from ${fixed} runs`}`,
  );
  return `${lines.join('\n')}\n`;
}
