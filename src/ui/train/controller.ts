/**
 * Connects the training page to the training worker: sends start/pause/resume/stop, feeds the
 * worker's events into the store, and on load finds an unfinished run in IndexedDB. A run left
 * `seeding`, `running` or `evaluating` (the tab was reloaded or crashed) resumes at once; a
 * `paused` one waits for the Resume button. A run that another tab trains (its Web Lock is held) is
 * shown read-only: that tab re-sends its worker's events over the live channel (./live-channel.ts)
 * and this one follows them, until the run comes to rest or its lock is let go (that tab closed or
 * crashed); then Resume takes it over here.
 *
 * A run on the local LLM first has its models loaded by the LLM controller (../llm/controller.ts:
 * download progress, Cancel, typed errors in the setup panel), then goes to the worker with one
 * end of an LLM bridge. Such a run, found unfinished on load, waits for Resume instead of
 * resuming at once: resuming loads its model, which the person should ask for.
 */
import type { BackendPreference } from '../../policy/backend.ts';
import { openReplayStore } from '../../replay/index.ts';
import type { TrainingConfig } from '../../train/config.ts';
import type { IterationMetrics } from '../../train/loop.ts';
import type { TrainingWorkerHandle } from '../../../workers/training.client.ts';
import type { LLMLink, StorageNames, TrainingCommand } from '../../../workers/training.protocol.ts';
import type { LLMClient } from '../../llm/client.ts';
import type { LLMController } from '../llm/controller.ts';
import type { LLMSelection } from '../state/llm-state.ts';
import { isUnfinished, newRunId, RunIndex, type PageRunRecord } from '../../train/runs/records.ts';
import { metricsFromValues } from '../../train/runs/snapshot.ts';
import { openLiveChannel, type LiveChannel } from './live-channel.ts';
import type { TrainingStore } from '../state/store.ts';
import { isActive, type TrainingViewState } from '../state/training-state.ts';

/** Options of {@link TrainingController}. */
export interface TrainingControllerOptions {
  /** Starts the worker (default: the real training worker, loaded on first use). */
  startWorker?: () => Promise<TrainingWorkerHandle>;
  /** Database names (tests use their own). */
  storage?: StorageNames;
  /** tfjs backend preference for the worker (default `auto`). */
  backend?: BackendPreference;
  /** The page's local LLM, for runs that use one. */
  llm?: LLMController;
  /**
   * How long Stop or Pause waits for the run to reach the end of its iteration before the page
   * ends the worker and leaves the run paused at its last stored iteration (default 10 s).
   */
  stopWaitMs?: number;
  /**
   * How long the run this tab trains may send no event before the page calls it stalled and
   * offers Delete for it (default 60 s; an iteration of the presets sends several a second).
   */
  stallMs?: number;
}

/** What a start may add to the run's configuration. */
export interface StartOptions {
  /** A dreamgym JSONL file whose episodes seed the run (instead of generated ones). */
  seedFile?: Blob & { name?: string };
  /** The tfjs backend for this run (default: the controller's `backend` option, else `auto`). */
  backend?: BackendPreference;
  /** The local LLM models the run trains on (loaded first); none: the run needs no LLM. */
  llm?: LLMSelection;
}

/** How often, and how far apart, the page re-checks a locked unfinished run before leaving it to its holder. */
const LOCK_CHECKS = 8;
const LOCK_CHECK_MS = 200;
/** How often a read-only tab checks whether the tab training the run let go of its lock. */
const LOCK_WATCH_MS = 500;

/** How long a halt waits for the ended worker's lock on the run to go. */
const LOCK_RELEASE_WAIT_MS = 5_000;
/** Default of {@link TrainingControllerOptions.stopWaitMs}. */
export const STOP_WAIT_MS = 10_000;
/** Default of {@link TrainingControllerOptions.stallMs}. */
export const STALL_MS = 60_000;

const defaultStartWorker = async (): Promise<TrainingWorkerHandle> => (await import('../../../workers/training.client.ts')).startTrainingWorker();

