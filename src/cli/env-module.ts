/**
 * `--env` or `--env-module PATH` on the commands that run an environment: the built-in one by name,
 * or a user's module loaded (module-host.ts), checked, and registered so that everything that
 * finds an environment by name serves it like a built-in one.
 */
import { InvalidArgumentError } from 'commander';
import { EnvModuleError } from '../envs/module.ts';
import { loadEnvModule } from './module-host.ts';
import { getEnvSpec, registerEnvSpec, unregisterEnvSpec } from '../envs/registry.ts';
import type { AnyEnvSpec } from '../envs/spec.ts';

/** The environment a command runs on, and how to let it go. */
export interface CommandEnv {
  spec: AnyEnvSpec;
  /** The module's path, when it is one. */
  modulePath: string | null;
  /** Unregisters and stops a loaded module (nothing for a built-in one). */
  dispose(): Promise<void>;
}

/** Thrown for a bad `--env`/`--env-module` choice (the CLI prints it as one line). */
class EnvChoiceError extends Error {
  override name = 'EnvChoiceError';
}

/** `--env-timeout MS`: a positive decimal integer of milliseconds. */
export function timeoutArg(value: string): number {
  if (!/^[0-9]+$/.test(value) || Number(value) < 1 || Number(value) > 3_600_000) throw new InvalidArgumentError(`expected milliseconds from 1 to 3600000, got ${JSON.stringify(value)}`);
  return Number(value);
}

/**
 * The environment of `--env NAME` or `--env-module PATH` (exactly one). A module gets
 * `timeoutMs` per call (and for loading); its errors come as {@link EnvModuleError}.
 */
export function chooseEnv(opts: { env?: string | undefined; envModule?: string | undefined; envTimeout?: number | undefined }): CommandEnv {
  if (opts.envModule !== undefined && opts.env !== undefined) throw new EnvChoiceError('give either --env NAME or --env-module PATH, not both');
  if (opts.envModule === undefined) {
    if (opts.env === undefined) throw new EnvChoiceError('--env NAME (shop or household) or --env-module PATH is required');
    return { spec: getEnvSpec(opts.env), modulePath: null, dispose: async () => {} };
  }
  const timeouts = opts.envTimeout !== undefined ? { callTimeoutMs: opts.envTimeout, loadTimeoutMs: opts.envTimeout } : {};
  const loaded = loadEnvModule(opts.envModule, timeouts);
  try {
    registerEnvSpec(loaded.spec);
  } catch (e) {
    void loaded.dispose();
    throw new EnvModuleError(`environment module ${opts.envModule}: ${e instanceof Error ? e.message : String(e)}`);
  }
  return {
    spec: loaded.spec,
    modulePath: loaded.path,
    dispose: async () => {
      unregisterEnvSpec(loaded.spec);
      await loaded.dispose();
    },
  };
}
