/**
 * A synthetic phase's validation (see `validation` in the training config and `runTraining`):
 * what a run records of it, and how it is told. No runtime dependencies, so that the page's main
 * thread can show it without loading the loop.
 */

/**
 * One validation of a synthetic phase, after `iteration` of its iterations: greedy success inside
 * the simulator, and, where the run holds recorded successes out for selection, how many of them
 * the policy replays and on how many steps it agrees (see `selection.ts`).
 */
export interface ValidationCheck {
  iteration: number;
  success: number;
  /** Share of the held-out recorded successes the greedy policy reproduces step for step. */
  replayed?: number;
  /** Share of the held-out recorded steps whose action is the greedy policy's choice. */
  agreement?: number;
  /** Mean share of a held-out recorded success the greedy policy follows before it first leaves it. */
  prefix?: number;
  /** Each held-out recorded success's own figure, in order: what tells two policies' recorded figures apart (see `replacesKept`). */
  perEpisode?: number[];
  /** Share of the validation's simulator steps the simulator reported as unknown (when it reports grounding). */
  unknownShare?: number;
}

/**
 * The synthetic phase's validation (see `validation` in the config): figures of the policy when
 * the phase started, every few iterations and when it ended, and which policy the run kept.
 */
export interface SyntheticValidation {
  tasks: number;
  /** Greedy success inside the simulator at the start and at the end. */
  start: number;
  end?: number;
  /** The validations in between (not the start's nor the end's). */
  between?: ValidationCheck[];
  /** The best of the validations in between by the criterion (the earliest among equals), when one beat the start's. */
  best?: ValidationCheck;
  /**
   * The policy the phase ended with: `end` (its last), `start` (the policy it started from, put
   * back) or `between` (the one that validated at `best`, put back).
   */
  kept?: 'start' | 'end' | 'between';
  /** What chose the kept policy (absent: `simulator`, as runs recorded before there was a choice). */
  criterion?: 'recorded' | 'simulator';
  /** Held-out recorded successes the policy is scored on (criterion `recorded`). */
  recorded?: number;
  /** Every validation point in order, the start's and the end's included, with all its figures. */
  checks?: ValidationCheck[];
}

/**
 * `kept the start`, `kept iteration 30: 76.0%` (the simulator's figure) or `kept iteration 30:
 * agrees 40.0% with held-out recorded successes, 76.0% inside the simulator` (the recorded
 * criterion's, with the simulator's figure that decides where the recorded one cannot) when a
 * decided phase ended with a policy other than its last; null otherwise. `percent` formats a
 * success rate.
 */
export function keptPhrase(v: SyntheticValidation, percent: (x: number) => string): string | null {
  if (v.kept === 'start') return 'kept the start';
  if (v.kept === 'between' && v.best) {
    if (v.criterion === 'recorded' && v.best.prefix !== undefined && v.best.agreement !== undefined) return `kept iteration ${v.best.iteration}: agrees ${percent((v.best.prefix + v.best.agreement) / 2)} with held-out recorded successes, ${percent(v.best.success)} inside the simulator`;
    return `kept iteration ${v.best.iteration}: ${percent(v.best.success)}`;
  }
  return null;
}

/** The simulator's own figure for the policy a synthetic phase ended with (the one it kept). */
export function keptValidation(v: SyntheticValidation): number {
  if (v.kept === 'start') return v.start;
  if (v.kept === 'between' && v.best) return v.best.success;
  return v.end ?? Number.NaN;
}
