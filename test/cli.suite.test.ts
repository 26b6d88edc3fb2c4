import { mkdtemp, readdir, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { keptValidation, runSuite, selectionCorrelation, selectionLines, SUITE_ARMS, SUITE_DOMAINS, SUITE_TRAIN_EVAL, suiteBudgetText, suiteSizes, type SelectionCorrelation, type SuiteResult } from '../src/cli/suite.ts';
import type { ArmResult, ArmSeedResult, ExperimentResult } from '../src/train/experiment.ts';
import { cli } from './fixtures/cli.ts';

const LIBRARY = 'src/envs/example/library.ts';
let dir: string;
let counter: string;

/** A second tiny domain: press go as many times as the instruction says, then stop; with an expert and a goal-blind demonstrator. */
const COUNTER = `export const name = 'counter'; export const description = 'press go n times, then stop'; export const maxSteps = 6;
export function tasks({ split, count, seed }) { return Array.from({ length: count }, (_, i) => { const n = 1 + ((seed + i + (split === 'test' ? 1 : 0)) % 3); return { id: 'counter-' + split + '-' + seed + '-' + i, instruction: 'press go ' + n + ' times then stop', goal: { n } }; }); }
export function validateTask() { return { ok: true }; }
export function create() { return {
  reset(task) { this.n = 0; this.goal = task.goal.n; this.instruction = task.instruction; return { text: 'count 0', actions: ['go', 'stop'] }; },
  step(a) { if (a === 'go') this.n++; const done = a === 'stop' || this.n >= 5; return { observation: { text: 'count ' + this.n, actions: done ? [] : ['go', 'stop'] }, reward: done && a === 'stop' && this.n === this.goal ? 1 : 0, done }; },
  expertAction() { return this.n < this.goal ? 'go' : 'stop'; },
  demonstratorAction() { const want = Number(/go (\\d+) times/.exec(this.instruction)[1]); return this.n < want ? 'go' : 'stop'; } }; }`;

const TINY = ['--seeds', '1', '--iterations', '2', '--offline-episodes', '20', '--group-size', '4', '--tasks-per-iteration', '4', '--sft-epochs', '5', '--eval-episodes', '10', '--validation-tasks', '5', '--train-eval-episodes', '5', '--fidelity-episodes', '40'];

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'dreamgym-suite-'));
  counter = join(dir, 'counter.mjs');
  await writeFile(counter, COUNTER);
});

