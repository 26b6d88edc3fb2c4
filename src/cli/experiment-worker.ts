/**
 * An experiment worker thread (started by ./experiment-pool.ts through ./experiment-worker.mjs):
 * runs (arm, seed) jobs of `runExperiment` one at a time, served with comlink. tfjs is per
 * thread, so each worker has its own wasm backend and its own core.
 */
import { parentPort } from 'node:worker_threads';
import * as Comlink from 'comlink';
import nodeEndpoint from 'comlink/dist/esm/node-adapter.mjs';
import { runArmSeed, type ArmSeedJob, type ArmSeedOutcome } from '../train/experiment.ts';
import { useFastestNodeBackend } from './tf-node.ts';

/** What the worker serves. */
export interface ExperimentWorkerApi {
  run(job: ArmSeedJob): Promise<ArmSeedOutcome>;
}

if (!parentPort) throw new Error('experiment-worker.ts runs in a worker thread (see experiment-pool.ts)');
const backend = useFastestNodeBackend();
const api: ExperimentWorkerApi = {
  async run(job) {
    await backend;
    return runArmSeed(job);
  },
};
Comlink.expose(api, nodeEndpoint(parentPort));
