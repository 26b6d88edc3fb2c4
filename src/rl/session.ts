/**
 * A training session: backend choice, a {@link Trainer}, checkpoints to a sink, and recovery from
 * a lost GPU device. This is what the trainer worker serves over RPC; the CLI and tests use it
 * directly. Everything that crosses the RPC boundary is plain data.
 *
 * Device loss: on WebGPU the session watches `device.lost`. When the device is lost (driver
 * reset, tab in the background too long, `device.destroy()`), the next call -- or the call that
 * was running -- disposes the dead trainer, rebuilds the backend (WebGPU on a new device when
 * possible, else the fallback chain), reloads the latest checkpoint from the sink and runs the
 * call again. Work since that checkpoint is lost; `checkpointEvery` bounds it.
 */
import { Rng } from '../core/rng.ts';
import {
  chooseBackend,
  resetWebgpuBackend,
  watchDeviceLoss,
  type BackendPreference,
  type BackendReport,
  type WasmPaths,
} from '../policy/backend.ts';
import { MemoryCheckpointSink, parseCheckpoint, serializeCheckpoint, type Checkpoint, type CheckpointSink } from '../policy/checkpoint.ts';
import type { ActResult } from '../policy/head.ts';
import type { Decision, PolicyInput } from '../policy/input.ts';
import type { GrpoBatch } from './grpo.ts';
import type { PpoBatch } from './ppo.ts';
import type { SftExample } from './sft.ts';
import { Trainer, parseTrainerConfig, type TrainerConfig, type TrainerConfigInput, type UpdateMetrics } from './trainer.ts';

/** Options of {@link TrainingSession.start}. */
export interface SessionOptions {
  config: TrainerConfigInput;
  /** Backend preference (default 'auto'; the page passes its `?backend=` parameter here). */
  backend?: BackendPreference;
  wasmPaths?: WasmPaths;
  /** Save a checkpoint to the sink every this many updates (default 10). 0: only on request. */
  checkpointEvery?: number;
  /** Where checkpoints go (default: in memory, latest only). */
  sink?: CheckpointSink;
  /** Start from this checkpoint instead of fresh weights. */
  checkpoint?: Checkpoint;
}

/** One recovery from a lost device. */
export interface RecoveryReport {
  /** Why the device was lost, as the browser said. */
  reason: string;
  from: string;
  to: string;
  /** Iteration of the checkpoint that was reloaded (0 and `fresh: true` when there was none). */
  iteration: number;
  fresh: boolean;
}

/** The state of a session, as plain data. */
export interface SessionInfo {
  backend: BackendReport;
  iteration: number;
  config: TrainerConfig;
  /** Trainable scalars of the head. */
  parameters: number;
  recoveries: RecoveryReport[];
}

/** Options of {@link TrainingSession.act} (plain data, so it can cross the RPC boundary). */
export interface SessionActOptions {
  greedy?: boolean;
  temperature?: number;
  /** Seed for this call's sampling; by default the session's own stream continues. */
  seed?: number;
}

/** Trainer + backend + checkpoints + device-loss recovery. */
export class TrainingSession {
  private trainer: Trainer;
  private backendReport: BackendReport;
  private readonly sink: CheckpointSink;
  private readonly checkpointEvery: number;
  private lost: { reason: string } | null = null;
  /** Settles when the watched device is lost (null when not on WebGPU). */
  private lostSignal: Promise<void> | null = null;
  private readonly recoveries: RecoveryReport[] = [];
  private readonly rng: Rng;
  private generation = 0;

  private constructor(
    private readonly options: SessionOptions,
    trainer: Trainer,
    backend: BackendReport,
    sink: CheckpointSink,
  ) {
    this.trainer = trainer;
    this.backendReport = backend;
    this.sink = sink;
    this.checkpointEvery = options.checkpointEvery ?? 10;
    this.rng = new Rng(trainer.config.seed ^ 0x5eed);
    this.watch();
  }

  /** Chooses the backend, builds the trainer (or restores `checkpoint`) and saves a first checkpoint. */
  static async start(options: SessionOptions): Promise<TrainingSession> {
    const every = options.checkpointEvery ?? 10;
    if (!(Number.isInteger(every) && every >= 0)) throw new RangeError(`checkpointEvery must be an integer >= 0, got ${every}`);
    parseTrainerConfig(options.config);
    const backend = await chooseBackend({ prefer: options.backend ?? 'auto', ...(options.wasmPaths ? { wasmPaths: options.wasmPaths } : {}) });
    const trainer = options.checkpoint ? Trainer.fromCheckpoint(options.checkpoint) : new Trainer(options.config);
    const session = new TrainingSession(options, trainer, backend, options.sink ?? new MemoryCheckpointSink());
    await session.saveCheckpoint();
    return session;
  }

  /** The backend, iteration, configuration and recoveries so far. */
  info(): SessionInfo {
    return {
      backend: this.backendReport,
      iteration: this.trainer.iteration,
      config: this.trainer.config,
      parameters: this.trainer.head.trainableSize,
      recoveries: [...this.recoveries],
    };
  }

