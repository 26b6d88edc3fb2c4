import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { cli } from './fixtures/cli.ts';
import { CHAT_REPLY_FORMAT, parseChatJsonl } from '../src/train/chat.ts';

const MODULE = 'src/envs/example/library.ts';
let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'dreamgym-envmod-cli-'));
});

const SMALL = ['--offline-episodes', '30', '--group-size', '4', '--tasks-per-iteration', '4', '--sft-epochs', '15', '--eval-episodes', '40'];

interface Interval {
  mean: number;
  low: number;
  high: number;
}

async function summaryOf(file: string): Promise<{ status: string; config: { env: string; mode: string }; evaluation: { success: Interval; episodes: number }; realTransitions: number }> {
  return JSON.parse(await readFile(file, 'utf8'));
}

describe('--env-module: the example module serves like a built-in environment', () => {
  it('data writes offline data that validate accepts under the domain name library', async () => {
    const out = join(dir, 'library.jsonl');
    const res = await cli('data', '--env-module', MODULE, '--episodes', '12', '--policy', 'noisy:0.3', '--out', out);
    expect(res.code, res.err).toBe(0);
    expect(res.out).toMatch(/^library: episodes=12 success_rate=/);
    const lines = (await readFile(out, 'utf8')).trim().split('\n').map((l) => JSON.parse(l) as { type: string; task?: { env: string } });
    expect(lines).toHaveLength(24);
    expect(lines[0]?.task?.env).toBe('library');
    const valid = await cli('validate', out);
    expect(valid.code, valid.err).toBe(0);
    expect(valid.out).toMatch(/valid, 12 tasks, 12 trajectories/);
  });

  it('needs exactly one of --env and --env-module', async () => {
    const both = await cli('data', '--env', 'shop', '--env-module', MODULE, '--out', join(dir, 'x.jsonl'));
    expect(both.code).toBe(1);
    expect(both.err).toMatch(/either --env NAME or --env-module PATH, not both/);
    const none = await cli('train', '--mode', 'sft', '--store', join(dir, 'none'));
    expect(none.code).toBe(1);
    expect(none.err).toMatch(/--env NAME \(shop or household\), --env-module PATH or --data FILE is required/);
  });

  it('the policy features serve the new domain unchanged: sft beats zero-shot in real evaluation, intervals apart', async () => {
    const store = join(dir, 'store');
    const zero = join(dir, 'zero.json');
    const sft = join(dir, 'sft.json');
    const a = await cli('train', '--env-module', MODULE, '--mode', 'zero-shot', ...SMALL, '--store', store, '--out', zero);
    expect(a.code, a.err).toBe(0);
    const b = await cli('train', '--env-module', MODULE, '--mode', 'sft', ...SMALL, '--store', store, '--out', sft);
    expect(b.code, b.err).toBe(0);
    const z = await summaryOf(zero);
    const s = await summaryOf(sft);
    expect(z.config.env).toBe('library');
    expect(s.evaluation.episodes).toBe(40);
    expect(s.evaluation.success.low).toBeGreaterThan(z.evaluation.success.high);
    // The run is evaluated again through eval --run with the module.
    const runId = /run (\S+)\s*$/.exec(b.out.trim())?.[1] ?? '';
    const ev = await cli('eval', '--store', store, '--run', runId, '--env-module', MODULE, '--episodes', '10');
    expect(ev.code, ev.err).toBe(0);
    expect(ev.out).toMatch(/^library run .*success 100\.0%/);
    const noModule = await cli('eval', '--store', store, '--run', runId);
    expect(noModule.code).toBe(1);
    expect(noModule.err).toMatch(/Unknown environment "library".*--env-module PATH/);
  });

  it('every mode runs on it: real, dreamgym (0 real transitions), s2r within its budget; and fidelity', async () => {
    const store = join(dir, 'modes');
    for (const [mode, extra, check] of [
      ['real', ['--iterations', '2'], (s: Awaited<ReturnType<typeof summaryOf>>) => expect(s.realTransitions).toBeGreaterThan(0)],
      ['dreamgym', ['--iterations', '2', '--warm-start', 'sft'], (s: Awaited<ReturnType<typeof summaryOf>>) => expect(s.realTransitions).toBe(0)],
      ['s2r', ['--iterations', '1', '--real-budget', '60'], (s: Awaited<ReturnType<typeof summaryOf>>) => expect(s.realTransitions).toBeLessThanOrEqual(60 + 40)],
    ] as const) {
      const out = join(dir, `${mode}.json`);
      const res = await cli('train', '--env-module', MODULE, '--mode', mode, ...extra, ...SMALL, '--store', store, '--out', out);
      expect(res.code, `${mode}: ${res.err}`).toBe(0);
      const s = await summaryOf(out);
      expect(s.status).toBe('done');
      check(s);
    }
    const fid = await cli('fidelity', '--env-module', MODULE, '--train-episodes', '20', '--test-episodes', '10', '--false-success-episodes', '5', '--json');
    expect(fid.code, fid.err).toBe(0);
    expect(JSON.parse(fid.out).env).toBe('library');
  });

  it('a run on a module resumes only with --env-module again', async () => {
    const store = join(dir, 'resume');
    const first = await cli('train', '--env-module', MODULE, '--mode', 'real', '--iterations', '3', '--stop-after', '1', ...SMALL, '--store', store);
    expect(first.code, first.err).toBe(0);
    const runId = /--resume (\S+)/.exec(first.out)?.[1] ?? '';
    expect(first.out).toMatch(/resume with: npx dreamgym train --store \S+ --resume \S+ --env-module src\/envs\/example\/library\.ts\n$/);
    const without = await cli('train', '--store', store, '--resume', runId);
    expect(without.code).toBe(1);
    expect(without.err).toMatch(/environment module "library": resume it with --env-module PATH/);
    const again = await cli('train', '--store', store, '--resume', runId, '--env-module', MODULE);
    expect(again.code, again.err).toBe(0);
    expect(again.out).toMatch(/^library real: success/);
  });

  it('export --format chat opens each conversation with the module\'s description given --env-module, else names the domain', async () => {
    const store = join(dir, 'export');
    const trained = await cli('train', '--env-module', MODULE, '--mode', 'real', '--iterations', '1', '--offline-episodes', '4', '--group-size', '2', '--tasks-per-iteration', '2', '--eval-episodes', '2', '--store', store);
    expect(trained.code, trained.err).toBe(0);
    const runId = /run (\S+)\s*$/.exec(trained.out.trim())?.[1] ?? '';
    const described = await cli('export', '--store', store, '--run', runId, '--format', 'chat', '--out', '-', '--env-module', MODULE);
    expect(described.code, described.err).toBe(0);
    const records = parseChatJsonl(described.out);
    expect(records.length).toBeGreaterThan(0);
    const system = `You are acting in the text environment "library": a small library: find the book asked for on its shelf and check it out at the front desk. Complete the task the instruction describes. ${CHAT_REPLY_FORMAT}`;
    for (const r of records) expect(r.messages[0]).toEqual({ role: 'system', content: system });
    const plain = await cli('export', '--store', store, '--run', runId, '--format', 'chat', '--out', '-');
    expect(plain.code, plain.err).toBe(0);
    expect(parseChatJsonl(plain.out)[0]!.messages[0]!.content).toBe(`You are acting in the text environment "library" to complete the task the instruction describes. ${CHAT_REPLY_FORMAT}`);
    const other = join(dir, 'presser-export.mjs');
    await writeFile(other, UNQUOTED);
    const mismatched = await cli('export', '--store', store, '--run', runId, '--format', 'chat', '--out', '-', '--env-module', other);
    expect(mismatched.code).toBe(1);
    expect(mismatched.err).toContain(`run ${runId} trained on "library", but --env-module ${other} is "presser"`);
    const jsonl = await cli('export', '--store', store, '--run', runId, '--format', 'jsonl', '--out', '-', '--env-module', MODULE);
    expect(jsonl.code).toBe(1);
    expect(jsonl.err).toMatch(/--env-module is for --format chat only/);
  });
});

