import { describe, expect, it } from 'vitest';
import { generateOfflineData } from '../src/envs/offline.ts';
import { getEnvSpec } from '../src/envs/registry.ts';
import { learnArrivalRules, type ArrivalRules } from '../src/experience/retrieval/arrival.ts';
import { carryStepOf, learnEmptyListWord, learnPutDownPickUps, listed, remainingPickUps, withListed, withoutListed, withPlaceContents, withPutDownPickUps } from '../src/experience/retrieval/carried-things.ts';

const rules: ArrivalRules = {
  move: 'go to {}',
  places: new Set(['desk 1', 'shelf 1', 'drawer 1', 'sofa 1']),
  carriedActions: new Map(),
  notWhileCarrying: new Set(),
  everCarried: new Map(),
  pickUp: new Set(['take {} from {}']),
  putDown: new Set(['put {} in/on {}']),
};

const state = (text: string, actions: string[] = []): { text: string; actions: string[] } => ({ text, actions });

describe('carryStepOf', () => {
  it('reads pick-ups and put-downs by the rules, and nothing else', () => {
    expect(carryStepOf(rules, 'take pen 1 from desk 1')).toEqual({ up: true, thing: 'pen 1', place: 'desk 1' });
    expect(carryStepOf(rules, 'put pen 1 in/on shelf 1')).toEqual({ up: false, thing: 'pen 1', place: 'shelf 1' });
    expect(carryStepOf(rules, 'go to desk 1')).toBeUndefined();
    expect(carryStepOf(rules, 'take pen 1 from cupboard 9')).toBeUndefined();
  });
});

describe('listed', () => {
  it('finds a thing as whole words, with its parenthesis, skipping where it is part of a longer word', () => {
    expect(listed('you see cd 12, cd 1.', 'cd 1')).toEqual({ start: 15, end: 19 });
    expect(listed('you see acd 1 and cd 1 (new).', 'cd 1')).toEqual({ start: 18, end: 28 });
    // A parenthesis glued to a word is not what the text says of the thing: the thing alone.
    expect(listed('cd 1 (new)x', 'cd 1')).toEqual({ start: 0, end: 4 });
    // Letters beyond ASCII are word characters too; pattern characters in the thing are literal.
    expect(listed('éfork 2, fork 2é', 'fork 2')).toBeUndefined();
    expect(listed('a (b) c', '(b)')).toEqual({ start: 2, end: 5 });
    expect(listed('you see nothing.', 'cd 1')).toBeUndefined();
    expect(listed('you see nothing.', '')).toBeUndefined();
  });
});

describe('withoutListed / withListed', () => {
  it('takes a thing out of a list wherever it stands, with what the text says of it', () => {
    const s = 'Location: desk 1; you see desklamp 1 (off), pencil 2, laptop 1.';
    expect(withoutListed(s, 'pencil 2', 'nothing')).toBe('Location: desk 1; you see desklamp 1 (off), laptop 1.');
    expect(withoutListed(s, 'laptop 1', 'nothing')).toBe('Location: desk 1; you see desklamp 1 (off), pencil 2.');
    expect(withoutListed('Location: sofa 1; you see fork 2 (clean), cd 1.', 'fork 2', 'nothing')).toBe('Location: sofa 1; you see cd 1.');
    expect(withoutListed('Location: sofa 1; you see cd 1.', 'cd 1', 'nothing')).toBe('Location: sofa 1; you see nothing.');
    // No word for an empty list learned: it cannot say.
    expect(withoutListed('Location: sofa 1; you see cd 1.', 'cd 1', undefined)).toBeUndefined();
    // "cd 1" is not inside "cd 12".
    expect(withoutListed('Location: sofa 1; you see cd 12.', 'cd 1', 'nothing')).toBeUndefined();
  });

  it('adds a thing as the last of the list, or in place of the empty word', () => {
    expect(withListed('Location: desk 1; you see laptop 1.', 'fork 2 (clean)', 'nothing')).toBe('Location: desk 1; you see laptop 1, fork 2 (clean).');
    expect(withListed('Location: desk 1; you see nothing.', 'fork 2', 'nothing')).toBe('Location: desk 1; you see fork 2.');
  });
});

describe('learnEmptyListWord', () => {
  it('learns "nothing" from household pick-ups that emptied a place, and nothing from steps that pick nothing up', () => {
    const data = [...generateOfflineData(getEnvSpec('household'), { episodes: 40, seed: 3, policy: 'noisy:0.3', split: 'train' })];
    const steps = data.flatMap((d) => d.trajectory.steps.slice(0, -1).map((s, i) => ({ action: s.action, before: s.observation.text, after: (d.trajectory.steps[i + 1] as typeof s).observation.text })));
    const learned = learnArrivalRules(data.flatMap((d) => d.trajectory.steps.map((s) => s.observation.actions)), data.flatMap((d) => d.trajectory.steps.slice(0, -1).map((s, i) => ({ before: s.observation.actions, action: s.action, after: (d.trajectory.steps[i + 1] as typeof s).observation.actions }))));
    expect(learned).not.toBeNull();
    expect(learnEmptyListWord(learned as ArrivalRules, steps)).toBe('nothing');
    expect(learnEmptyListWord(learned as ArrivalRules, steps.filter((s) => !s.action.startsWith('take ')))).toBeUndefined();
  });
});

