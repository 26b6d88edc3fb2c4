import { spawn } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Rng } from '../src/core/rng.ts';
import { runEpisode, expertPolicy } from '../src/envs/episode.ts';
import { EnvModuleError } from '../src/envs/module.ts';
import { Worker } from 'node:worker_threads';
import { loadEnvModule, waitForFlag, type LoadedEnvModule } from '../src/cli/module-host.ts';
import { generateOfflineData } from '../src/envs/offline.ts';
import { registerEnvSpec, unregisterEnvSpec } from '../src/envs/registry.ts';
import { parseTrainingConfig } from '../src/train/config.ts';
import { offlineSeedData, prepareRun } from '../src/train/setup.ts';

const EXAMPLE = 'src/envs/example/library.ts';
let dir: string;
const loaded: LoadedEnvModule[] = [];

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'dreamgym-envmod-'));
});

afterAll(async () => {
  await Promise.all(loaded.map((m) => m.dispose()));
});

/** A tiny counting domain as a plain .mjs module; `parts` replace its exports' source. */
async function writeModule(file: string, parts: Partial<Record<'head' | 'name' | 'maxSteps' | 'create' | 'tasks' | 'validateTask' | 'reset' | 'step' | 'expert', string>> = {}): Promise<string> {
  const p = {
    head: '',
    name: "export const name = 'counter';",
    maxSteps: 'export const maxSteps = 5;',
    tasks: "export function tasks({ split, count, seed }) { return Array.from({ length: count }, (_, i) => ({ id: `counter-${split}-${seed}-${i}`, instruction: 'press go twice', goal: { n: 2 } })); }",
    validateTask: 'export function validateTask() { return { ok: true }; }',
    reset: 'reset(task) { this.n = 0; this.goal = task.goal.n; return { text: "count 0", actions: ["go", "wait"] }; }',
    step: 'step(a) { this.n += a === "go" ? 1 : 0; const done = this.n >= this.goal; return { observation: { text: `count ${this.n}`, actions: ["go", "wait"] }, reward: done ? 1 : 0, done, info: { success: done } }; }',
    expert: 'expertAction() { return "go"; }',
    create: '',
    ...parts,
  };
  const create = p.create || `export function create() { return { ${p.reset}, ${p.step}, ${p.expert} }; }`;
  const path = join(dir, file);
  await writeFile(path, [p.head, p.name, "export const description = 'a counter';", p.maxSteps, create, p.tasks, p.validateTask].join('\n'));
  return path;
}

function load(path: string, callTimeoutMs = 2000, loadTimeoutMs = 5000): LoadedEnvModule {
  const m = loadEnvModule(path, { callTimeoutMs, loadTimeoutMs });
  loaded.push(m);
  return m;
}

/** Runs the module's first train task with the expert; returns the thrown error and how long it took. */
function playExpert(m: LoadedEnvModule): { error: unknown; ms: number } {
  const started = performance.now();
  try {
    const [task] = m.spec.tasks({ split: 'train', count: 1, seed: 0 });
    runEpisode(m.spec.create(), task!, expertPolicy, { rng: new Rng(0) });
    return { error: null, ms: performance.now() - started };
  } catch (error) {
    return { error, ms: performance.now() - started };
  }
}

describe('waitForFlag: the reply signal', () => {
  it('a wake-up without the flag set (a late notify of the previous reply) does not count as a reply', async () => {
    const flag = new Int32Array(new SharedArrayBuffer(4));
    // Notifies until it has woken this thread (so the wait had begun) without setting the flag, then sets it later.
    const worker = new Worker(
      `const { workerData: flag } = require('node:worker_threads');
       while (Atomics.notify(flag, 0, 1) === 0) {}
       const until = Date.now() + 50; while (Date.now() < until) {}
       Atomics.store(flag, 0, 1); Atomics.notify(flag, 0);`,
      { eval: true, workerData: flag },
    );
    try {
      expect(waitForFlag(flag, 10_000)).toBe(true);
      expect(Atomics.load(flag, 0)).toBe(1);
    } finally {
      await worker.terminate();
    }
  });

  it('a flag never set: false after the limit; a flag already set: true at once', () => {
    const flag = new Int32Array(new SharedArrayBuffer(4));
    expect(waitForFlag(flag, 20)).toBe(false);
    Atomics.store(flag, 0, 1);
    expect(waitForFlag(flag, 0)).toBe(true);
  });
});

