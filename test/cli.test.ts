import { execFile, spawn } from 'node:child_process';
import { lstat, mkdir, mkdtemp, readFile, readdir, stat, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { beforeAll, describe, expect, it } from 'vitest';
import { parseJsonl } from '../src/core/jsonl.ts';
import { buildProgram } from '../src/cli/main.ts';
import { connectLlm } from '../src/cli/train.ts';
import { getEnvSpec } from '../src/envs/registry.ts';
import { measureFidelityTable, type FidelityTable } from '../src/train/fidelity.ts';
import { cli } from './fixtures/cli.ts';
import { closedPort, scriptedModel, startLlmServer } from './fixtures/llm-server.ts';

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

  it('every dreamgym command that README.md and BENCHMARKS.md show exists, with the options and choices it names', async () => {
    const program = buildProgram(() => {}, () => {});
    const problems: string[] = [];
    let checked = 0;
    for (const file of ['README.md', 'BENCHMARKS.md']) {
      const text = await readFile(join(import.meta.dirname, '..', file), 'utf8');
      // `npx dreamgym CMD ...` anywhere, or `dreamgym CMD ...` right after a backtick; up to the end of
      // the code span, a shell comment or the line.
      for (const m of text.matchAll(/(?:npx |`)dreamgym ([a-z][a-z-]*)([^`#\n]*)/g)) {
        const [, name, rest] = m as unknown as [string, string, string];
        const command = program.commands.find((c) => c.name() === name);
        if (!command) {
          problems.push(`${file}: no command ${name}`);
          continue;
        }
        checked++;
        const tokens = rest.trim().split(/\s+/);
        tokens.forEach((token, i) => {
          if (!token.startsWith('--')) return;
          const option = command.options.find((o) => o.long === token);
          if (!option) {
            if (token !== '--help') problems.push(`${file}: dreamgym ${name} has no option ${token}`);
            return;
          }
          const value = tokens[i + 1];
          // An upper-case word (NAME, N) is a placeholder; a real value of a choice option must be a choice.
          if (option.argChoices && value !== undefined && !value.startsWith('--') && !/^[A-Z]+$/.test(value) && !option.argChoices.includes(value)) {
            problems.push(`${file}: dreamgym ${name} ${token} ${value} is not one of ${option.argChoices.join(', ')}`);
          }
        });
      }
    }
    expect(problems).toEqual([]);
    expect(checked).toBeGreaterThan(10);
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

  it("writes the environment's goal-blind demonstrator's episodes", async () => {
    const out = join(dir, 'demos.jsonl');
    const res = await cli('data', '--env', 'shop', '--episodes', '20', '--seed', '2', '--policy', 'demonstrator', '--out', out);
    expect(res.code).toBe(0);
    expect(res.out).toMatch(/policy=demonstrator/);
    const data = parseJsonl(await readFile(out, 'utf8'));
    expect(data.trajectories.map((t) => t.id.endsWith(':demonstrator'))).toEqual(Array(20).fill(true));
    // It goes back from products that lack a named option, which the expert never does.
    expect(data.trajectories.some((t) => t.steps.some((s) => s.action === 'click[< prev]' && s.observation.text.includes('\nPage: item')))).toBe(true);
    const bad = await cli('data', '--env', 'shop', '--policy', 'demo', '--out', join(dir, 'x.jsonl'));
    expect(bad.code).not.toBe(0);
    expect(bad.err).toMatch(/expected "expert", "demonstrator" or "noisy:EPS"/);
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
    expect(unwritable.err).toBe(`dreamgym: error: cannot write ${join(dir, 'no-such-dir', 'y.jsonl')}: directory ${join(dir, 'no-such-dir')} does not exist\n`);
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

describe('validate reads what data writes, as import does', () => {
  it('accepts a BOM, rejects an orphan trajectory and invalid UTF-8, and streams the file', async () => {
    const good = join(dir, 'v-good.jsonl');
    await cli('data', '--env', 'household', '--episodes', '4', '--out', good);
    const text = await readFile(good, 'utf8');
    const bom = join(dir, 'v-bom.jsonl');
    await writeFile(bom, `\ufeff${text}`);
    expect((await cli('validate', bom)).out).toBe(`${bom}: valid, 4 tasks, 4 trajectories\n`);
    const orphan = join(dir, 'v-orphan.jsonl');
    await writeFile(orphan, text.split('\n').slice(1).join('\n'));
    const o = await cli('validate', orphan);
    expect(o.code).toBe(1);
    expect(o.err).toMatch(/line 1, field trajectory\.taskId: unknown task "household-train-0-0"/);
    const binary = join(dir, 'v-binary.jsonl');
    await writeFile(binary, Buffer.concat([Buffer.from(text), Buffer.from([0xc3, 0x28, 0x0a])]));
    const b = await cli('validate', binary);
    expect(b.code).toBe(1);
    expect(b.err).toMatch(/line 9: not valid UTF-8/);
  });

  it('never echoes control characters to the terminal, and says how many problems there were past 50', async () => {
    const evil = join(dir, 'v-evil.jsonl');
    await writeFile(evil, `\x1b]0;pwned\x07\x1b[2J{"v":1,"type":"task","task":{"id":"\x1b[31m"}}\n${Array.from({ length: 80 }, () => '\x1b[2Jnot json').join('\n')}\n`);
    const res = await cli('validate', evil);
    expect(res.code).toBe(1);
    expect(res.err).not.toMatch(/[\x00-\x08\x0b-\x1f\x7f]/);
    expect(res.err).toMatch(/81 problems, the first 50 listed/);
  });

  it('shows bidirectional controls (U+202E) escaped, never raw', async () => {
    const named = join(dir, 'v-\u202egnp.jsonl');
    await cli('data', '--env', 'shop', '--episodes', '1', '--out', named);
    const res = await cli('validate', named);
    expect(res.code, res.err).toBe(0);
    expect(res.out).toBe(`${join(dir, 'v-')}\\u202egnp.jsonl: valid, 1 tasks, 1 trajectories\n`);
    expect(res.out).not.toMatch(/[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/);
  });

  /** The stated cap on a line (16 Mi characters; MAX_JSONL_LINE_CHARS in src/replay/jsonl-io.ts). */
  const MAX_JSONL_LINE_CHARS = 16 * 1024 * 1024;

  it(`refuses a line longer than ${MAX_JSONL_LINE_CHARS} characters by its number, before holding it whole`, async () => {
    const long = join(dir, 'v-long.jsonl');
    await cli('data', '--env', 'shop', '--episodes', '1', '--out', long);
    const good = (await readFile(long, 'utf8')).split('\n')[0] as string;
    await writeFile(long, `${good}\n${'x'.repeat(MAX_JSONL_LINE_CHARS + 1)}\n${good}\n`);
    const res = await cli('validate', long);
    expect(res.code).toBe(1);
    expect(res.err).toMatch(new RegExp(`line 2: longer than ${MAX_JSONL_LINE_CHARS} characters, the most a line may have`));
    // A line of exactly the cap is read (and judged on its content).
    await writeFile(long, `${good}\n${'x'.repeat(MAX_JSONL_LINE_CHARS)}\n`);
    const at = await cli('validate', long);
    expect(at.err).toMatch(/line 2: not valid JSON/);
  }, 60_000);
});

describe('output files and counts', () => {
  it('data --out on a directory fails at once with one line that does not name a temporary file', async () => {
    const sub = join(dir, 'existing-dir');
    await mkdir(sub);
    const res = await cli('data', '--env', 'shop', '--episodes', '3', '--out', sub);
    expect(res.code).toBe(1);
    expect(res.err).toBe(`dreamgym: error: cannot write ${sub}: it is a directory\n`);
    expect(await readdir(sub)).toEqual([]);
    const proc = await cli('data', '--env', 'shop', '--episodes', '3', '--out', '/proc/self/status');
    expect(proc.code).toBe(1);
    expect(proc.err).toMatch(/^dreamgym: error: cannot write \/proc\/self\/status: [^\n]*\n$/);
  });

  it('data --out through a symlink writes its target and keeps the link; - writes stdout with the summary on stderr', async () => {
    const target = join(dir, 'linked-target.jsonl');
    await writeFile(target, 'old\n');
    const link = join(dir, 'linked.jsonl');
    await symlink(target, link);
    const res = await cli('data', '--env', 'shop', '--episodes', '2', '--out', link);
    expect(res.code).toBe(0);
    expect((await lstat(link)).isSymbolicLink()).toBe(true);
    expect(parseJsonl(await readFile(target, 'utf8')).trajectories).toHaveLength(2);
    const std = await cli('data', '--env', 'shop', '--episodes', '2', '--out', '-');
    expect(std.code).toBe(0);
    expect(parseJsonl(std.out).tasks).toHaveLength(2);
    expect(std.err).toMatch(/episodes=2 /);
  });

  it('data writes a pipe straight through (the pipe stays a pipe)', async () => {
    const fifo = join(dir, 'data.fifo');
    await run('mkfifo', [fifo]);
    const reader = run('sh', ['-c', `cat ${fifo} | wc -l`]);
    await new Promise((r) => setTimeout(r, 300));
    const res = await cli('data', '--env', 'shop', '--episodes', '2', '--out', fifo);
    expect(res.code).toBe(0);
    expect((await reader).stdout.trim()).toBe('4');
    expect((await stat(fifo)).isFIFO()).toBe(true);
  });

  it('refuses counts such as 1e3, 0x10, " 3" and too many episodes, before any work', async () => {
    for (const n of ['1e3', '0x10', ' 3', '3 ', '+3', '2000000']) {
      const res = await cli('data', '--env', 'shop', '--episodes', n, '--out', join(dir, 'counts.jsonl'));
      expect(res.code, n).not.toBe(0);
      expect(res.err).toContain(`got ${JSON.stringify(n)}`);
    }
    const fid = await cli('fidelity', '--env', 'shop', '--train-episodes', '1e2');
    expect(fid.code).not.toBe(0);
    expect((await readdir(dir)).some((f) => f.startsWith('counts.jsonl'))).toBe(false);
  });

  it('bench --out and --markdown are checked before the benchmarks run', async () => {
    const started = Date.now();
    const res = await cli('bench', 'envs', '--out', join(dir, 'nowhere', 'r.json'));
    expect(res.code).toBe(1);
    expect(res.err).toBe(`dreamgym: error: cannot write ${join(dir, 'nowhere', 'r.json')}: directory ${join(dir, 'nowhere')} does not exist\n`);
    expect(res.out).toBe('');
    const md = await cli('bench', 'envs', '--markdown', dir);
    expect(md.code).toBe(1);
    expect(md.err).toBe(`dreamgym: error: cannot write ${dir}: it is a directory\n`);
    expect(Date.now() - started).toBeLessThan(5000);
  });

  it('fidelity --out writes the JSON report (checked first)', async () => {
    const bad = await cli('fidelity', '--env', 'shop', '--out', dir);
    expect(bad.code).toBe(1);
    expect(bad.err).toBe(`dreamgym: error: cannot write ${dir}: it is a directory\n`);
    const file = join(dir, 'fidelity.json');
    const res = await cli('fidelity', '--env', 'household', '--train-episodes', '20', '--test-episodes', '4', '--false-success-episodes', '0', '--out', file);
    expect(res.code).toBe(0);
    expect(JSON.parse(await readFile(file, 'utf8'))).toMatchObject({ env: 'household' });
  });

  it('SIGINT and SIGTERM mid-run stop data with 130 / 143, leaving no partial file; writing starts at once', async () => {
    for (const [signal, code] of [['SIGINT', 130], ['SIGTERM', 143]] as const) {
      const sub = await mkdtemp(join(dir, 'signal-'));
      const out = join(sub, 'big.jsonl');
      // A million household episodes: with tasks generated up front nothing would be written for minutes.
      const child = spawn(process.execPath, ['src/cli/bin.mjs', 'data', '--env', 'household', '--episodes', '1000000', '--policy', 'noisy:0.5', '--out', out], { stdio: ['ignore', 'pipe', 'pipe'] });
      let stderr = '';
      child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
      const exited = new Promise<number | null>((done) => child.on('exit', (c) => done(c)));
      let partial: string | undefined;
      try {
        for (let i = 0; i < 300 && !partial; i++) {
          await new Promise((r) => setTimeout(r, 100));
          for (const f of await readdir(sub)) {
            if (f.startsWith('big.jsonl.partial-') && ((await stat(join(sub, f)).catch(() => null))?.size ?? 0) > 0) partial = f;
          }
        }
        expect(partial, 'a partial file with data appears within 30 s').toBeDefined();
        child.kill(signal);
        expect(await exited).toBe(code);
      } finally {
        child.kill('SIGKILL');
      }
      expect(await readdir(sub)).toEqual([]);
      expect(stderr).toContain(`${signal}: stopped`);
    }
  }, 120_000);
});

/** A CLI fidelity report (JSON: NaN is null) has the same rows and false-success figures as `expected`. */
function expectSameFigures(report: { rows: object[]; falseSuccess: object[] }, expected: FidelityTable): void {
  const figures = (rows: readonly object[]) => rows.map((r) => Object.fromEntries(Object.entries(r).filter(([k, v]) => k !== 'ms' && v !== null && !(typeof v === 'number' && Number.isNaN(v)))));
  expect(figures(report.rows)).toEqual(figures(expected.rows));
  expect(figures(report.falseSuccess)).toEqual(figures(expected.falseSuccess));
  expect(report.rows.length).toBeGreaterThan(0);
  expect(report.falseSuccess.length).toBeGreaterThan(0);
}

describe('dreamgym fidelity', () => {
  it('prints a JSON report: the retrieval model next to the baselines, and false-success rates', async () => {
    const res = await cli('fidelity', '--env', 'household', '--train-episodes', '30', '--test-episodes', '8', '--false-success-episodes', '4', '--json');
    expect(res.code).toBe(0);
    const report = JSON.parse(res.out) as { env: string; backend: string; rows: Record<string, unknown>[]; falseSuccess: Record<string, unknown>[] };
    expect(report.env).toBe('household');
    expect(report.rows.map((r) => r.sim)).toEqual(['retrieval', 'echo', 'majority']);
    expect(report.rows[0]).toMatchObject({ env: 'household', sim: 'retrieval', trainEpisodes: 30, testEpisodes: 8 });
    // The figures are the measurement's, as the library computes them for the same settings.
    const expected = await measureFidelityTable(getEnvSpec('household'), { trainEpisodes: 30, testEpisodes: 8, falseSuccessEpisodes: 4, seed: 0, policy: 'noisy:0.3,noisy:1' });
    expectSameFigures(report, expected);
    expect(report.falseSuccess.some((r) => r.policy === 'random' && r.tasks === 'held-out')).toBe(true);
    expect(['wasm', 'cpu']).toContain(report.backend);
  });

  it('prints a table with the margin over the best baseline', async () => {
    const res = await cli('fidelity', '--env', 'shop', '--train-episodes', '30', '--test-episodes', '8', '--false-success-episodes', '0');
    expect(res.code).toBe(0);
    expect(res.out).toMatch(/measure\s+retrieval\s+echo\s+majority\s+margin/);
    expect(res.out).toMatch(/admissible-action agreement/);
    // Next-state match by kind of action, most frequent first: shop's search and clicks.
    expect(res.out).toMatch(/next-state match of the retrieval model by kind of action/);
    expect(res.out).toMatch(/^search\[qi\]\s+\d+\s+\d+\.\d%$/m);
    expect(res.out).toMatch(/^click\[qid\]\s+\d+\s+\d+\.\d%$/m);
    // The grounding: unknown steps, what the kept steps match, and the evidence-bound success's precision.
    expect(res.out).toMatch(/^unknown steps \(the episode halts\)\s+\d+\.\d%/m);
    expect(res.out).toMatch(/^doubtful steps \(the episode goes on at a cost\)\s+\d+\.\d%/m);
    expect(res.out).toMatch(/doubtful below support \d\.\d{3} \(\d+\.\d% of held-out steps go on with a penalty\), unknown \(halting\) below \d\.\d{3}/);
    expect(res.out).toMatch(/^grounding \(cross-fitted on 3 folds of the train episodes, \d+ held-out steps/m);
    expect(res.out).toMatch(/^evidence-bound success \(similarity to recorded successes >= \d\.\d{3}\): precision (\d+\.\d%|n\/a) on \d+ granted/m);
    const bad = await cli('fidelity', '--env', 'shop', '--policy', 'noisy:0.3,greedy');
    expect(bad.code).not.toBe(0);
    expect(bad.err).toMatch(/comma-separated/);
  });

  it('refuses --sim llm without an LLM server, and --llm-url without --sim llm', async () => {
    const res = await cli('fidelity', '--env', 'shop', '--sim', 'llm');
    expect(res.code).not.toBe(0);
    expect(res.err.trim()).toMatch(/^dreamgym: error: --sim llm needs an LLM: give --llm-url URL .* or use --sim retrieval$/);
    const stray = await cli('fidelity', '--env', 'shop', '--llm-url', 'http://127.0.0.1:9');
    expect(stray.err).toMatch(/--llm-url applies to --sim llm here/);
    const down = await cli('fidelity', '--env', 'shop', '--sim', 'llm', '--llm-url', await closedPort());
    expect(down.code).toBe(1);
    expect(down.err.trim().split('\n')).toHaveLength(1);
    expect(down.err).toMatch(/cannot use the LLM server: no LLM server answers at .*ECONNREFUSED/);
  });

  it('--sim llm --llm-url measures the LLM experience model on the server, grounded by retrieved real transitions', async () => {
    const server = await startLlmServer(scriptedModel);
    try {
      const res = await cli('fidelity', '--env', 'shop', '--sim', 'llm', '--llm-url', server.url, '--train-episodes', '10', '--test-episodes', '2', '--false-success-episodes', '1', '--json');
      expect(res.err).toBe('');
      expect(res.code).toBe(0);
      const report = JSON.parse(res.out) as { rows: { sim: string; testTransitions: number; doneAccuracy: number }[]; falseSuccess: object[] };
      expect(report.rows.map((r) => r.sim)).toEqual(['llm', 'echo', 'majority']);
      expect(report.rows[0]!.testTransitions).toBeGreaterThan(0);
      const expected = await measureFidelityTable(getEnvSpec('shop'), { trainEpisodes: 10, testEpisodes: 2, falseSuccessEpisodes: 1, seed: 0, policy: 'noisy:0.3,noisy:1', llm: await connectLlm(server.url, 'scripted-model') });
      expectSameFigures(report, expected);
      expect(report.falseSuccess.length).toBeGreaterThan(0);
      const steps = server.requests.filter((r) => JSON.stringify(r.body?.response_format ?? '').includes('next_state'));
      expect(steps.length).toBeGreaterThan(0);
      expect(steps.every((r) => r.body?.model === 'scripted-model')).toBe(true);
      expect(steps.some((r) => JSON.stringify(r.body?.messages).includes('Transition 1:'))).toBe(true);
    } finally {
      await server.close();
    }
  });
});