describe('experiment --suite (tiny settings)', () => {
  it('runs every arm on two module domains in worker threads and writes one table with success, dreamgym / real, fidelity, the simulator\'s claim and cost', async () => {
    const out = join(dir, 'suite');
    const res = await cli('experiment', '--suite', '--domains', 'library,counter', '--env-module', LIBRARY, '--env-module', counter, '--jobs', '2', ...TINY, '--probe-validation', '--out', out);
    expect(res.code, res.err).toBe(0);
    expect(res.out).toMatch(/^suite: library, counter; 1 seeds, preset quick, wall \d+\.\d s; wrote suite\.md, suite\.json to /);
    const table = await readFile(join(out, 'suite.md'), 'utf8');
    expect(table).toContain('| domain | zero-shot | sft | real | dreamgym | dreamgym (warm sft) | s2r (10% of real\'s real transitions) | dreamgym / real [95% CI] | next-state match (best trivial) | reward accuracy, steps answered (share declined) | random in sim / real: grounded; held-out | core-min |');
    expect(table).toMatch(/Command: `npx dreamgym experiment --suite --domains library,counter --env-module src\/envs\/example\/library\.ts --env-module \S+counter\.mjs --seeds 1 --preset quick --iterations 2 .* --probe-validation`/);
    for (const name of ['library', 'counter']) {
      expect(table).toMatch(new RegExp(`^\\| ${name} \\| (\\d+\\.\\d \\[\\d+\\.\\d, \\d+\\.\\d\\] \\| ){6}`, 'm'));
      // The simulator's reward accuracy on the steps it answers, and the share it declined.
      expect(table).toMatch(new RegExp(`^\\| ${name} \\| .* \\| \\d+\\.\\d \\(\\d+\\.\\d\\) \\| [^|]+; [^|]+ \\| \\d+\\.\\d \\|$`, 'm'));
      expect(table).toMatch(new RegExp(`^\\| ${name} \\| \\d+\\.\\d / \\d+\\.\\d \\| \\d+\\.\\d / \\d+\\.\\d \\| \\d+\\.\\d / \\d+\\.\\d \\|$`, 'm'));
      expect(table).toMatch(new RegExp(`^\\| ${name} \\| \`[^\`]+\` \\| \\d+ \\| \\d+\\.\\d \\|$`, 'm'));
    }
    const result = JSON.parse(await readFile(join(out, 'suite.json'), 'utf8')) as SuiteResult;
    expect(result.domains.map((d) => d.name)).toEqual(['library', 'counter']);
    for (const d of result.domains) {
      expect(d.experiment.arms.map((a) => a.name)).toEqual([...SUITE_ARMS]);
      expect(d.experiment.arms.every((a) => a.seeds.length === 1)).toBe(true);
      expect(d.fidelity.rows.map((r) => r.sim)).toEqual(['retrieval', 'echo', 'majority']);
      expect(d.fidelity.falseSuccess.every((r) => r.policy === 'random')).toBe(true);
      expect(d.fidelity.rows[0]?.testEpisodes).toBe(10);
      // Behaviour cloning on a domain with a demonstrator learns it: the arms ran, not a placeholder.
      expect(d.experiment.arms.find((a) => a.name === 'real')?.realTransitions).toBeGreaterThan(0);
      expect(d.experiment.arms.find((a) => a.name === 'dreamgym')?.realTransitions).toBe(0);
    }
    expect(result.domains[0]?.experiment.arms.find((a) => a.name === 'sft')?.success.mean).toBe(1);
    // Every policy a synthetic phase validated was also evaluated in the real environment, and the table gives each criterion's rank correlation with it.
    const probed = result.domains.flatMap((d) => d.experiment.arms.flatMap((a) => a.seeds.flatMap((x) => x.probes ?? [])));
    expect(probed.length).toBe(8);
    expect(probed.every((p) => p.real >= 0 && p.real <= 1 && p.replayed !== undefined && p.prefix !== undefined)).toBe(true);
    expect(table).toMatch(/Model selection: Spearman rank correlation with real success over every policy a synthetic phase validated \(arms x seeds x validation points: 8\)/);
    expect(table).toMatch(/^\| all \| 8 \| (-?\d\.\d\d|n\/a) \| (-?\d\.\d\d|n\/a) \|$/m);
    expect(table).toMatch(/^Real held-out success of the policy each criterion keeps, mean over 4 synthetic phases: simulator \d+\.\d%, recorded \d+\.\d%, the best validated policy \d+\.\d%\.$/m);
    expect((result as SuiteResult & { selection: SelectionCorrelation }).selection).toMatchObject({ basis: 'validation points', policies: 8 });
    // Fourteen runs and their evaluations in two worker threads: a minute alone on two cores, more beside other work.
  }, 240_000);

  it('an unknown domain, or a suite module that is not there: one line, nothing written', async () => {
    const out = join(dir, 'bad');
    const res = await cli('experiment', '--suite', '--domains', 'library,nowhere', '--env-module', LIBRARY, ...TINY, '--out', out);
    expect(res.code).toBe(1);
    expect(res.err).toMatch(/unknown domain "nowhere": the suite's domains are shop, household, .*dungeon, library; nothing written/);
    expect(await readdir(out)).toEqual([]);
    await expect(runSuite({ suite: [{ name: 'gone', module: 'src/envs/gone/index.ts' }], seeds: 1, preset: 'quick', jobs: 1, command: 'x' })).rejects.toThrow(/the suite's domain gone has no module at src\/envs\/gone\/index\.ts: leave it out with --domains/);
    const arm = await cli('experiment', '--suite', '--arm', 'sft', '--out', out);
    expect(arm.err).toMatch(/--suite runs every domain of the suite on its own arms: drop --env and --arm/);
    const domains = await cli('experiment', '--env', 'shop', '--domains', 'shop', '--out', out);
    expect(domains.err).toMatch(/--domains applies to --suite: add --suite/);
  });

  it("without --probe-validation: no policy is evaluated at its validation points and held-out demonstrations are recorded only for the warm start's criterion; the suite's sizes hold under the size options", async () => {
    const r = await runSuite({
      domains: ['counter'],
      extraModules: [counter],
      seeds: 1,
      preset: 'quick',
      jobs: 1,
      sizes: { iterations: 2, groupSize: 4, offline: { expertEpisodes: 30, noisyEpisodes: 10 }, evalEpisodes: 10, validation: { every: 1 } },
      fidelity: { trainEpisodes: 40, testEpisodes: 10, falseSuccessEpisodes: 10 },
      command: 'x',
    });
    const arms = r.domains[0]?.experiment.arms ?? [];
    const synthetic = arms.filter((a) => a.config?.mode === 'dreamgym' || a.config?.mode === 's2r');
    expect(synthetic.length).toBe(3);
    for (const a of synthetic) {
      for (const s of a.seeds) {
        expect(s.probes).toBeUndefined();
        expect(s.validation?.checks?.length).toBeGreaterThan(0);
        if (a.config?.warmStart === 'sft') {
          // After cloning the recorded criterion picks the kept policy (the default), scored on demonstrations recorded for it.
          expect(s.validation?.criterion).toBe('recorded');
          expect(s.validation?.recorded).toBeGreaterThan(0);
          expect(s.validation?.checks?.every((c) => c.prefix !== undefined && c.perEpisode?.length === s.validation?.recorded)).toBe(true);
        } else {
          // From scratch nothing scored the policy on recorded successes: none were recorded.
          expect(s.validation?.checks?.every((c) => c.replayed === undefined && c.prefix === undefined)).toBe(true);
          expect(s.validation?.recorded).toBeUndefined();
        }
      }
    }
    // The suite's validation tasks stay under --validation-every (a merge field by field), and its other sizes apply.
    const dreamgym = arms.find((a) => a.name === 'dreamgym');
    expect(dreamgym?.config).toMatchObject({ iterations: 2, tasksPerIteration: 4, sft: { epochs: 10 }, validation: { tasks: 25, every: 1 } });
    expect(arms.find((a) => a.name === 'sft')?.seeds[0]?.train.episodes).toBe(SUITE_TRAIN_EVAL);
    expect(suiteSizes({ validation: { criterion: 'recorded' }, iterations: 3 })).toMatchObject({ iterations: 3, tasksPerIteration: 4, validation: { tasks: 25, criterion: 'recorded' } });
    expect(suiteBudgetText()).toBe(`iterations 15, tasksPerIteration 4, sft.epochs 10, validation.tasks 25, train-eval episodes ${SUITE_TRAIN_EVAL}`);
  }, 120_000);

  it('the suite names the two built-in domains and the five module domains', () => {
    expect(SUITE_DOMAINS.map((d) => d.name)).toEqual(['shop', 'household', 'files', 'tickets', 'calendar', 'travel', 'dungeon']);
    expect(SUITE_DOMAINS.filter((d) => d.module !== undefined).map((d) => d.module)).toEqual(['files', 'tickets', 'calendar', 'travel', 'dungeon'].map((n) => `src/envs/${n}/index.ts`));
  });

  it('selectionCorrelation: the criteria against real success over validated policies, or over kept ones for a suite that probed none', () => {
    const seed = (id: number, real: number, extra: Partial<ArmSeedResult>) => ({ seed: id, heldOut: { successRate: real }, validation: null, ...extra }) as unknown as ArmSeedResult;
    const arm = (name: string, seeds: ArmSeedResult[]) => ({ name, seeds }) as unknown as ArmResult;
    const domain = (name: string, arms: ArmResult[]) => ({ name, experiment: { arms } as unknown as ExperimentResult });
    // The simulator's figure runs against real success, the replayed share with it.
    const probes = [0.9, 0.7, 0.5, 0.3].map((sim, i) => ({ iteration: 3 * i, success: sim, replayed: 0, prefix: 0.1 * (i + 1), agreement: 0.5, real: 0.2 * (i + 1) }));
    const c = selectionCorrelation([domain('lists', [arm('dreamgym', [seed(0, 0.8, { probes })])])]);
    expect(c).toMatchObject({ basis: 'validation points', policies: 4, simulator: -1, recorded: 1 });
    expect(c.keptReal).toEqual({ runs: 1, simulator: 0.2, recorded: 0.8, best: 0.8 });
    expect(c.perDomain).toEqual([{ domain: 'lists', policies: 4, simulator: -1, recorded: 1 }]);
    // A suite without probes (recorded before they were measured): the kept policies' claims against final success.
    const kept = [0.9, 0.6, 0.3].map((claim, i) => seed(i, 0.1 + 0.3 * i, { validation: { tasks: 5, start: claim, end: claim, kept: 'end' } }));
    const old = selectionCorrelation([domain('lists', [arm('dreamgym', kept), arm('sft', [seed(0, 1, {})])])]);
    expect(old).toMatchObject({ basis: 'kept policies', policies: 3, simulator: -1, keptReal: null });
    expect(old.recorded).toBeNaN();
    expect(selectionLines(old).join('\n')).toMatch(/over the policy each synthetic phase kept \(3\), against the run's final held-out success/);
  });

  it("keptValidation: the simulator's figure for the policy a phase kept", () => {
    expect(keptValidation({ tasks: 5, start: 0.2, end: 0.6, kept: 'end' })).toBe(0.6);
    expect(keptValidation({ tasks: 5, start: 0.2, end: 0.1, kept: 'start' })).toBe(0.2);
    expect(keptValidation({ tasks: 5, start: 0.2, end: 0.1, best: { iteration: 3, success: 0.8 }, kept: 'between' })).toBe(0.8);
  });
});
