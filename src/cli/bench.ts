/**
 * Benchmarks run from the CLI (`dreamgym bench`, `npm run bench`). The suites live in src/bench
 * (plus `llm-cost` in test/fixtures); each returns rows of figures, and this
 * runner prints them, writes JSON, and can rewrite the suite's generated table in BENCHMARKS.md
 * (between `<!-- bench:SUITE:start -->` and `<!-- bench:SUITE:end -->`).
 */
import { readFile } from 'node:fs/promises';
import { cpus } from 'node:os';
import { benchEnvs } from '../bench/envs.ts';
import type { BenchRow } from '../bench/types.ts';
import { OutputPathError, resolveOutputs, writeOutput } from './output.ts';
import { useFastestNodeBackend } from './tf-node.ts';

export type { BenchRow } from '../bench/types.ts';

export interface BenchResult {
  suite: string;
  command: string;
  date: string;
  machine: string;
  rows: BenchRow[];
}

type SuiteFn = () => Promise<BenchRow[]>;

const SUITES: Record<string, SuiteFn> = {
  // Retrieval experience model fidelity next to trivial simulators, and false-success rates.
  fidelity: async () => (await import('../bench/fidelity.ts')).benchFidelity(await useFastestNodeBackend()),
  // Training loop: synthetic steps/s in the loop against the retrieval model alone, and the update cost.
  train: async () => (await import('../bench/train.ts')).benchTrain(await useFastestNodeBackend()),
  // Environment speed, cold (fresh caches) and warm (repeated).
  envs: () => benchEnvs(),
  // Replay buffer: node over fake-indexeddb, and headless Chromium over its real IndexedDB.
  replay: async () => (await import('../bench/replay-node.ts')).benchReplayNode(),
  'replay-browser': async () => (await import('../bench/replay-browser.ts')).benchReplayBrowser(),
  // LLM experience model cost: drives the scripted engine (no WebLLM model can be loaded here), so it
  // measures prompt construction and caching (prefill per step, KV-cache reuse, group cache), not LLM speed.
  'llm-cost': async () => (await import('../../test/fixtures/llm-cost.ts')).benchLlmCost(),
  // Policy: GRPO update throughput (candidate rows/s) at three batch sizes, per backend, backends
  // interleaved, with each backend's ratio to wasm measured side by side; Node (cpu, wasm) and headless
  // Chromium (wasm, WebGPU where an adapter exists).
  policy: async () => (await import('../bench/policy.ts')).benchPolicyNode(),
  'policy-browser': async () => (await import('../bench/policy-browser.ts')).benchPolicyBrowser(),
  // Responsiveness of the training page while a run trains in its worker: frame gaps, long tasks and
  // the main thread's own tasks in headless Chromium, alone and beside workers that keep the CPU busy.
  frames: async () => (await import('../bench/frames.ts')).benchFrames(),
  // The same in Node with WebGPU from Dawn (optional package, see src/bench/policy-dawn.ts): a GPU
  // server's figures where no browser is installed. Not part of `all`.
  'policy-dawn': async () => (await import('../bench/policy-dawn.ts')).benchPolicyDawn(),
};

/** Suites that `all` leaves out: they need something that is not a dependency. */
const OPTIONAL_SUITES = new Set(['policy-dawn']);

/** Names of the benchmark suites. */
export const BENCH_SUITES = Object.keys(SUITES);
export type BenchSuite = string;

export interface BenchOptions {
  json: boolean;
  out?: string;
  /** Rewrite this suite's generated table in this markdown file. */
  markdown?: string;
  log: (text: string) => void;
}

function machineLine(): string {
  const cpu = cpus()[0]?.model ?? 'unknown CPU';
  return `${cpus().length} x ${cpu}, Node ${process.version}`;
}

function markdownTable(result: BenchResult): string {
  const lines = [
    `Command: \`${result.command}\` on ${result.date.slice(0, 10)} (${result.machine}).`,
    '',
    '| measurement | value | unit |',
    '| --- | ---: | --- |',
    ...result.rows.map((r) => `| ${r.name}${r.note ? ` (${r.note})` : ''} | ${formatValue(r.value)} | ${r.unit} |`),
  ];
  return lines.join('\n');
}

function formatValue(v: number): string {
  if (!Number.isFinite(v)) return String(v);
  if (Math.abs(v) >= 100) return Math.round(v).toLocaleString('en-US');
  return v.toPrecision(3);
}

/** Replaces the text between a suite's markers, appending a new section when they are absent. */
export function replaceSection(doc: string, suite: string, body: string): string {
  const start = `<!-- bench:${suite}:start -->`;
  const end = `<!-- bench:${suite}:end -->`;
  const block = `${start}\n${body}\n${end}`;
  const i = doc.indexOf(start);
  const j = doc.indexOf(end);
  if (i >= 0 && j > i) return doc.slice(0, i) + block + doc.slice(j + end.length);
  return `${doc.trimEnd()}\n\n## ${suite}\n\n${block}\n`;
}

/** The suites that `suite` names: itself, or for `all` every suite but the optional ones. */
export function suitesToRun(suite: BenchSuite | 'all'): string[] {
  return suite === 'all' ? BENCH_SUITES.filter((n) => !OPTIONAL_SUITES.has(n)) : [suite];
}

/** Runs one suite or all, printing a table (or JSON) and writing the requested files. */
export async function runBench(suite: BenchSuite | 'all', options: BenchOptions): Promise<BenchResult[]> {
  const names = suitesToRun(suite);
  for (const name of names) {
    if (!SUITES[name]) throw new RangeError(`Unknown benchmark suite ${JSON.stringify(name)}: use one of ${BENCH_SUITES.join(', ')}, all`);
  }
  // Output paths are checked before the benchmarks run (which can take many minutes).
  const wanted = [options.out, options.markdown].filter((p): p is string => p !== undefined);
  const targets = await resolveOutputs(wanted);
  const outTarget = options.out !== undefined ? targets[0] : undefined;
  const mdTarget = options.markdown !== undefined ? targets[wanted.length - 1] : undefined;
  // The markdown file is read, then rewritten: it has to be a file, not a device or stdout.
  if (mdTarget && mdTarget.kind !== 'file') throw new OutputPathError(`cannot rewrite ${mdTarget.name}: --markdown needs a regular file`);
  const results: BenchResult[] = [];
  for (const name of names) {
    const fn = SUITES[name] as SuiteFn;
    const rows = await fn();
    const result: BenchResult = {
      suite: name,
      command: `npx dreamgym bench ${name}`,
      date: new Date().toISOString(),
      machine: machineLine(),
      rows,
    };
    results.push(result);
    if (!options.json) options.log(`\n## ${name}\n${markdownTable(result)}\n`);
  }
  if (options.json) options.log(`${JSON.stringify(results, null, 2)}\n`);
  if (outTarget) await writeOutput(outTarget, `${JSON.stringify(results, null, 2)}\n`);
  if (mdTarget && mdTarget.kind === 'file') {
    let doc = await readFile(mdTarget.path, 'utf8').catch(() => '# Benchmarks\n');
    for (const r of results) doc = replaceSection(doc, r.suite, markdownTable(r));
    await writeOutput(mdTarget, doc);
  }
  return results;
}