/** Drives training for the page (one run at a time). */
export class TrainingController {
  private worker: TrainingWorkerHandle | null = null;
  private workerStarting: Promise<TrainingWorkerHandle> | null = null;
  private destroyed = false;
  private readonly live: LiveChannel;
  /** When the run this tab trains last sent an event (or was asked to start). */
  private lastNews = Date.now();
  private stallWatch: ReturnType<typeof setInterval> | null = null;

  constructor(
    readonly store: TrainingStore,
    private readonly options: TrainingControllerOptions = {},
  ) {
    this.live = openLiveChannel(options.storage);
    this.live.subscribe((event) => {
      // A tab busy with a run of its own ignores the others; one at rest hears the last events of the
      // run it shows (they may come after the other tab let go of its lock), and follows it when another tab resumes it.
      const before = this.store.state.value;
      if (!before.readOnly && isActive(before.status)) return;
      this.store.dispatch(event);
      const after = this.store.state.value;
      if (!after.readOnly && after.runId !== null && isActive(after.status)) {
        this.store.dispatch({ kind: 'watch', runId: after.runId });
        void this.watchLock(after.runId);
      }
    });
  }

  /** The tfjs backend the page asks for unless a start names another (`?backend=`, default `auto`). */
  get backendPreference(): BackendPreference {
    return this.options.backend ?? 'auto';
  }

  /** Lists the stored runs and resumes an unfinished one (see the module comment). Resolves once listed. */
  async init(): Promise<void> {
    const index = await this.openIndex();
    let runs: PageRunRecord[];
    let unfinished: PageRunRecord | undefined;
    try {
      runs = await index.list();
      unfinished = await index.latestUnfinished();
    } finally {
      index.close();
    }
    if (this.destroyed) return;
    this.store.dispatch({ kind: 'runs', runs });
    if (!unfinished) {
      // The latest run, as it ended: its charts, result and exports.
      const latest = runs.at(-1);
      if (latest) await this.show(latest.id);
      return;
    }
    const { metrics, locked } = await this.storedState(unfinished.id);
    if (this.destroyed) return;
    this.store.dispatch({ kind: 'found', record: unfinished, metrics });
    if (locked) {
      // Another tab (or window) trains it: resuming here would only wait for its lock. Follow it instead.
      this.store.dispatch({ kind: 'watch', runId: unfinished.id });
      void this.watchLock(unfinished.id);
      return;
    }
    if (unfinished.status === 'paused') return;
    // A run on the local LLM waits for Resume (shown as paused): resuming loads its model.
    if (unfinished.llm) this.store.dispatch({ kind: 'found', record: { ...unfinished, status: 'paused' }, metrics });
    else await this.resume(unfinished.id);
  }

  /**
   * Starts a new run of `config`; returns its id. With `seedFile` (dreamgym JSONL), the run seeds on
   * that file's episodes; the worker checks it whole and writes nothing when it is malformed.
   * `backend` (the setup panel's choice) overrides the page's tfjs backend preference. With `llm`,
   * its models are loaded first; when that fails or is cancelled no run is made (null), and the
   * LLM state says why.
   */
  async start(config: TrainingConfig, extras: StartOptions = {}): Promise<string | null> {
    const link = extras.llm ? await this.linkFor(extras.llm) : undefined;
    if (link === null || this.destroyed) return null;
    const runId = newRunId(config);
    this.store.dispatch({ kind: 'request', what: 'start', runId });
    this.heard();
    const { seedFile, backend } = extras;
    const seedData = seedFile ? { fileName: seedFile.name ?? 'seed data', text: await seedFile.text() } : undefined;
    await this.send({ kind: 'start', runId, config, ...(seedData ? { seedData } : {}), ...this.common(), ...(backend ? { backend } : {}), ...(link ? { llm: link } : {}) });
    return runId;
  }

  /**
   * Makes a new run of a checkpoint file and evaluates it with the held-out tasks, features and
   * prior of `config` (the setup form's), on the local LLM's models when `llm` names them; returns
   * the run id (null when the models could not be loaded).
   */
  async evaluateCheckpoint(config: TrainingConfig, file: Blob & { name?: string }, llm?: LLMSelection): Promise<string | null> {
    const link = llm ? await this.linkFor(llm) : undefined;
    if (link === null || this.destroyed) return null;
    const runId = newRunId(config).replace(`-${config.mode}-`, '-checkpoint-');
    this.store.dispatch({ kind: 'request', what: 'start', runId });
    this.heard();
    const checkpoint = new Uint8Array(await file.arrayBuffer());
    await this.send({ kind: 'evaluate-checkpoint', runId, config, checkpoint, fileName: file.name ?? 'checkpoint', ...this.common(), ...(link ? { llm: link } : {}) });
    return runId;
  }

