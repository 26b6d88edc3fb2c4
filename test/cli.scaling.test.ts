import { mkdtemp, readdir, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { checkSizes, cloningEnoughFrom, SCALING_ARMS, ScalingError, type ScalingPoint, type ScalingResult } from '../src/cli/scaling.ts';
import { cli } from './fixtures/cli.ts';

let dir: string;
let counter: string;

/** A tiny domain: press go as many times as the instruction says, then stop; with an expert and a goal-blind demonstrator. */
const COUNTER = `export const name = 'counter'; export const description = 'press go n times, then stop'; export const maxSteps = 6;
export function tasks({ split, count, seed }) { return Array.from({ length: count }, (_, i) => { const n = 1 + ((seed + i + (split === 'test' ? 1 : 0)) % 3); return { id: 'counter-' + split + '-' + seed + '-' + i, instruction: 'press go ' + n + ' times then stop', goal: { n } }; }); }
export function validateTask() { return { ok: true }; }
export function create() { return {
  reset(task) { this.n = 0; this.goal = task.goal.n; this.instruction = task.instruction; return { text: 'count 0', actions: ['go', 'stop'] }; },
  step(a) { if (a === 'go') this.n++; const done = a === 'stop' || this.n >= 5; return { observation: { text: 'count ' + this.n, actions: done ? [] : ['go', 'stop'] }, reward: done && a === 'stop' && this.n === this.goal ? 1 : 0, done }; },
  expertAction() { throw new Error('the expert reads the goal: recorded episodes must not ask it'); },
  demonstratorAction() { const want = Number(/go (\\d+) times/.exec(this.instruction)[1]); return this.n < want ? 'go' : 'stop'; } }; }`;

const TINY = ['--seeds', '1', '--iterations', '2', '--group-size', '4', '--tasks-per-iteration', '4', '--sft-epochs', '5', '--eval-episodes', '10', '--validation-tasks', '5', '--train-eval-episodes', '5'];

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'dreamgym-scaling-'));
  counter = join(dir, 'counter.mjs');
  await writeFile(counter, COUNTER);
});

