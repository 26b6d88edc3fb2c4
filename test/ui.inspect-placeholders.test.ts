/** The inspector's reading of action-kind placeholders in the experience model's reasoning (src/ui/inspect/placeholders.ts). */
import { describe, expect, it } from 'vitest';
import { readablePlaceholders } from '../src/ui/inspect/placeholders.ts';

describe('reasoning placeholders', () => {
  it('names what each placeholder of a quoted action kind stands for', () => {
    expect(readablePlaceholders('"search[qi]" never completed an episode in the stored data.')).toBe('"search[words of the instruction]" never completed an episode in the stored data.');
    expect(readablePlaceholders('in the stored data "click[qid]" goes back; "go to qx" and "take qn"')).toBe(
      'in the stored data "click[an id]" goes back; "go to a thing the instruction does not name" and "take a number"',
    );
    expect(readablePlaceholders('"buy[{}]" never occurs in the stored data')).toBe('"buy[something]" never occurs in the stored data');
  });

  it('leaves words outside quotes, and words that only contain a placeholder, as they are', () => {
    const text = 'nearest stored transition "click[qidx]"; qi and qid outside quotes stay';
    expect(readablePlaceholders(text)).toBe(text);
  });
});
