/**
 * Loads a user's environment module (Node only) and serves it as an {@link AnyEnvSpec}, exactly like
 * a built-in environment.
 *
 * Why a worker thread: the module's code is not ours, and a synchronous infinite loop cannot be
 * interrupted in the thread it runs in. So the module runs in a worker, and every call into it is
 * a synchronous request from this thread: post the request, block in `Atomics.wait` with the time
 * limit, then read the reply with `receiveMessageOnPort`. The environment interface stays
 * synchronous (the loop, the evaluation and offline data use it unchanged), and a call that does
 * not return within the limit gets the worker terminated and an {@link EnvModuleError} naming the
 * export and the task. After that the module is dead: every later call fails at once.
 *
 * While this thread blocks, Node cannot run a signal listener, so a call that takes longer than a
 * moment runs with SIGINT and SIGTERM at their default: Ctrl-C ends the process at once instead of
 * after the call's time limit (a run stays resumable from its last snapshot, as after a kill). An
 * observation, step result or expert action bigger than {@link MAX_OBSERVATION_CHARS} characters of
 * JSON is refused in the worker, before it is copied here.
 */
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { MessageChannel, receiveMessageOnPort, Worker, type MessagePort } from 'node:worker_threads';
import { EnvironmentStateError, ENV_NAMES, type Observation, type RealEnvironment, type StepResult, type Task, type TaskValidation } from '../core/types.ts';
import { checkModuleExports, checkObservation, checkStepResult, checkTasks, checkTaskValidation, EnvModuleError, type ExportShape, type ModuleHeader } from '../envs/module.ts';
import type { AnyEnvSpec, TaskGenOptions } from '../envs/spec.ts';
import type { Policy } from '../envs/episode.ts';

/** Time limits of a loaded module. */
export interface EnvModuleOptions {
  /** Most milliseconds one call (`create`, `reset`, `step`, `expertAction`, `demonstratorAction`, `tasks`, `validateTask`) may take. Default 10,000. */
  callTimeoutMs?: number;
  /** Most milliseconds loading the module (its top-level code) may take. Default 30,000. */
  loadTimeoutMs?: number;
}

/** A loaded module: its spec, and how to stop its worker. */
export interface LoadedEnvModule {
  spec: AnyEnvSpec;
  /** The module's absolute path. */
  path: string;
  /** Terminates the module's worker (idempotent). */
  dispose(): Promise<void>;
}

const DEFAULT_CALL_TIMEOUT_MS = 10_000;

/** The most characters of JSON one reply of `reset`, `step` or `expertAction` may have (1 Mi): an observation is text for a policy, not a file. */
const MAX_OBSERVATION_CHARS = 1024 * 1024;

/** How long a call may block with the signal listeners in place (a signal then waits this long at most). */
const SIGNAL_GRACE_MS = 100;
const DEFAULT_LOAD_TIMEOUT_MS = 30_000;

// The worker: imports the module, describes its exports, then answers one request at a time. Plain
// JavaScript, evaluated as a script, so that it needs no TypeScript loader of its own.
const WORKER_SOURCE = `
const { workerData } = require('node:worker_threads');
const { port, flag, url, tsxApi, maxObservationChars } = workerData;
let mod = null;
const envs = new Map();
let nextEnv = 1;
function send(message) {
  try {
    port.postMessage(message);
  } catch (e) {
    port.postMessage({ ok: false, error: 'returned a value that cannot be copied out of the module (' + (e && e.message) + ')' });
  }
  Atomics.store(flag, 0, 1);
  Atomics.notify(flag, 0);
}
function errorText(e) {
  if (e instanceof Error) return (e.name && e.name !== 'Error' ? e.name + ': ' : '') + e.message;
  return 'threw ' + String(e);
}
function shape(value) {
  if (value === undefined) return { kind: 'missing' };
  if (typeof value === 'function') return { kind: 'function' };
  try { structuredClone(value); return { kind: 'value', value }; } catch { return { kind: 'value', value: String(value) }; }
}
async function load() {
  try {
    if (tsxApi) (await import(tsxApi)).register();
    mod = await import(url);
    const shapes = {};
    for (const key of ['name', 'description', 'maxSteps', 'create', 'tasks', 'validateTask', 'freeTextActions']) shapes[key] = shape(mod[key]);
    if (shapes.tasks.kind === 'function') shapes.tasks.arity = mod.tasks.length;
    send({ ok: true, value: shapes });
  } catch (e) {
    send({ ok: false, error: errorText(e) });
  }
}
function handle(req) {
  switch (req.op) {
    case 'create': {
      const env = mod.create();
      if (env === null || typeof env !== 'object') throw new Error('create() must return an object with reset(task) and step(action), got ' + (env === null ? 'null' : typeof env));
      for (const m of ['reset', 'step']) if (typeof env[m] !== 'function') throw new Error('create() returned an environment without a ' + m + '() function');
      const id = nextEnv++;
      envs.set(id, env);
      return { id, expert: typeof env.expertAction === 'function', demonstrator: typeof env.demonstratorAction === 'function' };
    }
    case 'reset': return envs.get(req.env).reset(req.task);
    case 'step': return envs.get(req.env).step(req.action);
    case 'expertAction': return envs.get(req.env).expertAction();
    case 'demonstratorAction': return envs.get(req.env).demonstratorAction();
    case 'release': envs.delete(req.env); return null;
    case 'tasks': return mod.tasks(req.options);
    case 'validateTask': return mod.validateTask(req.task);
    default: throw new Error('unknown request ' + req.op);
  }
}
port.on('message', (req) => {
  let value;
  try {
    value = handle(req);
  } catch (e) {
    send({ ok: false, error: errorText(e) });
    return;
  }
  if (value !== null && typeof value === 'object' && typeof value.then === 'function') {
    send({ ok: false, error: 'returned a Promise: environment calls must be synchronous' });
    return;
  }
  if (req.op === 'reset' || req.op === 'step' || req.op === 'expertAction') {
    let size = 0;
    try { size = (JSON.stringify(value) || '').length; } catch { size = 0; }
    if (size > maxObservationChars) {
      send({ ok: false, error: 'returned ' + size + ' characters of JSON, more than the ' + maxObservationChars + ' one reply may have' });
      return;
    }
  }
  send({ ok: true, value });
});
load();
`;

