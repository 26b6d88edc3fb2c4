import { execFile } from 'node:child_process';
import { mkdtemp, readFile, readdir, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { beforeAll, describe, expect, it } from 'vitest';
import { parseJsonl } from '../src/core/jsonl.ts';
import { buildProgram } from '../src/cli/main.ts';
import { cli } from './fixtures/cli.ts';

const run = promisify(execFile);
let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'dreamgym-cli-'));
});

describe('dreamgym CLI', () => {
  it('the package bin runs through tsx and prints help', async () => {
    const { stdout } = await run(process.execPath, ['src/cli/bin.mjs', '--help']);
    expect(stdout).toMatch(/Usage: dreamgym/);
    expect(stdout).toMatch(/data/);
    expect(stdout).toMatch(/validate/);
  });

  it('every command has --help', async () => {
    const program = buildProgram(() => {}, () => {});
    for (const command of program.commands) {
      const { code, out } = await cli(command.name(), '--help');
      expect(code).toBe(0);
      expect(out).toContain(`Usage: dreamgym ${command.name()}`);
    }
  });

  it('data writes tasks and trajectories and prints a one-line summary', async () => {
    const out = join(dir, 'shop.jsonl');
    const res = await cli('data', '--env', 'shop', '--episodes', '12', '--seed', '3', '--policy', 'expert', '--split', 'test', '--out', out);
    expect(res.code).toBe(0);
    expect(res.out.trim().split('\n')).toHaveLength(1);
    expect(res.out).toMatch(/episodes=12 success_rate=1\.000 mean_steps=\d+\.\d\d/);
    const data = parseJsonl(await readFile(out, 'utf8'));
    expect(data.tasks).toHaveLength(12);
    expect(data.trajectories).toHaveLength(12);
    expect(data.tasks.every((t) => t.split === 'test' && t.env === 'shop')).toBe(true);
    expect(data.trajectories.map((t) => t.taskId)).toEqual(data.tasks.map((t) => t.id));
    // same arguments, same file
    const again = join(dir, 'shop2.jsonl');
    await cli('data', '--env', 'shop', '--episodes', '12', '--seed', '3', '--policy', 'expert', '--split', 'test', '--out', again);
    expect(await readFile(again, 'utf8')).toBe(await readFile(out, 'utf8'));
  });

  it('noisy household data contains invalid or wasted steps and failures are possible', async () => {
    const out = join(dir, 'hh.jsonl');
    const res = await cli('data', '--env', 'household', '--episodes', '30', '--seed', '1', '--policy', 'noisy:0.5', '--out', out);
    expect(res.code).toBe(0);
    const data = parseJsonl(await readFile(out, 'utf8'));
    const expertRes = await cli('data', '--env', 'household', '--episodes', '30', '--seed', '1', '--policy', 'expert', '--out', join(dir, 'hhe.jsonl'));
    const steps = (s: string): number => Number(/mean_steps=([\d.]+)/.exec(s)?.[1]);
    expect(steps(res.out)).toBeGreaterThan(steps(expertRes.out));
    expect(data.trajectories).toHaveLength(30);
  });

  it('rejects bad arguments with a clear message and writes nothing', async () => {
    const bad = [
      ['data', '--env', 'moon', '--out', join(dir, 'x.jsonl')],
      ['data', '--env', 'shop', '--episodes', '-3', '--out', join(dir, 'x.jsonl')],
      ['data', '--env', 'shop', '--policy', 'noisy:2', '--out', join(dir, 'x.jsonl')],
      ['data', '--env', 'shop'],
    ];
    for (const args of bad) {
      const res = await cli(...args);
      expect(res.code).not.toBe(0);
      expect(res.err).toMatch(/error/i);
    }
    expect((await readdir(dir)).some((f) => f.startsWith('x.jsonl'))).toBe(false);
    const unwritable = await cli('data', '--env', 'shop', '--episodes', '2', '--out', join(dir, 'no-such-dir', 'y.jsonl'));
    expect(unwritable.code).toBe(1);
    // Names the file asked for (not the temporary file written first) and why.
    expect(unwritable.err).toBe(`dreamgym: error: cannot write ${join(dir, 'no-such-dir', 'y.jsonl')}: ENOENT: no such file or directory\n`);
  });

  it('validate reports counts, or line-numbered problems', async () => {
    const good = join(dir, 'good.jsonl');
    await cli('data', '--env', 'shop', '--episodes', '3', '--out', good);
    const ok = await cli('validate', good);
    expect(ok.code).toBe(0);
    expect(ok.out).toMatch(/valid, 3 tasks, 3 trajectories/);
    const broken = join(dir, 'broken.jsonl');
    const lines = (await readFile(good, 'utf8')).split('\n');
    lines[2] = '{"v":1,"type":"task"}';
    await writeFile(broken, lines.join('\n'));
    const res = await cli('validate', broken);
    expect(res.code).toBe(1);
    expect(res.err).toMatch(/line 3, field task/);
    const missing = await cli('validate', join(dir, 'missing.jsonl'));
    expect(missing.code).toBe(1);
    expect(missing.err).toBe(`dreamgym: error: cannot read ${join(dir, 'missing.jsonl')}: ENOENT: no such file or directory\n`);
    const folder = await cli('validate', dir);
    expect(folder.err).toMatch(new RegExp(`^dreamgym: error: cannot read ${dir}: EISDIR`));
  });
});

describe('dreamgym fidelity', () => {
  it('prints a JSON report: the retrieval model next to the baselines, and false-success rates', async () => {
    const res = await cli('fidelity', '--env', 'household', '--train-episodes', '30', '--test-episodes', '8', '--false-success-episodes', '4', '--json');
    expect(res.code).toBe(0);
    const report = JSON.parse(res.out) as { env: string; backend: string; rows: Record<string, unknown>[]; falseSuccess: Record<string, unknown>[] };
    expect(report.env).toBe('household');
    expect(report.rows.map((r) => r.sim)).toEqual(['retrieval', 'echo', 'majority']);
    expect(report.rows[0]).toMatchObject({ env: 'household', sim: 'retrieval', trainEpisodes: 30, testEpisodes: 8 });
    for (const key of ['actionAgreement', 'nextStateMatch', 'rewardAccuracy', 'finalVerdictSuccess']) {
      expect(report.rows[0]![key]).toBeGreaterThanOrEqual(0);
      expect(report.rows[0]![key]).toBeLessThanOrEqual(1);
    }
    expect(report.falseSuccess.some((r) => r.policy === 'random' && r.tasks === 'held-out')).toBe(true);
    expect(['wasm', 'cpu']).toContain(report.backend);
  });

  it('prints a table with the margin over the best baseline', async () => {
    const res = await cli('fidelity', '--env', 'shop', '--train-episodes', '30', '--test-episodes', '8', '--false-success-episodes', '0');
    expect(res.code).toBe(0);
    expect(res.out).toMatch(/measure\s+retrieval\s+echo\s+majority\s+margin/);
    expect(res.out).toMatch(/admissible-action agreement/);
    const bad = await cli('fidelity', '--env', 'shop', '--policy', 'noisy:0.3,greedy');
    expect(bad.code).not.toBe(0);
    expect(bad.err).toMatch(/comma-separated/);
  });

  it('refuses a simulator that cannot run in Node', async () => {
    const res = await cli('fidelity', '--env', 'shop', '--sim', 'llm');
    expect(res.code).not.toBe(0);
    expect(res.err).toMatch(/retrieval/);
  });
});
