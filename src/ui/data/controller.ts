/**
 * Connects the inspector and the data panel to the stored runs ({@link RunData}): loads the
 * selected run's buffer and curriculum into the store, opens trajectories, makes the export
 * files and hands them to `save`, imports JSONL, deletes runs and clears storage. Errors go to
 * the store as one sentence; nothing here throws at the panels.
 */
import { JsonlError } from '../../core/jsonl.ts';
import { RunLockedError, type RepairReport } from '../../replay/index.ts';
import type { StorageNames } from '../../../workers/training.protocol.ts';
import type { TrainingStore } from '../state/store.ts';
import { isActive } from '../state/training-state.ts';
import { yieldToMain } from '../yield.ts';
import { RunData, requestPersistence, storageUse, type BufferFilter, type DownloadFile } from './run-data.ts';

/** The export files a run offers. */
export type ExportKind = 'checkpoint' | 'dataset' | 'chat' | 'report';

/** Options of {@link DataController}. */
export interface DataControllerOptions {
  storage?: StorageNames;
  /** Hands a file to the user (default: a download through a temporary link). */
  save?: (file: DownloadFile) => void;
  /** `navigator.storage` (tests pass a fake). */
  storageManager?: StorageManager;
  /** The training view's side of a delete: end a stalled run first, and show the latest run left. */
  training?: {
    haltStalled(runId: string): Promise<boolean>;
    showLatest(): Promise<void>;
  };
}

/** Saves a file through a temporary `<a download>` (the browser's download). */
export function downloadFile(file: DownloadFile): void {
  const url = URL.createObjectURL(file.data);
  const a = document.createElement('a');
  a.href = url;
  a.download = file.name;
  a.rel = 'noopener';
  document.body.appendChild(a);
  a.click();
  a.remove();
  // After the click the browser has the blob; revoke later so a slow download still reads it.
  setTimeout(() => URL.revokeObjectURL(url), 60_000);
}

function messageOf(e: unknown): string {
  if (e instanceof JsonlError) return e.message;
  if (e instanceof RunLockedError) return 'the run is being trained (here or in another tab): stop it first';
  return e instanceof Error ? e.message : String(e);
}

/** Drives the inspector and the data panel. */
export class DataController {
  readonly data: RunData;
  private loadSeq = 0;
  private latestLoad: Promise<void> = Promise.resolve();

  constructor(
    readonly store: TrainingStore,
    private readonly options: DataControllerOptions = {},
  ) {
    this.data = new RunData(options.storage ?? {});
  }

  /** The run inspected: the one selected, else the one the training view shows. */
  get runId(): string | null {
    return this.store.data.value.selectedRunId ?? this.store.state.value.runId;
  }

  /** Selects a run (null: follow the training view) and loads it. */
  async select(runId: string | null): Promise<void> {
    this.store.dispatch({ kind: 'data/select', runId });
    await this.refresh();
  }

  /** Changes the buffer filter and reloads. */
  async filter(filter: BufferFilter): Promise<void> {
    this.store.dispatch({ kind: 'data/filter', filter });
    await this.refresh();
  }

  /**
   * Reloads the selected run's buffer headers and curriculum. Resolves once the store shows the
   * latest load: a refresh that a later one supersedes waits for that one.
   */
  async refresh(): Promise<void> {
    const seq = ++this.loadSeq;
    const load = this.load(seq);
    this.latestLoad = load;
    await load;
    // Superseded while loading: settle when what the store will show is loaded.
    let waited = load;
    while (this.latestLoad !== waited) {
      waited = this.latestLoad;
      await waited;
    }
  }