describe('withPlaceContents', () => {
  const neighbour = {
    action: 'take pencil 1 from desk 1',
    before: 'Your task is to: x\nYou arrive at desk 1.\nLocation: desk 1; you see laptop 1, pencil 1, cd 2. Holding: nothing.',
    after: 'Your task is to: x\nYou pick up the pencil 1 from the desk 1.\nLocation: desk 1; you see laptop 1, cd 2. Holding: pencil 1.',
  };
  const ours = state('Your task is to: y\nYou arrive at desk 1.\nLocation: desk 1; you see desklamp 1 (off), pencil 2. Holding: nothing.', ['take pencil 2 from desk 1', 'use desklamp 1']);

  it("lists this episode's things less the thing taken, not the neighbour's", () => {
    // The neighbour's next state, rewritten for this action: its place's things, and the lamp gone.
    const predicted = state('Your task is to: y\nYou pick up the pencil 2 from the desk 1.\nLocation: desk 1; you see laptop 1, cd 2. Holding: pencil 2.', ['use desklamp 1']);
    const out = withPlaceContents(rules, 'nothing', ours, 'take pencil 2 from desk 1', neighbour, predicted);
    expect(out.text).toBe('Your task is to: y\nYou pick up the pencil 2 from the desk 1.\nLocation: desk 1; you see desklamp 1 (off). Holding: pencil 2.');
    expect(out.actions).toEqual(['use desklamp 1']);
  });

  it('adds the thing put down, as the episode shows it in hand', () => {
    const here = state('Your task is to: y\nYou arrive at sofa 1.\nLocation: sofa 1; you see book 2. Holding: fork 2 (clean).');
    const theirs = {
      action: 'put cd 1 in/on shelf 1',
      before: 'Your task is to: x\nYou arrive at shelf 1.\nLocation: shelf 1; you see nothing. Holding: cd 1.',
      after: 'Your task is to: x\nYou put the cd 1 in/on the shelf 1.\nLocation: shelf 1; you see cd 1. Holding: nothing.',
    };
    const predicted = state('Your task is to: y\nYou put the fork 2 in/on the sofa 1.\nLocation: sofa 1; you see fork 2. Holding: nothing.');
    expect(withPlaceContents(rules, 'nothing', here, 'put fork 2 in/on sofa 1', theirs, predicted).text).toBe(
      'Your task is to: y\nYou put the fork 2 in/on the sofa 1.\nLocation: sofa 1; you see book 2, fork 2 (clean). Holding: nothing.',
    );
  });

  it('leaves any other step, and a neighbour step of the other direction, as predicted', () => {
    const predicted = state('Your task is to: y\nYou arrive at shelf 1.\nLocation: shelf 1; you see cd 2. Holding: nothing.');
    expect(withPlaceContents(rules, 'nothing', ours, 'go to shelf 1', neighbour, predicted)).toBe(predicted);
    const put = { action: 'put pencil 1 in/on desk 1', before: neighbour.after, after: neighbour.before };
    expect(withPlaceContents(rules, 'nothing', ours, 'take pencil 2 from desk 1', put, predicted)).toBe(predicted);
  });
});

describe('remainingPickUps', () => {
  it("offers what the episode saw at the place, less what it took there, plus what it put down there", () => {
    const seen = [
      state('a', ['go to drawer 1', 'go to sofa 1']),
      state('b', ['take cellphone 1 from drawer 1', 'take cellphone 2 from drawer 1', 'take knife 1 from drawer 1', 'go to sofa 1']),
      state('c', ['put cellphone 1 in/on drawer 1', 'go to sofa 1']),
      state('d', ['put cellphone 1 in/on sofa 1', 'go to drawer 1']),
      state('e', ['take book 1 from sofa 1', 'take cellphone 1 from sofa 1', 'go to drawer 1']),
    ];
    const actions = ['go to drawer 1', 'take cellphone 1 from drawer 1', 'go to sofa 1', 'put cellphone 1 in/on sofa 1'];
    expect(remainingPickUps(rules, seen, actions, 'drawer 1').sort()).toEqual(['take cellphone 2 from drawer 1', 'take knife 1 from drawer 1']);
    // The sofa: what it showed, with the cellphone put down there.
    expect(remainingPickUps(rules, seen, actions, 'sofa 1').sort()).toEqual(['take book 1 from sofa 1', 'take cellphone 1 from sofa 1']);
    // A thing put down where nothing was offered yet: the rules' one pick-up form.
    expect(remainingPickUps(rules, seen.slice(0, 4), actions, 'sofa 1')).toEqual(['take cellphone 1 from sofa 1']);
    expect(remainingPickUps({ ...rules, pickUp: new Set(['take {} from {}', 'grab {} from {}']) }, seen.slice(0, 4), actions, 'sofa 1')).toEqual([]);
  });
});

