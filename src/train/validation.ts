/**
 * A synthetic phase's validation inside the simulator (see `validation` in the training config and
 * `runTraining`): what a run records of it, and how it is told. No runtime dependencies, so that
 * the page's main thread can show it without loading the loop.
 */

/** One validation of a synthetic phase: after `iteration` of its iterations, greedy success inside the simulator. */
export interface ValidationCheck {
  iteration: number;
  success: number;
}

/**
 * The synthetic phase's validation (see `validation` in the config): greedy success inside the
 * simulator on recorded tasks when the phase started, every few iterations and when it ended,
 * and which policy the run kept.
 */
export interface SyntheticValidation {
  tasks: number;
  start: number;
  end?: number;
  /** The validations in between (not the start's nor the end's). */
  between?: ValidationCheck[];
  /** The best of the validations in between (the earliest among equals), when one beat the start's. */
  best?: ValidationCheck;
  /**
   * The policy the phase ended with: `end` (its last), `start` (the policy it started from, put
   * back) or `between` (the one that validated at `best`, put back).
   */
  kept?: 'start' | 'end' | 'between';
}

/**
 * `kept the start` or `kept iteration 30: 76.0%` when a decided phase ended with a policy other
 * than its last; null otherwise. `percent` formats a success rate.
 */
export function keptPhrase(v: SyntheticValidation, percent: (x: number) => string): string | null {
  if (v.kept === 'start') return 'kept the start';
  if (v.kept === 'between' && v.best) return `kept iteration ${v.best.iteration}: ${percent(v.best.success)}`;
  return null;
}