  private async load(seq: number): Promise<void> {
    const runId = this.runId;
    if (!runId) {
      this.store.dispatch({ kind: 'data/loaded', runId: null, trajectories: [], curriculum: [] });
      return;
    }
    try {
      // One read per task, and the re-render in a third: together they blocked a frame for 30+ ms.
      const trajectories = await this.data.trajectories(runId, this.store.data.value.filter);
      await yieldToMain();
      const curriculum = await this.data.curriculum(runId);
      await yieldToMain();
      // A later refresh supersedes this one.
      if (seq === this.loadSeq) this.store.dispatch({ kind: 'data/loaded', runId: this.store.data.value.selectedRunId === null ? null : runId, trajectories, curriculum });
    } catch (e) {
      if (seq === this.loadSeq) this.store.dispatch({ kind: 'data/error', message: `could not read run ${runId}: ${messageOf(e)}` });
    }
  }

  /** Opens a trajectory of the selected run (null closes it). */
  async open(trajectoryId: string | null): Promise<void> {
    const runId = this.runId;
    if (!trajectoryId || !runId) {
      this.store.dispatch({ kind: 'data/opened', trajectory: null });
      return;
    }
    try {
      this.store.dispatch({ kind: 'data/opened', trajectory: (await this.data.trajectory(runId, trajectoryId)) ?? null });
    } catch (e) {
      this.store.dispatch({ kind: 'data/error', message: `could not read trajectory ${trajectoryId}: ${messageOf(e)}` });
    }
  }

  /** Makes an export file of the selected run and saves it; returns it (null on error). */
  async export(kind: ExportKind): Promise<DownloadFile | null> {
    const runId = this.runId;
    if (!runId) return null;
    this.store.dispatch({ kind: 'data/busy', what: `Preparing the ${kind} file…` });
    try {
      const file =
        kind === 'checkpoint' ? await this.data.checkpointFile(runId) : kind === 'dataset' ? await this.data.datasetFile(runId) : kind === 'chat' ? await this.data.chatFile(runId) : await this.data.reportFile(runId);
      (this.options.save ?? downloadFile)(file);
      this.store.dispatch({ kind: 'data/done', notice: `Saved ${file.name} (${file.data.size} bytes).` });
      return file;
    } catch (e) {
      this.store.dispatch({ kind: 'data/error', message: `could not export the ${kind}: ${messageOf(e)}` });
      return null;
    }
  }

  /** Imports a dreamgym JSONL file into the selected run (all or nothing). Returns whether it was imported. */
  async importDataset(file: Blob & { name?: string }): Promise<boolean> {
    const runId = this.runId;
    if (!runId) {
      this.store.dispatch({ kind: 'data/error', message: 'no run to import into: start (or select) a run first' });
      return false;
    }
    if (runId === this.store.state.value.runId && isActive(this.store.state.value.status)) {
      this.store.dispatch({ kind: 'data/error', message: 'the run is training: pause or stop it before importing' });
      return false;
    }
    const name = file.name ?? 'the file';
    this.store.dispatch({ kind: 'data/busy', what: `Importing ${name}…` });
    try {
      const summary = await this.data.importDataset(runId, file);
      this.store.dispatch({ kind: 'data/done', notice: `Imported ${name}: ${summary.tasks} tasks, ${summary.trajectories} trajectories, ${summary.transitions} transitions${summary.skipped.length ? ` (${summary.skipped.length} already stored)` : ''}.` });
      await this.refresh();
      return true;
    } catch (e) {
      this.store.dispatch({ kind: 'data/error', message: `${name} was not imported (nothing was written): ${messageOf(e)}` });
      return false;
    }
  }

