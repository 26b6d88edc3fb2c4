/**
 * `dreamgym experiment --scaling`: held-out success against the size of a user's log. For every
 * domain and every N of {@link SCALING_SIZES}, the offline data is N recorded episodes of the
 * domain's noisy goal-blind demonstrator (`offline.recorded`), and the arms of
 * {@link SCALING_ARMS} run over seeds on it: behaviour cloning alone, GRPO after it inside the
 * simulator (0 real transitions) and in the real environment at the same number of updates, and
 * S2R with 10% of the real arm's real transitions. One table per domain and one plot (success
 * against N, with 95% intervals) per domain, in scaling.md and DOMAIN-scaling.svg; every figure
 * in scaling.json.
 */
import { defaultMaxListeners, setMaxListeners } from 'node:events';
import { join } from 'node:path';
import type { DomainName } from '../core/types.ts';
import type { AnyEnvSpec } from '../envs/spec.ts';
import { parseTrainingConfig, RECORDED_NOISE, type PresetName, type TrainingConfigInput } from '../train/config.ts';
import type { Interval } from '../train/evaluate.ts';
import { pairedDifference, pairedRatio, runExperiment, type ArmResult, type ExperimentResult } from '../train/experiment.ts';
import { cloningWeight } from '../train/loop.ts';
import { recordedSeedData } from '../train/setup.ts';
import { ExperimentWorkerPool } from './experiment-pool.ts';
import type { LoadedEnvModule } from './module-host.ts';
import { writeFileAtomic } from './output.ts';
import { pct, ratioText, readyDomains, releaseDomains, SUITE_DOMAINS, type DomainExperimentOptions, type ReadyDomain } from './suite.ts';
import { useFastestNodeBackend } from './tf-node.ts';

/** The sizes of the log, in episodes. */
export const SCALING_SIZES: readonly number[] = [10, 25, 50, 100, 200];

/** The arms at every size (see `EXPERIMENT_ARMS`); s2r's real budget is 10% of what `real (warm sft)` used. */
export const SCALING_ARMS = ['sft', 'dreamgym (warm sft)', 'real (warm sft)', 's2r (warm sft), 10% real budget'] as const;

/** The domains by default: the two built-in ones and three of the suite's modules. */
export const SCALING_DOMAINS: readonly string[] = ['shop', 'household', 'tickets', 'calendar', 'travel'];

/** The experiment's sizes on top of the preset (the size options override them), as the suite's. */
export const SCALING_BUDGET: Partial<TrainingConfigInput> = { iterations: 15 };

/** Thrown for a scaling experiment that cannot run as asked; nothing is written. */
export class ScalingError extends Error {
  override name = 'ScalingError';
}

/** What the recorded log of one size holds, mean over seeds. */
export interface LogFigures {
  episodes: number;
  successRate: number;
  transitions: number;
  /** Episodes behaviour cloning learns from (per `sft.cloning`), fewest over seeds. */
  cloned: number;
}

/** One size of one domain. */
export interface ScalingPoint {
  recorded: number;
  log: LogFigures;
  /** The experiment at this size, or null when some seed's log gave behaviour cloning nothing to learn from. */
  experiment: ExperimentResult | null;
  /** Why the arms did not run (null when they did). */
  skipped: string | null;
}

/** One domain's curve. */
export interface ScalingDomainResult {
  name: string;
  module: string | null;
  points: ScalingPoint[];
  /** The smallest size from which no RL arm beats behaviour cloning alone (paired 95% interval above 0) at it or any larger size; null when one does at the largest. */
  cloningEnoughFrom: number | null;
  /** Core-milliseconds of its runs (each run's wall time, summed). */
  costMs: number;
}

export interface ScalingResult {
  format: 'dreamgym-scaling';
  version: 1;
  command: string;
  preset: PresetName;
  seeds: number;
  jobs: number;
  sizes: readonly number[];
  /** The chance of a random admissible action at each step of the recorded episodes. */
  recordedNoise: number;
  arms: readonly string[];
  domains: ScalingDomainResult[];
  wallMs: number;
}