  /** Loads `selection` and opens a bridge to it; null when it could not be loaded (the LLM state says why). */
  private async linkFor(selection: LLMSelection): Promise<LLMLink | null> {
    const llm = this.options.llm;
    if (!llm) throw new Error('this page has no local LLM controller');
    let client: LLMClient;
    try {
      client = await llm.load(selection);
    } catch {
      // Failed or cancelled: the LLM state (and so the setup panel) says why.
      return null;
    }
    return llm.openLink(client);
  }

  /**
   * Continues the paused (or interrupted) run `runId` (default: the one shown). A run on the local
   * LLM has its models loaded first; when that fails the run stays as it was, resumable.
   */
  async resume(runId: string | null = this.store.state.value.runId): Promise<void> {
    if (!runId) return;
    const shown = this.store.state.value.record;
    const record = shown?.id === runId ? shown : await this.readRecord(runId);
    let link: LLMLink | undefined;
    if (record?.llm) {
      const opened = this.options.llm ? await this.linkFor({ ...record.llm, ...(record.config.prior === 'llm' ? { priorLogits: true } : {}) }) : null;
      if (this.destroyed) return;
      if (!opened) {
        const why = this.store.llm.value.load;
        const detail = why.status === 'failed' ? why.message : 'this page has no local LLM';
        this.store.dispatch({ kind: 'failed', runId, message: `run ${runId} trains on the local LLM ${record.llm.chatModel}, which could not be loaded: ${detail}` });
        return;
      }
      link = opened;
    }
    this.store.dispatch({ kind: 'request', what: 'resume', runId });
    this.heard();
    await this.send({ kind: 'resume', runId, ...this.common(), ...(link ? { llm: link } : {}) });
  }

  /**
   * Shows the stored run `runId` (its record, metrics and result) while no run is in progress
   * here; an unfinished one rests as paused, for Resume.
   */
  async show(runId: string): Promise<void> {
    if (isActive(this.store.state.value.status)) return;
    const record = await this.readRecord(runId);
    if (!record || this.destroyed) return;
    const metrics = await this.storedMetrics(runId);
    if (this.destroyed) return;
    this.store.dispatch({ kind: 'show', record, metrics });
  }

  private async readRecord(runId: string): Promise<PageRunRecord | undefined> {
    const index = await this.openIndex();
    try {
      return await index.get(runId);
    } finally {
      index.close();
    }
  }

  /** Pauses at the end of the current iteration (see {@link TrainingControllerOptions.stopWaitMs}). */
  pause(): void {
    const before = this.store.state.value;
    this.store.dispatch({ kind: 'request', what: 'pause' });
    // Through send: a worker still starting gets it after the start it is starting for.
    if (this.worker || this.workerStarting) void this.send({ kind: 'pause' });
    this.haltIfStuck(before, 'pause');
  }

  /** Ends training at the end of the current iteration and evaluates (see {@link TrainingControllerOptions.stopWaitMs}). */
  stop(): void {
    const before = this.store.state.value;
    this.store.dispatch({ kind: 'request', what: 'stop' });
    if (this.worker || this.workerStarting) void this.send({ kind: 'stop' });
    this.haltIfStuck(before, 'stop');
  }

