/**
 * The policy benchmark: GRPO update throughput, in candidate rows per second, at three batch
 * sizes on every backend at hand, with each backend's ratio to wasm measured in the same run.
 * One update = pack + upload + forward + backward + Adam + reading the metrics back, with the
 * KL reference pass on (beta > 0), one minibatch, on a shop-like batch (512-dim hashed-style
 * features, 3-15 candidates per decision). `measureGrpoThroughput` runs in Node and in the page
 * (src/rl/bench-page.ts); `benchPolicyNode` is the CLI suite `policy`.
 */
import * as tf from '@tensorflow/tfjs';
import { chooseBackend, type BackendName, type BackendReport, type WasmPaths } from '../policy/backend.ts';
import { syntheticGrpoBatch } from './synthetic.ts';
import { Trainer } from './trainer.ts';

/** One figure of the benchmark table (the CLI's BenchRow). */
export interface PolicyBenchRow {
  name: string;
  value: number;
  unit: string;
  note?: string;
}

/** Options of {@link measureGrpoThroughput}. */
export interface PolicyBenchOptions {
  backends: BackendName[];
  /** Decisions per GRPO batch (groups of 8 one-step rollouts). Default [32, 128, 512]. */
  sizes?: number[];
  /** Feature dimension (state and action). Default 512. */
  dim?: number;
  hiddenDim?: number;
  /** Timed updates per size (after one warm-up). Default 3. */
  reps?: number;
  wasmPaths?: WasmPaths;
  /** Progress lines. */
  log?: (line: string) => void;
}

/** The median update time of one backend at one batch size. */
export interface PolicyBenchMeasurement {
  backend: BackendName;
  report: BackendReport;
  decisions: number;
  candidateRows: number;
  msPerUpdate: number;
  rowsPerSecond: number;
  reps: number;
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? Number.NaN;

/** Times GRPO updates for each backend and size (see the module comment). */
export async function measureGrpoThroughput(options: PolicyBenchOptions): Promise<PolicyBenchMeasurement[]> {
  const sizes = options.sizes ?? [32, 128, 512];
  const dim = options.dim ?? 512;
  const reps = options.reps ?? 3;
  const out: PolicyBenchMeasurement[] = [];
  for (const backend of options.backends) {
    const report = await chooseBackend({ prefer: backend, ...(options.wasmPaths ? { wasmPaths: options.wasmPaths } : {}) });
    if (report.backend !== backend) {
      options.log?.(`${backend}: not available (${report.failures.join('; ') || report.reason}), skipped`);
      continue;
    }
    for (const decisions of sizes) {
      const batch = syntheticGrpoBatch({
        groups: Math.max(1, Math.round(decisions / 8)),
        groupSize: 8,
        maxSteps: 1,
        stateDim: dim,
        actionDim: dim,
        minCandidates: 3,
        maxCandidates: 15,
        nonZeros: 96,
        seed: decisions,
      });
      const trainer = new Trainer({
        policy: { stateDim: dim, actionDim: dim, hiddenDim: options.hiddenDim ?? 64, seed: 1 },
        optimizer: { learningRate: 1e-3, epsilon: 1e-8 },
        grpo: { beta: 0.04 },
        minibatchSize: 1 << 20,
      });
      try {
        const first = await trainer.grpoUpdate(batch); // warm-up: shader compilation, allocations
        const times: number[] = [];
        for (let r = 0; r < reps; r++) {
          const t0 = performance.now();
          await trainer.grpoUpdate(batch);
          times.push(performance.now() - t0);
        }
        const ms = median(times);
        const m: PolicyBenchMeasurement = {
          backend,
          report,
          decisions: first.rows,
          candidateRows: first.candidateRows,
          msPerUpdate: ms,
          rowsPerSecond: first.candidateRows / (ms / 1000),
          reps,
        };
        options.log?.(`${backend} ${m.decisions} decisions: ${ms.toFixed(1)} ms/update, ${Math.round(m.rowsPerSecond)} rows/s`);
        out.push(m);
      } finally {
        trainer.dispose();
      }
    }
  }
  return out;
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

/** Table rows: throughput per backend and size, then each backend's ratio to wasm at each size. */
export function policyBenchRows(measurements: readonly PolicyBenchMeasurement[], where: string, note?: string): PolicyBenchRow[] {
  const rows: PolicyBenchRow[] = measurements.map((m) => ({
    name: `GRPO update, ${backendLabel(m, where)}, ${m.decisions} decisions (${m.candidateRows} candidate rows)`,
    value: m.rowsPerSecond,
    unit: 'candidate rows/s',
    note: `median of ${m.reps}: ${m.msPerUpdate.toFixed(1)} ms/update${note ? `; ${note}` : ''}`,
  }));
  for (const m of measurements) {
    if (m.backend === 'wasm') continue;
    const wasm = measurements.find((w) => w.backend === 'wasm' && w.decisions === m.decisions);
    if (!wasm) continue;
    rows.push({
      name: `${backendLabel(m, where)} / wasm throughput ratio, ${m.decisions} decisions`,
      value: m.rowsPerSecond / wasm.rowsPerSecond,
      unit: 'x',
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
