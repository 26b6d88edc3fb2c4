import { spawn } from 'node:child_process';
import { cp, mkdir, mkdtemp, readdir, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { parseJsonl } from '../src/core/jsonl.ts';
import { cli, tree } from './fixtures/cli.ts';
import { closedPort, scriptedModel, startLlmServer } from './fixtures/llm-server.ts';
import { chatSystemPrompt, parseChatJsonl } from '../src/train/chat.ts';
import { getEnvSpec } from '../src/envs/registry.ts';
import { generateOfflineData } from '../src/envs/offline.ts';
import { parseCheckpoint } from '../src/policy/checkpoint.ts';
import { RunStore } from '../src/cli/run-store.ts';
import { parseTrainingConfig } from '../src/train/config.ts';
import { autoGroundingLine } from '../src/cli/train.ts';

let dir: string;
let store: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'dreamgym-train-'));
  store = join(dir, 'store');
});

/** Tiny settings: each run takes a second or two. */
const TINY = ['--preset', 'quick', '--offline-episodes', '8', '--group-size', '2', '--tasks-per-iteration', '2', '--max-steps', '6', '--eval-episodes', '4'];


const runIdOf = (line: string): string => /run (\S+)\s*$/.exec(line.trim())?.[1] ?? '';

interface Summary {
  format: string;
  runId: string;
  status: string;
  config: { env: string; mode: string; iterations: number };
  metrics: Record<string, number | string | null>[];
  evaluation: { episodes: number; success: { mean: number; low: number; high: number }; perTask: unknown[]; wallMs: number; iteration: number };
  realTransitions: number;
  offlineTransitions: number;
  syntheticSteps: number;
  validation?: { tasks: number; start: number; end?: number; kept?: string };
}

const TIMINGS = ['updateMs', 'rolloutMs', 'wallMs', 'syntheticStepsPerSec'];
const withoutTimings = (metrics: Summary['metrics']): Summary['metrics'] => metrics.map((m) => Object.fromEntries(Object.entries(m).filter(([k]) => !TIMINGS.includes(k))));

