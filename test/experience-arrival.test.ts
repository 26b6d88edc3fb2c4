import { describe, expect, it } from 'vitest';
import type { Observation } from '../src/core/types.ts';
import { carriedAfter, completeArrival, learnArrivalRules, placeKind, situationOf, withoutUnofferedCarriedActions } from '../src/experience/retrieval/arrival.ts';
import { actionTemplate } from '../src/experience/retrieval/substitution.ts';
import { getEnvSpec } from '../src/envs/registry.ts';
import { mixedOfflineData } from '../src/train/fidelity.ts';

/** Real (state, action, next state) triples of offline episodes, with the episode's earlier actions. */
function realTransitions(env: string, episodes: number, seed: number): { state: Observation; action: string; next: Observation; history: string[] }[] {
  const data = mixedOfflineData(getEnvSpec(env), 'noisy:0.3,noisy:1', episodes, seed, 'train');
  const out: { state: Observation; action: string; next: Observation; history: string[] }[] = [];
  for (const { trajectory } of data) {
    trajectory.steps.forEach((s, i) => {
      const next = trajectory.steps[i + 1];
      const history = trajectory.steps.slice(0, i).filter((h) => h.valid).map((h) => h.action);
      if (next && s.valid) out.push({ state: s.observation, action: s.action, next: next.observation, history });
    });
  }
  return out;
}

const household = realTransitions('household', 200, 0);
const rules = learnArrivalRules(
  household.map((t) => t.state.actions),
  household.map((t) => ({ before: t.state.actions, action: t.action, after: t.next.actions })),
);

describe('learnArrivalRules', () => {
  it('finds the move, the places, what a kind of place offers for what is carried, and what it never offers then', () => {
    expect(rules).not.toBeNull();
    expect(rules!.move).toBe('go to {}');
    expect(rules!.places.has('microwave 1')).toBe(true);
    expect(rules!.places.has('apple 1')).toBe(false);
    const microwave = [...rules!.carriedActions].filter(([k]) => k.startsWith('microwave|')).flatMap(([, v]) => v);
    expect(microwave).toContain('heat {} with {}|ch');
    const sink = [...rules!.carriedActions].filter(([k]) => k.startsWith('sinkbasin|')).flatMap(([, v]) => v);
    expect(sink).toContain('clean {} with {}|ch');
    // A closed cabinet offers no `put`; an open one does.
    expect(rules!.carriedActions.get('cabinet|examine {},open {}') ?? []).not.toContain('put {} in/on {}|ch');
    expect(rules!.carriedActions.get('cabinet|close {},examine {}')).toContain('put {} in/on {}|ch');
    expect(rules!.notWhileCarrying.has('take {} from {}|oh')).toBe(true);
    // What picks up and what puts down, learned from the steps; heating keeps the thing in hand.
    expect([...rules!.pickUp]).toEqual(['take {} from {}']);
    expect([...rules!.putDown]).toEqual(['put {} in/on {}']);
  });

  it('carriedAfter follows the actions taken, and agrees with every real state it can read', () => {
    expect(carriedAfter(rules!, ['go to countertop 1', 'take apple 1 from countertop 1', 'heat apple 1 with microwave 1'])).toEqual(new Set(['apple 1']));
    expect(carriedAfter(rules!, ['take apple 1 from countertop 1', 'put apple 1 in/on fridge 1'])).toEqual(new Set());
    let compared = 0;
    for (const t of household) {
      const seen = situationOf(t.next.actions, rules!.move, rules!.places);
      if (seen.here === undefined || actionTemplate(t.action).template !== rules!.move) continue;
      compared++;
      expect(carriedAfter(rules!, [...t.history, t.action])).toEqual(seen.carried);
    }
    expect(compared).toBeGreaterThan(500);
  });

  it('finds no move in data without one (a shop has no places to walk to), so nothing changes there', () => {
    const shop = realTransitions('shop', 60, 0);
    const shopRules = learnArrivalRules(shop.map((t) => t.state.actions));
    for (const t of shop) expect(completeArrival(shopRules, t.state.actions, t.action, t.next)).toEqual(t.next);
  });

  it('null for data without a move', () => {
    expect(learnArrivalRules([['look', 'inventory'], ['click[buy now]']])).toBeNull();
  });
});

