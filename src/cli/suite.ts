/**
 * `dreamgym experiment --suite`: the yardstick over domains of different shapes. For every domain
 * (the built-in ones and the environment modules of {@link SUITE_DOMAINS}, through the public
 * module contract), the arms of {@link SUITE_ARMS} over seeds, evaluated greedy on held-out tasks
 * in the real environment, and the simulator's fidelity; one table (suite.md) and every figure
 * (suite.json). Domains run at once, their jobs sharing `--jobs` worker threads.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { DomainName } from '../core/types.ts';
import { getEnvSpec, isBuiltinEnv, registerEnvSpec, unregisterEnvSpec } from '../envs/registry.ts';
import type { AnyEnvSpec } from '../envs/spec.ts';
import type { PresetName, TrainingConfigInput } from '../train/config.ts';
import { runExperiment, type ArmResult, type ExperimentResult } from '../train/experiment.ts';
import { measureFidelityTable, type FalseSuccessRow, type FidelityTable } from '../train/fidelity.ts';
import { selectionCorrelation, selectionLines } from '../train/selection.ts';
import { keptValidation } from '../train/validation.ts';
import { ExperimentWorkerPool } from './experiment-pool.ts';
import type { FidelityJob } from './experiment-worker.ts';
import { loadEnvModule, type LoadedEnvModule } from './module-host.ts';
import { writeFileAtomic } from './output.ts';
import { useFastestNodeBackend } from './tf-node.ts';

/** A domain of the suite: a built-in environment, or an environment module (a path from the repository root). */
export interface SuiteDomain {
  name: string;
  module?: string;
}

/** The suite's domains, in table order. */
export const SUITE_DOMAINS: readonly SuiteDomain[] = [
  { name: 'shop' },
  { name: 'household' },
  { name: 'files', module: 'src/envs/files/index.ts' },
  { name: 'tickets', module: 'src/envs/tickets/index.ts' },
  { name: 'calendar', module: 'src/envs/calendar/index.ts' },
  { name: 'travel', module: 'src/envs/travel/index.ts' },
  { name: 'dungeon', module: 'src/envs/dungeon/index.ts' },
];

/** The arms every domain runs (see `EXPERIMENT_ARMS`); s2r's real budget is 10% of what `real` used. */
export const SUITE_ARMS = ['zero-shot', 'sft', 'real', 'dreamgym', 'dreamgym (warm sft)', 's2r, 10% real budget'] as const;

/** The arms whose policy is trained inside the simulator (their validation is the simulator's claim). */
const SIMULATOR_ARMS = ['dreamgym', 'dreamgym (warm sft)', 's2r, 10% real budget'] as const;

/**
 * The suite's sizes on top of the preset (the size options override them, field by field): seven
 * domains' three seeds in 45 minutes on 2 cores (`--jobs 2`), each field's why beside it.
 */
const SUITE_BUDGET: Partial<TrainingConfigInput> = {
  // RL iterations: the preset's 45 would triple every RL arm.
  iterations: 15,
  // Half the preset's 8 tasks an iteration: the rollouts are most of every RL arm's cost.
  tasksPerIteration: 4,
  // Half the quick preset's 20 epochs: behaviour cloning was a third of the suite's cost.
  sft: { epochs: 10 },
  // Half the default 50: validating inside the simulator is about a sixth of a from-scratch synthetic arm.
  validation: { tasks: 25 },
};

/** Training tasks each run is evaluated on (the memorization check): suite.md does not show them, suite.json keeps them. */
export const SUITE_TRAIN_EVAL = 20;

/** The suite's sizes under `sizes`: `sizes` wins, one level deep (`--validation-criterion` keeps the suite's validation tasks). */
export function suiteSizes(sizes: Partial<TrainingConfigInput> = {}): Partial<TrainingConfigInput> {
  const out: Record<string, unknown> = { ...SUITE_BUDGET };
  for (const [k, v] of Object.entries(sizes)) {
    const base = out[k];
    const plain = (x: unknown): x is Record<string, unknown> => x !== null && typeof x === 'object' && !Array.isArray(x);
    out[k] = plain(base) && plain(v) ? { ...base, ...v } : v;
  }
  return out as Partial<TrainingConfigInput>;
}

