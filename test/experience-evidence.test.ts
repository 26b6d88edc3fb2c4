import { describe, expect, it } from 'vitest';
import {
  abstractText,
  actionSignature,
  actionsOnPage,
  choiceLists,
  EVIDENCE_DIM,
  latestChoices,
  evidenceFeatures,
  instructionNumbers,
  instructionWords,
  isOpaqueToken,
  namedChoices,
  openedRank,
  stem,
  unofferedChoices,
  withoutInstruction,
} from '../src/experience/retrieval/evidence.ts';

const f32 = (xs: readonly number[]): number[] => xs.map((x) => Math.fround(x));

describe('stem', () => {
  it('lower-cases and drops a plural s or ies', () => {
    expect(stem('Apples')).toBe('apple');
    expect(stem('berries')).toBe('berry');
    expect(stem('Shoes')).toBe('shoe');
    expect(stem('oz')).toBe('oz');
  });
  it('keeps a double s and words of three letters or fewer', () => {
    expect(stem('glass')).toBe('glass');
    expect(stem('bus')).toBe('bus');
    expect(stem('its')).toBe('its');
  });
});

describe('isOpaqueToken', () => {
  it('product ids are opaque', () => {
    expect(isOpaqueToken('b0we9qsuds')).toBe(true);
    expect(isOpaqueToken('size16')).toBe(true);
  });
  it('words, numbers, units and short codes are not', () => {
    expect(isOpaqueToken('apple')).toBe(false);
    expect(isOpaqueToken('16')).toBe(false);
    expect(isOpaqueToken('oz')).toBe(false);
    expect(isOpaqueToken('123456')).toBe(false);
    expect(isOpaqueToken('b0we9')).toBe(false);
    expect(isOpaqueToken('16oz')).toBe(false);
  });
  it('expects lower case, as tokenize gives it', () => {
    expect(isOpaqueToken('B0WE9QSUDS')).toBe(false);
  });
});

describe('instruction words and numbers', () => {
  const instruction = 'i need a pack of 2 red apples, and price lower than 30.00 dollars';
  it('drops stopwords and numbers, stems plurals', () => {
    // A domain's own words ("price", "dollars") are content words here: no domain is special.
    expect([...instructionWords(instruction)]).toEqual(['pack', 'red', 'apple', 'price', 'lower', 'than', 'dollar']);
    expect([...instructionWords('put a cool apple in fridge.')]).toEqual(['put', 'cool', 'apple', 'fridge']);
    expect([...instructionWords('Find some Berries and Glasses')]).toEqual(['berry', 'glasse']);
    expect(instructionWords('the 3 of them').size).toBe(1);
    expect(instructionWords('')).toEqual(new Set());
  });
  it('lists the numbers as written', () => {
    expect(instructionNumbers(instruction)).toEqual(['2', '30.00']);
    expect(instructionNumbers('size 8 fl oz, 16.5 inches, under $40')).toEqual(['8', '16.5', '40']);
    expect(instructionNumbers('put a cool apple in fridge.')).toEqual([]);
  });
});

describe('withoutInstruction', () => {
  it('drops the lines that restate the instruction', () => {
    const text = 'Instruction: buy red apples\nPage: search\nInstruction: buy red apples (again)\nResults: 3';
    expect(withoutInstruction(text, 'buy red apples')).toBe('Page: search\nResults: 3');
    expect(withoutInstruction(text, 'buy green pears')).toBe(text);
  });
  it('keeps everything for an empty instruction', () => {
    expect(withoutInstruction('a\nb', '')).toBe('a\nb');
  });
});

describe('abstractText', () => {
  it('rewrites instruction words as qi, numbers as qn, opaque ids as qid', () => {
    const words = instructionWords('put a cool apple in fridge.');
    expect(abstractText('Apples 1 is on the Table, id B0WE9QSUDS, price 3.50', words)).toBe('qi qn is on the table id qid price qn');
    expect(abstractText('You open the fridge 1.', words)).toBe('you open the qi qn');
    expect(abstractText('', words)).toBe('');
  });
});

