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
  /**
   * Rejects when the worker reports an error it cannot answer from (its file failed to load: a
   * 404 after a redeploy, the network gone); a comlink call to such a worker would wait forever.
   */
  failed: Promise<never>;
  /** Stops the worker (its tensors go with it). */
  terminate(): void;
}

/** Starts the trainer worker. */
export function startTrainerWorker(): TrainerWorkerHandle {
  return wrapTrainerWorker(new Worker(new URL('./trainer.worker.ts', import.meta.url), { type: 'module', name: 'dreamgym-trainer' }));
}

/** The handle of a worker running ./trainer.worker.ts (tests pass one that cannot load). */
export function wrapTrainerWorker(worker: Worker): TrainerWorkerHandle {
  const api = Comlink.wrap<TrainerRpc>(worker);
  const failed = new Promise<never>((_, reject) => {
    worker.addEventListener('error', (event) => {
      const message = event instanceof ErrorEvent && event.message ? event.message : 'its script could not be loaded or run';
      reject(new Error(`the trainer worker failed: ${message}`));
    });
  });
  // Nobody may be waiting when it fails; the rejection is still observed.
  failed.catch(() => undefined);
  return {
    api,
    failed,
    terminate: () => {
      api[Comlink.releaseProxy]();
      worker.terminate();
    },
  };
}