/** Options of {@link runScaling}: `domains` defaults to {@link SCALING_DOMAINS}, or every added module when modules are given. */
export interface ScalingOptions extends DomainExperimentOptions {
  sizes?: readonly number[];
  /** Size overrides on top of {@link SCALING_BUDGET} (the recorded count is each point's own). */
  overrides?: Partial<TrainingConfigInput>;
}

/** Checks the sizes: whole numbers from 1, each once. */
export function checkSizes(sizes: readonly number[]): number[] {
  if (sizes.length === 0) throw new ScalingError('no recorded-episode sizes: give at least one, e.g. 10,25,50');
  for (const n of sizes) if (!(Number.isSafeInteger(n) && n >= 1 && n <= 1_000_000)) throw new ScalingError(`recorded-episode size must be an integer from 1 to 1000000, got ${n}`);
  const seen = new Set<number>();
  for (const n of sizes) {
    if (seen.has(n)) throw new ScalingError(`recorded-episode size ${n} is given twice`);
    seen.add(n);
  }
  return [...sizes].sort((a, b) => a - b);
}

/** What the logs of `recorded` episodes hold over `seeds` (the runs' own data: same seeds, same settings). */
function logFigures(spec: AnyEnvSpec, input: TrainingConfigInput, preset: PresetName, seeds: readonly number[]): LogFigures {
  const per = seeds.map((seed) => {
    const config = parseTrainingConfig({ ...input, seed }, preset);
    const data = recordedSeedData(spec, config);
    const t = data.trajectories;
    return {
      episodes: t.length,
      successRate: t.filter((x) => x.success).length / Math.max(1, t.length),
      transitions: t.reduce((s, x) => s + x.steps.length, 0),
      cloned: t.filter((x) => cloningWeight(x, config.sft.cloning) > 0).length,
    };
  });
  const mean = (f: (p: (typeof per)[number]) => number): number => per.reduce((s, p) => s + f(p), 0) / per.length;
  return { episodes: mean((p) => p.episodes), successRate: mean((p) => p.successRate), transitions: mean((p) => p.transitions), cloned: Math.min(...per.map((p) => p.cloned)) };
}

const armOf = (e: ExperimentResult | null, name: string): ArmResult | undefined => e?.arms.find((a) => a.name === name);

/** Whether an RL arm beats behaviour cloning at this point: a paired difference whose 95% interval lies above 0. */
function rlBeatsCloning(p: ScalingPoint): boolean {
  const sft = armOf(p.experiment, 'sft');
  if (!sft) return false;
  return SCALING_ARMS.filter((a) => a !== 'sft').some((name) => {
    const arm = armOf(p.experiment, name);
    return arm !== undefined && pairedDifference(arm, sft).low > 0;
  });
}

/** The smallest measured size from which cloning alone is enough (see {@link ScalingDomainResult.cloningEnoughFrom}). */
export function cloningEnoughFrom(points: readonly ScalingPoint[]): number | null {
  const ran = points.filter((p) => p.experiment !== null);
  let from: number | null = null;
  for (let i = ran.length - 1; i >= 0; i--) {
    if (rlBeatsCloning(ran[i] as ScalingPoint)) break;
    from = (ran[i] as ScalingPoint).recorded;
  }
  return from;
}