/** A tiny module whose instruction does not quote its goal: the curriculum cannot write a variation of it. */
const UNQUOTED = `export const name = 'presser'; export const description = 'press go, then stop'; export const maxSteps = 4;
export function tasks({ split, count, seed }) { return Array.from({ length: count }, (_, i) => ({ id: 'presser-' + split + '-' + seed + '-' + i, instruction: 'press go the right number of times, then stop', goal: { n: 1 + ((seed + i) % 2) } })); }
export function validateTask() { return { ok: true }; }
export function create() { return {
  reset(task) { this.n = 0; this.goal = task.goal.n; return { text: 'count 0', actions: ['go', 'stop'] }; },
  step(a) { if (a === 'go') this.n++; const done = a === 'stop' || this.n >= 3; return { observation: { text: 'count ' + this.n, actions: done ? [] : ['go', 'stop'] }, reward: done && a === 'stop' && this.n === this.goal ? 1 : 0, done }; },
  expertAction() { return this.n < this.goal ? 'go' : 'stop'; } }; }`;

describe('--env-module: what a new domain needs from the commands', () => {
  it('experiment --env-module runs the arms on the module (no scripted reference: it exists for the built-in domains only)', async () => {
    const out = join(dir, 'experiment');
    const res = await cli('experiment', '--env-module', MODULE, '--seeds', '1', '--jobs', '1', '--arm', 'zero-shot', '--arm', 'sft', '--offline-episodes', '20', '--sft-epochs', '10', '--eval-episodes', '10', '--train-eval-episodes', '5', '--out', out);
    expect(res.code, res.err).toBe(0);
    expect(res.out).toMatch(/^library experiment: 1 seeds/);
    const table = await readFile(join(out, 'table.md'), 'utf8');
    expect(table).toMatch(/^# library: held-out success/);
    expect(table).toMatch(/Command: `npx dreamgym experiment --env-module src\/envs\/example\/library\.ts --seeds 1/);
    expect(table).toMatch(/\| sft \| 100\.0 \[100\.0, 100\.0\]/);
    const reference = await cli('experiment', '--env-module', MODULE, '--seeds', '1', '--arm', 'scripted reference (no hidden goal)', '--out', join(dir, 'experiment-ref'));
    expect(reference.code).toBe(1);
    expect(reference.err).toMatch(/exists for the built-in domains only/);
  });

  it('eval --run evaluates a run on seed data alone in the real domain that --env-module names', async () => {
    const data = join(dir, 'library-seeds.jsonl');
    expect((await cli('data', '--env-module', MODULE, '--episodes', '30', '--policy', 'expert', '--out', data)).code).toBe(0);
    const store = join(dir, 'data-store');
    const trained = await cli('train', '--data', data, '--mode', 'sft', '--sft-epochs', '10', '--store', store);
    expect(trained.code, trained.err).toBe(0);
    const runId = /run (\S+)\s*$/.exec(trained.out.trim())?.[1] ?? '';
    const without = await cli('eval', '--store', store, '--run', runId);
    expect(without.code).toBe(1);
    expect(without.err).toMatch(/give --env-module PATH \(or --env NAME\) of its domain "library" to evaluate it in a real one/);
    const ev = await cli('eval', '--store', store, '--run', runId, '--env-module', MODULE, '--episodes', '10');
    expect(ev.code, ev.err).toBe(0);
    expect(ev.out).toMatch(/^library run .*success \d+\.\d%.* on 10 held-out tasks, \d+ real steps/);
  });

  it('train --data with synthetic trajectories only is refused up front, nothing written', async () => {
    const data = join(dir, 'library-real.jsonl');
    expect((await cli('data', '--env-module', MODULE, '--episodes', '20', '--out', data)).code).toBe(0);
    const synthetic = join(dir, 'library-synthetic.jsonl');
    await writeFile(synthetic, (await readFile(data, 'utf8')).replaceAll('"source":"offline"', '"source":"synthetic"'));
    const store = join(dir, 'synthetic-store');
    const res = await cli('train', '--data', synthetic, '--mode', 'dreamgym', '--store', store);
    expect(res.code).toBe(1);
    expect(res.err).toMatch(/all 20 trajectories are synthetic .*: the experience model is grounded on recorded real episodes only/);
    expect((await cli('runs', '--store', store)).out).toMatch(/no runs/);
  });

  it('the summary says when the curriculum produced no task', async () => {
    const path = join(dir, 'unquoted.mjs');
    await writeFile(path, UNQUOTED);
    const res = await cli('train', '--env-module', path, '--mode', 'real', '--iterations', '2', '--offline-episodes', '10', '--group-size', '4', '--tasks-per-iteration', '4', '--eval-episodes', '5', '--store', join(dir, 'unquoted-store'));
    expect(res.code, res.err).toBe(0);
    expect(res.out).toMatch(/^presser real: .*, 2 iterations, the curriculum generated no task, wall/);
  });
});

describe('--env-module: a broken module fails clearly, in bounded time, leaving the store consistent', () => {
  it('a module missing an export: nothing is written', async () => {
    const path = join(dir, 'missing.mjs');
    await writeFile(path, "export const name = 'broken'; export const description = 'x'; export const maxSteps = 3;");
    const store = join(dir, 'broken-store');
    const res = await cli('train', '--env-module', path, '--mode', 'sft', '--store', store);
    expect(res.code).toBe(1);
    expect(res.err).toMatch(/export "create" is missing.*export "tasks" is missing.*export "validateTask" is missing/);
    const runs = await cli('runs', '--store', store);
    expect(runs.out).toMatch(/no runs/);
  });

  it('a step that hangs on test tasks: the run fails at evaluation within the time limit, recorded as failed with the export and the task', async () => {
    const path = join(dir, 'hangs-on-test.mjs');
    await writeFile(
      path,
      `export const name = 'hanger'; export const description = 'hangs on test tasks'; export const maxSteps = 4;
export function tasks({ split, count, seed }) { return Array.from({ length: count }, (_, i) => ({ id: 'hanger-' + split + '-' + seed + '-' + i, instruction: 'say yes', goal: { split } })); }
export function validateTask() { return { ok: true }; }
export function create() { let task; return {
  reset(t) { task = t; return { text: 'say something', actions: ['yes', 'no'] }; },
  step(a) { if (task.goal.split === 'test') for (;;) {} return { observation: { text: 'bye', actions: [] }, reward: a === 'yes' ? 1 : 0, done: true, info: { success: a === 'yes' } }; },
  expertAction() { return 'yes'; } }; }`,
    );
    const store = join(dir, 'hang-store');
    const started = performance.now();
    const res = await cli('train', '--env-module', path, '--env-timeout', '300', '--mode', 'sft', '--offline-episodes', '4', '--sft-epochs', '2', '--eval-episodes', '3', '--store', store);
    expect(performance.now() - started).toBeLessThan(30_000);
    expect(res.code).toBe(1);
    expect(res.err).toMatch(/create\(\)\.step\("(yes|no)"\) at step 1 on task "hanger-test-1-0" did not return within 300 ms/);
    const runs = await cli('runs', '--store', store, '--json');
    const rows = JSON.parse(runs.out) as { status: string; env: string }[];
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ status: 'failed', env: 'hanger' });
  });
});