describe('actionSignature', () => {
  const words = instructionWords('put a cool apple in fridge.');
  it('marks entities the instruction names as qi, others as qx', () => {
    expect(actionSignature('put apple 1 in/on fridge 1', words)).toBe('put qi in/on qi');
    expect(actionSignature('take mug 2 from countertop 1', words)).toBe('take qx from qx');
    expect(actionSignature('take apple 1 from countertop 1', words)).toBe('take qi from qx');
    expect(actionSignature('look', words)).toBe('look');
  });
  it('marks a lone opaque id as qid, a label as qx', () => {
    expect(actionSignature('click[B0WE9QSUDS]', words)).toBe('click[qid]');
    expect(actionSignature('click[buy now]', words)).toBe('click[qx]');
    expect(actionSignature('click[B0WE9QSUDS large]', words)).toBe('click[qx]');
  });
  it('a number alone never makes an entity one the instruction names', () => {
    const sized = instructionWords('a lotion in size 16 fl oz');
    expect(actionSignature('click[16]', sized)).toBe('click[qx]');
    expect(actionSignature('click[16 fl oz]', sized)).toBe('click[qi]');
    expect(actionSignature('search[lotion]', sized)).toBe('search[qi]');
  });
});

describe('actionsOnPage', () => {
  const page = ['click[back to search]', 'click[8 fl oz]', 'click[description]', 'click[buy now]'];
  const history = [
    { observation: { actions: ['search[...]'] }, action: 'search[lotion]' },
    { observation: { actions: page }, action: 'click[8 fl oz]' },
    { observation: { actions: page.slice() }, action: 'click[description]' },
    { observation: { actions: ['click[back to search]', 'click[< prev]'] }, action: 'click[< prev]' },
    { observation: { actions: page.slice() }, action: 'click[buy now]' },
  ];
  it('keeps the actions taken in states that offered exactly the current actions and stayed on them', () => {
    expect(actionsOnPage(history, { actions: page })).toEqual(['click[8 fl oz]', 'click[buy now]']);
    expect(actionsOnPage(history.slice(0, 1), { actions: ['search[...]'] })).toEqual(['search[lotion]']);
  });
  it('an action that led away chose nothing on the page, even when the agent came back', () => {
    // At the desk, to the sink basin and back: "go to sinkbasin 1" is not a choice made at the desk.
    const desk = ['go to sinkbasin 1', 'use desklamp 1', 'examine desk 1'];
    const trip = [
      { observation: { actions: desk }, action: 'go to sinkbasin 1' },
      { observation: { actions: ['go to desk 1', 'examine sinkbasin 1'] }, action: 'go to desk 1' },
      { observation: { actions: desk.slice() }, action: 'examine desk 1' },
    ];
    expect(actionsOnPage(trip, { actions: desk })).toEqual(['examine desk 1']);
  });
  it('a different order or a subset is another page', () => {
    expect(actionsOnPage(history, { actions: [...page].reverse() })).toEqual([]);
    expect(actionsOnPage(history, { actions: page.slice(0, 2) })).toEqual([]);
    expect(actionsOnPage([], { actions: page })).toEqual([]);
  });
});

describe('openedRank', () => {
  const results = { actions: ['click[back to search]', 'click[B0AAAA1111]', 'click[B0BBBB2222]', 'click[B0CCCC3333]', 'click[next >]'] };
  it('is where the latest item opened by an opaque id stood among the items of its list, over 10', () => {
    expect(openedRank([])).toBe(0);
    expect(openedRank([{ observation: results, action: 'click[B0AAAA1111]' }])).toBe(0);
    expect(openedRank([{ observation: results, action: 'click[B0CCCC3333]' }])).toBeCloseTo(0.2, 6);
    // Later steps that open nothing (options, buy) leave it; a later opened item replaces it.
    const page = { actions: ['click[red]', 'click[blue]', 'click[buy now]'] };
    expect(openedRank([{ observation: results, action: 'click[B0CCCC3333]' }, { observation: page, action: 'click[red]' }])).toBeCloseTo(0.2, 6);
    expect(openedRank([{ observation: results, action: 'click[B0CCCC3333]' }, { observation: results, action: 'click[B0BBBB2222]' }])).toBeCloseTo(0.1, 6);
    // Words are not opaque ids: household places give 0.
    expect(openedRank([{ observation: { actions: ['go to drawer 1', 'go to drawer 2'] }, action: 'go to drawer 2' }])).toBe(0);
    const long = { actions: Array.from({ length: 14 }, (_, i) => `click[B0ZZZZ${String(i).padStart(4, '0')}]`) };
    expect(openedRank([{ observation: long, action: 'click[B0ZZZZ0013]' }])).toBe(1);
  });

  it('is the last evidence feature', () => {
    expect(evidenceFeatures('a red mug', 'Page: item', 'click[buy now]', [], [], [], 0.3)[10]).toBeCloseTo(0.3, 6);
  });
});

