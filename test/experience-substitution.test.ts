import { describe, expect, it } from 'vitest';
import type { Task } from '../src/core/types.ts';
import { actionTemplate, actionVerb, alignEntities, applySubstitution, buildSubstitution, carriedAlignment, instructionAlignment, listingAlignment, requote, requoteState, withSwaps } from '../src/experience/retrieval/substitution.ts';

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

  it('maps the instruction and the action entities, never goal values', () => {
    const sub = buildSubstitution(from, to, 'take apple 1 from countertop 1', 'take mug 2 from cabinet 3');
    expect(sub).toEqual([
      ['put a clean apple in countertop.', 'put a clean mug in shelf.'],
      ['apple 1', 'mug 2'],
      ['countertop 1', 'cabinet 3'],
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
    expect(applySubstitution('an apple, a pineapple, an apple pie and a pear', sub)).toBe('a pear, a pineapple, a cake and a plum');
    expect(applySubstitution('unchanged', [])).toBe('unchanged');
  });

  it('an indefinite article that fitted the text replaced fits the replacement; one that did not stays', () => {
    const sub: Array<[string, string]> = [
      ['apple 1', 'pot 1'],
      ['pot 2', 'egg 2'],
      ['cd 1', 'alarmclock 1'],
    ];
    expect(applySubstitution('You see an apple 1, a pot 2, and a cd 1.', sub)).toBe('You see a pot 1, an egg 2, and an alarmclock 1.');
    expect(applySubstitution('A pot 2 and An apple 1.', sub)).toBe('An egg 2 and A pot 1.');
    // Not an article (a word ending in "a"), or an article the text did not fit: left alone.
    expect(applySubstitution('sofa apple 1; a apple 1', sub)).toBe('sofa pot 1; a pot 1');
    expect(applySubstitution('take apple 1 from a table', sub)).toBe('take pot 1 from a table');
  });

  it('a compiled substitution is reused only for the same pairs: same texts to replace with other replacements, or in another order, give their own result', () => {
    const text = 'a mug and a cup';
    expect(applySubstitution(text, [['mug', 'bowl']])).toBe('a bowl and a cup');
    expect(applySubstitution(text, [['mug', 'pan']])).toBe('a pan and a cup');
    expect(applySubstitution(text, [['mug', 'bowl'], ['mug', 'pan']])).toBe('a bowl and a cup');
    expect(applySubstitution(text, [['mug', 'pan'], ['mug', 'bowl']])).toBe('a pan and a cup');
    // Applied many times over (a state and each of its actions), the same result every time.
    for (let i = 0; i < 3; i++) expect(applySubstitution('mug, mug and cup', [['mug', 'pan'], ['cup', 'mug']])).toBe('pan, pan and mug');
  });

  it('ignores an empty text to replace instead of splicing its replacement everywhere', () => {
    expect(applySubstitution('red, blue. (x)', [['', 'X']])).toBe('red, blue. (x)');
    expect(applySubstitution('an apple, please.', [['', 'X'], ['apple', 'pear']])).toBe('a pear, please.');
  });

  it('reads no goal: tasks that differ only in their goals give no replacement', () => {
    const a = task('a', 'x', { targetId: 'B0SECRET01', options: { size: 'large' } });
    const b = task('b', 'x', { targetId: 'B0SECRET02', options: { size: 'small' } });
    expect(buildSubstitution(a, b)).toEqual([]);
  });
});

