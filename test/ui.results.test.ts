import { describe, expect, it } from 'vitest';
import { formatInterval, keptNote } from '../src/ui/results/ResultsPanel.tsx';

describe('results panel text', () => {
  it('says which policy a synthetic phase ended with when it was not its last', () => {
    expect(keptNote(undefined)).toBe('');
    expect(keptNote({ tasks: 50, start: 0.1 })).toBe('');
    expect(keptNote({ tasks: 50, start: 0.1, end: 0.7, kept: 'end' })).toBe('');
    expect(keptNote({ tasks: 50, start: 0.96, end: 0.9, kept: 'start' })).toBe(' (synthetic phase undone: simulator validation 96.0% -> 90.0%)');
    expect(keptNote({ tasks: 50, start: 0.02, end: 0.62, best: { iteration: 30, success: 0.76 }, kept: 'between' })).toBe(
      " (kept the synthetic phase's iteration 30: simulator validation 2.0% -> 76.0%, 62.0% at its end)",
    );
  });

  it('formats an interval as mean [low, high] in percent', () => {
    expect(formatInterval({ mean: 0.5, low: 0.25, high: 0.75 })).toMatch(/50\.0%.*25\.0%.*75\.0%/);
  });
});