/** The fidelity measurement of each domain: the retrieval simulator against trivial ones, and a random policy's false success. */
export const SUITE_FIDELITY: Readonly<SuiteFidelitySizes> = { trainEpisodes: 200, testEpisodes: 50, falseSuccessEpisodes: 50, seed: 0 };

/** The sizes of a domain's fidelity measurement. */
export interface SuiteFidelitySizes {
  trainEpisodes: number;
  testEpisodes: number;
  falseSuccessEpisodes: number;
  seed: number;
}

/** `iterations 15, tasksPerIteration 4, sft.epochs 10, ...`: the budget as the option help says it. */
export function suiteBudgetText(): string {
  const words = (prefix: string, o: object): string[] =>
    Object.entries(o).flatMap(([k, v]) => (v !== null && typeof v === 'object' ? words(`${prefix}${k}.`, v as object) : [`${prefix}${k} ${JSON.stringify(v)}`]));
  return [...words('', SUITE_BUDGET), `train-eval episodes ${SUITE_TRAIN_EVAL}`].join(', ');
}

/** Thrown for a suite that cannot run as asked (an unknown domain, a missing module); nothing is written. */
export class SuiteError extends Error {
  override name = 'SuiteError';
}

/** One domain's figures. */
export interface SuiteDomainResult {
  name: string;
  /** The module's path (from where the command ran), or null for a built-in domain. */
  module: string | null;
  experiment: ExperimentResult;
  fidelity: FidelityTable;
  /** Core-milliseconds its runs took (each arm's wall time per seed, summed) and its fidelity measurement. */
  cost: { armsMs: number; fidelityMs: number };
}

export interface SuiteResult {
  format: 'dreamgym-suite';
  version: 1;
  command: string;
  preset: PresetName;
  seeds: number;
  jobs: number;
  arms: readonly string[];
  fidelity: SuiteFidelitySizes;
  domains: SuiteDomainResult[];
  wallMs: number;
}

/** What the suite and the scaling experiment are both given: which domains, how many seeds, which preset, how many worker threads. */
export interface DomainExperimentOptions {
  /** Names of the suite's domains and of the added modules to run (each experiment has its default). */
  domains?: readonly string[];
  /** Environment modules added to the suite's domains (paths). */
  extraModules?: readonly string[];
  /** The suite's domain list (default {@link SUITE_DOMAINS}). */
  suite?: readonly SuiteDomain[];
  seeds: number;
  preset: PresetName;
  jobs: number;
  /** Training tasks each run is evaluated on (each experiment has its default; the suite's is {@link SUITE_TRAIN_EVAL}). */
  trainEvalEpisodes?: number;
  /** Module call limit in milliseconds (the main thread's loads; worker threads use the default). */
  envTimeoutMs?: number;
  command: string;
  signal?: AbortSignal;
  onProgress?: (text: string) => void;
}

/** Options of {@link runSuite}: `domains` defaults to all. */
export interface SuiteOptions extends DomainExperimentOptions {
  /** Size overrides on top of {@link SUITE_BUDGET}. */
  sizes?: Partial<TrainingConfigInput>;
  /** The fidelity measurement's sizes (default {@link SUITE_FIDELITY}). */
  fidelity?: Partial<SuiteFidelitySizes>;
  /**
   * Evaluate every policy a synthetic phase validates in the real environment, and score it on
   * held-out recorded successes (the "Model selection" table by validation point); without it the
   * table ranks each phase's kept policy by the simulator's figure alone.
   */
  probeValidation?: boolean;
}

/** The repository root, where the suite's module paths start. */
const ROOT = fileURLToPath(new URL('../../', import.meta.url));

export { selectionCorrelation, selectionLines, selectionPoints, type SelectionCorrelation, type SelectionPoint } from '../train/selection.ts';
export { keptValidation } from '../train/validation.ts';

/** A loaded domain: its spec, and its module's path for worker threads. */
export interface ReadyDomain {
  name: string;
  spec: AnyEnvSpec;
  modulePath: string | null;
  shownPath: string | null;
}

/**
 * Picks and loads the domains (every module checked, before any work): the suite's list and the
 * added modules, filtered by `domains`. Throws a {@link SuiteError} naming an unknown domain or a
 * missing module file.
 */