describe('entity alignment and swaps', () => {
  const obs = (actions: string[]) => ({ text: '', actions });

  it('pairs the entities that play the same unique role in both states', () => {
    // The place the agent stands at is the one it cannot go to but can examine; the held object is the one it can put.
    const from = obs(['go to fridge 1', 'go to desk 1', 'examine sidetable 1', 'put cup 2 in/on sidetable 1', 'examine cup 2']);
    const to = obs(['go to fridge 1', 'go to shelf 1', 'examine drawer 3', 'put pen 1 in/on drawer 3', 'examine pen 1']);
    expect(alignEntities(from, to)).toEqual(expect.arrayContaining([['sidetable 1', 'drawer 3'], ['cup 2', 'pen 1']]));
    // Places one can go to share one role: none of them is paired.
    expect(alignEntities(from, to).some(([a]) => a === 'desk 1')).toBe(false);
  });

  it('pairs an involved entity with the single best-overlapping one, and none on a tie', () => {
    const from = obs(['examine countertop 1', 'take apple 1 from countertop 1', 'go to fridge 1']);
    const to = obs(['examine fridge 2', 'open fridge 2', 'go to desk 1', 'go to shelf 1']);
    expect(alignEntities(from, to, new Set(['countertop 1']))).toContainEqual(['countertop 1', 'fridge 2']);
    const tie = obs(['examine a 1', 'examine b 1']);
    expect(alignEntities(obs(['take x 1 from c 1', 'examine c 1']), tie, new Set(['c 1']))).toEqual([]);
  });

  it('pairs the best-matching entities first, and an entity with itself before another', () => {
    // The recorded walk stood at a closed drawer holding a saltshaker; this state stands at an open
    // cabinet holding the same saltshaker. Taken in name order, the drawer took the saltshaker.
    const from = obs(['go to shelf 1', 'open drawer 5', 'examine drawer 5', 'examine saltshaker 1', 'look']);
    const to = obs(['go to shelf 1', 'go to drawer 5', 'examine cabinet 3', 'close cabinet 3', 'put saltshaker 1 in/on cabinet 3', 'examine saltshaker 1', 'look']);
    const pairs = alignEntities(from, to, new Set(['drawer 5', 'saltshaker 1', 'shelf 1']));
    expect(pairs).toContainEqual(['drawer 5', 'cabinet 3']);
    expect(pairs.some(([a]) => a === 'saltshaker 1')).toBe(false);
    // Another saltshaker (no instance pairs with itself): the closest pair still goes first. In
    // name order the drawer (open, examine) took "saltshaker 3" (1/3 overlap) before "saltshaker 1"
    // (1/2 with it) could, and the walk offered "go to saltshaker 3".
    const other = obs(['go to shelf 1', 'go to drawer 5', 'examine cabinet 2', 'close cabinet 2', 'put saltshaker 3 in/on cabinet 2', 'examine saltshaker 3', 'look']);
    const crossed = alignEntities(from, other, new Set(['drawer 5', 'saltshaker 1', 'shelf 1']));
    expect(crossed).toContainEqual(['saltshaker 1', 'saltshaker 3']);
    expect(crossed).toContainEqual(['drawer 5', 'cabinet 2']);
  });

  it('makes a substitution a permutation', () => {
    const sub = withSwaps([['sidetable 1', 'drawer 2']]);
    expect(applySubstitution('go to sidetable 1; go to drawer 2', sub)).toBe('go to drawer 2; go to sidetable 1');
    // A target that is already mapped keeps its own mapping.
    expect(withSwaps([['a', 'b'], ['b', 'c']])).toEqual([['a', 'b'], ['b', 'c'], ['c', 'b']]);
  });
});

describe('instruction alignment', () => {
  it('maps the stretches where two instructions differ, anchored on the words they share', () => {
    const from = 'i need some pet shampoo that is odor control, size 16 fl oz, price lower than 33.00 dollars';
    const to = 'i need a frying pan that is bpa free, in black, size 8 inch, price lower than 49.00 dollars';
    const sub = instructionAlignment(from, to);
    expect(sub).toEqual([
      ['pet shampoo', 'frying pan'],
      ['odor control', 'bpa free, in black'],
      ['16 fl oz', '8 inch'],
      ['33.00', '49.00'],
    ]);
    expect(applySubstitution('search[pet shampoo that is odor control, size 16 fl oz]', sub)).toBe('search[frying pan that is bpa free, in black, size 8 inch]');
  });

  it('gives nothing for equal instructions', () => {
    expect(instructionAlignment('look at cup under the desklamp.', 'look at cup under the desklamp.')).toEqual([]);
  });
});

