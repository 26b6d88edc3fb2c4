/**
 * The policy benchmark: GRPO update throughput, in candidate rows per second, at three batch
 * sizes on every backend at hand, with each backend's ratio to wasm measured side by side.
 * One update = pack + upload + forward + backward + Adam + reading the metrics back, with the
 * KL reference pass on (beta > 0), one minibatch, on a shop-like batch (512-dim hashed-style
 * features, 3-15 candidates per decision). The backends are interleaved: for each size, each
 * repetition times every backend once, and the order of the backends rotates from one
 * repetition (and size) to the next, so that load changes on a shared machine hit all backends
 * alike and the ratios compare runs made seconds apart. `measureGrpoThroughput` runs in Node and
 * in the page (src/bench/policy-page.ts); `benchPolicyNode` is the CLI suite `policy`.
 */
import * as tf from '@tensorflow/tfjs';
import { chooseBackend, type BackendName, type BackendReport, type WasmPaths } from '../policy/backend.ts';
import { syntheticGrpoBatch } from '../rl/synthetic.ts';
import { Trainer } from '../rl/trainer.ts';
import type { BenchRow } from './types.ts';

/** One figure of the benchmark table (the CLI's BenchRow). */
export type PolicyBenchRow = BenchRow;

/** Options of {@link measureGrpoThroughput}. */
export interface PolicyBenchOptions {
  backends: BackendName[];
  /** Decisions per GRPO batch (groups of 8 one-step rollouts). Default [32, 128, 512]. */
  sizes?: number[];
  /** Feature dimension (state and action). Default 512. */
  dim?: number;
  hiddenDim?: number;
  /**
   * Repetitions per size (default 3). Each repetition builds a fresh trainer on every backend in
   * turn (tfjs moves a tensor to the active backend when it is used there, so one trainer cannot
   * stay alive across backend switches), runs one warm-up update and times the next.
   */
  reps?: number;
  wasmPaths?: WasmPaths;
  /** Progress lines. */
  log?: (line: string) => void;
}

/** The update times of one backend at one batch size. */
export interface PolicyBenchMeasurement {
  backend: BackendName;
  report: BackendReport;
  decisions: number;
  candidateRows: number;
  /** Median of {@link times}. */
  msPerUpdate: number;
  rowsPerSecond: number;
  reps: number;
  /** The timed update of each repetition, by repetition (the same index is the same repetition on every backend). */
  times: number[];
}