  /**
   * The way out of a run that does not come to an iteration boundary: one still starting or
   * seeding (its seed data is made in one piece of work the worker cannot interrupt) is halted at
   * once; one inside an iteration, when that iteration has not ended `stopWaitMs` later.
   */
  private haltIfStuck(before: TrainingViewState, what: 'pause' | 'stop'): void {
    const runId = before.runId;
    if (runId === null || before.readOnly || !isActive(before.status) || before.status === 'evaluating') return;
    const asked = what === 'stop' ? 'Stopped' : 'Paused';
    if (before.status === 'starting' || before.status === 'seeding') {
      void this.halt(runId, `${asked} while the run was starting: it rests at iteration ${before.iteration}; Resume starts it again, or delete it.`);
      return;
    }
    const wait = this.options.stopWaitMs ?? STOP_WAIT_MS;
    setTimeout(() => {
      const s = this.store.state.value;
      if (this.destroyed || s.runId !== runId || (s.status !== 'stopping' && s.status !== 'pausing') || s.iteration !== before.iteration) return;
      void this.halt(runId, `${asked} inside iteration ${s.iteration + 1}, which had not ended ${wait / 1000} s later: the run rests at iteration ${s.iteration}; Resume continues from there, or delete it.`);
    }, wait);
  }

  /** Notes news of the run this tab trains, and watches for its silence (see {@link TrainingControllerOptions.stallMs}). */
  private heard(): void {
    this.lastNews = Date.now();
    const stallMs = this.options.stallMs ?? STALL_MS;
    this.stallWatch ??= setInterval(
      () => {
        const s = this.store.state.value;
        const silent = Date.now() - this.lastNews;
        if (s.runId !== null && isActive(s.status) && !s.readOnly && !s.stalled && silent >= stallMs) this.store.dispatch({ kind: 'stalled', runId: s.runId, sinceMs: silent });
      },
      Math.min(1000, Math.max(50, stallMs / 4)),
    );
  }

  /**
   * Ends the training of `runId` when it is stalled (see {@link TrainingControllerOptions.stallMs}),
   * leaving it paused at its last stored iteration, so that it can be deleted. Resolves whether it did.
   */
  async haltStalled(runId: string): Promise<boolean> {
    const s = this.store.state.value;
    if (s.runId !== runId || !isActive(s.status) || s.readOnly || !s.stalled) return false;
    const silent = Math.round((Date.now() - this.lastNews) / 1000);
    await this.halt(runId, `Ended after ${silent} s without progress: the run rests at iteration ${s.iteration}.`);
    return true;
  }

  /** Shows the latest stored run, as the page opens on it (nothing while a run is in progress; the empty view when none is left). */
  async showLatest(): Promise<void> {
    const latest = this.store.state.value.runs.at(-1);
    if (latest) await this.show(latest.id);
  }

  /** Ends the worker training `runId` at once and leaves the run paused at its last stored iteration. */
  private async halt(runId: string, message: string): Promise<void> {
    const worker = this.worker ?? (await this.workerStarting?.catch(() => null)) ?? null;
    if (worker) this.dropWorker(worker);
    this.options.llm?.closeLinks();
    // The ended worker's lock on the run goes a moment later: wait for it, so that the run is at
    // rest for Resume, Delete and a reload (which would otherwise follow it as another tab's).
    await this.lockLetGo(runId).catch(() => undefined);
    let record: PageRunRecord | undefined;
    try {
      const index = await this.openIndex();
      try {
        const stored = await index.get(runId);
        if (stored && isUnfinished(stored)) record = await index.update(runId, { status: 'paused', error: message });
        else record = stored;
      } finally {
        index.close();
      }
    } catch {
      // The view still comes to rest; the stored record stays as the worker left it.
    }
    if (this.destroyed) return;
    this.store.dispatch({ kind: 'halted', runId, message, ...(record ? { record } : {}) });
    if (record) this.live.publish({ kind: 'paused', record });
  }

  /** Ends the worker (a run in progress stays resumable from its last stored iteration). */
  destroy(): void {
    this.destroyed = true;
    this.live.close();
    if (this.stallWatch !== null) clearInterval(this.stallWatch);
    // The worker goes first: closing its LLM links while it still runs would let it see an LLM
    // failure and write the run down as paused, where a reload should leave it as it was.
    this.worker?.terminate();
    this.worker = null;
    this.options.llm?.closeLinks();
  }

  private common(): { backend?: BackendPreference; storage?: StorageNames } {
    return { ...(this.options.backend ? { backend: this.options.backend } : {}), ...(this.options.storage ? { storage: this.options.storage } : {}) };
  }

  private async send(command: TrainingCommand): Promise<void> {
    const worker = await this.ensureWorker();
    if (this.destroyed) return;
    worker.send(command);
  }