describe('requoting the instruction', () => {
  const earbuds = 'i need wireless earbuds that are noise cancelling, fast charging and high definition, in rose gold, price lower than 225.00 dollars';
  const slippers = 'i need slippers that are memory foam, lace up and anti odor, in brown, size 9.5, price lower than 52.00 dollars';
  const moreSlippers = 'i need slippers that are memory foam, lace up, anti odor and cushioned, in brown, size 8, price lower than 52.00 dollars';

  it('quotes the same stretch of the new instruction, word for word', () => {
    const silver = earbuds.replace('rose gold', 'silver');
    expect(requote(earbuds, silver, 'wireless earbuds that are noise cancelling, fast charging and high definition, in rose gold')).toBe('wireless earbuds that are noise cancelling, fast charging and high definition, in silver');
    expect(requote(slippers, moreSlippers, 'slippers that are memory foam, lace up and anti odor, in brown, size 9.5')).toBe('slippers that are memory foam, lace up, anti odor and cushioned, in brown, size 8');
    expect(requote(slippers, moreSlippers, 'slippers')).toBe('slippers');
  });

  it('leaves out of a shortened quote what the original left out, and keeps what the new instruction adds', () => {
    expect(requote(slippers, moreSlippers, 'slippers memory foam lace up anti odor')).toBe('slippers memory foam lace up anti odor cushioned');
    expect(requote(earbuds, 'i need a stapler that is quick drying, in white, price lower than 22.00 dollars', 'wireless earbuds')).toBe('stapler');
    const shirt = 'i need a t-shirt that is breathable, in burgundy, size s, price lower than 40.00 dollars';
    expect(requote(shirt, 'i need a t-shirt that is stretch fabric, in black, size xxl, price lower than 40.00 dollars', 't-shirt breathable')).toBe('t-shirt stretch fabric');
  });

  it('ends a shortened quote where a section the original lacked begins', () => {
    // The stored instruction has no colour; the new one's ", in green" is not one more attribute.
    const leash = 'i need a dog leash that is durable, machine washable and calming, price lower than 29.00 dollars';
    const green = 'i need a dog leash that is durable, machine washable and calming, in green, price lower than 29.00 dollars';
    expect(requote(leash, green, 'dog leash durable machine washable calming')).toBe('dog leash durable machine washable calming');
    const game = 'i need a board game that is non toxic, price lower than 43.00 dollars';
    expect(requote(game, 'i need a board game that is non toxic, creative play and bpa free, price lower than 43.00 dollars', 'board game non toxic')).toBe('board game non toxic creative play bpa free');
  });

  it('gives nothing for what does not quote the instruction, or for the same instruction', () => {
    expect(requote(earbuds, moreSlippers, 'buy now')).toBeUndefined();
    expect(requote(earbuds, moreSlippers, 'your query')).toBeUndefined();
    expect(requote(earbuds, earbuds, 'wireless earbuds')).toBeUndefined();
  });

  it('rewrites the rest of a state with the substitution, never the new quotes', () => {
    const to = moreSlippers;
    const state = { text: `Instruction: ${slippers}\nActions: search[slippers memory foam lace up anti odor] search[slippers]`, actions: ['search[slippers memory foam lace up anti odor]', 'search[slippers]'] };
    // A substitution that would turn the new quote's "cushioned" into something else if applied to it.
    const out = requoteState(slippers, to, state, [[slippers, to], ['cushioned', 'padded']]);
    expect(out.actions).toEqual(['search[slippers memory foam lace up anti odor cushioned]', 'search[slippers]']);
    expect(out.text).toBe(`Instruction: ${to}\nActions: search[slippers memory foam lace up anti odor cushioned] search[slippers]`);
  });
});