export function readyDomains(options: Pick<SuiteOptions, 'domains' | 'extraModules' | 'suite' | 'envTimeoutMs'>, loaded: LoadedEnvModule[]): ReadyDomain[] {
  const suite = options.suite ?? SUITE_DOMAINS;
  const wanted = options.domains;
  const ready: ReadyDomain[] = [];
  const load = (path: string, shown: string): ReadyDomain => {
    const m = loadEnvModule(path, options.envTimeoutMs !== undefined ? { callTimeoutMs: options.envTimeoutMs, loadTimeoutMs: options.envTimeoutMs } : {});
    loaded.push(m);
    registerEnvSpec(m.spec);
    return { name: m.spec.name, spec: m.spec, modulePath: m.path, shownPath: shown };
  };
  for (const path of options.extraModules ?? []) ready.push(load(path, path));
  const extraNames = ready.map((d) => d.name);
  const known = [...suite.map((d) => d.name), ...extraNames];
  const unknown = (wanted ?? []).filter((n) => !known.includes(n));
  if (unknown.length > 0) throw new SuiteError(`unknown domain ${JSON.stringify(unknown[0])}: the suite's domains are ${known.join(', ')}`);
  const picked = (name: string): boolean => wanted === undefined || wanted.includes(name);
  const fromSuite: ReadyDomain[] = [];
  for (const d of suite) {
    if (!picked(d.name) || extraNames.includes(d.name)) continue;
    if (d.module === undefined) {
      if (!isBuiltinEnv(d.name)) throw new SuiteError(`the suite's domain ${d.name} is neither built in nor a module`);
      fromSuite.push({ name: d.name, spec: getEnvSpec(d.name), modulePath: null, shownPath: null });
      continue;
    }
    const path = join(ROOT, d.module);
    if (!existsSync(path)) throw new SuiteError(`the suite's domain ${d.name} has no module at ${d.module}: leave it out with --domains`);
    const r = load(path, d.module);
    if (r.name !== d.name) throw new SuiteError(`the suite's module ${d.module} is named ${JSON.stringify(r.name)}, not ${JSON.stringify(d.name)}`);
    fromSuite.push(r);
  }
  const all = [...fromSuite, ...ready.filter((d) => picked(d.name))];
  if (all.length === 0) throw new SuiteError('no domain to run');
  return all;
}

/** The data the fidelity measurement builds its simulator from: near-expert and random episodes, or the demonstrator's where there is no expert. */
function fidelityPolicy(spec: AnyEnvSpec): string {
  if (spec.hasExpert !== false) return 'noisy:0.3,noisy:1';
  return spec.demonstrator ? 'demonstrator:0.3,noisy:1' : 'noisy:1';
}

/** Runs the suite; the caller writes {@link suiteFiles}. Modules are loaded here and let go at the end. */
export async function runSuite(options: SuiteOptions): Promise<SuiteResult> {
  const started = performance.now();
  const loaded: LoadedEnvModule[] = [];
  const pool = options.jobs > 1 ? new ExperimentWorkerPool(options.jobs) : null;
  try {
    const domains = readyDomains(options, loaded);
    await useFastestNodeBackend();
    const fidelitySizes = { ...SUITE_FIDELITY, ...options.fidelity };
    const overrides = suiteSizes(options.sizes);
    const one = async (d: ReadyDomain): Promise<SuiteDomainResult> => {
      const job: FidelityJob = {
        env: d.name as DomainName,
        ...(d.modulePath !== null ? { envModule: d.modulePath } : {}),
        options: { ...fidelitySizes, policy: fidelityPolicy(d.spec), baselines: ['echo', 'majority'], falseSuccessPolicies: ['random'], goalBlind: false },
      };
      const measure = async (): Promise<FidelityTable> => (pool ? pool.fidelity(job, options.signal) : measureFidelityTable(d.spec, job.options));
      const fidelity = measure().then((f) => {
        options.onProgress?.(`${d.name}: fidelity measured`);
        return f;
      });
      // A failed experiment must not leave the fidelity measurement's rejection unhandled.
      fidelity.catch(() => undefined);
      const experiment = await runExperiment({
        ...(options.probeValidation === true ? { probeValidation: true } : {}),
        env: d.name as DomainName,
        ...(d.modulePath !== null ? { envModule: d.modulePath } : {}),
        seeds: options.seeds,
        preset: options.preset,
        arms: SUITE_ARMS,
        overrides,
        concurrency: options.jobs,
        ...(pool ? { runner: pool.run } : {}),
        command: options.command,
        trainEvalEpisodes: options.trainEvalEpisodes ?? SUITE_TRAIN_EVAL,
        ...(options.signal ? { signal: options.signal } : {}),
        ...(options.onProgress ? { onProgress: options.onProgress } : {}),
      });
      const f = await fidelity;
      return {
        name: d.name,
        module: d.shownPath,
        experiment,
        fidelity: f,
        cost: { armsMs: experiment.arms.reduce((s, a) => s + a.seeds.reduce((t, x) => t + x.wallMs, 0), 0), fidelityMs: f.ms },
      };
    };
    // With worker threads the domains run at once (their jobs queue for the threads); on this thread, one after another.
    let results: SuiteDomainResult[];
    if (pool) {
      results = await Promise.all(domains.map(one));
    } else {
      results = [];
      for (const d of domains) results.push(await one(d));
    }
    return {
      format: 'dreamgym-suite',
      version: 1,
      command: options.command,
      preset: options.preset,
      seeds: options.seeds,
      jobs: options.jobs,
      arms: SUITE_ARMS,
      fidelity: fidelitySizes,
      domains: results,
      wallMs: performance.now() - started,
    };
  } finally {
    await releaseDomains(pool, loaded);
  }
}