type Reply = { ok: true; value: unknown } | { ok: false; error: string };

/**
 * Blocks until `flag[0]` is non-zero or `timeoutMs` has passed; true when the flag was set.
 *
 * Why a loop: a wake-up does not mean the flag is set. The worker stores the flag, then notifies;
 * when this thread sees the stored flag before the notify (`not-equal`), takes the reply and sends
 * the next request, that late notify wakes the next wait with no reply queued yet.
 */
export function waitForFlag(flag: Int32Array, timeoutMs: number): boolean {
  const deadline = performance.now() + timeoutMs;
  while (Atomics.load(flag, 0) === 0) {
    const left = deadline - performance.now();
    if (left <= 0) return false;
    Atomics.wait(flag, 0, 0, left);
  }
  return true;
}

/**
 * {@link waitForFlag}, with SIGINT and SIGTERM at their default disposition once the wait has
 * lasted {@link SIGNAL_GRACE_MS}: no listener can run while this thread blocks, so a signal would
 * otherwise wait for the call's whole time limit. The listeners are put back afterwards.
 */
function waitWithSignalsLive(flag: Int32Array, timeoutMs: number): boolean {
  if (waitForFlag(flag, Math.min(timeoutMs, SIGNAL_GRACE_MS))) return true;
  if (timeoutMs <= SIGNAL_GRACE_MS) return false;
  const signals = ['SIGINT', 'SIGTERM'] as const;
  const saved = signals.map((signal) => [signal, process.rawListeners(signal) as ((...args: unknown[]) => void)[]] as const);
  for (const signal of signals) process.removeAllListeners(signal);
  try {
    return waitForFlag(flag, timeoutMs - SIGNAL_GRACE_MS);
  } finally {
    for (const [signal, listeners] of saved) for (const listener of listeners) process.on(signal, listener);
  }
}

/** The worker and its synchronous request channel. */
class ModuleWorker {
  private readonly worker: Worker;
  private readonly port: MessagePort;
  private readonly flag = new Int32Array(new SharedArrayBuffer(4));
  /** Why the module can no longer be called (a timeout, an exit), or null while it can. */
  private dead: string | null = null;

  constructor(
    readonly where: string,
    url: string,
    tsxApi: string | null,
  ) {
    const { port1, port2 } = new MessageChannel();
    this.port = port1;
    this.worker = new Worker(WORKER_SOURCE, { eval: true, workerData: { port: port2, flag: this.flag, url, tsxApi, maxObservationChars: MAX_OBSERVATION_CHARS }, transferList: [port2], stdout: true, stderr: false });
    // What the module prints goes to stderr: stdout may be the data itself (`data --out -`).
    this.worker.stdout.on('data', (chunk: Buffer) => void process.stderr.write(chunk));
    // A loaded module never keeps the process alive by itself.
    this.worker.unref();
    this.port.unref();
    this.worker.on('error', (e) => {
      this.dead ??= `its worker failed: ${e instanceof Error ? e.message : String(e)}`;
    });
    this.worker.on('exit', () => {
      this.dead ??= 'its worker exited';
    });
  }

