/**
 * A pool of worker threads for `dreamgym experiment --jobs N`: each (arm, seed) run of
 * `runExperiment` goes to an idle worker (./experiment-worker.ts). tfjs's wasm backend is
 * single-threaded, so N workers use N cores; the figures do not change (each run is
 * self-contained, see `runExperiment`'s `concurrency`).
 */
import { Worker } from 'node:worker_threads';
import * as Comlink from 'comlink';
import nodeEndpoint from 'comlink/dist/esm/node-adapter.mjs';
import type { ArmSeedJob, ArmSeedOutcome, ArmSeedRunner } from '../train/experiment.ts';
import type { ExperimentWorkerApi, FidelityJob } from './experiment-worker.ts';
import type { FidelityTable } from '../train/fidelity.ts';

interface PooledWorker {
  worker: Worker;
  api: Comlink.Remote<ExperimentWorkerApi>;
  /** Rejects when the thread dies (a crash, running out of memory, terminate). */
  died: Promise<never>;
}

/** Worker threads that run experiment jobs; `run` is a {@link ArmSeedRunner}. */
export class ExperimentWorkerPool {
  private readonly idle: PooledWorker[] = [];
  private readonly all = new Set<PooledWorker>();
  private readonly waiting: ((w: PooledWorker) => void)[] = [];
  private closed = false;

  /** @param size most threads at once (>= 1). */
  constructor(readonly size: number) {
    if (!(Number.isInteger(size) && size >= 1)) throw new RangeError(`worker pool size must be an integer >= 1, got ${size}`);
  }

  /** Runs one job on a worker; an aborted signal terminates that worker and rejects. */
  readonly run: ArmSeedRunner = (job: ArmSeedJob, signal?: AbortSignal): Promise<ArmSeedOutcome> => this.use((api) => api.run(job), `experiment job ${job.arm}, seed ${job.seed}`, signal);

  /** Measures one domain's fidelity on a worker (the suite's), as {@link run} runs a job. */
  readonly fidelity = (job: FidelityJob, signal?: AbortSignal): Promise<FidelityTable> => this.use((api) => api.fidelity(job), `fidelity of ${job.env}`, signal);

  private async use<T>(call: (api: Comlink.Remote<ExperimentWorkerApi>) => Promise<T>, label: string, signal?: AbortSignal): Promise<T> {
    if (signal?.aborted) throw new Error(`${label} stopped before it started`);
    const w = await this.acquire();
    const onAbort = (): void => void w.worker.terminate();
    signal?.addEventListener('abort', onAbort, { once: true });
    try {
      const outcome = await Promise.race([call(w.api), w.died]);
      this.release(w);
      return outcome;
    } catch (e) {
      // A worker whose job failed or was stopped is not reused.
      this.discard(w);
      throw signal?.aborted ? new Error(`${label} stopped`) : e;
    } finally {
      signal?.removeEventListener('abort', onAbort);
    }
  }

  /** Terminates every thread. */
  async close(): Promise<void> {
    this.closed = true;
    const workers = [...this.all];
    this.all.clear();
    this.idle.length = 0;
    await Promise.all(workers.map((w) => w.worker.terminate()));
  }

  private async acquire(): Promise<PooledWorker> {
    if (this.closed) throw new Error('the experiment worker pool is closed');
    const free = this.idle.pop();
    if (free) return free;
    if (this.all.size < this.size) return this.spawn();
    return new Promise((resolve) => this.waiting.push(resolve));
  }

  private release(w: PooledWorker): void {
    const next = this.waiting.shift();
    if (next) next(w);
    else this.idle.push(w);
  }

  private discard(w: PooledWorker): void {
    this.all.delete(w);
    void w.worker.terminate();
    const next = this.waiting.shift();
    if (next && !this.closed) next(this.spawn());
  }

  private spawn(): PooledWorker {
    const worker = new Worker(new URL('./experiment-worker.mjs', import.meta.url));
    const died = new Promise<never>((_, reject) => {
      worker.once('error', (e) => reject(new Error(`an experiment worker failed: ${e instanceof Error ? e.message : String(e)}`)));
      worker.once('exit', (code) => reject(new Error(`an experiment worker exited (code ${code})`)));
    });
    died.catch(() => undefined);
    const w: PooledWorker = { worker, api: Comlink.wrap<ExperimentWorkerApi>(nodeEndpoint(worker)), died };
    this.all.add(w);
    return w;
  }
}
