/**
 * The training worker's logic, apart from the worker global so that Node tests can drive it with
 * fake-indexeddb: it runs `runTraining` (src/train/loop.ts) with the no-download retrieval
 * experience model, or with the page's local LLM reached through the LLM bridge that the command
 * brings (src/llm/bridge.ts: experience model, prior, task generator and optionally the feature
 * embeddings), persists every iteration into IndexedDB (the resume snapshot and metrics in
 * the replay store, rollouts in the replay buffer, status in the page's run index), honours pause
 * and stop at iteration boundaries, resumes from the last snapshot, and evaluates on held-out
 * tasks at the end. It reports through `post` (see ./training.protocol.ts).
 */
import { parseCheckpoint } from '../src/policy/checkpoint.ts';
import { HashedEmbedder } from '../src/policy/hashed-embedder.ts';
import { ReplayCheckpointSink } from '../src/policy/replay-sink.ts';
import type { BackendPreference, BackendReport } from '../src/policy/backend.ts';
import { CheckpointNotFoundError, openReplayStore, RunLockedError, type LockManagerLike, type ReplayStore, type RunLock } from '../src/replay/index.ts';
import type { Task, Trajectory } from '../src/core/types.ts';
import { Trainer } from '../src/rl/trainer.ts';
import { PolicyAgent } from '../src/train/agent.ts';
import { evaluate } from '../src/train/evaluate.ts';
import { plannedIterations, runTraining, TrainingAbortedError, type RunSnapshot, type TrainingDeps, type TrainingResult } from '../src/train/loop.ts';
import type { SyntheticValidation } from '../src/train/validation.ts';
import { prepareRun, simulatorGrounding, type PreparedRun, type RunLLM } from '../src/train/setup.ts';
import { LLMBridgeClient, type BridgeEndpoint } from '../src/llm/bridge.ts';
import { WebLLMEmbedder } from '../src/llm/embedder.ts';
import { LLMConfigError, LLMRequestError, LLMUnavailableError } from '../src/llm/errors.ts';
import type { Embedder } from '../src/core/embedding.ts';
import { isUnfinished, RunIndex, type PageRunRecord, type RunLLMModels, type StoredRunEvaluation } from '../src/train/runs/records.ts';
import { seedFileOffline, seedFileRun, storedSeedData } from '../src/train/runs/seed-file.ts';
import { metricValues, SNAPSHOT_CHECKPOINT, snapshotFromCheckpoint, snapshotToCheckpoint } from '../src/train/runs/snapshot.ts';
import type { LLMLink, StorageNames, TrainingCommand, TrainingEvent } from './training.protocol.ts';

/** Options of {@link TrainingHost}. */
export interface TrainingHostOptions {
  /** Where events go (the worker's `postMessage`). */
  post: (event: TrainingEvent) => void;
  /** Chooses and starts the tfjs backend; null leaves tfjs as it is (Node tests). */
  chooseBackend?: ((prefer: BackendPreference) => Promise<BackendReport>) | null;
  /** IndexedDB factory (default the global one; fake-indexeddb in Node). */
  indexedDB?: IDBFactory;
  /** Lock manager of the replay store (default `navigator.locks`). */
  locks?: LockManagerLike;
  /**
   * How long a resume waits for the run's lock: after a reload, the closed tab's worker may
   * still hold it for a moment. Default 5 s.
   */
  lockWaitMs?: number;
}

/** The embedder of stored transitions: the retrieval experience model's (hashed, no download). */
const transitionEmbedder = (): HashedEmbedder => new HashedEmbedder({ dim: 256 });

/** Name of the checkpoint record of a run made from an imported checkpoint file. */
export const IMPORTED_CHECKPOINT = 'imported-policy';

/** Trajectories per write while storing the seed data (each write reports progress). */
const SEED_BATCH = 25;

interface Active {
  runId: string;
  controller: AbortController;
  request: 'pause' | 'stop' | null;
}