describe('situationOf', () => {
  it('reads where the agent is and what it carries off the actions', () => {
    const places = new Set(['countertop 1', 'cabinet 2', 'cabinet 3', 'sinkbasin 1']);
    const holding = ['go to cabinet 2', 'go to sinkbasin 1', 'examine countertop 1', 'put apple 1 in/on countertop 1', 'examine apple 1', 'look'];
    expect(situationOf(holding, 'go to {}', places)).toEqual({ here: 'countertop 1', carried: new Set(['apple 1']) });
    const empty = ['go to cabinet 2', 'go to sinkbasin 1', 'examine countertop 1', 'take apple 1 from countertop 1', 'look'];
    expect(situationOf(empty, 'go to {}', places)).toEqual({ here: 'countertop 1', carried: new Set() });
    // A left-over action of another place does not hide where the agent is.
    const stale = ['go to sinkbasin 1', 'go to countertop 1', 'open cabinet 2', 'close cabinet 3', 'examine cabinet 3', 'put pan 1 in/on cabinet 3', 'examine pan 1'];
    expect(situationOf(stale, 'go to {}', places)).toEqual({ here: 'cabinet 3', carried: new Set(['pan 1']) });
    expect(situationOf(['go to cabinet 2', 'look'], 'go to {}', places).here).toBeUndefined();
  });

  it('placeKind drops the instance number', () => {
    expect(placeKind('microwave 1')).toBe('microwave');
    expect(placeKind('desk')).toBe('desk');
  });
});

