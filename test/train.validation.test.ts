import { describe, expect, it } from 'vitest';
import { keptPhrase } from '../src/train/validation.ts';

describe('keptPhrase', () => {
  const pct = (x: number): string => `${(100 * x).toFixed(1)}%`;
  it('names the policy a decided synthetic phase kept when it was not its last', () => {
    expect(keptPhrase({ tasks: 50, start: 0.96, end: 0.9, kept: 'start' }, pct)).toBe('kept the start');
    expect(keptPhrase({ tasks: 50, start: 0.02, end: 0.62, best: { iteration: 30, success: 0.76 }, kept: 'between' }, pct)).toBe('kept iteration 30: 76.0%');
    expect(keptPhrase({ tasks: 50, start: 0.1, end: 0.7, best: { iteration: 5, success: 0.4 }, kept: 'end' }, pct)).toBeNull();
    // By the recorded criterion: both figures, as either may have decided.
    expect(keptPhrase({ tasks: 50, start: 0.98, end: 0.96, criterion: 'recorded', best: { iteration: 15, success: 0.98, prefix: 0.8, agreement: 0.984 }, kept: 'between' }, pct)).toBe('kept iteration 15: agrees 89.2% with held-out recorded successes, 98.0% inside the simulator');
    // Undecided (the phase still runs): nothing kept yet.
    expect(keptPhrase({ tasks: 50, start: 0.1, best: { iteration: 5, success: 0.4 } }, pct)).toBeNull();
  });
});