/** Runs one training run at a time for the page. */
export class TrainingHost {
  private active: Active | null = null;
  private readonly post: (event: TrainingEvent) => void;

  constructor(private readonly options: TrainingHostOptions) {
    this.post = options.post;
  }

  /** The id of the run being trained, or null. */
  get runId(): string | null {
    return this.active?.runId ?? null;
  }

  /** Handles one command; resolves when a start or resume has ended (finished, paused or failed). */
  async handle(command: TrainingCommand): Promise<void> {
    switch (command.kind) {
      case 'pause':
      case 'stop':
        if (this.active) {
          this.active.request = command.kind;
          // Pause/stop wait for the end of the running iteration: its work is kept.
        }
        return;
      case 'start':
      case 'resume':
      case 'evaluate-checkpoint': {
        if (this.active) {
          if (command.llm) closeUnused(command.llm);
          this.post({ kind: 'failed', runId: command.runId, message: `run ${this.active.runId} is already training here` });
          return;
        }
        const active: Active = { runId: command.runId, controller: new AbortController(), request: null };
        this.active = active;
        try {
          if (command.kind === 'evaluate-checkpoint') await this.evaluateCheckpoint(command, active);
          else await this.run(command, active);
        } finally {
          this.active = null;
          // A link the run did not take (it failed first, or needs no LLM) is closed, so the page stops serving it.
          if (command.llm) closeUnused(command.llm);
        }
        return;
      }
    }
  }