/** Ends the worker pool and lets go of the modules {@link readyDomains} loaded. */
export async function releaseDomains(pool: ExperimentWorkerPool | null, loaded: readonly LoadedEnvModule[]): Promise<void> {
  await pool?.close();
  for (const m of loaded) {
    unregisterEnvSpec(m.spec);
    await m.dispose();
  }
}

/** A rate as a percentage with one decimal, `n/a` when not finite. */
export const pct = (x: number): string => (Number.isFinite(x) ? (100 * x).toFixed(1) : 'n/a');
/** A ratio with two decimals; `inf` and `n/a` for its undefined cases. */
export const ratioText = (x: number): string => (Number.isNaN(x) ? 'n/a' : x === Number.POSITIVE_INFINITY ? 'inf' : x.toFixed(2));


/** The false-success row of `policy` on `group` over all task types (the `all` row where there are several). */
function falseSuccessOf(rows: readonly FalseSuccessRow[], policy: string, group: FalseSuccessRow['tasks']): FalseSuccessRow | undefined {
  const mine = rows.filter((r) => r.policy === policy && r.tasks === group);
  return mine.find((r) => r.taskType === 'all') ?? (mine.length === 1 ? mine[0] : undefined);
}

const armOf = (d: SuiteDomainResult, name: string): ArmResult | undefined => d.experiment.arms.find((a) => a.name === name);

/** Kinds of action shown per domain in the next-state breakdown. */
const KINDS_SHOWN = 6;

