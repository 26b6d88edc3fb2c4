/**
 * Starting the training worker from the page: a module Worker running ./training.worker.ts, with
 * typed `send` and `onEvent` over the messages of ./training.protocol.ts.
 */
import type { TrainingCommand, TrainingEvent } from './training.protocol.ts';

/** A running training worker. */
export interface TrainingWorkerHandle {
  send(command: TrainingCommand): void;
  /** Adds a listener for the worker's events; returns its remover. */
  onEvent(listener: (event: TrainingEvent) => void): () => void;
  /** Ends the worker at once (a run in progress stays resumable from its last snapshot). */
  terminate(): void;
}

/** Starts the training worker. */
export function startTrainingWorker(): TrainingWorkerHandle {
  const worker = new Worker(new URL('./training.worker.ts', import.meta.url), { type: 'module', name: 'dreamgym-training' });
  const listeners = new Set<(event: TrainingEvent) => void>();
  worker.onmessage = (message: MessageEvent<TrainingEvent>) => {
    for (const listener of listeners) listener(message.data);
  };
  worker.onerror = (error) => {
    const event: TrainingEvent = { kind: 'failed', runId: '', message: `the training worker crashed: ${error.message || 'unknown error'}` };
    for (const listener of listeners) listener(event);
  };
  return {
    send: (command) => worker.postMessage(command),
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