  private async run(command: Extract<TrainingCommand, { kind: 'start' | 'resume' }>, active: Active): Promise<void> {
    const { runId } = command;
    let replay: ReplayStore | null = null;
    let index: RunIndex | null = null;
    let lock: RunLock | null = null;
    let prepared: PreparedRun | null = null;
    let link: OpenLink | null = null;
    try {
      const report = this.options.chooseBackend ? await this.options.chooseBackend(command.backend ?? 'auto') : null;
      this.post({ kind: 'backend', report });
      ({ replay, index } = await this.openStores(command.storage));

      let record: PageRunRecord;
      let resume: RunSnapshot | undefined;
      let seeded: boolean;
      // A seed file is checked whole before the run is written anywhere.
      const seedFile = command.kind === 'start' && command.seedData ? await seedFileOffline(command.seedData.text, command.config.env, command.seedData.fileName) : null;
      if (command.kind === 'start') {
        const now = Date.now();
        record = {
          id: runId,
          createdAt: now,
          updatedAt: now,
          config: command.config,
          status: 'seeding',
          iteration: 0,
          totalIterations: plannedIterations(command.config),
          realTransitions: 0,
          offlineTransitions: 0,
          trainWallMs: 0,
          ...(seedFile ? { seedData: seedFile.summary } : {}),
          ...(command.llm ? { llm: { chatModel: command.llm.chatModel, embeddingModel: command.llm.embeddingModel } } : {}),
        };
        await index.put(record);
        const embedder = transitionEmbedder();
        await replay.createRun({ id: runId, embedding: { id: embedder.id, dim: embedder.dim }, name: `${command.config.env} ${command.config.mode}` });
        lock = await replay.acquireRunLock(runId);
        seeded = false;
      } else {
        const found = await index.get(runId);
        if (!found) throw new Error(`no run ${JSON.stringify(runId)} to resume`);
        if (!isUnfinished(found)) throw new Error(`run ${runId} is ${found.status}: nothing to resume`);
        checkLink(found, command.llm);
        record = found;
        if (!(await replay.getRun(runId))) {
          // The tab closed between indexing the run and creating its buffer: create it now.
          const embedder = transitionEmbedder();
          await replay.createRun({ id: runId, embedding: { id: embedder.id, dim: embedder.dim } });
          record = await index.update(runId, { status: 'seeding' });
        }
        lock = await this.lockWithWait(replay, runId);
        resume = await loadSnapshot(replay, runId);
        seeded = record.status !== 'seeding';
      }

      // Seed data from a file: the file's records (when resuming, as the replay buffer stored them).
      const offline = seedFile?.offline ?? (record.seedData ? await storedSeedData(replay, runId) : null);
      link = record.llm && command.llm ? await openLink(command.llm) : null;
      prepared = await prepareRun(record.config, { ...(offline ? { data: seedFileRun(record.config, offline) } : {}), ...link?.options });
      if (!seeded) await this.storeSeedData(replay, runId, prepared);
      const offlineTransitions = prepared.deps.offline.trajectories.reduce((s, t) => s + t.steps.length, 0);
      const grounding = simulatorGrounding(record.config, prepared);
      record = await index.update(runId, { status: 'running', offlineTransitions, error: undefined, ...(grounding ? { grounding } : {}) });
      this.post({ kind: 'started', record, metrics: resume?.metrics.slice() ?? [] });

      const outcome = await this.train(record, prepared, replay, index, active, resume);
      if (outcome.kind === 'paused') {
        record = await index.update(runId, { status: 'paused' });
        this.post({ kind: 'paused', record });
        return;
      }
      let evaluation: StoredRunEvaluation;
      try {
        record = await index.update(runId, { status: 'evaluating', stoppedBy: outcome.stoppedBy, ...(outcome.validation ? { validation: outcome.validation } : {}) });
        evaluation = await this.evaluateRun(outcome.trainer, prepared, runId, outcome.iteration);
      } finally {
        outcome.trainer.dispose();
      }
      record = await index.update(runId, { status: 'done', evaluation });
      this.post({ kind: 'finished', record, evaluation });
    } catch (e) {
      const message = e instanceof Error ? e.message : String(e);
      let record: PageRunRecord | undefined;
      if (index && isLLMFailure(e)) {
        // The local LLM failed (unloaded, device lost, model missing): the run is not broken and
        // resumes from its last iteration once the model is back. A run cut mid-iteration rests as paused.
        const at = await index.get(runId).catch(() => undefined);
        if (at) record = await index.update(runId, { error: message, ...(at.status === 'running' ? { status: 'paused' as const } : {}) }).catch(() => undefined);
      } else if (index && !(e instanceof RunLockedError)) {
        // A run someone else trains is not failed: it just is not ours to touch.
        record = await index.update(runId, { status: 'failed', error: message }).catch(() => undefined);
      }
      this.post(record ? { kind: 'failed', runId, message, record } : { kind: 'failed', runId, message });
    } finally {
      prepared?.dispose();
      link?.bridge.close();
      await lock?.release().catch(() => undefined);
      await replay?.close().catch(() => undefined);
      index?.close();
    }
  }

