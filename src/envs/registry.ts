import { DOMAIN_NAME_PATTERN, type EnvName } from '../core/types.ts';
import { clearLayoutCache, householdSpec } from './household/index.ts';
import { clearCatalogueCache, shopSpec } from './shop/index.ts';
import type { AnyEnvSpec, EnvSpec } from './spec.ts';

/** The built-in environments, by name. */
export const ENVIRONMENTS: Readonly<Record<EnvName, EnvSpec>> = {
  shop: shopSpec,
  household: householdSpec,
};

/**
 * Environments loaded at run time (a user's module, `--env-module`), by name. Kept apart from the
 * typed built-in table; registered so that code which finds an environment by a task's `env`
 * (curriculum validation, evaluation) serves a loaded one exactly like a built-in one.
 */
const loaded = new Map<string, AnyEnvSpec>();

/** Whether `name` is a built-in environment. */
export function isBuiltinEnv(name: string): name is EnvName {
  return Object.hasOwn(ENVIRONMENTS, name);
}

/**
 * Makes a loaded environment findable by {@link getEnvSpec} until {@link unregisterEnvSpec}.
 * Refuses a built-in name, a name that breaks `DOMAIN_NAME_PATTERN`, and a second, different
 * environment under a name in use.
 */
export function registerEnvSpec(spec: AnyEnvSpec): void {
  if (!DOMAIN_NAME_PATTERN.test(spec.name)) throw new RangeError(`environment name ${JSON.stringify(spec.name)} does not match ${DOMAIN_NAME_PATTERN}`);
  if (isBuiltinEnv(spec.name)) throw new RangeError(`environment name ${JSON.stringify(spec.name)} is a built-in environment's: choose another name`);
  const existing = loaded.get(spec.name);
  if (existing !== undefined && existing !== spec) throw new RangeError(`another environment named ${JSON.stringify(spec.name)} is loaded already`);
  loaded.set(spec.name, spec);
}

/** Forgets a loaded environment (no effect on built-in ones or on another spec of that name). */
export function unregisterEnvSpec(spec: AnyEnvSpec): void {
  if (loaded.get(spec.name) === spec) loaded.delete(spec.name);
}

/** The spec for `name` (built-in, or loaded and registered), or a RangeError naming the known environments. */
export function getEnvSpec(name: string): AnyEnvSpec {
  const spec = isBuiltinEnv(name) ? ENVIRONMENTS[name] : loaded.get(name);
  if (!spec) {
    const known = [...Object.keys(ENVIRONMENTS), ...loaded.keys()].join(', ');
    throw new RangeError(`Unknown environment ${JSON.stringify(name)}: use one of ${known}, or load your own with --env-module PATH`);
  }
  return spec;
}

/**
 * Empties the environments' module-level caches (shop catalogues with their search indexes and
 * memoised searches, household layouts), as in a freshly loaded page or process. Only speed
 * changes: every cached value is a pure function of its seed.
 */
export function clearEnvCaches(): void {
  clearCatalogueCache();
  clearLayoutCache();
}