describe('dreamgym train', () => {
  let runId = '';
  let summary: Summary;

  it('trains dreamgym for 2 iterations: run.json, snapshot, checkpoint and rollouts in the store, 0 real transitions', async () => {
    const out = join(dir, 'run.json');
    const res = await cli('train', '--env', 'shop', '--mode', 'dreamgym', '--sim', 'retrieval', '--iterations', '2', '--seed', '1', ...TINY, '--store', store, '--out', out);
    expect(res.err).not.toMatch(/error/i);
    expect(res.code).toBe(0);
    const lines = res.out.trim().split('\n');
    expect(lines).toHaveLength(1);
    // The default (simulator) criterion records no held-out successes, so the line has no replay figure.
    expect(lines[0]).toMatch(/^shop dreamgym: success \d+\.\d% \[\d+\.\d%, \d+\.\d%\] \(95% CI\) on 4 held-out tasks, mean reward \d\.\d{3}, real transitions 0, offline transitions \d+, 2 iterations, simulator validation \d+\.\d% -> \d+\.\d% on \d+ recorded tasks( \(kept the start\)| \(kept iteration \d+: \d+\.\d%\))?(, the curriculum generated no task)?, wall \d+\.\d s, run \S+$/);
    runId = runIdOf(lines[0]!);
    const runDir = join(store, 'runs', runId);
    expect((await readdir(runDir)).sort()).toEqual(['checkpoint.bin', 'rollouts.jsonl', 'run.json', 'snapshot.json']);

    summary = JSON.parse(await readFile(out, 'utf8')) as Summary;
    expect(summary).toMatchObject({ format: 'dreamgym-train-summary', runId, status: 'done', config: { env: 'shop', mode: 'dreamgym', iterations: 2 }, realTransitions: 0 });
    expect(summary.offlineTransitions).toBeGreaterThan(0);
    expect(summary.syntheticSteps).toBeGreaterThan(0);
    // The synthetic phase was validated inside the simulator on recorded tasks, start and end.
    expect(summary.validation).toMatchObject({ tasks: expect.any(Number), start: expect.any(Number), end: expect.any(Number), kept: expect.stringMatching(/^(start|between|end)$/) });
    expect(summary.metrics).toHaveLength(2);
    expect(summary.metrics.every((m) => m.phase === 'synthetic' && m.realTransitions === 0)).toBe(true);
    expect(summary.evaluation.episodes).toBe(4);
    expect(summary.evaluation.success.low).toBeLessThanOrEqual(summary.evaluation.success.mean);
    expect(summary.evaluation.success.high).toBeGreaterThanOrEqual(summary.evaluation.success.mean);
    // run.json holds the same summary.
    const record = JSON.parse(await readFile(join(runDir, 'run.json'), 'utf8')) as Summary & { id: string };
    expect(record.id).toBe(runId);
    expect(record.evaluation).toEqual(summary.evaluation);
    expect(record.metrics).toEqual(summary.metrics);
    // Rollouts: 2 iterations x 2 tasks x 2 rollouts, synthetic, each task once.
    const rollouts = parseJsonl(await readFile(join(runDir, 'rollouts.jsonl'), 'utf8'));
    expect(rollouts.trajectories).toHaveLength(8);
    expect(rollouts.trajectories.every((t) => t.source === 'synthetic')).toBe(true);
    expect(new Set(rollouts.tasks.map((t) => t.id)).size).toBe(rollouts.tasks.length);
  });

  it('eval on the run gives the run\'s evaluation; eval on its checkpoint file too', async () => {
    const res = await cli('eval', '--store', store, '--run', runId, '--json');
    expect(res.code).toBe(0);
    const ev = JSON.parse(res.out) as Summary['evaluation'];
    expect(ev.success).toEqual(summary.evaluation.success);
    expect(ev.perTask).toEqual(summary.evaluation.perTask);
    const text = await cli('eval', '--store', store, '--run', runId, '--episodes', '3');
    expect(text.code).toBe(0);
    expect(text.out).toMatch(new RegExp(`^shop run ${runId} \\(dreamgym, iteration 2/2, done\\): success \\S+ \\[\\S+, \\S+\\], mean reward .* on 3 held-out tasks`));
    const file = await cli('eval', '--checkpoint', join(store, 'runs', runId, 'checkpoint.bin'), '--env', 'shop', '--episodes', '4', '--json');
    expect(file.code).toBe(0);
    expect((JSON.parse(file.out) as Summary['evaluation']).perTask).toEqual(summary.evaluation.perTask);
    // The checkpoint names its environment: evaluating it in another is refused.
    const cpFile = join(store, 'runs', runId, 'checkpoint.bin');
    expect(parseCheckpoint(new Uint8Array(await readFile(cpFile))).env).toBe('shop');
    const other = await cli('eval', '--checkpoint', cpFile, '--env', 'household', '--episodes', '2');
    expect(other.code).toBe(1);
    expect(other.err).toContain(`${cpFile} is a policy trained in "shop", not "household": evaluate it with --env shop`);
  });

  it('runs lists the run', async () => {
    const res = await cli('runs', '--store', store);
    expect(res.code).toBe(0);
    const [header, row] = res.out.trim().split('\n');
    expect(header).toMatch(/^id\s+env\s+mode\s+status\s+iterations\s+held-out success/);
    expect(row).toMatch(new RegExp(`^${runId}\\s+shop\\s+dreamgym\\s+done\\s+2/2\\s+\\d+\\.\\d%`));
    const json = JSON.parse((await cli('runs', '--store', store, '--json')).out) as { id: string; status: string }[];
    expect(json).toEqual([expect.objectContaining({ id: runId, status: 'done', env: 'shop', mode: 'dreamgym', iteration: 2, totalIterations: 2 })]);
    expect((await cli('runs', '--store', join(dir, 'empty'))).out).toBe(`no runs in ${join(dir, 'empty')}\n`);
  });

  it('export jsonl passes validate; export chat parses with the same rewards', async () => {
    const jsonl = join(dir, 'export.jsonl');
    const res = await cli('export', '--store', store, '--run', runId, '--format', 'jsonl', '--out', jsonl);
    expect(res.code).toBe(0);
    expect(res.out).toMatch(/^exported run \S+: \d+ tasks, 8 trajectories as jsonl to /);
    const valid = await cli('validate', jsonl);
    expect(valid.code).toBe(0);
    expect(valid.out).toMatch(/valid, \d+ tasks, 8 trajectories/);
    expect(await readFile(jsonl, 'utf8')).toBe(await readFile(join(store, 'runs', runId, 'rollouts.jsonl'), 'utf8'));

    const chatFile = join(dir, 'export.chat.jsonl');
    const chat = await cli('export', '--store', store, '--run', runId, '--format', 'chat', '--out', chatFile);
    expect(chat.code).toBe(0);
    const records = parseChatJsonl(await readFile(chatFile, 'utf8'));
    const { trajectories, tasks } = parseJsonl(await readFile(jsonl, 'utf8'));
    expect(records.map((r) => r.reward)).toEqual(trajectories.map((t) => t.reward));
    expect(records.map((r) => r.task_id)).toEqual(trajectories.map((t) => t.taskId));
    records.forEach((r, i) => {
      const t = trajectories[i]!;
      expect(r.messages.filter((m) => m.role === 'assistant').map((m) => m.content)).toEqual(t.steps.map((s) => s.action));
      expect(r.messages[1]!.content).toContain(tasks.find((x) => x.id === t.taskId)!.instruction);
      // The run's environment introduced by its declared description.
      expect(r.messages[0]!.content).toBe(chatSystemPrompt('shop', getEnvSpec('shop').description));
    });
    // --env-module belongs to a run trained on a module.
    const withModule = await cli('export', '--store', store, '--run', runId, '--format', 'chat', '--out', '-', '--env-module', 'src/envs/example/library.ts');
    expect(withModule.code).toBe(1);
    expect(withModule.err).toContain(`run ${runId} trained on the built-in shop: drop --env-module`);
    // Straight to stdout too, with the summary line on stderr.
    const piped = await cli('export', '--store', store, '--run', runId, '--format', 'chat', '--out', '-');
    expect(piped.out).toBe(await readFile(chatFile, 'utf8'));
    expect(piped.err).toMatch(/^exported run /);
    expect((await readdir(dir)).filter((f) => f.includes('.partial'))).toEqual([]);
  });

  it('resume after --stop-after equals an uninterrupted run (metrics, evaluation, rollouts), through SFT and RL', async () => {
    const s = join(dir, 'resume-store');
    const args = ['--env', 'household', '--mode', 'dreamgym', '--warm-start', 'sft', '--sft-epochs', '2', '--iterations', '2', '--seed', '3', ...TINY, '--store', s];
    const whole = await cli('train', ...args, '--out', join(dir, 'whole.json'));
    expect(whole.code).toBe(0);
    const wholeId = runIdOf(whole.out);

    const first = await cli('train', ...args, '--stop-after', '1');
    expect(first.code).toBe(0);
    expect(first.out).toMatch(/^stopped \(--stop-after\) after iteration 1 of 4; resume with: npx dreamgym train --store \S+ --resume (\S+)\n$/);
    const id = /--resume (\S+)/.exec(first.out)![1]!;
    expect(id).not.toBe(wholeId);
    const stopped = JSON.parse(await readFile(join(s, 'runs', id, 'run.json'), 'utf8')) as Summary & { iteration: number };
    expect(stopped).toMatchObject({ status: 'stopped', iteration: 1, evaluation: null });
    expect((await cli('runs', '--store', s)).out).toMatch(new RegExp(`${id}\\s+household\\s+dreamgym\\+sft\\s+stopped\\s+1/4\\s+-`));
    // Config options do not go with --resume.
    const mixed = await cli('train', '--store', s, '--resume', id, '--iterations', '5');
    expect(mixed.code).toBe(1);
    expect(mixed.err).toMatch(/--resume continues run \S+ with its own configuration: drop --iterations/);

    // Stopped again mid-RL (after the SFT epochs and one RL iteration), then to the end.
    expect((await cli('train', '--store', s, '--resume', id, '--stop-after', '3')).code).toBe(0);
    const last = await cli('train', '--store', s, '--resume', id, '--out', join(dir, 'resumed.json'));
    expect(last.code).toBe(0);
    expect(last.err).toMatch(/resuming at iteration 3 of 4/);

    const a = JSON.parse(await readFile(join(dir, 'whole.json'), 'utf8')) as Summary;
    const b = JSON.parse(await readFile(join(dir, 'resumed.json'), 'utf8')) as Summary;
    expect(b.status).toBe('done');
    expect(b.metrics).toHaveLength(4);
    expect(withoutTimings(b.metrics)).toEqual(withoutTimings(a.metrics));
    expect({ ...b.evaluation, wallMs: 0 }).toEqual({ ...a.evaluation, wallMs: 0 });
    expect([b.realTransitions, b.offlineTransitions, b.syntheticSteps]).toEqual([a.realTransitions, a.offlineTransitions, a.syntheticSteps]);
    const rollouts = async (runId: string): Promise<string> => readFile(join(s, 'runs', runId, 'rollouts.jsonl'), 'utf8');
    expect(await rollouts(id)).toBe(await rollouts(wholeId));

    // A finished run has nothing to resume.
    const before = await tree(s);
    const again = await cli('train', '--store', s, '--resume', id);
    expect(again.code).toBe(1);
    expect(again.err).toMatch(new RegExp(`^dreamgym: error: run ${id} is already done \\(4/4 iterations, held-out success .*\\): nothing to resume\\n$`));
    expect(await tree(s)).toEqual(before);
  });

  it('errors are one clear line, exit non-zero, and leave the store unchanged', async () => {
    // A corrupt run next to the good one.
    const broken = 'broken-run';
    await cp(join(store, 'runs', runId), join(store, 'runs', broken), { recursive: true });
    const brokenJson = join(store, 'runs', broken, 'run.json');
    await writeFile(brokenJson, (await readFile(brokenJson, 'utf8')).slice(0, 100));
    const before = await tree(store);
    const cases: [string[], RegExp][] = [
      [['train', '--env', 'shop', '--mode', 'turbo', '--store', store], /--mode .*'turbo' is invalid\. Allowed choices are zero-shot, sft, real, dreamgym, s2r/],
      [['train', '--env', 'shop', '--mode', 'dreamgym', '--iterations', '1e3', '--store', store], /--iterations .*expected an integer from 0 to \d+, got "1e3"/],
      [['train', '--env', 'shop', '--mode', 'dreamgym', '--iterations', '0x10', '--store', store], /got "0x10"/],
      [['train', '--env', 'shop', '--mode', 'dreamgym', '--eval-episodes', ' 3', '--store', store], /got " 3"/],
      [['train', '--env', 'shop', '--mode', 'dreamgym', '--seed', '1.5', '--store', store], /--seed .*expected an integer, got "1.5"/],
      [['train', '--env', 'shop', '--store', store], /--mode is required/],
      [['train', '--env', 'shop', '--mode', 'sft', '--embedding-scale', '1e-1', '--store', store], /--embedding-scale .*expected a number from 0 to 100, got "1e-1"/],
      [['eval', '--store', store, '--run', runId, '--embedding-scale', '0.5'], /--embedding-scale comes from run .*'s configuration: drop it/],
      [['eval', '--store', store, '--run', runId, '--repeat-penalty', '4'], /--repeat-penalty comes from run .*'s configuration: drop it/],
      [['train', '--env', 'shop', '--mode', 'sft', '--repeat-penalty', '-1', '--store', store], /--repeat-penalty .*expected a number from 0 to 100, got "-1"/],
      [['train', '--env', 'shop', '--mode', 'dreamgym', '--no-replay', '--store', store], /--no-replay applies to the LLM experience model \(--sim llm with --llm-url/],
      [['train', '--env', 'shop', '--mode', 'dreamgym', '--no-reasoning', '--store', store], /--no-reasoning applies to the LLM experience model/],
      [['train', '--env', 'shop', '--mode', 'dreamgym', '--sim', 'llm', '--store', store], /--sim llm needs an LLM: give --llm-url URL of an OpenAI-compatible server/],
      [['train', '--env', 'shop', '--mode', 'dreamgym', '--prior', 'llm', '--store', store], /--prior llm needs an LLM: give --llm-url URL/],
      [['train', '--env', 'shop', '--mode', 'dreamgym', '--llm-model', 'm', '--store', store], /--llm-model names a model of the server at --llm-url: give --llm-url URL too/],
      [['train', '--env', 'shop', '--mode', 'dreamgym', '--llm-url', 'ftp://127.0.0.1/', '--no-curriculum', '--store', store], /--llm-url serves --sim llm, --prior llm and the curriculum's task generator/],
      [['train', '--env', 'shop', '--mode', 'dreamgym', '--sim', 'llm', '--llm-url', 'ftp://127.0.0.1/', '--store', store], /--llm-url: the LLM server URL must be http or https/],
      [['train', '--env', 'shop', '--mode', 'sft', '--warm-start', 'sft', '--store', store], /--warm-start sft applies to the RL modes/],
      [['train', '--env', 'shop', '--mode', 'sft', '--algorithm', 'ppo', '--store', store], /--algorithm applies to the RL modes \(real, dreamgym, s2r\), not sft/],
      [['train', '--env', 'shop', '--mode', 'real', '--algorithm', 'a2c', '--store', store], /--algorithm .*'a2c' is invalid\. Allowed choices are grpo, ppo/],
      [['train', '--env', 'shop', '--mode', 'dreamgym', '--real-budget', '100', '--store', store], /--real-budget applies to .* not dreamgym/],
      [['train', '--env', 'shop', '--mode', 'dreamgym', '--store', store, '--out', dir], /cannot write .*: it is a directory/],
      [['train', '--env', 'shop', '--mode', 'dreamgym', '--store', store, '--out', join(dir, 'no', 'such', 'x.json')], /cannot write .*: directory .* does not exist/],
      [['train', '--store', store, '--resume', 'nope'], new RegExp(`unknown run "nope" in ${store}: known runs: ${runId}, ${broken}`)],
      [['train', '--store', store, '--resume', broken], /run broken-run is corrupt: .*run\.json: not valid JSON/],
      [['eval', '--store', store, '--run', 'nope'], /unknown run "nope"/],
      [['eval', '--store', store, '--run', broken], /run broken-run is corrupt: .*run\.json: not valid JSON/],
      [['eval', '--store', store], /eval needs either --run ID \(with --store\) or --checkpoint FILE \(with --env or --env-module\)/],
      [['eval', '--checkpoint', join(store, 'runs', runId, 'run.json'), '--env', 'shop'], /corrupt checkpoint: not a dreamgym checkpoint file/],
      [['export', '--store', store, '--run', 'nope', '--format', 'jsonl', '--out', join(dir, 'x.jsonl')], /unknown run "nope"/],
      [['export', '--store', store, '--run', broken, '--format', 'chat', '--out', join(dir, 'x.jsonl')], /run broken-run is corrupt: .*run\.json/],
      [['export', '--store', store, '--run', runId, '--format', 'csv', '--out', join(dir, 'x.jsonl')], /--format .*'csv' is invalid/],
      [['train', '--env', 'shop', '--mode', 'sft', '--recorded', '0', '--store', store], /--recorded .*expected an integer from 1 to 1000000, got "0"/],
      [['train', '--env', 'shop', '--mode', 'sft', '--recorded', '10', '--recorded-noise', '1.5', '--store', store], /--recorded-noise .*expected a number from 0 to 1, got "1.5"/],
      [['train', '--env', 'shop', '--mode', 'sft', '--recorded-noise', '0.2', '--store', store], /--recorded-noise 0.2 is the noise of --recorded N's episodes: give --recorded N too/],
      [['train', '--env', 'shop', '--mode', 'sft', '--recorded', '10', '--noisy-source', 'expert', '--store', store], /--noisy-source expert picks who records the preset's noisy episodes; a --recorded log has none/],
      [['train', '--env', 'shop', '--mode', 'sft', '--noisy-source', 'oracle', '--store', store], /--noisy-source .*'oracle' is invalid\. Allowed choices are demonstrator, expert/],
      [['train', '--data', join(dir, 'x.jsonl'), '--mode', 'sft', '--noisy-source', 'expert', '--store', store], /--noisy-source expert records episodes in an environment: --data trains on the file's episodes alone/],
      [['train', '--env', 'shop', '--mode', 'sft', '--cloning', 'best', '--store', store], /--cloning .*'best' is invalid\. Allowed choices are successes, reward-weighted/],
      [['train', '--data', join(dir, 'x.jsonl'), '--mode', 'sft', '--recorded', '10', '--store', store], /--recorded 10 records episodes in an environment: --data trains on the file's episodes alone/],
    ];
    for (const [args, message] of cases) {
      const res = await cli(...args);
      expect(res.code, args.join(' ')).not.toBe(0);
      expect(res.out, args.join(' ')).toBe('');
      expect(res.err, args.join(' ')).toMatch(message);
      expect(res.err.trim().split('\n'), args.join(' ')).toHaveLength(1);
    }
    expect(await tree(store)).toEqual(before);
    expect((await readdir(dir)).filter((f) => f.startsWith('x.jsonl'))).toEqual([]);
    // The listing shows the corrupt run and still lists the good one.
    const runs = await cli('runs', '--store', store);
    expect(runs.code).toBe(0);
    expect(runs.out).toMatch(new RegExp(`${broken}\\s+-\\s+-\\s+corrupt\\s+-\\s+.*run\\.json: not valid JSON`));
    expect(runs.out).toMatch(new RegExp(`${runId}\\s+shop\\s+dreamgym\\s+done`));
    expect(await tree(store)).toEqual(before);
  });

  it('SIGINT stops cleanly: exit 130, a stopped run with its resume point, no lock or temporary file left', async () => {
    const s = join(dir, 'sigint-store');
    await mkdir(s);
    const child = spawn(process.execPath, ['src/cli/bin.mjs', 'train', '--env', 'shop', '--mode', 'dreamgym', '--iterations', '500', ...TINY, '--store', s], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const exited = new Promise<number | null>((done) => child.on('exit', (code) => done(code)));
    // Wait until an iteration has been saved, then interrupt.
    const deadline = Date.now() + 60_000;
    let id = '';
    for (;;) {
      expect(Date.now()).toBeLessThan(deadline);
      const ids = await readdir(join(s, 'runs')).catch(() => [] as string[]);
      id = ids[0] ?? '';
      const snap = id ? await readFile(join(s, 'runs', id, 'snapshot.json'), 'utf8').catch(() => '') : '';
      if (snap) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    child.kill('SIGINT');
    expect(await exited).toBe(130);
    expect(stderr).toMatch(new RegExp(`stopped \\(SIGINT\\) after iteration \\d+ of 500; resume with: npx dreamgym train --store ${s} --resume ${id}`));
    const record = JSON.parse(await readFile(join(s, 'runs', id, 'run.json'), 'utf8')) as { status: string; iteration: number };
    expect(record.status).toBe('stopped');
    expect(record.iteration).toBeGreaterThanOrEqual(1);
    expect((await readdir(join(s, 'runs', id))).sort()).toEqual(['checkpoint.bin', 'rollouts.jsonl', 'run.json', 'snapshot.json']);
    // It resumes where it stopped.
    const resumed = await cli('train', '--store', s, '--resume', id, '--stop-after', String(record.iteration + 1));
    expect(resumed.code).toBe(0);
    expect(resumed.out).toMatch(new RegExp(`after iteration ${record.iteration + 1} of 500`));
  });
});

describe('dreamgym train, other modes', () => {
  it('zero-shot (no iteration) is evaluated and can be evaluated again; real stops at its real budget', async () => {
    const s = join(dir, 'modes-store');
    const zero = await cli('train', '--env', 'shop', '--mode', 'zero-shot', ...TINY, '--store', s);
    expect(zero.code).toBe(0);
    expect(zero.out).toMatch(/^shop zero-shot: success .* real transitions 0, .* 0 iterations, /);
    const again = await cli('eval', '--store', s, '--run', runIdOf(zero.out), '--json');
    expect(again.code).toBe(0);
    const out = join(dir, 'real.json');
    const real = await cli('train', '--env', 'shop', '--mode', 'real', '--iterations', '3', '--real-budget', '10', ...TINY, '--store', s, '--out', out);
    expect(real.code).toBe(0);
    const summary = JSON.parse(await readFile(out, 'utf8')) as Summary & { stoppedBy: string };
    expect(summary.realTransitions).toBeGreaterThan(0);
    expect(summary.stoppedBy).toBe('real-budget');
    expect(real.out).toMatch(/real transitions [1-9]\d*, .*\(stopped by the real budget\)/);
  });

  it('--algorithm ppo trains with PPO, and the run\'s config says so', async () => {
    const s = join(dir, 'ppo-store');
    const out = join(dir, 'ppo.json');
    const res = await cli('train', '--env', 'shop', '--mode', 'real', '--algorithm', 'ppo', '--iterations', '2', ...TINY, '--store', s, '--out', out);
    expect(res.code).toBe(0);
    const summary = JSON.parse(await readFile(out, 'utf8')) as Summary & { config: { rl: { algorithm: string } } };
    expect(summary.config.rl.algorithm).toBe('ppo');
    expect(summary.realTransitions).toBeGreaterThan(0);
  });

  it('--recorded N trains on N recorded episodes of mixed quality, and the run records it', async () => {
    const s = join(dir, 'recorded-store');
    const out = join(dir, 'recorded.json');
    const res = await cli('train', '--env', 'shop', '--mode', 'sft', '--recorded', '15', '--cloning', 'reward-weighted', ...TINY, '--store', s, '--out', out);
    expect(res.code, res.err).toBe(0);
    const summary = JSON.parse(await readFile(out, 'utf8')) as Summary & { config: { offline: { recorded: number; recordedNoise: number }; sft: { cloning: string } } };
    expect(summary.config.offline.recorded).toBe(15);
    expect(summary.config.offline.recordedNoise).toBe(0.5);
    expect(summary.config.sft.cloning).toBe('reward-weighted');
  });

  it('--task-variants N puts N instruction variants in the synthetic pool, with --no-curriculum too, and the run records it', async () => {
    const s = join(dir, 'variants-store');
    const out = join(dir, 'variants.json');
    const res = await cli('train', '--env', 'shop', '--mode', 'dreamgym', '--recorded', '12', '--task-variants', '7', '--no-curriculum', '--iterations', '1', ...TINY, '--store', s, '--out', out);
    expect(res.code, res.err).toBe(0);
    const summary = JSON.parse(await readFile(out, 'utf8')) as Summary & { config: { curriculum: { variants: number; enabled: boolean } } };
    expect(summary.config.curriculum).toMatchObject({ variants: 7, enabled: false });
    const bad = await cli('train', '--env', 'shop', '--mode', 'dreamgym', '--task-variants', '-2', '--store', s);
    expect(bad.code).not.toBe(0);
    expect(bad.err).toMatch(/--task-variants/);
  });

  it('--recorded-selection X sets that share of the recorded successes aside and selects by them; refused without --recorded or above 0.5', async () => {
    const s = join(dir, 'recorded-selection-store');
    const out = join(dir, 'recorded-selection.json');
    const res = await cli('train', '--env', 'shop', '--mode', 'dreamgym', '--warm-start', 'sft', '--recorded', '30', '--recorded-selection', '0.3', '--iterations', '1', ...TINY, '--store', s, '--out', out);
    expect(res.code, res.err).toBe(0);
    const summary = JSON.parse(await readFile(out, 'utf8')) as Summary & { config: { offline: { recordedSelection: number }; validation: { criterion: string } } };
    expect(summary.config.offline.recordedSelection).toBe(0.3);
    expect(summary.config.validation.criterion).toBe('recorded');
    const alone = await cli('train', '--env', 'shop', '--mode', 'dreamgym', '--recorded-selection', '0.2', '--store', s);
    expect(alone.code).not.toBe(0);
    expect(alone.err).toMatch(/--recorded-selection.*--recorded N/);
    const big = await cli('train', '--env', 'shop', '--mode', 'dreamgym', '--recorded', '30', '--recorded-selection', '0.8', '--store', s);
    expect(big.code).not.toBe(0);
    expect(big.err).toMatch(/--recorded-selection/);
  });

  it('--validation-tasks 0 trains dreamgym without validating its synthetic phase, and the config says so', async () => {
    const s = join(dir, 'validation-store');
    const out = join(dir, 'no-validation.json');
    const res = await cli('train', '--env', 'shop', '--mode', 'dreamgym', '--iterations', '1', '--validation-tasks', '0', ...TINY, '--store', s, '--out', out);
    expect(res.code).toBe(0);
    expect(res.out).not.toMatch(/simulator validation/);
    const summary = JSON.parse(await readFile(out, 'utf8')) as Summary & { config: { validation: { tasks: number } } };
    expect(summary.validation).toBeUndefined();
    expect(summary.config.validation.tasks).toBe(0);
    const bad = await cli('train', '--env', 'shop', '--mode', 'dreamgym', '--validation-tasks', '-1', '--store', s);
    expect(bad.code).not.toBe(0);
    expect(bad.err).toMatch(/--validation-tasks/);
  });

  it('--validation-every N validates the synthetic phase every N iterations as well; --validation-criterion simulator lets the simulator pick', async () => {
    const s = join(dir, 'validation-every-store');
    const out = join(dir, 'validation-every.json');
    const res = await cli('train', '--env', 'shop', '--mode', 'dreamgym', '--iterations', '3', '--validation-every', '1', '--validation-tasks', '4', '--validation-criterion', 'simulator', ...TINY, '--store', s, '--out', out);
    expect(res.code).toBe(0);
    const summary = JSON.parse(await readFile(out, 'utf8')) as Summary & { config: { validation: { tasks: number; every: number } }; validation: { between?: { iteration: number }[]; criterion?: string } };
    expect(summary.config.validation).toEqual({ tasks: 4, every: 1, criterion: 'simulator', recorded: 50 });
    expect(summary.validation.between?.map((c) => c.iteration)).toEqual([1, 2]);
    expect(summary.validation.criterion).toBe('simulator');
    const bad = await cli('train', '--env', 'shop', '--mode', 'dreamgym', '--validation-every', 'x', '--store', s);
    expect(bad.code).not.toBe(0);
    expect(bad.err).toMatch(/--validation-every/);
    const badCriterion = await cli('train', '--env', 'shop', '--mode', 'dreamgym', '--validation-criterion', 'luck', '--store', s);
    expect(badCriterion.code).not.toBe(0);
    expect(badCriterion.err).toMatch(/--validation-criterion <c>' argument 'luck' is invalid\. Allowed choices are recorded, simulator/);
    const badGrounding = await cli('train', '--env', 'shop', '--mode', 'dreamgym', '--grounding', 'maybe', '--store', s);
    expect(badGrounding.err).toMatch(/--grounding <mode>' argument 'maybe' is invalid\. Allowed choices are calibrated, auto, off/);
  });
});

describe('dreamgym experiment', () => {
  it('writes the lead\'s experiment files into a new directory', async () => {
    const out = join(dir, 'exp', 'shop');
    const res = await cli(
      'experiment', '--env', 'shop', '--seeds', '1', '--arm', 'zero-shot', '--arm', 'scripted reference (no hidden goal)',
      '--offline-episodes', '8', '--eval-episodes', '4', '--train-eval-episodes', '2', '--out', out,
    );
    expect(res.err).not.toMatch(/error/i);
    expect(res.code).toBe(0);
    expect(res.out).toMatch(/^shop experiment: 1 seeds, preset quick, wall .*; wrote table\.md, results\.json, curves\.csv, shop\.svg to /);
    expect((await readdir(out)).sort()).toEqual(['curves.csv', 'results.json', 'shop.svg', 'table.md']);
    const results = JSON.parse(await readFile(join(out, 'results.json'), 'utf8')) as { arms: { name: string }[] };
    expect(results.arms.map((a) => a.name)).toEqual(['scripted reference (no hidden goal)', 'zero-shot']);
    // The table names the command that makes its figures again: every option that shapes them, not --out or --jobs.
    expect(await readFile(join(out, 'table.md'), 'utf8')).toContain(
      'Command: `npx dreamgym experiment --env shop --seeds 1 --preset quick --arm "zero-shot" --arm "scripted reference (no hidden goal)" --offline-episodes 8 --eval-episodes 4 --train-eval-episodes 2`',
    );

    const badArm = await cli('experiment', '--env', 'shop', '--arm', 'warp', '--out', join(dir, 'exp2'));
    expect(badArm.code).toBe(1);
    expect(badArm.err).toMatch(/^dreamgym: error: unknown arm "warp": the arms are "scripted reference \(no hidden goal\)", /);
    const notDir = await cli('experiment', '--env', 'shop', '--out', join(out, 'table.md'));
    expect(notDir.code).toBe(1);
    expect(notDir.err).toBe(`dreamgym: error: cannot write into ${join(out, 'table.md')}: it is not a directory\n`);
  });
});

describe('dreamgym train with an OpenAI-compatible LLM server (--llm-url)', () => {
  it('runs --sim llm and --prior llm headless through the server: requests made, run done, model recorded, URL not stored', async () => {
    const server = await startLlmServer(scriptedModel);
    try {
      const s = join(dir, 'llm-store');
      const res = await cli('train', '--env', 'shop', '--mode', 'dreamgym', '--sim', 'llm', '--prior', 'llm', '--llm-url', server.url, '--iterations', '2', ...TINY, '--store', s);
      expect(res.err).not.toMatch(/error/i);
      expect(res.code).toBe(0);
      expect(res.err).toContain(`LLM server ${server.url}/v1, model scripted-model`);
      expect(res.out.trim()).toMatch(/^shop dreamgym: success .* real transitions 0, .* 2 iterations, .* run \S+$/);
      const runId = runIdOf(res.out);
      const steps = server.requests.filter((r) => (r.body?.response_format as { json_schema?: unknown } | undefined)?.json_schema !== undefined);
      const priors = server.requests.filter((r) => r.body?.logprobs === true);
      expect(steps.length).toBeGreaterThan(0);
      expect(priors.length).toBeGreaterThan(0);
      expect(server.requests.every((r) => r.path === '/v1/models' || r.path === '/v1/chat/completions')).toBe(true);
      expect(steps.every((r) => r.body?.model === 'scripted-model')).toBe(true);
      // The experience model is grounded by real transitions retrieved from the offline data.
      expect(steps.some((r) => JSON.stringify(r.body?.messages).includes('Transition 1:'))).toBe(true);
      const recordText = await readFile(join(s, 'runs', runId, 'run.json'), 'utf8');
      const record = JSON.parse(recordText) as Summary & { llm: unknown; config: { sim: string; prior: string } };
      expect(record).toMatchObject({ status: 'done', realTransitions: 0, llm: { model: 'scripted-model' }, config: { sim: 'llm', prior: 'llm' } });
      expect(record.syntheticSteps).toBeGreaterThan(0);
      expect(recordText).not.toContain(server.url);
    } finally {
      await server.close();
    }
  });

  it('the --no-reasoning and --no-replay ablations reach the server: no reasoning asked for, no retrieved transitions shown, both in the recorded config', async () => {
    const server = await startLlmServer(scriptedModel);
    try {
      const s = join(dir, 'llm-ablation-store');
      const res = await cli('train', '--env', 'shop', '--mode', 'dreamgym', '--sim', 'llm', '--no-reasoning', '--no-replay', '--llm-url', server.url, '--iterations', '1', ...TINY, '--store', s);
      expect(res.err).not.toMatch(/error/i);
      expect(res.code).toBe(0);
      // The experience model's requests (the curriculum's task generator asks the server too).
      const steps = server.requests.filter((r) => JSON.stringify(r.body?.messages ?? []).includes('environment simulator'));
      expect(steps.length).toBeGreaterThan(0);
      expect(steps.some((r) => JSON.stringify(r.body?.response_format).includes('next_state'))).toBe(true);
      for (const r of steps) {
        // Steps and resets (of generated tasks) alike.
        expect(JSON.stringify(r.body?.response_format)).not.toContain('reasoning');
        const messages = JSON.stringify(r.body?.messages);
        expect(messages).not.toContain('Think first');
        expect(messages).not.toContain('Transition 1:');
      }
      const record = JSON.parse(await readFile(join(s, 'runs', runIdOf(res.out), 'run.json'), 'utf8')) as { status: string; config: { reasoning: boolean; demos: number } };
      expect(record).toMatchObject({ status: 'done', config: { reasoning: false, demos: 0 } });
    } finally {
      await server.close();
    }
  });

  it('resuming a run that used --llm-url needs --llm-url again; with it, the run continues', async () => {
    const server = await startLlmServer(scriptedModel);
    try {
      const s = join(dir, 'llm-resume-store');
      const first = await cli('train', '--env', 'shop', '--mode', 'dreamgym', '--sim', 'llm', '--llm-url', server.url, '--llm-model', 'scripted-model', '--iterations', '2', '--stop-after', '1', ...TINY, '--store', s);
      expect(first.code).toBe(0);
      const runId = /--resume (\S+)/.exec(first.out)?.[1] ?? '';
      expect(runId).not.toBe('');
      const before = await tree(s);
      const refused = await cli('train', '--store', s, '--resume', runId);
      expect(refused.code).toBe(1);
      expect(refused.err.trim()).toBe(`dreamgym: error: run ${runId} used an LLM server (model scripted-model): resume it with --llm-url URL (the URL is not stored)`);
      const other = await cli('train', '--store', s, '--resume', runId, '--llm-url', server.url, '--llm-model', 'other');
      expect(other.err).toMatch(/used model scripted-model, not other/);
      expect(await tree(s)).toEqual(before);
      const resumed = await cli('train', '--store', s, '--resume', runId, '--llm-url', server.url);
      expect(resumed.code).toBe(0);
      expect(resumed.out).toMatch(/2 iterations/);
    } finally {
      await server.close();
    }
  });

  it('with the server down: one clear error line, exit 1, the store unchanged', async () => {
    const s = join(dir, 'llm-down-store');
    await mkdir(s, { recursive: true });
    const before = await tree(s);
    const url = await closedPort();
    const started = performance.now();
    const res = await cli('train', '--env', 'shop', '--mode', 'dreamgym', '--sim', 'llm', '--llm-url', url, '--iterations', '1', ...TINY, '--store', s);
    expect(res.code).toBe(1);
    expect(res.out).toBe('');
    const lines = res.err.trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(new RegExp(`^dreamgym: error: cannot use the LLM server: no LLM server answers at ${url}/v1 \\(ECONNREFUSED\\): start it .* or check --llm-url$`));
    expect(await tree(s)).toEqual(before);
    expect(performance.now() - started).toBeLessThan(10_000);
  });
});

describe('dreamgym train --data: seed data alone, no environment', () => {
  let data: string;
  let ddir: string;

  beforeAll(async () => {
    ddir = await mkdtemp(join(tmpdir(), 'dreamgym-train-data-'));
    data = join(ddir, 'seeds.jsonl');
    const a = await cli('data', '--env', 'shop', '--episodes', '30', '--policy', 'noisy:0.3', '--out', data);
    expect(a.code, a.err).toBe(0);
  });

  it('trains dreamgym purely in simulation, evaluates held-out seed tasks in the synthetic environment, labelled so everywhere', async () => {
    const s = join(ddir, 'store');
    const out = join(ddir, 'summary.json');
    const res = await cli('train', '--data', data, '--mode', 'dreamgym', '--iterations', '2', ...TINY, '--store', s, '--out', out);
    expect(res.code, res.err).toBe(0);
    expect(res.out).toMatch(/^shop dreamgym on seed data alone \(no environment\): SYNTHETIC success .* on 4 held-out seed tasks in the synthetic environment \(not a real success rate\)/);
    expect(res.out).toMatch(/grounded on 24 tasks \(24 trajectories, \d+ transitions\) of .*seeds\.jsonl, 6 tasks \(6 trajectories\) held out, real transitions 0/);
    const summary = JSON.parse(await readFile(out, 'utf8')) as { realTransitions: number; evaluation: { environment: string; realSteps: number }; seedData: { heldOutTasks: number }; config: { curriculum: { enabled: boolean }; grounding: string } };
    // A file is a user's own log: its simulator is grounded when it mostly mispredicts (auto), and the header says which.
    expect(summary.config.grounding).toBe('auto');
    expect(res.err).toMatch(/; simulator (not )?grounded \(\d+% of held-out recorded steps predicted right/);
    expect(summary.realTransitions).toBe(0);
    expect(summary.evaluation).toMatchObject({ environment: 'synthetic', realSteps: 0 });
    expect(summary.seedData.heldOutTasks).toBe(6);
    expect(summary.config.curriculum.enabled).toBe(false);
    // The synthetic figure comes with its grounding and the policy's replay of the held-out recorded successes.
    expect(res.out).toMatch(/\(not a real success rate\), mean reward -?\d\.\d{3}, grounding: (not reported by this simulator|\d+\.\d% of simulator steps unknown[^;]*); recorded replay(: fewer than 5 held-out recorded successes, no estimate| \d+\.\d%)/);
    // Two data-only runs on the same data: the run list says they are never ranked by their synthetic figure, and what it cannot rank.
    const sft = await cli('train', '--data', data, '--mode', 'sft', ...TINY, '--store', s);
    expect(sft.code, sft.err).toBe(0);
    const runs = await cli('runs', '--store', s);
    expect(runs.out).toMatch(/\(synthetic\)/);
    expect(runs.out).toMatch(/^data-only runs on shop \S*seeds\.jsonl: never ranked by their SYNTHETIC success; by recorded replay: .*; cannot rank .*(no replay estimate|replay intervals overlap)/m);
    const runId = runIdOf(res.out);
    const ev = await cli('eval', '--store', s, '--run', runId);
    expect(ev.code).toBe(1);
    expect(ev.err).toMatch(/trained on seed data alone: there is no environment to evaluate it in/);
  });

  it('too little data, tasks without trajectories, trajectories without a task, mixed domains: one clear line, nothing written', async () => {
    const s = join(ddir, 'bad-store');
    const lines = (await readFile(data, 'utf8')).trim().split('\n');
    const write = async (name: string, content: string[]): Promise<string> => {
      const p = join(ddir, name);
      await writeFile(p, `${content.join('\n')}\n`);
      return p;
    };
    const taskLines = lines.filter((l) => l.includes('"type":"task"'));
    const trajLines = lines.filter((l) => l.includes('"type":"trajectory"'));
    const household = join(ddir, 'household.jsonl');
    expect((await cli('data', '--env', 'household', '--episodes', '2', '--out', household)).code).toBe(0);
    const cases: [string, RegExp][] = [
      [await write('small.jsonl', lines.slice(0, 20)), /has 10 seed tasks with trajectories: a data-only run needs at least 15 \(10 to ground the experience model, 5 held out for evaluation\); nothing written/],
      [await write('bare.jsonl', [...taskLines, ...trajLines.slice(3)]), /3 of 30 seed tasks have no trajectory \(.*\): without an environment every seed task needs at least one recorded trajectory/],
      [await write('orphans.jsonl', [...taskLines.slice(1), ...trajLines]), /line \d+, field trajectory.taskId: unknown task/],
      [await write('mixed.jsonl', [...lines, ...(await readFile(household, 'utf8')).trim().split('\n')]), /mixes domains \(shop: 60 records, household: 4 records\): a data-only run trains on one domain/],
    ];
    for (const [file, message] of cases) {
      const res = await cli('train', '--data', file, '--mode', 'dreamgym', '--store', s);
      expect(res.code, file).toBe(1);
      expect(res.err, file).toMatch(message);
      // A line-level problem is listed by line, as `validate` lists it; the others are one line.
      if (!file.endsWith('orphans.jsonl')) expect(res.err.trim().split('\n'), file).toHaveLength(1);
    }
    const real = await cli('train', '--data', data, '--mode', 'real', '--store', s);
    expect(real.err).toMatch(/--data trains purely in simulation: mode real needs a real environment/);
    const both = await cli('train', '--data', data, '--env', 'shop', '--mode', 'dreamgym', '--store', s);
    expect(both.err).toMatch(/--data trains on seed data alone, with no environment: drop --env/);
    expect(await readdir(ddir)).not.toContain('bad-store');
  });

  it('refuses seed data that is not valid UTF-8, as validate does, and an --out that is the data file', async () => {
    const s = join(ddir, 'utf8-store');
    const text = await readFile(data, 'utf8');
    const bad = join(ddir, 'latin1.jsonl');
    // One instruction with a Latin-1 byte (0xe9) where UTF-8 needs two.
    const at = text.indexOf('"instruction":"') + '"instruction":"'.length;
    await writeFile(bad, Buffer.concat([Buffer.from(text.slice(0, at)), Buffer.from([0xe9]), Buffer.from(text.slice(at))]));
    expect((await cli('validate', bad)).err).toMatch(/line 1: not valid UTF-8/);
    const res = await cli('train', '--data', bad, '--mode', 'dreamgym', '--store', s);
    expect(res.code).toBe(1);
    expect(res.err).toMatch(/line 1: not valid UTF-8/);
    const same = await cli('train', '--data', data, '--mode', 'dreamgym', '--iterations', '1', ...TINY, '--store', s, '--out', data);
    expect(same.code).toBe(1);
    expect(same.err).toContain(`cannot write ${data}: it is the input ${data}`);
    expect(await readFile(data, 'utf8')).toBe(text);
    expect(await readdir(ddir)).not.toContain('utf8-store');
  });
});

describe('dreamgym export on the run store', () => {
  const config = parseTrainingConfig({ env: 'shop', mode: 'dreamgym', iterations: 3 });

  /** A run with one committed iteration (three tasks and their trajectories); returns its id and directory. */
  async function makeRun(root: string): Promise<{ id: string; dir: string }> {
    const s = new RunStore(root);
    const writer = await s.create(config, 3, new Date(Date.UTC(2025, 0, 1)));
    const pairs = [...generateOfflineData(getEnvSpec('shop'), { episodes: 3, seed: 1, policy: 'expert', split: 'train' })];
    const tasks = pairs.map((p) => p.task);
    await writer.appendRollouts(pairs.map((p) => p.trajectory), tasks);
    const checkpoint = { format: 'dreamgym-checkpoint' as const, version: 1 as const, iteration: 1, config: {}, weights: [{ name: 'w', shape: [1], dtype: 'float32' as const, data: new Float32Array([1]) }], optimizer: { kind: 'adam' as const, step: 1, slots: [] } };
    await writer.persist({ format: 'dreamgym-run', version: 1, config, iteration: 1, pool: tasks, lastSeen: {}, metrics: [], realTransitions: 0, realResets: 0, syntheticSteps: 0, checkpoint, wallMs: 1 });
    await writer.update({ iteration: 1, status: 'stopped' });
    await writer.release();
    return { id: writer.id, dir: s.runDir(writer.id) };
  }

  it('refuses an --out inside a run directory of the store, before anything is created', async () => {
    const root = join(dir, 'guard-store');
    const run = await makeRun(root);
    const before = await tree(root);
    for (const out of [join(run.dir, 'rollouts.jsonl'), join(run.dir, 'run.json'), join(run.dir, 'new.jsonl'), join(root, 'runs', 'x.jsonl')]) {
      const res = await cli('export', '--store', root, '--run', run.id, '--format', 'jsonl', '--out', out);
      expect(res.code, out).toBe(1);
      expect(res.err, out).toContain(`cannot write ${out}: it is inside the run store ${root}`);
    }
    const train = await cli('train', '--env', 'shop', '--mode', 'dreamgym', '--iterations', '1', ...TINY, '--store', root, '--out', join(run.dir, 'run.json'));
    expect(train.code).toBe(1);
    expect(train.err).toContain('it is inside the run store');
    expect(await tree(root)).toEqual(before);
  });

  it('one bad committed line refuses the export; --skip-bad exports the rest and lists what it left out', async () => {
    const root = join(dir, 'bad-line-store');
    const run = await makeRun(root);
    const file = join(run.dir, 'rollouts.jsonl');
    const lines = (await readFile(file, 'utf8')).split('\n');
    // Line 5 is the second trajectory: a damaged byte in its type.
    expect(lines[4]).toContain('"type":"trajectory"');
    lines[4] = (lines[4] as string).replace('"type":"trajectory"', '"type":"trajectorx"');
    await writeFile(file, lines.join('\n'));
    const out = join(dir, 'skip.jsonl');
    const refused = await cli('export', '--store', root, '--run', run.id, '--format', 'jsonl', '--out', out);
    expect(refused.code).toBe(1);
    expect(refused.err).toMatch(/rollouts\.jsonl: line 5/);
    const res = await cli('export', '--store', root, '--run', run.id, '--format', 'jsonl', '--out', out, '--skip-bad');
    expect(res.code, res.err).toBe(0);
    expect(res.err).toMatch(/^dreamgym: export: skipped line 5, field type: /);
    expect(res.out).toMatch(/3 tasks, 2 trajectories as jsonl to .*; left out 1 bad line of rollouts\.jsonl \(--skip-bad\)/);
    expect((await cli('validate', out)).out).toMatch(/valid, 3 tasks, 2 trajectories/);
  });
});

describe("the run header's note on automatic grounding", () => {
  it('says whether the simulator is grounded and on what share of held-out recorded steps', () => {
    expect(autoGroundingLine(null)).toBe('');
    expect(autoGroundingLine({ grounded: true, heldOutRight: 0.031 })).toBe('; simulator grounded (3% of held-out recorded steps predicted right, under 10%: unknown steps halt)');
    expect(autoGroundingLine({ grounded: false, heldOutRight: 0.45 })).toBe('; simulator not grounded (45% of held-out recorded steps predicted right)');
    expect(autoGroundingLine({ grounded: true, heldOutRight: Number.NaN })).toMatch(/grounded \(no recorded episode could be held out/);
  });
});