  /** Makes a run of an imported checkpoint file and evaluates it (see the command's comment). */
  private async evaluateCheckpoint(command: Extract<TrainingCommand, { kind: 'evaluate-checkpoint' }>, active: Active): Promise<void> {
    const { runId, config } = command;
    let replay: ReplayStore | null = null;
    let index: RunIndex | null = null;
    let prepared: PreparedRun | null = null;
    let trainer: Trainer | null = null;
    let link: OpenLink | null = null;
    try {
      // Parse before anything is written: a bad file leaves no run behind.
      const checkpoint = parseCheckpoint(command.checkpoint);
      const report = this.options.chooseBackend ? await this.options.chooseBackend(command.backend ?? 'auto') : null;
      this.post({ kind: 'backend', report });
      link = command.llm ? await openLink(command.llm) : null;
      prepared = await prepareRun(config, link?.options ?? {});
      const policy = (checkpoint.config as { policy?: { stateDim?: unknown; actionDim?: unknown } }).policy;
      const { featurizer } = prepared.deps;
      if (policy?.stateDim !== featurizer.stateDim || policy?.actionDim !== featurizer.actionDim) {
        throw new Error(
          `${command.fileName} expects state/action features of width ${String(policy?.stateDim)}/${String(policy?.actionDim)}, but these settings give ` +
            `${featurizer.stateDim}/${featurizer.actionDim}: set the embedding width it was trained with`,
        );
      }
      trainer = Trainer.fromCheckpoint(checkpoint);
      ({ replay, index } = await this.openStores(command.storage));
      const now = Date.now();
      let record: PageRunRecord = {
        id: runId,
        createdAt: now,
        updatedAt: now,
        config,
        status: 'evaluating',
        iteration: 0,
        totalIterations: 0,
        realTransitions: 0,
        offlineTransitions: 0,
        trainWallMs: 0,
        imported: { file: command.fileName, updates: checkpoint.iteration },
        ...(command.llm ? { llm: { chatModel: command.llm.chatModel, embeddingModel: command.llm.embeddingModel } } : {}),
      };
      await index.put(record);
      const embedder = transitionEmbedder();
      await replay.createRun({ id: runId, embedding: { id: embedder.id, dim: embedder.dim }, name: `checkpoint ${command.fileName}` });
      // Kept with the run, so that it can be exported again.
      await new ReplayCheckpointSink(replay, runId, () => IMPORTED_CHECKPOINT).save(checkpoint);
      this.post({ kind: 'started', record, metrics: [] });
      const evaluation = await this.evaluateRun(trainer, prepared, runId, 0);
      record = await index.update(runId, { status: 'done', evaluation });
      this.post({ kind: 'finished', record, evaluation });
    } catch (e) {
      const message = e instanceof Error ? e.message : String(e);
      const record = index ? await index.update(runId, { status: 'failed', error: message }).catch(() => undefined) : undefined;
      this.post(record ? { kind: 'failed', runId, message, record } : { kind: 'failed', runId, message });
    } finally {
      trainer?.dispose();
      prepared?.dispose();
      link?.bridge.close();
      await replay?.close().catch(() => undefined);
      index?.close();
    }
  }

  private async openStores(storage: StorageNames | undefined): Promise<{ replay: ReplayStore; index: RunIndex }> {
    const replay = await openReplayStore({
      ...(storage?.replay !== undefined ? { name: storage.replay } : {}),
      ...(this.options.indexedDB ? { indexedDB: this.options.indexedDB } : {}),
      ...(this.options.locks ? { locks: this.options.locks } : {}),
    });
    const index = await RunIndex.open({
      ...(storage?.index !== undefined ? { name: storage.index } : {}),
      ...(this.options.indexedDB ? { indexedDB: this.options.indexedDB } : {}),
    });
    return { replay, index };
  }