const median = (xs: readonly number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? Number.NaN;

/** One slot of the run order: time `backend` at `sizes[size]` in repetition `rep`. */
export interface BenchSlot<B> {
  backend: B;
  size: number;
  rep: number;
}

/**
 * The run order of {@link measureGrpoThroughput}: sizes in turn; for each, `reps` repetitions that
 * each run every backend once, the backends rotated by one place from one repetition to the next
 * (continuing across sizes), so that with two backends they alternate which one goes first.
 */
export function benchSchedule<B>(backends: readonly B[], sizes: number, reps: number): BenchSlot<B>[] {
  const out: BenchSlot<B>[] = [];
  const n = backends.length;
  let turn = 0;
  for (let size = 0; size < sizes; size++) {
    for (let rep = 0; rep < reps; rep++, turn++) {
      for (let i = 0; i < n; i++) out.push({ backend: backends[(i + turn) % n] as B, size, rep });
    }
  }
  return out;
}

/** The benchmark's shop-like GRPO batch: `decisions` one-step rollouts in groups of 8, 3-15 candidates each. */
function benchBatch(decisions: number, dim: number, seed: number): ReturnType<typeof syntheticGrpoBatch> {
  return syntheticGrpoBatch({
    groups: Math.max(1, Math.round(decisions / 8)),
    groupSize: 8,
    maxSteps: 1,
    stateDim: dim,
    actionDim: dim,
    minCandidates: 3,
    maxCandidates: 15,
    nonZeros: 96,
    seed,
  });
}

/** Makes `backend` tfjs's active backend (it must have been initialised). */
async function useBackend(backend: BackendName): Promise<void> {
  if (tf.getBackend() === backend) return;
  if (!(await tf.setBackend(backend))) throw new Error(`tf.setBackend(${JSON.stringify(backend)}) failed`);
  await tf.ready();
}

/** The benchmark's trainer: one minibatch per update, the KL reference pass on. */
const benchTrainer = (dim: number, hiddenDim: number): Trainer =>
  new Trainer({
    policy: { stateDim: dim, actionDim: dim, hiddenDim, seed: 1 },
    optimizer: { learningRate: 1e-3, epsilon: 1e-8 },
    grpo: { beta: 0.04 },
    minibatchSize: 1 << 20,
  });

/** Times GRPO updates for each backend and size, interleaved (see the module comment). */
export async function measureGrpoThroughput(options: PolicyBenchOptions): Promise<PolicyBenchMeasurement[]> {
  const sizes = options.sizes ?? [32, 128, 512];
  const dim = options.dim ?? 512;
  const reps = options.reps ?? 3;
  if (!(Number.isInteger(reps) && reps >= 1)) throw new RangeError(`reps must be an integer >= 1, got ${reps}`);
  const reports = new Map<BackendName, BackendReport>();
  for (const backend of options.backends) {
    const report = await chooseBackend({ prefer: backend, ...(options.wasmPaths ? { wasmPaths: options.wasmPaths } : {}) });
    if (report.backend !== backend) {
      options.log?.(`${backend}: not available (${report.failures.join('; ') || report.reason}), skipped`);
      continue;
    }
    reports.set(backend, report);
  }
  const backends = [...reports.keys()];
  const batches = sizes.map((decisions) => benchBatch(decisions, dim, decisions));
  const results = new Map<string, { rows: number; candidateRows: number; times: number[] }>();
  for (const slot of benchSchedule(backends, sizes.length, reps)) {
    const { backend } = slot;
    await useBackend(backend);
    const trainer = benchTrainer(dim, options.hiddenDim ?? 64);
    try {
      const batch = batches[slot.size] as (typeof batches)[number];
      const first = await trainer.grpoUpdate(batch); // warm-up: shader compilation, allocations
      const t0 = performance.now();
      await trainer.grpoUpdate(batch);
      const ms = performance.now() - t0;
      const key = `${backend}:${slot.size}`;
      const r = results.get(key) ?? { rows: first.rows, candidateRows: first.candidateRows, times: [] };
      r.times.push(ms);
      results.set(key, r);
      options.log?.(`${backend} ${first.rows} decisions, repetition ${slot.rep + 1}/${reps}: ${ms.toFixed(1)} ms/update`);
    } finally {
      trainer.dispose();
    }
  }
  const out: PolicyBenchMeasurement[] = [];
  for (const backend of backends) {
    sizes.forEach((_, size) => {
      const r = results.get(`${backend}:${size}`);
      if (!r) return;
      const ms = median(r.times);
      out.push({
        backend,
        report: reports.get(backend) as BackendReport,
        decisions: r.rows,
        candidateRows: r.candidateRows,
        msPerUpdate: ms,
        rowsPerSecond: r.candidateRows / (ms / 1000),
        reps,
        times: r.times,
      });
    });
  }
  return out;
}

/** How far one backend's GRPO updates drift from wasm's on the same batch from the same weights. */
export interface BackendAgreement {
  backend: BackendName;
  updates: number;
  /** Largest |loss difference| over the updates. */
  maxLossDifference: number;
  /** Largest |weight difference| after the last update, over all parameters. */
  maxWeightDifference: number;
  /** Largest |weight| after the last update on wasm (scale for the difference). */
  maxWeight: number;
}

/**
 * Runs `updates` GRPO updates from the same seed on the same batch on wasm and on `backend`, and
 * compares the losses and the weights: a GPU backend that is fast but computes something else
 * would show here. Small float32 differences are expected (other summation orders).
 */
export async function measureBackendAgreement(backend: BackendName, options: { decisions?: number; dim?: number; updates?: number } = {}): Promise<BackendAgreement> {
  const dim = options.dim ?? 512;
  const updates = options.updates ?? 3;
  const batch = benchBatch(options.decisions ?? 128, dim, 7);
  const run = async (name: BackendName): Promise<{ losses: number[]; weights: Float32Array[] }> => {
    await useBackend(name);
    const trainer = benchTrainer(dim, 64);
    try {
      const losses: number[] = [];
      for (let i = 0; i < updates; i++) losses.push((await trainer.grpoUpdate(batch)).loss);
      const weights = (await trainer.checkpoint()).weights.filter((w) => !w.name.startsWith('reference/')).map((w) => Float32Array.from(w.data));
      return { losses, weights };
    } finally {
      trainer.dispose();
    }
  };
  const reference = await run('wasm');
  const other = await run(backend);
  const maxAbs = (xs: Iterable<number>): number => {
    let m = 0;
    for (const x of xs) m = Math.max(m, Math.abs(x));
    return m;
  };
  return {
    backend,
    updates,
    maxLossDifference: maxAbs(reference.losses.map((l, i) => l - (other.losses[i] ?? Number.NaN))),
    maxWeightDifference: maxAbs(reference.weights.flatMap((w, i) => Array.from(w, (x, j) => x - (other.weights[i]?.[j] ?? Number.NaN)))),
    maxWeight: maxAbs(reference.weights.flatMap((w) => Array.from(w))),
  };
}

/** How a backend is named in the table (a software WebGPU adapter is never called a GPU). */
export function backendLabel(m: Pick<PolicyBenchMeasurement, 'backend' | 'report'>, where: string): string {
  if (m.backend === 'wasm') return `wasm (${where}, ${m.report.threads > 1 ? `${m.report.threads} threads` : '1 thread'})`;
  if (m.backend === 'webgpu') {
    const adapter = m.report.adapter;
    if (!adapter || adapter.isFallbackAdapter) return `WebGPU on SwiftShader/software adapter "${adapter?.description ?? 'unknown'}" (${where}; not GPU speed)`;
    return `WebGPU on ${adapter.description} (${where})`;
  }
  return `cpu (${where})`;
}

/**
 * Table rows: throughput per backend and size, then each backend's ratio to wasm at each size,
 * the median of the ratios of the repetitions (each pairs two runs made one after the other).
 */
export function policyBenchRows(measurements: readonly PolicyBenchMeasurement[], where: string, note?: string): PolicyBenchRow[] {
  const rows: PolicyBenchRow[] = measurements.map((m) => ({
    name: `GRPO update, ${backendLabel(m, where)}, ${m.decisions} decisions (${m.candidateRows} candidate rows)`,
    value: m.rowsPerSecond,
    unit: 'candidate rows/s',
    note: `median of ${m.reps}, backends interleaved: ${m.msPerUpdate.toFixed(1)} ms/update${note ? `; ${note}` : ''}`,
  }));
  for (const m of measurements) {
    if (m.backend === 'wasm') continue;
    const wasm = measurements.find((w) => w.backend === 'wasm' && w.decisions === m.decisions);
    if (!wasm) continue;
    // Same batch on both, so the throughput ratio is the inverse ratio of the update times.
    const paired = m.times.flatMap((t, i) => (wasm.times[i] !== undefined ? [(wasm.times[i] as number) / t] : []));
    rows.push({
      name: `${backendLabel(m, where)} / wasm throughput ratio, ${m.decisions} decisions`,
      value: median(paired),
      unit: 'x',
      note: `median of ${paired.length} side-by-side repetitions`,
    });
  }
  return rows;
}

/** The CLI suite `policy`: cpu and wasm in Node. */
export async function benchPolicyNode(options: Partial<PolicyBenchOptions> = {}): Promise<PolicyBenchRow[]> {
  tf.env().set('PROD', true); // no "install tfjs-node" banner
  const log = options.log ?? ((line: string) => void process.stderr.write(`  ${line}\n`));
  const measurements = await measureGrpoThroughput({ ...options, backends: options.backends ?? ['wasm', 'cpu'], log });
  return policyBenchRows(measurements, 'Node');
}