  /** Waits for one reply; `what` names the call for the timeout message. */
  private await(what: string, timeoutMs: number): Reply {
    if (!waitWithSignalsLive(this.flag, timeoutMs)) {
      this.dead = `${what} did not return within ${timeoutMs} ms, so the module was stopped`;
      void this.worker.terminate();
      throw new EnvModuleError(`environment module ${this.where}: ${this.dead}`);
    }
    const received = receiveMessageOnPort(this.port);
    if (received === undefined) {
      this.dead ??= 'its worker stopped without replying';
      throw new EnvModuleError(`environment module ${this.where}: ${what}: ${this.dead}`);
    }
    return received.message as Reply;
  }

  /** The exports' shapes, once the module has loaded. */
  load(timeoutMs: number): Record<string, ExportShape> {
    const reply = this.await('loading the module', timeoutMs);
    if (!reply.ok) throw new EnvModuleError(`environment module ${this.where} could not be loaded: ${reply.error}`);
    return reply.value as Record<string, ExportShape>;
  }

  /** One synchronous call; `what` names the export and the task for messages. */
  call(request: Record<string, unknown>, what: string, timeoutMs: number): unknown {
    if (this.dead !== null) throw new EnvModuleError(`environment module ${this.where}: cannot call ${what}: ${this.dead}`);
    Atomics.store(this.flag, 0, 0);
    this.port.postMessage(request);
    const reply = this.await(what, timeoutMs);
    if (!reply.ok) throw new EnvModuleError(`environment module ${this.where}: ${what} ${reply.error.startsWith('returned') ? '' : 'threw '}${reply.error}`);
    return reply.value;
  }

  async dispose(): Promise<void> {
    this.dead ??= 'it was unloaded';
    this.port.close();
    await this.worker.terminate();
  }
}

/** One environment of the module: the core's `RealEnvironment`, with the contract checked on every call. */
class ModuleEnv implements RealEnvironment {
  private task: Task | null = null;
  private steps = 0;
  private done = false;
  /** The episode's reward so far: `info.success` left out on the last step is derived from it. */
  private reward = 0;

  constructor(
    private readonly worker: ModuleWorker,
    private readonly header: ModuleHeader,
    private readonly made: CreatedEnv,
    private readonly timeoutMs: number,
  ) {}

  private get id(): number {
    return this.made.id;
  }

  get name(): string {
    return this.header.name;
  }

  get maxSteps(): number {
    return this.header.maxSteps;
  }

  private on(): string {
    return this.task ? ` on task ${JSON.stringify(this.task.id)}` : '';
  }

  reset(task: Task): Observation {
    if (task.env !== this.header.name) throw new EnvModuleError(`environment module ${this.worker.where}: task ${JSON.stringify(task.id)} belongs to ${JSON.stringify(task.env)}, not ${JSON.stringify(this.header.name)}`);
    this.task = task;
    this.steps = 0;
    this.done = false;
    this.reward = 0;
    const what = `create().reset()${this.on()}`;
    return checkObservation(`environment module ${this.worker.where}: ${what}`, this.worker.call({ op: 'reset', env: this.id, task }, what, this.timeoutMs));
  }

  step(action: string): StepResult {
    if (this.task === null) throw new EnvironmentStateError('step() called before reset()');
    if (this.done) throw new EnvironmentStateError('step() called after the episode ended; call reset()');
    this.steps++;
    const what = `create().step(${JSON.stringify(action)}) at step ${this.steps}${this.on()}`;
    const result = checkStepResult(`environment module ${this.worker.where}: ${what}`, this.worker.call({ op: 'step', env: this.id, action }, what, this.timeoutMs));
    if (!result.done && this.steps >= this.header.maxSteps) {
      throw new EnvModuleError(
        `environment module ${this.worker.where}: create().step() did not end the episode${this.on()} within the step limit maxSteps = ${this.header.maxSteps} (return done: true at the last step)`,
      );
    }
    this.done = result.done;
    this.reward += result.reward;
    // The contract: a last step without info.success succeeded when the episode's reward reached 1.
    if (result.done && result.info.success === undefined) result.info.success = this.reward >= 1 - 1e-9;
    return result;
  }

  expertAction(): string {
    const what = `create().expertAction()${this.on()}`;
    if (!this.made.expert) {
      throw new EnvModuleError(`environment module ${this.worker.where}: ${what}: the environment has no expertAction() function, which the expert and noisy policies (data --policy expert|noisy:EPS, fidelity) need`);
    }
    return this.ask('expertAction', what);
  }

  /** The module's goal-blind demonstrator's next action (`demonstratorAction()` on its environment). */
  demonstratorAction(): string {
    const what = `create().demonstratorAction()${this.on()}`;
    if (!this.made.demonstrator) throw new EnvModuleError(`environment module ${this.worker.where}: ${what}: the environment has no demonstratorAction() function`);
    return this.ask('demonstratorAction', what);
  }