  private async lockWithWait(replay: ReplayStore, runId: string): Promise<RunLock> {
    const deadline = Date.now() + (this.options.lockWaitMs ?? 5000);
    for (;;) {
      try {
        return await replay.acquireRunLock(runId);
      } catch (e) {
        if (!(e instanceof RunLockedError) || Date.now() >= deadline) throw e;
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
    }
  }

  /** Writes the offline seed tasks and trajectories into the replay buffer, reporting progress. */
  private async storeSeedData(replay: ReplayStore, runId: string, prepared: PreparedRun): Promise<void> {
    const { offline } = prepared.deps;
    const total = offline.trajectories.length;
    this.post({ kind: 'seed', runId, done: 0, total });
    await replay.putTasks(runId, uniqueTasks([...offline.tasks, ...(offline.extraTasks ?? [])]));
    const embedder = transitionEmbedder();
    for (let i = 0; i < total; i += SEED_BATCH) {
      const batch = offline.trajectories.slice(i, i + SEED_BATCH);
      // Skip on duplicates: a resumed run re-seeds what a closed tab may have half written.
      await replay.putTrajectories(runId, batch, { embedder, onDuplicate: 'skip' });
      this.post({ kind: 'seed', runId, done: Math.min(total, i + batch.length), total });
    }
  }

  private async train(
    record: PageRunRecord,
    prepared: PreparedRun,
    replay: ReplayStore,
    index: RunIndex,
    active: Active,
    resume: RunSnapshot | undefined,
  ): Promise<{ kind: 'paused' } | { kind: 'ended'; trainer: Trainer; iteration: number; stoppedBy: NonNullable<PageRunRecord['stoppedBy']>; validation?: SyntheticValidation }> {
    const runId = record.id;
    const embedder = transitionEmbedder();
    const persist = async (snapshot: RunSnapshot): Promise<void> => {
      await replay.saveCheckpoint(runId, snapshotToCheckpoint(snapshot));
      const last = snapshot.metrics.at(-1);
      if (last) await replay.appendMetrics(runId, [{ iteration: last.iteration, values: metricValues(last) }]);
      await index.update(runId, { iteration: snapshot.iteration, realTransitions: snapshot.realTransitions, trainWallMs: snapshot.wallMs });
    };
    const deps: TrainingDeps = {
      ...prepared.deps,
      storeRollouts: async (trajectories: readonly Trajectory[], tasks: readonly Task[]) => {
        await replay.putTasks(runId, uniqueTasks(tasks));
        await replay.putTrajectories(runId, trajectories, { embedder, pinned: false, onDuplicate: 'skip' });
      },
      persist,
    };
    let result: TrainingResult;
    try {
      result = await runTraining(record.config, deps, {
        signal: active.controller.signal,
        ...(resume ? { resume } : {}),
        onProgress: (p) => {
          if (p.validating) {
            this.post({ kind: 'validating', runId, iteration: p.iteration, done: p.validating.done, total: p.validating.total });
            return;
          }
          if (!p.metrics) {
            this.post({ kind: 'iteration-start', runId, iteration: p.iteration, totalIterations: p.totalIterations, phase: p.phase });
            return;
          }
          this.post({ kind: 'iteration', runId, iteration: p.iteration, totalIterations: p.totalIterations, metrics: p.metrics });
          // The snapshot of this iteration is stored: stopping here loses nothing.
          if (active.request && p.iteration < p.totalIterations) active.controller.abort(active.request);
        },
      });
    } catch (e) {
      if (!(e instanceof TrainingAbortedError) || !active.request) throw e;
      if (active.request === 'pause') return { kind: 'paused' };
      const snapshot = await loadSnapshot(replay, runId);
      if (!snapshot) throw new Error(`run ${runId} was stopped before its first iteration: nothing to evaluate`);
      return { kind: 'ended', trainer: Trainer.fromCheckpoint(snapshot.checkpoint), iteration: snapshot.iteration, stoppedBy: 'user', ...(snapshot.validation ? { validation: snapshot.validation } : {}) };
    }
    // The final state is the resume point too (a zero-shot run has no iteration that saved one).
    try {
      await persist(result.snapshot);
    } catch (e) {
      result.trainer.dispose();
      throw e;
    }
    return { kind: 'ended', trainer: result.trainer, iteration: result.snapshot.iteration, stoppedBy: result.stoppedBy, ...(result.validation ? { validation: result.validation } : {}) };
  }

  /** Greedy evaluation on the run's held-out tasks in the real environment (the caller disposes `trainer`). */
  private async evaluateRun(trainer: Trainer, prepared: PreparedRun, runId: string, iteration: number): Promise<StoredRunEvaluation> {
    const started = performance.now();
    const agent = new PolicyAgent(trainer, prepared.deps.featurizer, prepared.deps.prior ?? null);
    const actor = { choose: async (contexts: Parameters<PolicyAgent['choose']>[0]) => (await agent.choose(contexts, { greedy: true })).map((c) => c.action) };
    const total = prepared.evalTasks.length;
    this.post({ kind: 'evaluating', runId, done: 0, total });
    const result = await evaluate(actor, prepared.deps.spec, prepared.evalTasks, { onProgress: (done) => this.post({ kind: 'evaluating', runId, done, total }) });
    return {
      episodes: result.episodes,
      successRate: result.successRate,
      meanReward: result.meanReward,
      success: result.success,
      reward: result.reward,
      iteration,
      wallMs: performance.now() - started,
    };
  }
}

/** An LLM link in use by a run: its bridge and what `prepareRun` takes from it. */
interface OpenLink {
  bridge: LLMBridgeClient;
  options: { llm: RunLLM; embedder: Embedder | null };
}

/** Ports of links that a run took over (the rest are closed when the command ends). */
const taken = new WeakSet<LLMLink>();

/**
 * Opens the run's side of the LLM bridge: the chat engine (and label-logit source) of the LLM
 * parts and, when the run's features come from the embedding model, its embedder (which asks the
 * model once for its width). The bridge lives as long as the run: pause and stop take effect at
 * an iteration boundary (and a stopped run is still evaluated, with the LLM prior), so they do
 * not cut it; the run's end closes it, which rejects whatever is still pending and lets the page
 * drop what it has not started.
 */
async function openLink(link: LLMLink): Promise<OpenLink> {
  taken.add(link);
  const bridge = new LLMBridgeClient(link.port as BridgeEndpoint);
  try {
    const embedder = link.embeddingModel === null ? null : await WebLLMEmbedder.create(bridge, { model: link.embeddingModel });
    return { bridge, options: { llm: { engine: bridge, model: link.chatModel, labelLogits: link.labelLogits ? bridge : null, contextWindowSize: link.contextWindowSize ?? null }, embedder } };
  } catch (e) {
    bridge.close();
    throw e;
  }
}

/** Closes a link's port that no run took, telling the page it is not needed. */
function closeUnused(link: LLMLink): void {
  if (taken.has(link)) return;
  link.port.postMessage({ kind: 'close' });
  link.port.close();
}

/** Thrown when a run made with the local LLM is resumed without its models. */
export class RunNeedsLLMError extends Error {
  override name = 'RunNeedsLLMError';
}

/** Whether `e` is the local LLM's failure (or its absence), not the run's. */
function isLLMFailure(e: unknown): boolean {
  return e instanceof RunNeedsLLMError || e instanceof LLMRequestError || e instanceof LLMUnavailableError || e instanceof LLMConfigError;
}

/**
 * Refuses to resume a run made with the local LLM without that LLM: its experience model, prior
 * and features came from those models (the features' width, too).
 */
function checkLink(record: PageRunRecord, link: LLMLink | undefined): void {
  const want: RunLLMModels | undefined = record.llm;
  if (!want) return;
  const features = want.embeddingModel ? ` with features from ${want.embeddingModel}` : '';
  if (!link) throw new RunNeedsLLMError(`run ${record.id} trains on the local LLM ${want.chatModel}${features}: load that model to resume it`);
  if (link.chatModel !== want.chatModel || link.embeddingModel !== want.embeddingModel) {
    const got = `${link.chatModel}${link.embeddingModel ? ` with features from ${link.embeddingModel}` : ''}`;
    throw new RunNeedsLLMError(`run ${record.id} trains on the local LLM ${want.chatModel}${features}, but the page offered ${got}: load the run's models to resume it`);
  }
}

/** The run's stored snapshot, or undefined when it has none yet. */
async function loadSnapshot(replay: ReplayStore, runId: string): Promise<RunSnapshot | undefined> {
  try {
    return snapshotFromCheckpoint(await replay.loadCheckpoint(runId, SNAPSHOT_CHECKPOINT));
  } catch (e) {
    if (e instanceof CheckpointNotFoundError) return undefined;
    throw e;
  }
}

/** Tasks without repeats (a task chosen twice in one iteration is one task). */
function uniqueTasks(tasks: readonly Task[]): Task[] {
  const seen = new Map<string, Task>();
  for (const t of tasks) if (!seen.has(t.id)) seen.set(t.id, t);
  return [...seen.values()];
}