/** Runs the experiment; the caller writes {@link scalingFiles}. Modules are loaded here and let go at the end. */
export async function runScaling(options: ScalingOptions): Promise<ScalingResult> {
  const started = performance.now();
  const sizes = checkSizes(options.sizes ?? SCALING_SIZES);
  const loaded: LoadedEnvModule[] = [];
  const pool = options.jobs > 1 ? new ExperimentWorkerPool(options.jobs) : null;
  try {
    // Without --domains: the default domains and the added modules; with it, any of the suite's.
    const suite = options.suite ?? (options.domains ? SUITE_DOMAINS : SUITE_DOMAINS.filter((d) => SCALING_DOMAINS.includes(d.name)));
    const domains = readyDomains({ ...options, suite }, loaded);
    for (const d of domains) if (!d.spec.demonstrator) throw new ScalingError(`the domain ${d.name} has no goal-blind demonstrator (demonstratorAction()) to record episodes with: leave it out with --domains`);
    await useFastestNodeBackend();
    // Every (domain, size) experiment listens on the caller's signal at once: not a leak.
    if (options.signal) setMaxListeners(Math.max(defaultMaxListeners, domains.length * sizes.length + defaultMaxListeners), options.signal);
    const seeds = Array.from({ length: options.seeds }, (_, i) => i);
    const onePoint = async (d: ReadyDomain, recorded: number): Promise<ScalingPoint> => {
      const overrides: Partial<TrainingConfigInput> = { ...SCALING_BUDGET, ...options.overrides, offline: { ...options.overrides?.offline, recorded } };
      const log = logFigures(d.spec, { env: d.name as DomainName, mode: 'sft', ...overrides }, options.preset, seeds);
      if (log.cloned === 0) {
        options.onProgress?.(`${d.name}: ${recorded} recorded episodes: nothing to clone on some seed; skipped`);
        return { recorded, log, experiment: null, skipped: `a seed's ${recorded} recorded episodes hold nothing behaviour cloning learns from (${(100 * log.successRate).toFixed(0)}% of the episodes succeed, mean over seeds)` };
      }
      const experiment = await runExperiment({
        env: d.name as DomainName,
        ...(d.modulePath !== null ? { envModule: d.modulePath } : {}),
        seeds: options.seeds,
        preset: options.preset,
        arms: SCALING_ARMS,
        overrides,
        concurrency: options.jobs,
        ...(pool ? { runner: pool.run } : {}),
        command: options.command,
        ...(options.trainEvalEpisodes !== undefined ? { trainEvalEpisodes: options.trainEvalEpisodes } : {}),
        ...(options.signal ? { signal: options.signal } : {}),
        ...(options.onProgress ? { onProgress: (text: string) => options.onProgress?.(`N=${recorded} ${text}`) } : {}),
      });
      return { recorded, log, experiment, skipped: null };
    };
    const oneDomain = async (d: ReadyDomain): Promise<ScalingDomainResult> => {
      // With worker threads every size runs at once (their jobs queue for the threads).
      const points = pool ? await Promise.all(sizes.map((n) => onePoint(d, n))) : [];
      if (!pool) for (const n of sizes) points.push(await onePoint(d, n));
      const costMs = points.reduce((s, p) => s + (p.experiment?.arms ?? []).reduce((t, a) => t + a.seeds.reduce((u, x) => u + x.wallMs, 0), 0), 0);
      return { name: d.name, module: d.shownPath, points, cloningEnoughFrom: cloningEnoughFrom(points), costMs };
    };
    let results: ScalingDomainResult[];
    if (pool) results = await Promise.all(domains.map(oneDomain));
    else {
      results = [];
      for (const d of domains) results.push(await oneDomain(d));
    }
    return { format: 'dreamgym-scaling', version: 1, command: options.command, preset: options.preset, seeds: options.seeds, jobs: options.jobs, sizes, recordedNoise: options.overrides?.offline?.recordedNoise ?? RECORDED_NOISE, arms: SCALING_ARMS, domains: results, wallMs: performance.now() - started };
  } finally {
    await releaseDomains(pool, loaded);
  }
}

const cell = (i: Interval | undefined): string => (i ? `${pct(i.mean)} [${pct(i.low)}, ${pct(i.high)}]` : '-');
const points = (x: number): string => (Number.isFinite(x) ? `${x >= 0 ? '+' : ''}${(100 * x).toFixed(1)}` : 'n/a');

