import { describe, expect, it } from 'vitest';
import type { Task } from '../src/core/types.ts';
import { actionTemplate, actionVerb, applySubstitution, buildSubstitution } from '../src/experience/substitution.ts';

const task = (id: string, instruction: string, goal: Task['goal']): Task => ({ id, env: 'household', instruction, goal, split: 'train', origin: 'seed' });

describe('action templates', () => {
  it('slots bracket labels and "word N" entities', () => {
    expect(actionTemplate('take apple 1 from countertop 2')).toEqual({ template: 'take {} from {}', entities: ['apple 1', 'countertop 2'] });
    expect(actionTemplate('click[buy now]')).toEqual({ template: 'click[{}]', entities: ['buy now'] });
    expect(actionTemplate('look')).toEqual({ template: 'look', entities: [] });
  });
  it('verbs are the text before [ or the first word', () => {
    expect(actionVerb('search[red shoes]')).toBe('search');
    expect(actionVerb('go to fridge 1')).toBe('go');
    expect(actionVerb('  Click[x] ')).toBe('click');
  });
});

describe('substitution', () => {
  const from = task('a', 'put a clean apple in countertop.', { layoutSeed: 2, type: 'clean_and_place', object: 'apple', receptacle: 'countertop' });
  const to = task('b', 'put a clean mug in shelf.', { layoutSeed: 4, type: 'clean_and_place', object: 'mug', receptacle: 'shelf' });

  it('maps the instruction, the action entities and same-path goal values', () => {
    const sub = buildSubstitution(from, to, 'take apple 1 from countertop 1', 'take mug 2 from cabinet 3');
    expect(sub).toEqual([
      ['put a clean apple in countertop.', 'put a clean mug in shelf.'],
      ['apple 1', 'mug 2'],
      ['countertop 1', 'cabinet 3'],
      ['apple', 'mug'],
      ['countertop', 'shelf'],
    ]);
    const text = 'Your task is to: put a clean apple in countertop.\nYou pick up the apple 1 from the countertop 1.';
    expect(applySubstitution(text, sub)).toBe('Your task is to: put a clean mug in shelf.\nYou pick up the mug 2 from the cabinet 3.');
  });

  it('does not map entities of actions with different templates', () => {
    const sub = buildSubstitution(from, to, 'go to fridge 1', 'open drawer 2');
    expect(sub.some(([a]) => a === 'fridge 1')).toBe(false);
  });

  it('replaces whole words only, longest first, without chains', () => {
    const sub: Array<[string, string]> = [
      ['apple', 'pear'],
      ['pear', 'plum'],
      ['apple pie', 'cake'],
    ];
    expect(applySubstitution('an apple, a pineapple, an apple pie and a pear', sub)).toBe('an pear, a pineapple, an cake and a plum');
    expect(applySubstitution('unchanged', [])).toBe('unchanged');
  });

  it('ignores an empty text to replace instead of splicing its replacement everywhere', () => {
    expect(applySubstitution('red, blue. (x)', [['', 'X']])).toBe('red, blue. (x)');
    expect(applySubstitution('an apple, please.', [['', 'X'], ['apple', 'pear']])).toBe('an pear, please.');
  });

  it('ignores goal values too short to be safe', () => {
    const a = task('a', 'x', { options: { size: 'm' } });
    const b = task('b', 'y', { options: { size: 'l' } });
    expect(buildSubstitution(a, b)).toEqual([['x', 'y']]);
  });
});
