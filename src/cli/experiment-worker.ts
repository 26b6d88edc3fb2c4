/**
 * An experiment worker thread (started by ./experiment-pool.ts through ./experiment-worker.mjs):
 * runs (arm, seed) jobs of `runExperiment` one at a time, served with comlink. tfjs is per
 * thread, so each worker has its own wasm backend and its own core.
 */
import { parentPort } from 'node:worker_threads';
import * as Comlink from 'comlink';
import nodeEndpoint from 'comlink/dist/esm/node-adapter.mjs';
import { runArmSeed, type ArmSeedJob, type ArmSeedOutcome } from '../train/experiment.ts';
import { getEnvSpec, registerEnvSpec } from '../envs/registry.ts';
import type { DomainName } from '../core/types.ts';
import { measureFidelityTable, type FidelityOptions, type FidelityTable } from '../train/fidelity.ts';
import { loadEnvModule, type LoadedEnvModule } from './module-host.ts';
import { useFastestNodeBackend } from './tf-node.ts';

/** A fidelity measurement of one domain (the suite runs one per domain next to its experiment). */
export interface FidelityJob {
  env: DomainName;
  /** The environment module's path when `env` is one. */
  envModule?: string;
  /** Plain settings (no embedder, no LLM). */
  options: Omit<Partial<FidelityOptions>, 'embedder' | 'llm'>;
}

/** What the worker serves. */
export interface ExperimentWorkerApi {
  run(job: ArmSeedJob): Promise<ArmSeedOutcome>;
  fidelity(job: FidelityJob): Promise<FidelityTable>;
}

if (!parentPort) throw new Error('experiment-worker.ts runs in a worker thread (see experiment-pool.ts)');
const backend = useFastestNodeBackend();
/** Environment modules this thread has loaded and registered, by path: loaded once, kept for the thread's life. */
const modules = new Map<string, LoadedEnvModule>();

/** Loads and registers the job's environment module in this thread (the registry is per thread). */
function ensureModule(path: string | undefined): void {
  if (path === undefined || modules.has(path)) return;
  const loaded = loadEnvModule(path);
  registerEnvSpec(loaded.spec);
  modules.set(path, loaded);
}

const api: ExperimentWorkerApi = {
  async run(job) {
    await backend;
    ensureModule(job.envModule);
    return runArmSeed(job);
  },
  async fidelity(job) {
    await backend;
    ensureModule(job.envModule);
    return measureFidelityTable(getEnvSpec(job.env), job.options);
  },
};
Comlink.expose(api, nodeEndpoint(parentPort));
