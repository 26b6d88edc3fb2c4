/**
 * Starting the training worker from the page: a module Worker running ./training.worker.ts, with
 * typed `send` and `onEvent` over the messages of ./training.protocol.ts.
 */
import { transferablesOf, type TrainingCommand, type TrainingEvent } from './training.protocol.ts';

/** A running training worker. */
export interface TrainingWorkerHandle {
  /** Sends a command (an LLM bridge port in it is transferred, no longer usable here). */
  send(command: TrainingCommand): void;
  /** Adds a listener for the worker's events; returns its remover. */
  onEvent(listener: (event: TrainingEvent) => void): () => void;
  /** Ends the worker at once (a run in progress stays resumable from its last snapshot). */
  terminate(): void;
}

/** Starts the training worker. */
export function startTrainingWorker(): TrainingWorkerHandle {
  return wrapTrainingWorker(new Worker(new URL('./training.worker.ts', import.meta.url), { type: 'module', name: 'dreamgym-training' }));
}

/**
 * The handle of a worker running ./training.worker.ts (tests pass one that cannot load). A worker
 * that fails, including one whose file cannot load (a 404 after a redeploy, the network gone),
 * is reported as a `failed` event with runId '' (not tied to one run).
 */
export function wrapTrainingWorker(worker: Worker): TrainingWorkerHandle {
  const listeners = new Set<(event: TrainingEvent) => void>();
  worker.onmessage = (message: MessageEvent<TrainingEvent>) => {
    for (const listener of listeners) listener(message.data);
  };
  worker.onerror = (error) => {
    // A script that cannot load fires a plain Event (no message).
    const why = error instanceof ErrorEvent && error.message ? error.message : 'its script could not be loaded or run';
    const event: TrainingEvent = { kind: 'failed', runId: '', message: `the training worker failed: ${why}. Reload the page to try again.` };
    for (const listener of listeners) listener(event);
  };
  return {
    send: (command) => worker.postMessage(command, transferablesOf(command)),
    onEvent(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    terminate: () => {
      listeners.clear();
      worker.terminate();
    },
  };
}