  /** The trainer in use (replaced after a recovery). */
  get current(): Trainer {
    return this.trainer;
  }

  /** Chooses candidates for decisions. */
  act(input: PolicyInput | readonly Decision[], options: SessionActOptions = {}): Promise<ActResult> {
    const rng = options.seed !== undefined ? new Rng(options.seed) : this.rng;
    return this.guarded(() =>
      this.trainer.act(input, {
        rng,
        ...(options.greedy !== undefined ? { greedy: options.greedy } : {}),
        ...(options.temperature !== undefined ? { temperature: options.temperature } : {}),
      }),
    );
  }

  /** Masked logits [n, K] (row-major) of the decisions. */
  logits(input: PolicyInput | readonly Decision[]): Promise<Float32Array> {
    return this.guarded(() => this.trainer.logits(input));
  }

  /** One GRPO update. */
  grpo(batch: GrpoBatch): Promise<UpdateMetrics> {
    return this.update(() => this.trainer.grpoUpdate(batch));
  }

  /** One PPO update. */
  ppo(batch: PpoBatch): Promise<UpdateMetrics> {
    return this.update(() => this.trainer.ppoUpdate(batch));
  }

  /** One behaviour-cloning update. */
  sft(examples: readonly SftExample[]): Promise<UpdateMetrics> {
    return this.update(() => this.trainer.sftUpdate(examples));
  }

  /** Makes the current weights the KL reference. */
  syncReference(): void {
    this.trainer.syncReference();
  }

  /** Saves a checkpoint of the current state to the sink and returns it. */
  async saveCheckpoint(): Promise<Checkpoint> {
    const cp = await this.trainer.checkpoint();
    await this.sink.save(cp);
    return cp;
  }

  /** The current state as one downloadable file (also saved to the sink). */
  async exportCheckpoint(): Promise<Uint8Array> {
    return serializeCheckpoint(await this.saveCheckpoint());
  }

  /** Replaces the trainer with one restored from a checkpoint file (or object). */
  async importCheckpoint(file: Uint8Array | ArrayBuffer | Checkpoint): Promise<SessionInfo> {
    const cp = file instanceof Uint8Array || file instanceof ArrayBuffer ? parseCheckpoint(file) : file;
    const next = Trainer.fromCheckpoint(cp);
    this.trainer.dispose();
    this.trainer = next;
    await this.sink.save(cp);
    return this.info();
  }

  /**
   * Treats the device as lost: the next call recovers (rebuilds the backend and reloads the
   * latest checkpoint). For callers that detect a loss themselves, and for tests.
   */
  markDeviceLost(reason: string): void {
    this.lost = { reason };
  }

  /** Frees every tensor. */
  dispose(): void {
    this.generation++;
    this.trainer.dispose();
  }

  private async update(op: () => Promise<UpdateMetrics>): Promise<UpdateMetrics> {
    const metrics = await this.guarded(op);
    if (this.checkpointEvery > 0 && this.trainer.iteration % this.checkpointEvery === 0) await this.guarded(() => this.saveCheckpoint());
    return metrics;
  }

  /** Runs `op`; if the device is (or gets) lost, recovers and runs it once more. */
  private async guarded<T>(op: () => Promise<T>): Promise<T> {
    if (this.lost) await this.recover();
    let result: T;
    try {
      result = await op();
    } catch (e) {
      // A failing op on a lost device may reject before `device.lost` settles: give it a moment.
      if (!this.lost && this.lostSignal) await Promise.race([this.lostSignal, new Promise((r) => setTimeout(r, 250))]);
      if (!this.lost) throw e;
      await this.recover();
      return op();
    }
    if (this.lost) {
      await this.recover();
      return op();
    }
    return result;
  }

  private watch(): void {
    const generation = this.generation;
    let signal: () => void = () => {};
    const lostSignal = new Promise<void>((resolve) => (signal = resolve));
    const watching = watchDeviceLoss((info) => {
      if (generation !== this.generation) return;
      this.lost = { reason: `${info.reason}${info.message ? `: ${info.message}` : ''}` };
      signal();
    });
    this.lostSignal = watching ? lostSignal : null;
  }

  private async recover(): Promise<void> {
    const reason = this.lost?.reason ?? 'unknown';
    const from = this.backendReport.backend;
    this.generation++;
    try {
      this.trainer.dispose();
    } catch {
      // The dead device may refuse to free its buffers.
    }
    if (from === 'webgpu') resetWebgpuBackend();
    this.backendReport = await chooseBackend({
      prefer: this.options.backend ?? 'auto',
      ...(this.options.wasmPaths ? { wasmPaths: this.options.wasmPaths } : {}),
    });
    const cp = await this.sink.loadLatest();
    this.trainer = cp ? Trainer.fromCheckpoint(cp) : new Trainer(this.options.config);
    this.lost = null;
    this.recoveries.push({ reason, from, to: this.backendReport.backend, iteration: this.trainer.iteration, fresh: !cp });
    this.watch();
  }
}