/** The table of one domain: a row per size. */
function domainLines(d: ScalingDomainResult): string[] {
  const lines = [
    `## ${d.name}${d.module ? ` (${d.module})` : ''}`,
    '',
    `| recorded episodes | log success % | log transitions | ${SCALING_ARMS.join(' | ')} | dreamgym (warm sft) - sft, points [95% CI] | s2r / real (warm sft) [95% CI] | real transitions: real (warm sft) / s2r |`,
    `| ---: | ---: | ---: | ${SCALING_ARMS.map(() => '---').join(' | ')} | --- | --- | --- |`,
  ];
  for (const p of d.points) {
    const head = `| ${p.recorded} | ${pct(p.log.successRate)} | ${Math.round(p.log.transitions)}`;
    if (!p.experiment) {
      lines.push(`${head} | ${SCALING_ARMS.map(() => 'n/a').join(' | ')} | n/a | n/a | n/a |`);
      continue;
    }
    const sft = armOf(p.experiment, 'sft');
    const dream = armOf(p.experiment, 'dreamgym (warm sft)');
    const real = armOf(p.experiment, 'real (warm sft)');
    const s2r = armOf(p.experiment, 's2r (warm sft), 10% real budget');
    const diff = sft && dream ? pairedDifference(dream, sft) : null;
    const ratio = s2r && real ? pairedRatio(s2r, real) : null;
    lines.push(
      `${head} | ${SCALING_ARMS.map((a) => cell(armOf(p.experiment, a)?.success)).join(' | ')} | ${diff ? `${points(diff.mean)} [${points(diff.low)}, ${points(diff.high)}]` : '-'} | ${ratio ? `${ratioText(ratio.value)} [${ratioText(ratio.low)}, ${ratioText(ratio.high)}]` : '-'} | ${real && s2r ? `${Math.round(real.realTransitions)} / ${Math.round(s2r.realTransitions)}` : '-'} |`,
    );
  }
  const skipped = d.points.filter((p) => p.skipped !== null);
  lines.push('');
  for (const p of skipped) lines.push(`N = ${p.recorded}: not run: ${p.skipped}.`);
  lines.push(
    d.cloningEnoughFrom === null
      ? 'Cloning alone is not enough at the largest size measured: an RL arm beats it there (paired 95% interval above 0).'
      : `No RL arm beats cloning alone from N = ${d.cloningEnoughFrom} on (no paired 95% interval above 0 at it or any larger size measured): cloning is enough there, whatever it reaches.`,
    `Cost: ${(d.costMs / 60000).toFixed(1)} core-minutes. Plot: ${plotName(d.name)}.`,
    '',
  );
  return lines;
}

/** The plot's file name for a domain. */
export function plotName(domain: string): string {
  return `${domain}-scaling.svg`;
}