  /**
   * Deletes a run: one at rest, or the one training here when it is stalled (its training is ended
   * first). When it was the run shown, the latest run left is shown. Returns whether it was deleted.
   */
  async deleteRun(runId: string): Promise<boolean> {
    const training = this.store.state.value;
    const shown = runId === training.runId;
    if (shown && isActive(training.status)) {
      const halted = training.stalled && (await this.options.training?.haltStalled(runId).catch(() => false));
      const after = this.store.state.value;
      if (!halted || (after.runId === runId && isActive(after.status))) {
        this.store.dispatch({ kind: 'data/error', message: 'the run is training: stop it before deleting it' });
        return false;
      }
    }
    this.store.dispatch({ kind: 'data/busy', what: `Deleting run ${runId}…` });
    try {
      await this.data.deleteRun(runId);
      this.store.dispatch({ kind: 'forget', runId });
      this.store.dispatch({ kind: 'data/forgotten', runId });
      this.store.dispatch({ kind: 'data/done', notice: `Deleted run ${runId}.` });
      // The view does not go blank while runs are left: it reopens on the latest, as the page does on load.
      if (shown) {
        await this.options.training?.showLatest();
        await this.refresh();
      }
      await this.refreshStorage();
      return true;
    } catch (e) {
      this.store.dispatch({ kind: 'data/error', message: `could not delete run ${runId}: ${messageOf(e)}` });
      return false;
    }
  }

  /** Deletes every run and the page's databases (not while a run trains). */
  async clearAll(): Promise<boolean> {
    if (isActive(this.store.state.value.status)) {
      this.store.dispatch({ kind: 'data/error', message: 'a run is training: stop it before clearing storage' });
      return false;
    }
    this.store.dispatch({ kind: 'data/busy', what: 'Clearing all storage…' });
    try {
      await this.data.clearAll();
      this.store.dispatch({ kind: 'forget', runId: null });
      this.store.dispatch({ kind: 'data/forgotten', runId: null });
      this.store.dispatch({ kind: 'data/done', notice: 'Cleared all stored runs.' });
      await this.refreshStorage();
      return true;
    } catch (e) {
      this.store.dispatch({ kind: 'data/error', message: `could not clear storage: ${messageOf(e)}` });
      return false;
    }
  }

  /**
   * Checks the stored runs for corrupt records (`dryRun`: list only) or removes them. Returns the
   * report (null on error); the notice says what was found or done.
   */
  async repair(dryRun: boolean): Promise<RepairReport | null> {
    if (!dryRun && isActive(this.store.state.value.status)) {
      this.store.dispatch({ kind: 'data/error', message: 'a run is training: stop it before repairing storage' });
      return null;
    }
    this.store.dispatch({ kind: 'data/busy', what: dryRun ? 'Checking stored records…' : 'Removing corrupt records…' });
    try {
      const report = await this.data.repair(dryRun);
      const n = report.removed.length;
      const locked = report.lockedRuns.length > 0 ? ` ${report.lockedRuns.length} run(s) being trained elsewhere were not checked.` : '';
      const rebuilt = report.rebuilt.length > 0 ? ` ${report.rebuilt.length} run record(s) ${dryRun ? 'need' : 'got'} their counters rebuilt.` : '';
      const notice = dryRun
        ? n === 0
          ? `No corrupt records found.${rebuilt}${locked}`
          : `Found ${n} corrupt record(s); nothing was changed.${rebuilt}${locked}`
        : `Removed ${n} corrupt record(s).${rebuilt}${locked}`;
      this.store.dispatch({ kind: 'data/done', notice });
      if (!dryRun) {
        await this.refresh();
        await this.refreshStorage();
      }
      return report;
    } catch (e) {
      this.store.dispatch({ kind: 'data/error', message: `could not ${dryRun ? 'check' : 'repair'} storage: ${messageOf(e)}` });
      return null;
    }
  }

  /** Reads storage use into the store. */
  async refreshStorage(): Promise<void> {
    try {
      this.store.dispatch({ kind: 'data/storage', storage: await storageUse(this.options.storageManager ?? globalThis.navigator?.storage) });
    } catch {
      // Storage figures are informative only.
    }
  }

  /** Asks for persistent storage and reports the answer. */
  async persist(): Promise<boolean> {
    const granted = await requestPersistence(this.options.storageManager ?? globalThis.navigator?.storage).catch(() => false);
    this.store.dispatch({ kind: 'data/done', notice: granted ? 'Storage is persistent: the browser will not evict these runs under pressure.' : 'The browser did not grant persistent storage (it may under more use, or after bookmarking the page).' });
    await this.refreshStorage();
    return granted;
  }
}
