/**
 * The typed RPC surface of the trainer worker (served with comlink). Every argument and result
 * is plain, structured-cloneable data; checkpoints travel as single-file bytes.
 */
import type { BackendPreference } from '../src/policy/backend.ts';
import type { ActResult } from '../src/policy/head.ts';
import type { Decision } from '../src/policy/input.ts';
import type { GrpoBatch } from '../src/rl/grpo.ts';
import type { PpoBatch } from '../src/rl/ppo.ts';
import type { SessionActOptions, SessionInfo } from '../src/rl/session.ts';
import type { SftExample } from '../src/rl/sft.ts';
import type { TrainerConfigInput, UpdateMetrics } from '../src/rl/trainer.ts';

/** What the worker needs to start a session. */
export interface TrainerWorkerInit {
  config: TrainerConfigInput;
  /** Backend preference ('auto' by default; the page forwards its `?backend=` parameter). */
  backend?: BackendPreference;
  /** Checkpoint every this many updates (default 10). */
  checkpointEvery?: number;
  /** Resume from this checkpoint file. */
  checkpoint?: Uint8Array;
  /**
   * Save checkpoints into this run of the replay store (IndexedDB, opened inside the worker; the
   * run must exist) instead of worker memory, so that they survive the page. Without
   * `checkpoint`, the session resumes from the run's latest policy checkpoint when it has one.
   */
  checkpointRun?: { runId: string; /** IndexedDB database name (the store's default when absent). */ store?: string };
}

/** The methods the trainer worker serves. */
export interface TrainerRpc {
  /** Chooses the backend and builds (or restores) the trainer; call first. Re-init replaces it. */
  init(options: TrainerWorkerInit): Promise<SessionInfo>;
  info(): Promise<SessionInfo>;
  act(decisions: Decision[], options?: SessionActOptions): Promise<ActResult>;
  /** Masked logits [n, K] (row-major). */
  logits(decisions: Decision[]): Promise<Float32Array>;
  grpo(batch: GrpoBatch): Promise<UpdateMetrics>;
  ppo(batch: PpoBatch): Promise<UpdateMetrics>;
  sft(examples: SftExample[]): Promise<UpdateMetrics>;
  syncReference(): Promise<void>;
  /** The current state as one checkpoint file. */
  exportCheckpoint(): Promise<Uint8Array>;
  importCheckpoint(file: Uint8Array): Promise<SessionInfo>;
  /** Test hook: destroys the WebGPU device (simulated device loss); false when not on WebGPU. */
  loseDevice(): Promise<boolean>;
  dispose(): Promise<void>;
}
