/**
 * Benchmarks run from the CLI (`dreamgym bench`, `npm run bench`). Each suite returns rows of
 * figures; the runner prints them, writes JSON, and can rewrite the suite's generated table in
 * BENCHMARKS.md (between `<!-- bench:SUITE:start -->` and `<!-- bench:SUITE:end -->`).
 */
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { cpus } from 'node:os';
import { dirname } from 'node:path';
import { Rng } from '../core/rng.ts';
import { ENV_NAMES } from '../core/types.ts';
import { expertPolicy, runEpisode } from '../envs/episode.ts';
import { getEnvSpec } from '../envs/registry.ts';
import { benchReplayBrowser, benchReplayNode } from '../replay/bench-node.ts';
import { measureRetrievalFidelity } from '../train/fidelity.ts';
import { useFastestNodeBackend } from './tf-node.ts';

/** One measured figure. */
export interface BenchRow {
  name: string;
  value: number;
  unit: string;
  note?: string;
}

export interface BenchResult {
  suite: string;
  command: string;
  date: string;
  machine: string;
  rows: BenchRow[];
}

type SuiteFn = () => Promise<BenchRow[]>;

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)] ?? NaN;
};

/** Environment speed: task generation and expert-episode step throughput per environment. */
async function benchEnvs(): Promise<BenchRow[]> {
  const rows: BenchRow[] = [];
  for (const name of ENV_NAMES) {
    const spec = getEnvSpec(name);
    let t0 = performance.now();
    const tasks = spec.tasks({ split: 'train', count: 200, seed: 1 });
    rows.push({ name: `${name}: generate 200 train tasks (first call, includes world build)`, value: performance.now() - t0, unit: 'ms' });
    const env = spec.create();
    const rng = new Rng(1);
    const rates: number[] = [];
    for (let rep = 0; rep < 3; rep++) {
      let steps = 0;
      t0 = performance.now();
      for (const task of tasks) steps += runEpisode(env, task, expertPolicy, { rng }).steps.length;
      rates.push(steps / ((performance.now() - t0) / 1000));
    }
    rows.push({ name: `${name}: expert episode steps per second (median of 3 x 200 episodes)`, value: median(rates), unit: 'steps/s' });
  }
  return rows;
}

/** Retrieval experience model fidelity on held-out test-split transitions, both environments. */
async function benchFidelity(): Promise<BenchRow[]> {
  const backend = await useFastestNodeBackend();
  const rows: BenchRow[] = [];
  for (const name of ENV_NAMES) {
    const r = await measureRetrievalFidelity(getEnvSpec(name), { trainEpisodes: 300, testEpisodes: 100, seed: 0, policy: 'noisy:0.3' });
    const note = `${r.trainTransitions} train / ${r.testTransitions} test transitions`;
    const rate = (label: string, value: number): BenchRow => ({ name: `${name}: ${label}`, value: 100 * value, unit: '%' });
    rows.push(
      { ...rate('admissible-action agreement (Jaccard)', r.actionAgreement), note },
      rate('next-state match rate', r.nextStateMatch),
      rate('reward accuracy, all steps (abs. error <= 0.05)', r.rewardAccuracy),
      rate('reward accuracy, final steps', r.finalRewardAccuracy),
      rate('done accuracy', r.doneAccuracy),
      rate('invalid-action detection (probes)', r.invalidDetection),
      rate('valid steps marked invalid', r.falseInvalidRate),
      rate('initial state match', r.initialStateMatch),
      { name: `${name}: build + measure time`, value: r.ms / 1000, unit: 's', note: `tfjs ${backend}` },
    );
  }
  return rows;
}

const SUITES: Record<string, SuiteFn> = {
  fidelity: benchFidelity,
  envs: benchEnvs,
  // Replay buffer: node over fake-indexeddb, and headless Chromium over its real IndexedDB.
  replay: () => benchReplayNode(),
  'replay-browser': () => benchReplayBrowser(),
  // LLM experience model cost: drives the scripted engine (no WebLLM model can be loaded here), so it
  // measures prompt construction and caching (prefill per step, KV-cache reuse, group cache), not LLM speed.
  'llm-cost': async () => (await import('../../test/fixtures/llm-cost.ts')).benchLlmCost(),
  // Policy: GRPO update throughput (candidate rows/s) at three batch sizes, per backend, with the ratio
  // to wasm from the same run; Node (cpu, wasm) and headless Chromium (wasm, WebGPU where an adapter exists).
  policy: async () => (await import('../rl/bench-policy.ts')).benchPolicyNode(),
  'policy-browser': async () => (await import('../rl/bench-policy-browser.ts')).benchPolicyBrowser(),
};

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

/** Runs one suite or all, printing a table (or JSON) and writing the requested files. */
export async function runBench(suite: BenchSuite | 'all', options: BenchOptions): Promise<BenchResult[]> {
  const names = suite === 'all' ? BENCH_SUITES : [suite];
  const results: BenchResult[] = [];
  for (const name of names) {
    const fn = SUITES[name];
    if (!fn) throw new RangeError(`Unknown benchmark suite ${JSON.stringify(name)}: use one of ${BENCH_SUITES.join(', ')}, all`);
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
  if (options.out) {
    await mkdir(dirname(options.out), { recursive: true });
    await writeFile(options.out, `${JSON.stringify(results, null, 2)}\n`);
  }
  if (options.markdown) {
    let doc = await readFile(options.markdown, 'utf8').catch(() => '# Benchmarks\n');
    for (const r of results) doc = replaceSection(doc, r.suite, markdownTable(r));
    await writeFile(options.markdown, doc);
  }
  return results;
}