/** The suite's files: suite.md (the table) and suite.json (every figure). */
function suiteFiles(r: SuiteResult): Record<string, string> {
  const evalEpisodes = r.domains[0]?.experiment.evalEpisodes ?? 0;
  const armHeads = SUITE_ARMS.map((a) => (a === 's2r, 10% real budget' ? 's2r (10% of real\'s real transitions)' : a));
  const lines = [
    `# Domain suite: held-out success %, greedy, ${evalEpisodes} test tasks per seed in the real environment, ${r.seeds} seed${r.seeds === 1 ? '' : 's'} (95% intervals)`,
    '',
    `Command: \`${r.command}\` (preset ${r.preset}, ${r.jobs} job${r.jobs === 1 ? '' : 's'}); ${(r.wallMs / 60000).toFixed(1)} min in all.`,
    `Fidelity: the retrieval simulator built from ${r.fidelity.trainEpisodes} train episodes (near-expert and random), measured on ${r.fidelity.testEpisodes} held-out test episodes; "random in sim / real": a random policy's success inside the simulator and in the real environment, ${r.fidelity.falseSuccessEpisodes} episodes each on tasks whose data built it (grounded) and on held-out ones.`,
    '',
    `| domain | ${armHeads.join(' | ')} | dreamgym / real [95% CI] | next-state match (best trivial) | reward accuracy, steps answered (share declined) | random in sim / real: grounded; held-out | core-min |`,
    `| --- | ${SUITE_ARMS.map(() => '---').join(' | ')} | --- | --- | --- | --- | ---: |`,
  ];
  for (const d of r.domains) {
    const cells = SUITE_ARMS.map((name) => {
      const a = armOf(d, name);
      return a ? `${pct(a.success.mean)} [${pct(a.success.low)}, ${pct(a.success.high)}]` : '-';
    });
    const c = d.experiment.comparisons.find((x) => x.name.startsWith('dreamgym / real (from scratch)'));
    const [model, ...trivial] = d.fidelity.rows;
    const best = Math.max(...trivial.map((t) => t.nextStateMatch).filter((x) => Number.isFinite(x)));
    const fs = (g: FalseSuccessRow['tasks']): string => {
      const row = falseSuccessOf(d.fidelity.falseSuccess, 'random', g);
      return row ? `${pct(row.simSuccess)} / ${pct(row.realSuccess)}` : 'n/a';
    };
    lines.push(
      `| ${d.name} | ${cells.join(' | ')} | ${c ? `${ratioText(c.value)} [${ratioText(c.low)}, ${ratioText(c.high)}]` : '-'} | ${model ? `${pct(model.nextStateMatch)} (${pct(best)})` : '-'} | ${model ? `${pct(model.answeredRewardAccuracy)} (${pct(model.declinedShare)})` : '-'} | ${fs('grounded')}; ${fs('held-out')} | ${((d.cost.armsMs + d.cost.fidelityMs) / 60000).toFixed(1)} |`,
    );
  }
  lines.push(
    '',
    "The simulator's claim next to the real figure, per arm trained inside it: greedy success inside the simulator on recorded tasks for the policy the synthetic phase ended with (its validation), and held-out success in the real environment (mean over seeds, %):",
    '',
    `| domain | ${SIMULATOR_ARMS.map((a) => `${a}: simulator / real`).join(' | ')} |`,
    `| --- | ${SIMULATOR_ARMS.map(() => '---').join(' | ')} |`,
  );
  for (const d of r.domains) {
    const cells = SIMULATOR_ARMS.map((name) => {
      const a = armOf(d, name);
      if (!a) return '-';
      const claims = a.seeds.flatMap((s) => (s.validation?.end !== undefined ? [keptValidation(s.validation)] : []));
      const claim = claims.length > 0 ? claims.reduce((x, y) => x + y, 0) / claims.length : Number.NaN;
      return `${pct(claim)} / ${pct(a.success.mean)}`;
    });
    lines.push(`| ${d.name} | ${cells.join(' | ')} |`);
  }
  lines.push(...selectionLines(selectionCorrelation(r.domains)));
  lines.push('', `Next-state match by kind of action (the action's template; "again": taken before in the episode), the ${KINDS_SHOWN} most frequent kinds per domain:`, '', '| domain | kind of action | steps | next-state match % |', '| --- | --- | ---: | ---: |');
  for (const d of r.domains) {
    for (const k of (d.fidelity.rows[0]?.nextStateByKind ?? []).slice(0, KINDS_SHOWN)) lines.push(`| ${d.name} | \`${k.kind}\` | ${k.steps} | ${pct(k.match)} |`);
  }
  lines.push('', 'Cost per domain (core-minutes: each run\'s wall time on its thread, summed; beginnings shared between arms counted once):', '', `| domain | ${SUITE_ARMS.join(' | ')} | fidelity |`, `| --- | ${SUITE_ARMS.map(() => '---:').join(' | ')} | ---: |`);
  for (const d of r.domains) {
    const cells = SUITE_ARMS.map((name) => {
      const a = armOf(d, name);
      return a ? (a.seeds.reduce((t, x) => t + x.wallMs, 0) / 60000).toFixed(1) : '-';
    });
    lines.push(`| ${d.name} | ${cells.join(' | ')} | ${(d.cost.fidelityMs / 60000).toFixed(1)} |`);
  }
  lines.push('');
  return {
    'suite.md': lines.join('\n'),
    'suite.json': `${JSON.stringify({ ...r, selection: selectionCorrelation(r.domains) }, (_k, v: unknown) => (typeof v === 'number' && !Number.isFinite(v) ? null : v), 2)}\n`,
  };
}

/** Writes the suite's files into `dir` (an existing directory). */
export async function writeSuiteFiles(dir: string, r: SuiteResult): Promise<string[]> {
  const files = suiteFiles(r);
  for (const [name, text] of Object.entries(files)) await writeFileAtomic(join(dir, name), text);
  return Object.keys(files);
}