describe('learnPutDownPickUps / withPutDownPickUps', () => {
  /** Real steps of `episodes` household episodes of a split: the arrival rules they teach, every state's actions, and every step with the episode's actions before it. */
  const household = (split: 'train' | 'test', seed: number) => {
    const data = [...generateOfflineData(getEnvSpec('household'), { episodes: 120, seed, policy: 'noisy:0.5', split })];
    const steps = data.flatMap((d) =>
      d.trajectory.steps.slice(0, -1).map((s, i) => ({ before: d.trajectory.steps.slice(0, i).map((x) => x.action), state: s.observation, action: s.action, after: (d.trajectory.steps[i + 1] as typeof s).observation })),
    );
    const learned = learnArrivalRules(data.flatMap((d) => d.trajectory.steps.map((s) => s.observation.actions)), steps.map((s) => ({ before: s.state.actions, action: s.action, after: s.after.actions })));
    return { rules: learned as ArrivalRules, states: data.flatMap((d) => d.trajectory.steps.map((s) => s.observation.actions)), steps };
  };
  const train = household('train', 5);
  const test = household('test', 6);

  it("learns the rule from household's put-downs, and no rule from data without them", () => {
    const rule = learnPutDownPickUps(train.rules, train.states, train.steps);
    expect(rule?.form).toBe('take {} from {}');
    expect(rule?.pickable.has('pen')).toBe(true);
    // A lamp is listed at places but never offered to pick up.
    expect(rule?.pickable.has('desklamp')).toBe(false);
    expect(learnPutDownPickUps(train.rules, train.states, train.steps.filter((s) => !s.action.startsWith('put ')))).toBeUndefined();
  });

  it("gives held-out put-downs the pick-ups the real place offered, from a neighbour's wrong ones", () => {
    const rule = learnPutDownPickUps(train.rules, train.states, train.steps);
    if (!rule) throw new Error('no rule learned');
    // As sets: the neighbour's order of actions stays (a policy scores each candidate alike wherever it stands).
    const same = (a: readonly string[], b: readonly string[]): boolean => a.length === b.length && [...a].sort().every((x, i) => x === [...b].sort()[i]);
    let putDowns = 0;
    let right = 0;
    let wrongBefore = 0;
    for (const s of test.steps) {
      if (!s.action.startsWith('put ') || !/Holding: nothing/.test(s.after.text)) continue;
      putDowns++;
      // A neighbour's next state: this text, with the pick-ups of another place's things.
      const elsewhere = (s.after.actions.find((a) => a.startsWith('go to ')) as string).slice('go to '.length);
      const neighbour = { text: s.after.text, actions: [...s.after.actions.filter((a) => !a.startsWith('take ')), `take cd 9 from ${elsewhere}`, `take pen 8 from ${elsewhere}`] };
      if (!same(neighbour.actions, s.after.actions)) wrongBefore++;
      const got = withPutDownPickUps(train.rules, rule, s.action, s.before, neighbour);
      if (same(got.actions, s.after.actions)) right++;
      // The real next state is left as it is.
      expect(withPutDownPickUps(train.rules, rule, s.action, s.before, s.after)).toBe(s.after);
    }
    expect(putDowns).toBeGreaterThanOrEqual(20);
    expect(wrongBefore).toBe(putDowns);
    expect(right / putDowns).toBeGreaterThanOrEqual(0.95);
  });

  it('leaves every other step as it is: a pick-up, a move, a put-down with something still in hand', () => {
    const rule = learnPutDownPickUps(train.rules, train.states, train.steps);
    if (!rule) throw new Error('no rule learned');
    const next = state('Your task is to: y\nYou put the pen 1 in/on the desk 1.\nLocation: desk 1; you see pen 1, cd 2. Holding: nothing.', ['take cd 7 from desk 1', 'go to shelf 1']);
    expect(withPutDownPickUps(train.rules, rule, 'put pen 1 in/on desk 1', ['take pen 1 from shelf 1', 'go to desk 1'], next).actions).toEqual(['take pen 1 from desk 1', 'take cd 2 from desk 1', 'go to shelf 1']);
    expect(withPutDownPickUps(train.rules, rule, 'take pen 1 from desk 1', [], next)).toBe(next);
    expect(withPutDownPickUps(train.rules, rule, 'go to desk 1', [], next)).toBe(next);
    // Two things taken, one put down: the hand is not empty, so no pick-up is offered for real.
    expect(withPutDownPickUps(train.rules, rule, 'put pen 1 in/on desk 1', ['take pen 1 from shelf 1', 'take cd 3 from shelf 1'], next)).toBe(next);
    // A text that does not list the thing put down says nothing of the place.
    const unlisted = state('Your task is to: y\nYou put the pen 1 in/on the desk 1.\nLocation: desk 1; you see cd 2. Holding: nothing.', ['take cd 7 from desk 1']);
    expect(withPutDownPickUps(train.rules, rule, 'put pen 1 in/on desk 1', ['take pen 1 from shelf 1'], unlisted)).toBe(unlisted);
  });
});
