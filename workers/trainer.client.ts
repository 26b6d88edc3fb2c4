/**
 * Starting the trainer worker from the page: a module Worker running ./trainer.worker.ts, wrapped
 * by comlink into the typed {@link TrainerRpc}.
 */
import * as Comlink from 'comlink';
import type { TrainerRpc } from './trainer.protocol.ts';

/** A running trainer worker. */
export interface TrainerWorkerHandle {
  /** The worker's methods; every call returns a promise. */
  api: Comlink.Remote<TrainerRpc>;
  /** Stops the worker (its tensors go with it). */
  terminate(): void;
}

/** Starts the trainer worker. */
export function startTrainerWorker(): TrainerWorkerHandle {
  const worker = new Worker(new URL('./trainer.worker.ts', import.meta.url), { type: 'module', name: 'dreamgym-trainer' });
  const api = Comlink.wrap<TrainerRpc>(worker);
  return {
    api,
    terminate: () => {
      api[Comlink.releaseProxy]();
      worker.terminate();
    },
  };
}
