import { describe, expect, it } from 'vitest';
import { formatInterval, validationNote } from '../src/ui/results/ResultsPanel.tsx';

describe('results panel text', () => {
  it('says which policy a synthetic phase ended with when it was not its last', () => {
    expect(validationNote(undefined)).toBe('');
    expect(validationNote({ tasks: 50, start: 0.1 })).toBe('');
    expect(validationNote({ tasks: 50, start: 0.1, end: 0.7, kept: 'end' })).toBe('');
    expect(validationNote({ tasks: 50, start: 0.96, end: 0.9, kept: 'start' })).toBe(' (simulator validation 96.0% -> 90.0%, kept the start)');
    expect(validationNote({ tasks: 50, start: 0.02, end: 0.62, best: { iteration: 30, success: 0.76 }, kept: 'between' })).toBe(' (simulator validation 2.0% -> 62.0%, kept iteration 30: 76.0%)');
  });

  it('formats an interval as mean [low, high] in percent', () => {
    expect(formatInterval({ mean: 0.5, low: 0.25, high: 0.75 })).toMatch(/50\.0%.*25\.0%.*75\.0%/);
  });
});