describe('evidenceFeatures', () => {
  it('has EVIDENCE_DIM features, the ninth a constant 1', () => {
    expect(EVIDENCE_DIM).toBe(12);
    const f = evidenceFeatures('find a red apple', 'nothing here', 'look', []);
    expect(f).toBeInstanceOf(Float32Array);
    expect(f).toHaveLength(EVIDENCE_DIM);
    expect(f[8]).toBe(1);
  });

  it('coverage of the instruction words by the screen (without its instruction line), the action, the history and all three', () => {
    const instruction = 'find a red apple and a green pear';
    const state = `Instruction: ${instruction}\nYou see a red apple 1 and a knife 2.`;
    const f = evidenceFeatures(instruction, state, 'take pear 1 from table 1', ['go to table 1', 'examine green box 1']);
    expect(Array.from(f)).toEqual([0.5, 0.25, 0.25, 1, 1, 0.5, 0, 0, 1, 0, 0, 0]);
    // The instruction line alone covers nothing.
    expect(evidenceFeatures(instruction, `Instruction: ${instruction}`, 'look', [])[0]).toBe(0);
  });

  it('an instruction without content words covers nothing', () => {
    expect(Array.from(evidenceFeatures('', 'a red apple', 'take apple 1', ['look']))).toEqual([0, 0, 0, 0, 1, 0.5, 0, 0, 1, 0, 0, 0]);
  });

  it('how many more things of a kind the instruction asks for than the step shows', () => {
    const instruction = 'put two pen in drawer.';
    const owed = (screen: string, action: string): number => evidenceFeatures(instruction, screen, action, [])[11] as number;
    // Holding one pen, none in the drawer: one more owed (over 4).
    expect(owed('Location: drawer 1 (open); you see nothing. Holding: pen 2.', 'put pen 2 in/on drawer 1')).toBe(0.25);
    // A pen already in the drawer: the put completes the pair.
    expect(owed('Location: drawer 1 (open); you see pen 1. Holding: pen 2.', 'put pen 2 in/on drawer 1')).toBe(0);
    // No count word, or an action naming nothing of the kind: nothing owed.
    expect(evidenceFeatures('put a pen in drawer.', 'Holding: pen 2.', 'put pen 2 in/on drawer 1', [])[11]).toBe(0);
    expect(owed('Holding: pen 2.', 'look')).toBe(0);
  });

  it('the share of the whole numbers asked for that are on screen', () => {
    const instruction = 'size 8 and a 2 pack';
    expect(evidenceFeatures(instruction, `${instruction}\nsize: 8\npack of 3`, 'look', [])[4]).toBe(0.5);
    expect(evidenceFeatures(instruction, `${instruction}\nsize: 8\npack of 2`, 'look', [])[4]).toBe(1);
    expect(evidenceFeatures(instruction, `${instruction}\nsize: 10`, 'look', [])[4]).toBe(0);
  });

  describe('the price check', () => {
    const instruction = 'i need a 2 pack of soap, and price lower than 30.00 dollars';
    const price = (screen: string, ask = instruction): number => evidenceFeatures(ask, `Instruction: ${ask}\n${screen}`, 'look', [])[5] as number;
    it('1 when every decimal amount on screen is within the largest asked', () => {
      expect(price('soap, 2 pack\nPrice: $24.99')).toBe(1);
      expect(price('Price: $12.50 to $30.00')).toBe(1);
    });
    it('0 when one exceeds it', () => {
      expect(price('Price: $24.99 to $35.50')).toBe(0);
      expect(price('Price: $30.01')).toBe(0);
    });
    it('0.5 when none is shown, or none asked for', () => {
      expect(price('soap, 2 pack')).toBe(0.5);
      expect(price('Price: $24.99', 'i need a 2 pack of soap')).toBe(0.5);
    });
    it('the whole numbers feature sees the 2 of the pack', () => {
      const f = evidenceFeatures(instruction, `Instruction: ${instruction}\nsoap, 2 pack\nPrice: $24.99`, 'look', []);
      expect(f[4]).toBe(1);
    });
  });

  it('coverage by the actions taken on this page', () => {
    const instruction = 'i need a lotion in navy blue, size 8 fl oz';
    // lotion, navy, blue, size, fl, oz: two of six.
    expect(evidenceFeatures(instruction, 'page', 'look', [], ['click[navy blue]'])[6]).toBe(Math.fround(1 / 3));
    expect(evidenceFeatures(instruction, 'page', 'look', [], ['click[navy blue]', 'click[8 fl oz]'])[6]).toBe(Math.fround(4 / 6));
    expect(evidenceFeatures(instruction, 'page', 'look', [])[6]).toBe(0);
  });

  describe('offered entities the instruction names but not chosen on this page', () => {
    const instruction = 'i need a lotion in size 8 fl oz, and price lower than 30.00 dollars';
    const item = ['click[back to search]', 'click[< prev]', 'click[8 fl oz]', 'click[16 fl oz]', 'click[description]', 'click[buy now]'];
    const state = `Instruction: ${instruction}\nLotion\nPrice: $24.99\nsize: 8 fl oz, 16 fl oz`;
    const unchosen = (pageActions: string[], offered = item, ask = instruction): number => evidenceFeatures(ask, state, 'click[buy now]', [], pageActions, offered)[7] as number;

    it('1/5 for an offered size the instruction names, 0 once it is chosen', () => {
      expect(unchosen([])).toBe(Math.fround(1 / 5));
      expect(unchosen(['click[8 fl oz]'])).toBe(0);
      // Choosing the other size does not answer it.
      expect(unchosen(['click[16 fl oz]'])).toBe(Math.fround(1 / 5));
    });

    it('the whole feature vector of the item page before and after the choice', () => {
      const before = evidenceFeatures(instruction, state, 'click[buy now]', ['search[lotion 8 fl oz]', 'click[B0WE9QSUDS]'], [], item);
      // Words: lotion, size, fl, oz, price, lower, than, dollar. Screen: five (not lower, than, dollar); action: none; history: lotion, fl, oz; page: none.
      // The 8 asked for is on screen, $24.99 is within $30.00, one named size is offered but not chosen.
      expect(Array.from(before)).toEqual(f32([5 / 8, 0, 3 / 8, 5 / 8, 1, 1, 0, 0.2, 1, 0, 0, 0]));
      const after = evidenceFeatures(instruction, state, 'click[buy now]', ['search[lotion 8 fl oz]', 'click[B0WE9QSUDS]', 'click[8 fl oz]'], ['click[8 fl oz]'], item);
      expect(Array.from(after)).toEqual(f32([5 / 8, 0, 3 / 8, 5 / 8, 1, 1, 2 / 8, 0, 1, 0, 0, 0]));
    });

    it('choices the instruction did not ask for are counted: choosing every size is not choosing the right one', () => {
      const unasked = (pageActions: string[]): number => evidenceFeatures(instruction, state, 'click[buy now]', [], pageActions, item)[9] as number;
      expect(unasked([])).toBe(0);
      expect(unasked(['click[8 fl oz]'])).toBe(0);
      expect(unasked(['click[16 fl oz]'])).toBe(Math.fround(1 / 5));
      expect(unasked(['click[8 fl oz]', 'click[16 fl oz]'])).toBe(Math.fround(1 / 5));
      // Only what the page still offers: a search earlier in the episode is not a choice here.
      expect(unasked(['search[lotion 16 oz]', 'click[8 fl oz]'])).toBe(0);
      // The unchosen count alone cannot tell these apart (both 0): the hack GRPO found.
      expect(unchosen(['click[8 fl oz]', 'click[16 fl oz]'])).toBe(unchosen(['click[8 fl oz]']));
    });

    it('in an option list shown on one line, only the latest choice holds', () => {
      const page = `Instruction: ${instruction}\nLotion\nPrice: $24.99\nsize: [8 fl oz] [16 fl oz] (selected: 16 fl oz)`;
      const at = (pageActions: string[], k: number): number => evidenceFeatures(instruction, page, 'click[buy now]', [], pageActions, item)[k] as number;
      expect(latestChoices(page, ['click[8 fl oz]', 'click[16 fl oz]'], item)).toEqual(['16 fl oz']);
      expect(latestChoices(page, ['click[16 fl oz]', 'click[8 fl oz]'], item)).toEqual(['8 fl oz']);
      // 8 fl oz then 16 fl oz: the asked size is no longer chosen, and an unasked one is.
      expect(at(['click[8 fl oz]', 'click[16 fl oz]'], 7)).toBe(Math.fround(1 / 5));
      expect(at(['click[8 fl oz]', 'click[16 fl oz]'], 9)).toBe(Math.fround(1 / 5));
      expect(at(['click[16 fl oz]', 'click[8 fl oz]'], 7)).toBe(0);
      expect(at(['click[16 fl oz]', 'click[8 fl oz]'], 9)).toBe(0);
      // Choices outside any list (a line with one entity) all hold.
      expect(latestChoices('[description]\n[features]', ['click[description]', 'click[features]'], ['click[description]', 'click[features]'])).toEqual(['description', 'features']);
    });

    it('an offered [blue] counts as chosen when navy blue was chosen, not the other way round', () => {
      const ask = 'i need a lotion in navy blue, size 8 fl oz';
      const offered = ['click[blue]', 'click[navy blue]', 'click[red]', 'click[8 fl oz]', 'click[8 fl oz]'];
      expect(unchosen([], offered, ask)).toBe(Math.fround(3 / 5));
      expect(unchosen(['click[navy blue]'], offered, ask)).toBe(Math.fround(1 / 5));
      expect(unchosen(['click[blue]'], offered, ask)).toBe(Math.fround(2 / 5));
      expect(unchosen(['click[navy blue]', 'click[8 fl oz]'], offered, ask)).toBe(0);
    });

    it('every word of the entity, numbers included, must be in the instruction', () => {
      // "apple 1": the instruction says apple but not 1.
      expect(unchosen([], ['take apple 1 from countertop 1', 'go to fridge 1'], 'put a cool apple in fridge.')).toBe(0);
      expect(unchosen([], ['click[red]', 'click[large]'], 'a large shirt')).toBe(Math.fround(1 / 5));
    });

    it('counts at most five', () => {
      const colours = ['red', 'green', 'blue', 'white', 'black', 'pink', 'gold'];
      const ask = `a shirt in ${colours.join(' ')}`;
      expect(unchosen([], colours.map((c) => `click[${c}]`), ask)).toBe(1);
      expect(unchosen([], colours.slice(0, 4).map((c) => `click[${c}]`), ask)).toBe(Math.fround(4 / 5));
    });
  });
});

