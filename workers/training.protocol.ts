/**
 * The messages between the page and the training worker (./training.worker.ts): commands go in,
 * events come out, each a discriminated union on `kind`. Everything is structured-cloneable.
 */
import type { BackendPreference, BackendReport } from '../src/policy/backend.ts';
import type { TrainingConfig } from '../src/train/config.ts';
import type { IterationMetrics } from '../src/train/loop.ts';
import type { PageRunRecord, StoredRunEvaluation } from '../src/train/runs/records.ts';

/** Where the run's data lives (database names; the defaults when absent). Tests isolate runs with their own names. */
export interface StorageNames {
  /** The replay store's database (rollouts, the resume snapshot, metrics). */
  replay?: string;
  /** The page's run index. */
  index?: string;
}

/**
 * The page's local LLM, for a run that uses one: the requester's end of an LLM bridge
 * (src/llm/bridge.ts; the page serves the other end with its WebLLM client) and the models loaded
 * behind it. The port is transferred with the command ({@link transferablesOf}).
 */
export interface LLMLink {
  port: MessagePort;
  /** The chat model: experience model, prior and task generator. */
  chatModel: string;
  /** The embedding model whose vectors are the policy's features; null: the hashed features. */
  embeddingModel: string | null;
  /** Whether the page's LLM reads label logits (the prior's one-pass readout; else logprobs). */
  labelLogits: boolean;
  /** The chat model's context window, tokens (absent or null: unknown). */
  contextWindowSize?: number | null;
}

/** What the page asks of the worker. */
export type TrainingCommand =
  /**
   * Creates run `runId` and trains it from scratch; with `seedData` (a dreamgym JSONL file's text),
   * on that file's episodes instead of generated ones (checked whole before anything is written);
   * with `llm`, on the page's local LLM (the run records its models, and resumes only with them).
   */
  | { kind: 'start'; runId: string; config: TrainingConfig; backend?: BackendPreference; storage?: StorageNames; seedData?: { fileName: string; text: string }; llm?: LLMLink }
  /** Continues an unfinished run from its last snapshot (or re-seeds it when it has none); a run made with an LLM needs `llm` with its models. */
  | { kind: 'resume'; runId: string; backend?: BackendPreference; storage?: StorageNames; llm?: LLMLink }
  /**
   * Creates run `runId` from a policy checkpoint file (`serializeCheckpoint`, as the page exports it)
   * and evaluates it on the held-out tasks of `config` (its environment, prior, features and
   * number of evaluation tasks), without training.
   */
  | { kind: 'evaluate-checkpoint'; runId: string; config: TrainingConfig; checkpoint: Uint8Array; fileName: string; backend?: BackendPreference; storage?: StorageNames; llm?: LLMLink }
  /** Stops at the end of the current iteration, keeping the snapshot; the run stays resumable. */
  | { kind: 'pause' }
  /** Ends training at the end of the current iteration, then evaluates the policy as it stands. */
  | { kind: 'stop' };

/** What the worker reports. */
export type TrainingEvent =
  /** The tfjs backend the worker chose (null when the host runs without choosing, as in Node tests). */
  | { kind: 'backend'; report: BackendReport | null }
  /** Offline seed data: `done` of `total` trajectories generated and stored. */
  | { kind: 'seed'; runId: string; done: number; total: number }
  /** Training (re)started: the run's record and its metrics so far (empty for a new run). */
  | { kind: 'started'; record: PageRunRecord; metrics: IterationMetrics[] }
  /** An iteration began. */
  | { kind: 'iteration-start'; runId: string; iteration: number; totalIterations: number; phase: IterationMetrics['phase'] }
  /** An iteration ended (its snapshot is stored). `iteration` counts completed iterations. */
  | { kind: 'iteration'; runId: string; iteration: number; totalIterations: number; metrics: IterationMetrics }
  /** The synthetic phase's validation inside the simulator: `done` of `total` episodes, after `iteration` completed iterations. */
  | { kind: 'validating'; runId: string; iteration: number; done: number; total: number }
  /** Held-out evaluation: `done` of `total` episodes. */
  | { kind: 'evaluating'; runId: string; done: number; total: number }
  /** The run ended and was evaluated. */
  | { kind: 'finished'; record: PageRunRecord; evaluation: StoredRunEvaluation }
  /** The run paused at an iteration boundary (resumable). */
  | { kind: 'paused'; record: PageRunRecord }
  /** The run could not go on; `record` when the run exists. */
  | { kind: 'failed'; runId: string; message: string; record?: PageRunRecord };

/** What must be transferred (not copied) with `command`: the LLM bridge's port. */
export function transferablesOf(command: TrainingCommand): Transferable[] {
  return 'llm' in command && command.llm ? [command.llm.port] : [];
}
