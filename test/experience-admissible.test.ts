import { describe, expect, it } from 'vitest';
import { isAdmissible } from '../src/experience/admissible.ts';

describe('isAdmissible', () => {
  const results = { text: 'Page: results', actions: ['click[B01]', 'click[next >]'] };
  const search = { text: 'Page: search', actions: ['search[red shoes]', 'search[shoes]'] };

  it('accepts listed actions, ignoring surrounding whitespace', () => {
    expect(isAdmissible(results, 'click[B01]')).toBe(true);
    expect(isAdmissible(results, '  click[next >] ')).toBe(true);
    expect(isAdmissible(results, 'click[B02]')).toBe(false);
  });

  it('accepts any non-empty query where the state has a search box, and nowhere else', () => {
    expect(isAdmissible(search, 'search[anything at all]')).toBe(true);
    expect(isAdmissible(search, 'search[ ]')).toBe(false);
    expect(isAdmissible(search, 'search[]')).toBe(false);
    expect(isAdmissible(results, 'search[shoes]')).toBe(false);
  });
});