describe('loadEnvModule: a good module', () => {
  it('passes on the free-text actions a module declares, and none where it declares none', async () => {
    const declared = load(await writeModule('free-text.mjs', { head: "export const freeTextActions = ['say {}'];" }));
    const plain = load(await writeModule('no-free-text.mjs'));
    expect(declared.spec.freeTextActions).toEqual(['say {}']);
    expect(plain.spec.freeTextActions).toBeUndefined();
  });

  it('serves the example library module (TypeScript, through tsx) as an EnvSpec: tasks, expert episodes that succeed', () => {
    const m = load(EXAMPLE);
    expect(m.spec.name).toBe('library');
    expect(m.spec.maxSteps).toBe(10);
    const tasks = m.spec.tasks({ split: 'test', count: 5, seed: 3 });
    expect(tasks).toHaveLength(5);
    expect(tasks.every((t) => t.env === 'library' && t.split === 'test' && t.origin === 'seed')).toBe(true);
    expect(m.spec.validateTask(tasks[0]!)).toEqual({ ok: true });
    const env = m.spec.create();
    for (const task of tasks) {
      const t = runEpisode(env, task, expertPolicy, { rng: new Rng(1) });
      expect(t.success).toBe(true);
      expect(t.env).toBe('library');
    }
  });

  it('serves a plain .mjs module', async () => {
    const m = load(await writeModule('good.mjs'));
    expect(playExpert(m).error).toBeNull();
  });
});

describe('loadEnvModule: output', () => {
  it('what a module prints goes to stderr, never stdout (which may carry the data itself)', async () => {
    const m = load(await writeModule('chatty.mjs', { head: "console.log('CHATTY loaded');" }));
    const seen = { out: '', err: '' };
    const wOut = process.stdout.write.bind(process.stdout);
    const wErr = process.stderr.write.bind(process.stderr);
    process.stdout.write = ((c: string | Uint8Array) => ((seen.out += String(c)), true)) as typeof process.stdout.write;
    process.stderr.write = ((c: string | Uint8Array) => ((seen.err += String(c)), true)) as typeof process.stderr.write;
    try {
      m.spec.tasks({ split: 'train', count: 1, seed: 0 });
      for (let i = 0; i < 50 && !seen.err.includes('CHATTY'); i++) await new Promise((r) => setTimeout(r, 20));
    } finally {
      process.stdout.write = wOut;
      process.stderr.write = wErr;
    }
    expect(seen.err).toContain('CHATTY loaded');
    expect(seen.out).not.toContain('CHATTY');
  });
});