describe('listing alignment', () => {
  it("maps what a results page lists for the neighbour's clicked product to what it lists for ours", () => {
    const theirs = 'Page: results for "art set"\n[B0IRAZE5M3] Vimerul Classic Art Set - Washable | $30.03\n[B0PYHJQUHE] Wentek Classic Art Set - Travel Friendly | $31.33';
    const ours = 'Page: results for "art set washable"\n[B0AAAAAAA1] Other Art Set - Durable | $12.00\n[B0PYHJQUHE] Wentek Classic Art Set - Travel Friendly | $31.33';
    const sub = listingAlignment(theirs, 'click[B0IRAZE5M3]', ours, 'click[B0PYHJQUHE]');
    expect(sub).toEqual([
      ['Vimerul Classic Art Set - Washable', 'Wentek Classic Art Set - Travel Friendly'],
      ['$30.03', '$31.33'],
    ]);
    // The product page the neighbour's click led to, rewritten, shows our product's title and price.
    expect(applySubstitution('Page: item B0IRAZE5M3\nVimerul Classic Art Set - Washable\nPrice: $30.03', [['B0IRAZE5M3', 'B0PYHJQUHE'], ...sub])).toBe(
      'Page: item B0PYHJQUHE\nWentek Classic Art Set - Travel Friendly\nPrice: $31.33',
    );
    // Nothing to align without a listing line for both, or for actions of different kinds.
    expect(listingAlignment(theirs, 'click[B0IRAZE5M3]', 'Page: search', 'click[B0PYHJQUHE]')).toEqual([]);
    expect(listingAlignment(theirs, 'click[B0IRAZE5M3]', ours, 'search[art set]')).toEqual([]);
  });
});

describe('carried alignment', () => {
  it("rewrites a form that quotes the neighbour's item with the fields of ours", () => {
    const theirs = 'Fare F-12: Oslo to Rome on 2024-05-01, 230 EUR, 1 stop.';
    const ours = 'Fare F-40: Paris to Lima on 2024-06-03, 410 EUR, 1 stop.';
    const next = 'Booking form for fare F-12 (Oslo to Rome, 2024-05-01). Total 230 EUR.';
    const sub = carriedAlignment(theirs, 'select this fare', ours, 'select this fare', next);
    expect(applySubstitution(next, sub)).toBe('Booking form for fare F-40 (Paris to Lima, 2024-06-03). Total 410 EUR.');
    // Only words the next state shows are paired.
    expect(carriedAlignment(theirs, 'select this fare', ours, 'select this fare', 'Booking form.')).toEqual([]);
  });

  it('reads the clause the action names when an item is opened from a list', () => {
    const theirs = 'Results: F-1 Oslo 230 EUR; F-2 Rome 310 EUR; F-3 Lima 99 EUR.';
    const ours = 'Results: F-7 Paris 120 EUR; F-8 Cairo 450 EUR.';
    const next = 'Fare F-2: Rome, 310 EUR.';
    const sub = carriedAlignment(theirs, 'open F-2', ours, 'open F-8', next);
    expect(applySubstitution(next, sub)).toBe('Fare F-8: Cairo, 450 EUR.');
    // Clauses of different lengths say nothing about which word stands for which.
    expect(carriedAlignment(theirs, 'open F-2', 'Results: F-8 Cairo 450 EUR extra fee; F-9 Nice 1 EUR.', 'open F-8', next).map((p) => p[0])).not.toContain('Rome');
  });

  it('pairs nothing between identical states or stretches of different lengths', () => {
    expect(carriedAlignment('a b c', 'go', 'a b c', 'go', 'a b c')).toEqual([]);
    expect(carriedAlignment('Room: red lamp here.', 'look', 'Room: big blue chair here.', 'look', 'You see a red lamp.')).toEqual([]);
  });
});