describe('choices the instruction names', () => {
  const item = ['click[black]', 'click[white]', 'click[space gray]', 'click[description]', 'click[buy now]'];
  const page = 'Page: item B0FCAXDG47\nHelwenul Smart Phone Case - High Definition\ncolor: [black] [white] [space gray] (selected: none)\nActions: click[black] click[white] click[space gray] click[description] click[buy now]';

  it('an option list is a line of standalone brackets; a line of actions is not one', () => {
    expect([...choiceLists(page, item).keys()]).toEqual(['black', 'white', 'space gray']);
  });

  it('names list values whose words appear in order in the instruction, the longest one only', () => {
    const known = ['gray', 'space gray', 'silver', '8 fl oz', 'large'];
    expect(namedChoices('i need a phone case in space gray', known)).toEqual(['space gray']);
    expect(namedChoices('i need a lotion, size 8 fl oz', known)).toEqual(['8 fl oz']);
    expect(namedChoices('i need a desk lamp that is large capacity', known)).toEqual(['large']);
  });

  it('counts a reliable named value the page neither offers nor mentions (a phone case page without the silver asked for)', () => {
    const known = ['black', 'white', 'silver', 'olive', 'large'];
    const reliable = new Set(['black', 'white', 'silver', 'olive']);
    expect(unofferedChoices('i need a phone case that is high definition, in silver', page, item, known, reliable)).toBe(1);
    expect(unofferedChoices('i need a phone case that is high definition, in white', page, item, known, reliable)).toBe(0);
    // "large" in "large capacity" asks for no choice: the data never showed it reliably offered.
    expect(unofferedChoices('i need a phone case that is large capacity', page, item, known, reliable)).toBe(0);
    // "olive" named by the product ("Olive Oil" on screen) is not a missing colour.
    expect(unofferedChoices('i need some olive oil', 'Page: item B01\nGourmet Olive Oil', ['click[buy now]'], known, reliable)).toBe(0);
    // "gray" inside the offered "[space gray]" is no gray on offer; in the title it still counts as named by the product.
    const grays = new Set([...reliable, 'gray']);
    expect(unofferedChoices('i need a phone case that is high definition, in gray', page, item, [...known, 'gray'], grays)).toBe(1);
    expect(unofferedChoices('i need a phone case that is high definition, in gray', page.replace('High Definition', 'Gray Edition'), item, [...known, 'gray'], grays)).toBe(0);
  });
});
