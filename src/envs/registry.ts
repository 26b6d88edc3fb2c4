import type { EnvName } from '../core/types.ts';
import { clearLayoutCache, householdSpec } from './household/index.ts';
import { clearCatalogueCache, shopSpec } from './shop/index.ts';
import type { EnvSpec } from './spec.ts';

/** The built-in environments, by name. */
export const ENVIRONMENTS: Readonly<Record<EnvName, EnvSpec>> = {
  shop: shopSpec,
  household: householdSpec,
};

/** The spec for `name`, or a RangeError naming the known environments. */
export function getEnvSpec(name: string): EnvSpec {
  const spec = (ENVIRONMENTS as Record<string, EnvSpec | undefined>)[name];
  if (!spec) throw new RangeError(`Unknown environment ${JSON.stringify(name)}: use one of ${Object.keys(ENVIRONMENTS).join(', ')}`);
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