/** Success against N (log scale), one line per arm with its 95% interval as bars, as a small SVG. */
export function scalingSvg(d: ScalingDomainResult, seeds: number): string {
  const W = 720;
  const H = 360;
  const pad = { l: 50, r: 250, t: 30, b: 40 };
  const ran = d.points.filter((p) => p.experiment !== null);
  const ns = d.points.map((p) => p.recorded);
  const lo = Math.log(Math.min(...ns));
  const hi = Math.log(Math.max(...ns));
  // 20 px inside the axes, so that the side-by-side intervals at the ends stay in the plot.
  const inner = W - pad.l - pad.r - 40;
  const x = (n: number): number => pad.l + 20 + (hi > lo ? (inner * (Math.log(n) - lo)) / (hi - lo) : inner / 2);
  const y = (v: number): number => pad.t + (H - pad.t - pad.b) * (1 - (Number.isFinite(v) ? Math.min(1, Math.max(0, v)) : 0));
  const colours = ['#1f77b4', '#ff7f0e', '#2ca02c', '#d62728'];
  const esc = (t: string): string => t.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
  const parts = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="sans-serif" font-size="12">`,
    `<rect width="${W}" height="${H}" fill="white"/>`,
    `<text x="${pad.l}" y="18">${esc(`${d.name}: held-out success vs recorded episodes (95% intervals, ${seeds} seed${seeds === 1 ? '' : 's'})`)}</text>`,
    `<line x1="${pad.l}" y1="${y(0)}" x2="${W - pad.r}" y2="${y(0)}" stroke="#444"/>`,
    `<line x1="${pad.l}" y1="${y(0)}" x2="${pad.l}" y2="${y(1)}" stroke="#444"/>`,
    ...[0, 0.25, 0.5, 0.75, 1].map((v) => `<text x="${pad.l - 8}" y="${y(v) + 4}" text-anchor="end">${(100 * v).toFixed(0)}%</text>`),
    ...ns.map((n) => `<text x="${x(n).toFixed(1)}" y="${H - 22}" text-anchor="middle">${n}</text>`),
    `<text x="${(pad.l + W - pad.r) / 2}" y="${H - 6}" text-anchor="middle">recorded episodes (log scale)</text>`,
  ];
  SCALING_ARMS.forEach((name, k) => {
    const c = colours[k % colours.length] as string;
    // Each arm a little to the side, so that intervals at one size do not hide each other.
    const dx = (k - (SCALING_ARMS.length - 1) / 2) * 4;
    const pts = ran.flatMap((p) => {
      const a = armOf(p.experiment, name);
      return a ? [{ n: p.recorded, s: a.success }] : [];
    });
    if (pts.length > 0) parts.push(`<polyline fill="none" stroke="${c}" stroke-width="2" points="${pts.map((p) => `${(x(p.n) + dx).toFixed(1)},${y(p.s.mean).toFixed(1)}`).join(' ')}"/>`);
    for (const p of pts) {
      const px = (x(p.n) + dx).toFixed(1);
      parts.push(`<line x1="${px}" y1="${y(p.s.low).toFixed(1)}" x2="${px}" y2="${y(p.s.high).toFixed(1)}" stroke="${c}"/>`, `<circle cx="${px}" cy="${y(p.s.mean).toFixed(1)}" r="3" fill="${c}"/>`);
    }
    parts.push(`<text x="${W - pad.r + 10}" y="${pad.t + 16 * k + 10}" fill="${c}">${esc(name)}</text>`);
  });
  parts.push('</svg>', '');
  return parts.join('\n');
}

/** A share of the steps in words: "half", "20% of". */
function noiseText(noise: number): string {
  return noise === 0.5 ? 'half' : `${+(100 * noise).toFixed(1)}% of`;
}

/** The files: scaling.md (a table per domain), scaling.json (every figure) and a plot per domain. */
export function scalingFiles(r: ScalingResult): Record<string, string> {
  const evalEpisodes = r.domains.flatMap((d) => d.points).find((p) => p.experiment)?.experiment?.evalEpisodes ?? 0;
  const lines = [
    `# Data scaling: held-out success % against recorded episodes, greedy, ${evalEpisodes} test tasks per seed in the real environment, ${r.seeds} seed${r.seeds === 1 ? '' : 's'} (95% intervals)`,
    '',
    `Command: \`${r.command}\` (preset ${r.preset}, ${r.jobs} job${r.jobs === 1 ? '' : 's'}); ${(r.wallMs / 60000).toFixed(1)} min in all.`,
    `The offline data at each size is that many episodes of the domain's goal-blind demonstrator taking a random admissible action at ${noiseText(r.recordedNoise)} the steps, successes and failures both kept (nothing from the goal-reading expert): behaviour cloning learns from it, the simulator is grounded on it alone and RL's tasks start from its tasks. dreamgym (warm sft) uses 0 real transitions; real (warm sft) the same number of updates in the real environment; s2r (warm sft) 10% of real's real transitions.`,
    '',
  ];
  for (const d of r.domains) lines.push(...domainLines(d));
  const files: Record<string, string> = {
    'scaling.md': lines.join('\n'),
    'scaling.json': `${JSON.stringify(r, (_k, v: unknown) => (typeof v === 'number' && !Number.isFinite(v) ? null : v), 2)}\n`,
  };
  for (const d of r.domains) files[plotName(d.name)] = scalingSvg(d, r.seeds);
  return files;
}

/** Writes the files into `dir` (an existing directory). */
export async function writeScalingFiles(dir: string, r: ScalingResult): Promise<string[]> {
  const files = scalingFiles(r);
  for (const [name, text] of Object.entries(files)) await writeFileAtomic(join(dir, name), text);
  return Object.keys(files);
}