describe('loadEnvModule: a broken module gets an error naming the export and the task, in bounded time', () => {
  it('a missing or malformed export: every problem named', async () => {
    const path = await writeModule('missing.mjs', { tasks: '', maxSteps: "export const maxSteps = 'five';" });
    expect(() => load(path)).toThrow(EnvModuleError);
    expect(() => load(path)).toThrow(/export "maxSteps" must be a positive integer.*"five".*export "tasks" is missing/);
  });

  it('a built-in or malformed name is refused', () => {
    expect(() => load(loadPathSync('shop'))).toThrow(/export "name" must be a string matching .* not a built-in name.*"shop"/);
    expect(() => load(loadPathSync('My Env'))).toThrow(/export "name" must be .*"My Env"/);
    expect(() => load(loadPathSync('fine-name'))).not.toThrow();
  });

  it('reset throwing names create().reset() and the task', async () => {
    const m = load(await writeModule('reset-throws.mjs', { reset: 'reset(task) { throw new RangeError("no such shelf"); }' }));
    const { error } = playExpert(m);
    expect(String(error)).toMatch(/create\(\)\.reset\(\) on task "counter-train-0-0" threw RangeError: no such shelf/);
  });

  it('step throwing names create().step(action), the step and the task', async () => {
    const m = load(await writeModule('step-throws.mjs', { step: 'step(a) { throw new Error("boom"); }' }));
    expect(String(playExpert(m).error)).toMatch(/create\(\)\.step\("go"\) at step 1 on task "counter-train-0-0" threw boom/);
  });

  it('a malformed observation from reset or step', async () => {
    const m = load(await writeModule('bad-obs.mjs', { reset: 'reset() { return { text: 3, actions: "go" }; }' }));
    expect(String(playExpert(m).error)).toMatch(/reset\(\) on task "counter-train-0-0" returned a malformed observation.*text/);
    const m2 = load(await writeModule('bad-step.mjs', { step: 'step() { return { observation: { text: "x", actions: [] }, reward: NaN, done: false }; }' }));
    expect(String(playExpert(m2).error)).toMatch(/step\("go"\) at step 1 on task "counter-train-0-0" returned a malformed step result.*reward/);
  });

  it('an episode that never ends: stopped at the step limit', async () => {
    const m = load(await writeModule('endless.mjs', { step: 'step() { return { observation: { text: "x", actions: ["go"] }, reward: 0, done: false }; }' }));
    expect(String(playExpert(m).error)).toMatch(/did not end the episode on task "counter-train-0-0" within the step limit maxSteps = 5/);
  });

  it('a step that hangs (synchronous infinite loop): stopped after the call limit, then every call fails at once', async () => {
    const m = load(await writeModule('hangs.mjs', { step: 'step() { for (;;) {} }' }), 300);
    const { error, ms } = playExpert(m);
    expect(String(error)).toMatch(/create\(\)\.step\("go"\) at step 1 on task "counter-train-0-0" did not return within 300 ms, so the module was stopped/);
    expect(ms).toBeLessThan(3000);
    const started = performance.now();
    expect(() => m.spec.tasks({ split: 'train', count: 1, seed: 0 })).toThrow(/cannot call tasks.*did not return within 300 ms/);
    expect(performance.now() - started).toBeLessThan(100);
  });

  it('an observation bigger than 1 Mi characters of JSON is refused in the worker, naming the call', async () => {
    const m = load(await writeModule('huge-obs.mjs', { reset: 'reset() { return { text: "x".repeat(2 * 1024 * 1024), actions: ["go"] }; }' }));
    expect(String(playExpert(m).error)).toMatch(/create\(\)\.reset\(\) on task "counter-train-0-0" returned \d+ characters of JSON, more than the 1048576 one reply may have/);
    const ok = load(await writeModule('big-obs.mjs', { reset: 'reset(task) { this.n = 0; this.goal = task.goal.n; return { text: "x".repeat(1000 * 1000), actions: ["go", "wait"] }; }' }));
    expect(playExpert(ok).error).toBeNull();
  });

  it('Ctrl-C during a call that hangs ends the command at once, not after the call limit', async () => {
    const mark = join(dir, 'in-step');
    const path = await writeModule('hangs-for-sigint.mjs', {
      head: "import { writeFileSync } from 'node:fs';",
      step: `step() { writeFileSync(${JSON.stringify(mark)}, 'x'); for (;;) {} }`,
    });
    const child = spawn(process.execPath, ['src/cli/bin.mjs', 'data', '--env-module', path, '--env-timeout', '60000', '--episodes', '1', '--out', join(dir, 'sigint.jsonl')], { stdio: 'ignore' });
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((done) => child.on('exit', (code, signal) => done({ code, signal })));
    for (let i = 0; i < 300 && !existsSync(mark); i++) await new Promise((r) => setTimeout(r, 100));
    expect(existsSync(mark)).toBe(true);
    await new Promise((r) => setTimeout(r, 300));
    const sent = performance.now();
    child.kill('SIGINT');
    const result = await Promise.race([exited, new Promise<null>((r) => setTimeout(() => r(null), 10_000))]);
    if (result === null) child.kill('SIGKILL');
    expect(result, 'still running 10 s after SIGINT').not.toBeNull();
    expect(result?.signal === 'SIGINT' || result?.code === 130).toBe(true);
    expect(performance.now() - sent).toBeLessThan(10_000);
  }, 60_000);

  it('top-level code that hangs: loading stops after the load limit', async () => {
    const path = await writeModule('hangs-at-load.mjs', { head: 'for (;;) {}' });
    const started = performance.now();
    expect(() => load(path, 300, 400)).toThrow(/loading the module did not return within 400 ms/);
    expect(performance.now() - started).toBeLessThan(3000);
  });

  it('a module that fails to import, and an async step', async () => {
    const path = await writeModule('syntax.mjs', { head: 'export const = ;' });
    expect(() => load(path)).toThrow(/could not be loaded: SyntaxError/);
    const m = load(await writeModule('async.mjs', { step: 'async step() { return {}; }' }));
    expect(String(playExpert(m).error)).toMatch(/step\("go"\).*returned a Promise: environment calls must be synchronous/);
  });

  it('no expertAction: the expert policy is refused with why', async () => {
    const m = load(await writeModule('no-expert.mjs', { expert: 'noExpert: true' }));
    expect(String(playExpert(m).error)).toMatch(/expertAction\(\) on task "counter-train-0-0": the environment has no expertAction\(\) function/);
  });

  it('tasks() returning malformed tasks, and validateTask returning garbage', async () => {
    const m = load(await writeModule('bad-tasks.mjs', { tasks: 'export function tasks() { return [{ id: "a", goal: 1 }]; }', validateTask: 'export function validateTask() { return "yes"; }' }));
    expect(() => m.spec.tasks({ split: 'train', count: 1, seed: 0 })).toThrow(/tasks\(\{split: "train", count: 1, seed: 0\}\): task #0 is malformed: instruction/);
    const good = load(await writeModule('good2.mjs', { name: "export const name = 'counter-two';", validateTask: 'export function validateTask() { return "yes"; }' }));
    const [task] = good.spec.tasks({ split: 'train', count: 1, seed: 0 });
    expect(() => good.spec.validateTask(task!)).toThrow(/validateTask\(\) on task "counter-train-0-0" must return \{ok: true\}/);
  });
});

describe('loadEnvModule: the contract as a new domain meets it', () => {
  it('info.success left out on the last step: derived from the episode reward (at least 1), as the contract says', async () => {
    const m = load(await writeModule('no-success.mjs', { name: "export const name = 'quiet';", step: 'step(a) { this.n += a === "go" ? 1 : 0; const won = this.n >= this.goal; return { observation: { text: `count ${this.n}`, actions: ["go", "stop"] }, reward: won ? 1 : 0, done: won || a === "stop" }; }' }));
    const [task] = m.spec.tasks({ split: 'train', count: 1, seed: 0 });
    const won = runEpisode(m.spec.create(), task!, expertPolicy, { rng: new Rng(0) });
    expect(won).toMatchObject({ reward: 1, success: true });
    const lost = runEpisode(m.spec.create(), task!, () => 'stop', { rng: new Rng(0) });
    expect(lost.steps.at(-1)?.done).toBe(true);
    expect(lost).toMatchObject({ reward: 0, success: false });
  });

  it('a goal with an undefined field: the error names the key and the cause', async () => {
    const m = load(await writeModule('undefined-goal.mjs', { tasks: 'export function tasks({ split, count, seed }) { return [{ id: "a", instruction: "go", goal: { room: "hall", door: undefined } }]; }' }));
    expect(() => m.spec.tasks({ split: 'train', count: 1, seed: 0 })).toThrow(/task #0 is malformed: goal\.door is undefined: a goal must be JSON \(drop the key/);
  });

  it('a positional tasks(split, count, seed): refused at load with the expected signature', async () => {
    const path = await writeModule('positional.mjs', { tasks: 'export function tasks(split, count, seed) { return Array.from({ length: count }, (_, i) => ({ id: `p-${split}-${i}`, instruction: "go", goal: {} })); }' });
    expect(() => load(path)).toThrow(/export "tasks" declares 3 parameters, but it is called as tasks\(\{split, count, seed\}\) with one options object/);
  });

  it('a tasks() that returns nothing says what signature is expected', async () => {
    const m = load(await writeModule('empty-tasks.mjs', { tasks: 'export function tasks(options) { return []; }' }));
    expect(() => m.spec.tasks({ split: 'train', count: 2, seed: 0 })).toThrow(/returned no tasks \(asked for 2\); the expected signature is tasks\(\{split, count, seed\}\)/);
  });

  it('demonstratorAction(): the spec has a demonstrator that acts through the environment, and data --policy demonstrator records it', async () => {
    const m = load(EXAMPLE);
    expect(m.spec.demonstrator).toBeTypeOf('function');
    expect(m.spec.demonstratorNeedsEnvironment).toBe(true);
    expect(m.spec.hasExpert).toBe(true);
    const episodes = [...generateOfflineData(m.spec, { episodes: 20, seed: 4, policy: 'demonstrator', split: 'train' })];
    expect(episodes).toHaveLength(20);
    expect(episodes.filter((e) => e.trajectory.success).length).toBeGreaterThanOrEqual(18);
    // The seed data's demonstrations are the demonstrator's: a module without expertAction() still gets them.
    const noExpert = load(await writeModule('demonstrator-only.mjs', { name: "export const name = 'shown';", expert: 'demonstratorAction() { return "go"; }' }));
    expect(noExpert.spec.hasExpert).toBe(false);
    const data = offlineSeedData(noExpert.spec, parseTrainingConfig({ env: 'shown', mode: 'sft', seed: 0, offline: { expertEpisodes: 6, noisyEpisodes: 4, extraTasks: 0 } }));
    expect(data.expertIds.size).toBe(6);
    expect(data.trajectories.filter((t) => data.expertIds.has(t.id)).every((t) => t.success)).toBe(true);
  });

  it('no expertAction() and no demonstrator: seed data for zero-shot and real is random episodes; behaviour cloning is refused up front with what it needs', async () => {
    const m = load(await writeModule('bare.mjs', { name: "export const name = 'bare';", expert: 'noExpert: true' }));
    registerEnvSpec(m.spec);
    try {
      const config = parseTrainingConfig({ env: 'bare', mode: 'zero-shot', seed: 0, offline: { expertEpisodes: 5, noisyEpisodes: 4, extraTasks: 0 } });
      const data = offlineSeedData(m.spec, config);
      expect(data.tasks.length).toBeGreaterThan(0);
      expect(data.expertIds.size).toBe(0);
      const run = await prepareRun(config);
      run.dispose();
      await expect(prepareRun({ ...config, mode: 'sft' })).rejects.toThrow(/behaviour cloning \(mode sft, --warm-start sft\) needs demonstrations: the environment bare has neither demonstratorAction\(\) nor expertAction\(\)/);
    } finally {
      unregisterEnvSpec(m.spec);
    }
  });
});

/** A module whose only fault may be its name. */
function loadPathSync(name: string): string {
  const path = join(dir, `named-${name}.mjs`);
  writeFileSync(path, `export const name = ${JSON.stringify(name)}; export const description = 'x'; export const maxSteps = 1; export function create() { return { reset() {}, step() {} }; } export function tasks() { return []; } export function validateTask() { return { ok: true }; }`);
  return path;
}