describe('completeArrival', () => {
  it('leaves every real arrival as it was (it adds nothing the real environment does not offer, removes nothing it does)', () => {
    const moves = household.filter((t) => actionTemplate(t.action).template === 'go to {}');
    expect(moves.length).toBeGreaterThan(500);
    const carrying = moves.filter((t) => situationOf(t.state.actions, rules!.move, rules!.places).carried.size > 0);
    expect(carrying.length).toBeGreaterThan(100);
    const changed = moves.filter((t) => completeArrival(rules, t.state.actions, t.action, t.next) !== t.next);
    expect(changed).toEqual([]);
    // The same with what is carried tracked through the episode's actions.
    const changedTracked = moves.filter((t) => completeArrival(rules, t.state.actions, t.action, t.next, t.history) !== t.next);
    expect(changedTracked).toEqual([]);
  });

  it('gives an arrival predicted from an empty-handed walk the carried object\'s actions, and drops `take` while carrying', () => {
    // Real arrivals while carrying, with the carried object's actions removed and a `take` of a
    // thing lying there added: a neighbour that walked there empty-handed.
    const carrying = household.filter((t) => actionTemplate(t.action).template === 'go to {}' && situationOf(t.state.actions, rules!.move, rules!.places).carried.size > 0);
    let restored = 0;
    let damaged = 0;
    for (const t of carrying) {
      const { carried } = situationOf(t.state.actions, rules!.move, rules!.places);
      const there = actionTemplate(t.action).entities[0]!;
      const held = [...carried][0]!;
      const walked: Observation = {
        text: t.next.text,
        actions: [...t.next.actions.filter((a) => !(actionTemplate(a).entities.includes(held) && actionTemplate(a).entities.includes(there))), `take thing 9 from ${there}`],
      };
      const got = completeArrival(rules, t.state.actions, t.action, walked);
      expect(got.actions).not.toContain(`take thing 9 from ${there}`);
      const want = new Set(t.next.actions);
      if (got.actions.length === want.size && got.actions.every((a) => want.has(a))) restored++;
      if (got.actions.some((a) => !want.has(a))) damaged++;
    }
    // Most come back exactly (what a kind of place offers most of the time); none gains an action the real state lacked
    // beyond the ones the rules add for the place's kind.
    expect(restored / carrying.length).toBeGreaterThan(0.9);
    expect(damaged / carrying.length).toBeLessThan(0.05);
  });

  it('gives the carried thing its own actions back (`examine apple 1`) where the walk predicted offers none about it', () => {
    // A neighbour that walked there empty-handed offers nothing about the held thing; the text
    // still says what is held ("Holding: ..."), as the model's state line does.
    const carrying = household.filter((t) => actionTemplate(t.action).template === 'go to {}' && situationOf(t.state.actions, rules!.move, rules!.places).carried.size > 0);
    let restored = 0;
    for (const t of carrying) {
      const held = [...situationOf(t.state.actions, rules!.move, rules!.places).carried][0]!;
      const walked: Observation = { text: t.next.text, actions: t.next.actions.filter((a) => !actionTemplate(a).entities.includes(held)) };
      const got = completeArrival(rules, t.state.actions, t.action, walked);
      const want = t.next.actions.filter((a) => actionTemplate(a).entities.length === 1 && actionTemplate(a).entities[0] === held);
      expect(want.length).toBeGreaterThan(0);
      if (want.every((a) => got.actions.includes(a))) restored++;
    }
    // Every one (the old rule restored none: it added only actions naming the place too).
    expect(restored).toBe(carrying.length);
  });

  it('with the episode\'s actions, a place that shows a thing the agent has put down since loses its actions', () => {
    const next: Observation = { text: 'You arrive at shelf 2.', actions: ['go to fridge 1', 'examine shelf 2', 'examine tissuebox 1', 'put tissuebox 1 in/on shelf 2', 'look'] };
    const before = ['go to shelf 2', 'examine sinkbasin 1', 'take tissuebox 1 from sinkbasin 1', 'look'];
    const history = ['go to shelf 1', 'take tissuebox 1 from shelf 1', 'go to sinkbasin 1', 'put tissuebox 1 in/on sinkbasin 1'];
    const got = completeArrival(rules, before, 'go to shelf 2', next, history);
    expect(got.actions).toEqual(['go to fridge 1', 'examine shelf 2', 'look']);
    // Still in hand: kept (and completed).
    const held = completeArrival(rules, before, 'go to shelf 2', next, history.slice(0, 3));
    expect(held.actions).toContain('put tissuebox 1 in/on shelf 2');
  });

  it('does nothing without rules, for a move to a non-place, or when nothing is carried', () => {
    const next: Observation = { text: 'You arrive at cabinet 2.', actions: ['go to countertop 1', 'open cabinet 2', 'examine cabinet 2'] };
    const before = ['go to cabinet 2', 'examine countertop 1', 'put apple 1 in/on countertop 1', 'examine apple 1'];
    expect(completeArrival(null, before, 'go to cabinet 2', next)).toBe(next);
    expect(completeArrival(rules, before, 'look', next)).toBe(next);
    expect(completeArrival(rules, ['go to cabinet 2', 'examine countertop 1', 'take apple 1 from countertop 1'], 'go to cabinet 2', next)).toBe(next);
  });
});

describe('withoutUnofferedCarriedActions', () => {
  it('drops `put` into a place left closed, keeps it where open, and leaves every real state as it was', () => {
    const closed: Observation = { text: 'x', actions: ['go to shelf 1', 'open drawer 1', 'examine drawer 1', 'examine pen 1', 'put pen 1 in/on drawer 1', 'look'] };
    expect(withoutUnofferedCarriedActions(rules, 'drawer 1', closed).actions).toEqual(['go to shelf 1', 'open drawer 1', 'examine drawer 1', 'examine pen 1', 'look']);
    const open: Observation = { text: 'x', actions: ['go to shelf 1', 'close drawer 1', 'examine drawer 1', 'examine pen 1', 'put pen 1 in/on drawer 1', 'look'] };
    expect(withoutUnofferedCarriedActions(rules, 'drawer 1', open)).toBe(open);
    expect(withoutUnofferedCarriedActions(null, 'drawer 1', closed)).toBe(closed);
    let carrying = 0;
    for (const t of household) {
      const { here, carried } = situationOf(t.next.actions, rules!.move, rules!.places);
      if (here === undefined || carried.size === 0) continue;
      carrying++;
      expect(withoutUnofferedCarriedActions(rules, here, t.next)).toBe(t.next);
    }
    expect(carrying).toBeGreaterThan(1000);
  });
});
