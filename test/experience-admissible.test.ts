import { describe, expect, it } from 'vitest';
import { isAdmissible, learnFreeTextActions } from '../src/experience/admissible.ts';

describe('isAdmissible', () => {
  const results = { text: 'Page: results', actions: ['click[B01]', 'click[next >]'] };
  const search = { text: 'Page: search', actions: ['search[red shoes]', 'search[shoes]'] };
  const box = new Set(['search[{}]']);

  it('accepts listed actions, ignoring surrounding whitespace', () => {
    expect(isAdmissible(results, 'click[B01]')).toBe(true);
    expect(isAdmissible(results, '  click[next >] ')).toBe(true);
    expect(isAdmissible(results, 'click[B02]')).toBe(false);
  });

  it('accepts any non-empty argument of a free-text template where the state lists one, and nowhere else', () => {
    expect(isAdmissible(search, 'search[anything at all]', box)).toBe(true);
    expect(isAdmissible(search, ' search[anything at all] ', box)).toBe(true);
    expect(isAdmissible(search, 'search[ ]', box)).toBe(false);
    expect(isAdmissible(search, 'search[]', box)).toBe(false);
    expect(isAdmissible(results, 'search[shoes]', box)).toBe(false);
    // No template declared or learned: only the listed queries.
    expect(isAdmissible(search, 'search[anything at all]')).toBe(false);
    expect(isAdmissible(search, 'search[shoes]')).toBe(true);
    // A template of another form, or with two slots, frees nothing.
    expect(isAdmissible(results, 'click[B02]', box)).toBe(false);
    expect(isAdmissible({ text: '', actions: ['move a to b'] }, 'move c to d', new Set(['move {} to {}']))).toBe(false);
    // Any one-slot form works, bracketed or not.
    expect(isAdmissible({ text: '', actions: ['say hello'] }, 'say good night', new Set(['say {}']))).toBe(true);
  });
});

describe('learnFreeTextActions', () => {
  const page = { text: 'Page: search', actions: ['search[red shoes]', 'search[shoes]'] };

  it('learns a template the environment accepted outside its list (valid), where the list had that template', () => {
    expect([...learnFreeTextActions([{ observation: page, action: 'search[blue shoes]', valid: true }])]).toEqual(['search[{}]']);
  });

  it('learns nothing from listed, invalid or unlike actions', () => {
    expect(learnFreeTextActions([{ observation: page, action: 'search[shoes]', valid: true }]).size).toBe(0);
    expect(learnFreeTextActions([{ observation: page, action: 'search[blue shoes]', valid: false }]).size).toBe(0);
    // Accepted, but the state listed no action of its template: nothing says it fills a listed box.
    expect(learnFreeTextActions([{ observation: page, action: 'look', valid: true }]).size).toBe(0);
    expect(learnFreeTextActions([{ observation: page, action: 'click[B01]', valid: true }]).size).toBe(0);
  });
});
