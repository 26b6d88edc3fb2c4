import type { Observation } from '../core/types.ts';

/**
 * Whether `action` is admissible in `observation` under the abstract state format: it is one of
 * the listed actions, or a non-empty `search[...]` where the state offers a search box (a listed
 * `search[...]` accepts any query). Every experience model applies this rule.
 */
export function isAdmissible(observation: Observation, action: string): boolean {
  const a = action.trim();
  if (observation.actions.includes(a)) return true;
  return /^search\[.*\S.*\]$/.test(a) && observation.actions.some((x) => x.startsWith('search['));
}