  private async ensureWorker(): Promise<TrainingWorkerHandle> {
    if (this.worker) return this.worker;
    this.workerStarting ??= (this.options.startWorker ?? defaultStartWorker)().then((worker) => {
      if (this.destroyed) {
        worker.terminate();
        return worker;
      }
      worker.onEvent((event) => {
        this.lastNews = Date.now();
        this.store.dispatch(event);
        this.live.publish(event);
        if (event.kind === 'failed' && event.runId === '') {
          // The worker is gone: so are the runs it was serving the LLM to.
          this.options.llm?.closeLinks();
          this.dropWorker(worker);
        }
      });
      this.worker = worker;
      return worker;
    });
    return this.workerStarting;
  }

  /** Forgets a worker that failed, so that the next command starts a fresh one. */
  private dropWorker(worker: TrainingWorkerHandle): void {
    worker.terminate();
    if (this.worker === worker) this.worker = null;
    this.workerStarting = null;
  }

  /** While this tab follows `runId` read-only, checks whether its trainer let go of the run's lock. */
  private async watchLock(runId: string): Promise<void> {
    const following = (): boolean => !this.destroyed && this.store.state.value.readOnly && this.store.state.value.runId === runId;
    const replay = await openReplayStore({ ...(this.options.storage?.replay !== undefined ? { name: this.options.storage.replay } : {}), broadcast: false });
    try {
      while (following()) {
        await new Promise((resolve) => setTimeout(resolve, LOCK_WATCH_MS));
        if (following() && !(await replay.isRunLocked(runId))) this.store.dispatch({ kind: 'released', runId });
      }
    } catch (e) {
      this.store.dispatch({ kind: 'failed', runId, message: `could not follow run ${runId}: ${e instanceof Error ? e.message : String(e)}` });
    } finally {
      await replay.close();
    }
  }

  private openIndex(): Promise<RunIndex> {
    return RunIndex.open(this.options.storage?.index !== undefined ? { name: this.options.storage.index } : {});
  }

  /** Resolves once no context holds `runId`'s lock, or after {@link LOCK_RELEASE_WAIT_MS}. */
  private async lockLetGo(runId: string): Promise<void> {
    const replay = await openReplayStore({ ...(this.options.storage?.replay !== undefined ? { name: this.options.storage.replay } : {}), broadcast: false });
    try {
      const deadline = Date.now() + LOCK_RELEASE_WAIT_MS;
      while ((await replay.isRunLocked(runId)) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
    } finally {
      await replay.close();
    }
  }

  /** The metrics a run stored (none when they cannot be read: they only cost the charts). */
  private async storedMetrics(runId: string): Promise<IterationMetrics[]> {
    const replay = await openReplayStore({ ...(this.options.storage?.replay !== undefined ? { name: this.options.storage.replay } : {}), broadcast: false });
    try {
      if (!(await replay.getRun(runId))) return [];
      return (await replay.readMetrics(runId)).map((r) => metricsFromValues(r.values));
    } catch {
      return [];
    } finally {
      await replay.close();
    }
  }

  /** The metrics a run stored so far (shown while it resumes), and whether some context holds its lock. */
  private async storedState(runId: string): Promise<{ metrics: IterationMetrics[]; locked: boolean }> {
    const replay = await openReplayStore({ ...(this.options.storage?.replay !== undefined ? { name: this.options.storage.replay } : {}), broadcast: false });
    try {
      // A reloaded tab's old worker may hold the lock for a moment after the reload: wait it out.
      let locked = await replay.isRunLocked(runId);
      for (let i = 0; locked && i < LOCK_CHECKS; i++) {
        await new Promise((resolve) => setTimeout(resolve, LOCK_CHECK_MS));
        locked = await replay.isRunLocked(runId);
      }
      if (!(await replay.getRun(runId))) return { metrics: [], locked };
      try {
        return { metrics: (await replay.readMetrics(runId)).map((r) => metricsFromValues(r.values)), locked };
      } catch {
        // Unreadable metrics only cost the preview: the resume reports the snapshot's own.
        return { metrics: [], locked };
      }
    } finally {
      await replay.close();
    }
  }
}