describe('experiment --scaling (tiny settings)', () => {
  it('runs the four arms at every size on recorded episodes only and writes a table and a plot per domain', async () => {
    const out = join(dir, 'scaling');
    const res = await cli('experiment', '--scaling', '--domains', 'counter', '--env-module', counter, '--recorded-sizes', '12,6', '--jobs', '1', ...TINY, '--out', out);
    expect(res.code, res.err).toBe(0);
    expect(res.out).toMatch(/^scaling: counter; sizes 6, 12; 1 seeds, preset quick, wall \d+\.\d s; wrote scaling\.md, scaling\.json, counter-scaling\.svg to /);
    expect((await readdir(out)).sort()).toEqual(['counter-scaling.svg', 'scaling.json', 'scaling.md']);
    const table = await readFile(join(out, 'scaling.md'), 'utf8');
    expect(table).toMatch(/Command: `npx dreamgym experiment --scaling --domains counter --env-module \S+counter\.mjs --recorded-sizes 12,6 --seeds 1 --preset quick --iterations 2 /);
    expect(table).toContain(`| recorded episodes | log success % | log transitions | ${SCALING_ARMS.join(' | ')} |`);
    expect(table).toContain('taking a random admissible action at half the steps');
    const result = JSON.parse(await readFile(join(out, 'scaling.json'), 'utf8')) as ScalingResult;
    const d = result.domains[0];
    expect(d?.name).toBe('counter');
    expect(d?.points.map((p) => p.recorded)).toEqual([6, 12]);
    for (const p of d?.points ?? []) {
      // The log is what the size says, of mixed outcomes.
      expect(p.log.episodes).toBe(p.recorded);
      if (p.experiment === null) {
        expect(p.skipped).toMatch(/nothing behaviour cloning learns from/);
        expect(table).toMatch(new RegExp(`^\\| ${p.recorded} \\| 0\\.0 \\| \\d+ \\| n/a \\|`, 'm'));
        continue;
      }
      expect(p.experiment.arms.map((a) => a.name).sort()).toEqual([...SCALING_ARMS].sort());
      for (const a of p.experiment.arms) {
        // Every arm's offline data is the N recorded episodes' transitions, nothing more.
        expect(a.offlineTransitions).toBe(p.log.transitions);
        expect(a.success.low).toBeLessThanOrEqual(a.success.mean);
        expect(a.success.high).toBeGreaterThanOrEqual(a.success.mean);
      }
      const arm = (name: string) => p.experiment?.arms.find((a) => a.name === name);
      expect(arm('dreamgym (warm sft)')?.realTransitions).toBe(0);
      expect(arm('real (warm sft)')?.realTransitions).toBeGreaterThan(0);
      // s2r's real budget: 10% of what real (warm sft) used.
      expect(arm('s2r (warm sft), 10% real budget')?.realTransitions).toBeLessThanOrEqual(Math.max(1, Math.round(0.1 * (arm('real (warm sft)')?.realTransitions ?? 0))));
      expect(table).toMatch(new RegExp(`^\\| ${p.recorded} \\| \\d+\\.\\d \\| ${Math.round(p.log.transitions)} \\| (\\d+\\.\\d \\[\\d+\\.\\d, \\d+\\.\\d\\] \\| ){4}`, 'm'));
    }
    expect(d?.points.some((p) => p.experiment !== null)).toBe(true);
    expect(d?.points.some((p) => p.log.successRate > 0 && p.log.successRate < 1)).toBe(true);
    const svg = await readFile(join(out, 'counter-scaling.svg'), 'utf8');
    expect(svg).toMatch(/^<svg /);
    for (const name of SCALING_ARMS) expect(svg).toContain(`>${name.replace(/&/g, '&amp;')}</text>`);
    expect(svg).toContain('recorded episodes (log scale)');
  });

  it('records every size at the --recorded-noise given', async () => {
    const out = join(dir, 'scaling-clean');
    const res = await cli('experiment', '--scaling', '--domains', 'counter', '--env-module', counter, '--recorded-sizes', '6', '--recorded-noise', '0', '--jobs', '1', ...TINY, '--out', out);
    expect(res.code, res.err).toBe(0);
    const result = JSON.parse(await readFile(join(out, 'scaling.json'), 'utf8')) as ScalingResult;
    // The demonstrator without noise completes every counter task; at the default half it does not.
    expect(result.domains[0]?.points[0]?.log.successRate).toBe(1);
    expect(result.recordedNoise).toBe(0);
    const table = await readFile(join(out, 'scaling.md'), 'utf8');
    expect(table).toMatch(/Command: `npx dreamgym experiment --scaling .*--recorded-noise 0\b/);
    expect(table).toContain('taking a random admissible action at 0% of the steps');
  });

  it('refuses what cannot run, in one line, before any work', async () => {
    const out = join(dir, 'bad');
    const both = await cli('experiment', '--scaling', '--suite', '--out', out);
    expect(both.code).not.toBe(0);
    expect(both.err).toMatch(/--scaling and --suite are two experiments/);
    const one = await cli('experiment', '--scaling', '--recorded', '10', '--out', out);
    expect(one.err).toMatch(/drop --recorded 10/);
    const sizes = await cli('experiment', '--scaling', '--recorded-sizes', '10,0', '--out', out);
    expect(sizes.code).not.toBe(0);
    expect(sizes.err).toMatch(/got "0" in "10,0"/);
    const twice = await cli('experiment', '--scaling', '--recorded-sizes', '10,25,10', '--out', out);
    expect(twice.err).toMatch(/got 10 twice/);
    const lone = await cli('experiment', '--env', 'shop', '--recorded-sizes', '10', '--out', out);
    expect(lone.err).toMatch(/--recorded-sizes applies to --scaling/);
    const unknown = await cli('experiment', '--scaling', '--domains', 'nowhere', '--out', out);
    expect(unknown.err).toMatch(/unknown domain "nowhere".*nothing written/);
    await expect(readdir(out)).resolves.toEqual([]);
  });
});

describe('scaling figures', () => {
  it('checks sizes: whole numbers from 1, each once, in order', () => {
    expect(checkSizes([50, 10, 25])).toEqual([10, 25, 50]);
    expect(() => checkSizes([])).toThrow(ScalingError);
    expect(() => checkSizes([10, 0])).toThrow(/got 0/);
    expect(() => checkSizes([2.5])).toThrow(/got 2.5/);
    expect(() => checkSizes([10, 10])).toThrow(/10 is given twice/);
  });

  it('says from which size cloning alone is enough: no RL arm above it there or beyond', () => {
    // Per-task outcomes of one seed: sft succeeds on `s` of 20 tasks, the RL arm on `r`.
    const arm = (name: string, k: number) => ({ name, seeds: [{ seed: 0, heldOut: { perTask: Array.from({ length: 20 }, (_, i) => ({ taskId: `t${i}`, success: i < k, reward: i < k ? 1 : 0, steps: 1 })) } }] });
    const point = (recorded: number, s: number, r: number) => ({ recorded, log: { episodes: recorded, successRate: 0.5, transitions: 1, cloned: 1 }, skipped: null, experiment: { arms: [arm('sft', s), arm('dreamgym (warm sft)', r)] } }) as unknown as ScalingPoint;
    expect(cloningEnoughFrom([point(10, 2, 18), point(25, 10, 11), point(50, 15, 15)])).toBe(25);
    expect(cloningEnoughFrom([point(10, 2, 18), point(25, 2, 18)])).toBeNull();
    expect(cloningEnoughFrom([point(10, 10, 10), point(25, 10, 10)])).toBe(10);
  });
});