  private ask(op: 'expertAction' | 'demonstratorAction', what: string): string {
    if (this.task === null) throw new EnvironmentStateError(`${op}() called before reset()`);
    const action = this.worker.call({ op, env: this.id }, what, this.timeoutMs);
    if (typeof action !== 'string') throw new EnvModuleError(`environment module ${this.worker.where}: ${what} must return an action string, got ${typeof action}`);
    return action;
  }
}

/** What the worker says of a created environment: its id and its optional functions. */
interface CreatedEnv {
  id: number;
  expert: boolean;
  demonstrator: boolean;
}

/** The demonstrator policy of a module: it asks the environment (a {@link ModuleEnv}), which asks the module's `demonstratorAction()`. */
const moduleDemonstrator: Policy = (env) => {
  if (!(env instanceof ModuleEnv)) throw new EnvModuleError(`a module's demonstrator acts through its own environment, got ${env.name}'s`);
  return env.demonstratorAction();
};

/**
 * The ESM build of tsx's `tsx/esm/api` (its `register()` installs the TypeScript hooks), so that a
 * `.ts` module runs without a build step. Found through tsx's package exports: `require.resolve`
 * would pick its CommonJS build, whose `register()` fails inside a worker.
 */
function tsxApiFor(path: string): string | null {
  if (!/\.(c|m)?tsx?$/.test(path)) return null;
  const require = createRequire(import.meta.url);
  const manifest = require.resolve('tsx/package.json');
  const exports = (require(manifest) as { exports?: Record<string, { import?: { default?: string } }> }).exports;
  const entry = exports?.['./esm/api']?.import?.default;
  if (entry === undefined) throw new EnvModuleError(`cannot load the TypeScript module ${path}: this tsx has no ESM API (tsx/esm/api); use a .mjs module`);
  return pathToFileURL(join(dirname(manifest), entry)).href;
}

/**
 * Loads the environment module at `path`, checks every export, and returns its spec. Throws an
 * {@link EnvModuleError} naming each missing or malformed export, or why loading failed or hung.
 */
export function loadEnvModule(path: string, options: EnvModuleOptions = {}): LoadedEnvModule {
  const callTimeoutMs = options.callTimeoutMs ?? DEFAULT_CALL_TIMEOUT_MS;
  const loadTimeoutMs = options.loadTimeoutMs ?? DEFAULT_LOAD_TIMEOUT_MS;
  const absolute = resolve(path);
  const worker = new ModuleWorker(path, pathToFileURL(absolute).href, tsxApiFor(absolute));
  let header: ModuleHeader;
  try {
    header = checkModuleExports(path, worker.load(loadTimeoutMs), ENV_NAMES);
  } catch (e) {
    void worker.dispose();
    throw e;
  }
  const where = `${path} (${header.name})`;
  const created = (): CreatedEnv => worker.call({ op: 'create' }, 'create()', callTimeoutMs) as CreatedEnv;
  // One environment made now says which optional functions the module's environments have.
  let probe: CreatedEnv;
  try {
    probe = created();
    worker.call({ op: 'release', env: probe.id }, 'create()', callTimeoutMs);
  } catch (e) {
    void worker.dispose();
    throw e;
  }
  const spec: AnyEnvSpec = {
    name: header.name,
    description: header.description,
    maxSteps: header.maxSteps,
    ...(header.freeTextActions ? { freeTextActions: header.freeTextActions } : {}),
    hasExpert: probe.expert,
    ...(probe.demonstrator ? { demonstrator: () => moduleDemonstrator, demonstratorNeedsEnvironment: true } : {}),
    create(): RealEnvironment {
      return new ModuleEnv(worker, header, created(), callTimeoutMs);
    },
    tasks(o: TaskGenOptions): Task[] {
      const what = `tasks({split: ${JSON.stringify(o.split)}, count: ${o.count}, seed: ${o.seed}})`;
      return checkTasks(`environment module ${where}: ${what}`, header.name, o, worker.call({ op: 'tasks', options: { split: o.split, count: o.count, seed: o.seed } }, what, callTimeoutMs));
    },
    validateTask(task: Task): TaskValidation {
      if (task.env !== header.name) return { ok: false, reason: `task ${JSON.stringify(task.id)} belongs to ${JSON.stringify(task.env)}, not ${JSON.stringify(header.name)}` };
      const what = `validateTask() on task ${JSON.stringify(task.id)}`;
      return checkTaskValidation(`environment module ${where}: ${what}`, worker.call({ op: 'validateTask', task }, what, callTimeoutMs));
    },
  };
  return { spec, path: absolute, dispose: () => worker.dispose() };
}
