import { describe, expect, it } from 'vitest';
import type { Observation } from '../src/core/types.ts';
import { generateOfflineData } from '../src/envs/offline.ts';
import { getEnvSpec } from '../src/envs/registry.ts';
import { ItemListings, type ListingTransition } from '../src/experience/listings.ts';

const SEARCH: Observation = { text: 'Instruction: i need shoes\nPage: search\n[search box] type search[your query]\nActions: search[shoes]', actions: ['search[shoes]'] };

/** A results page in the abstract format, listing `items` ([id, title]) with a next link. */
function results(query: string, items: readonly (readonly [string, string])[]): Observation {
  const actions = [...items.map(([id]) => `click[${id}]`), 'click[next >]', 'click[back to search]'];
  const lines = ['Instruction: i need shoes', `Page: results for "${query}" (page 1 of 2, 20 products)`, ...items.map(([id, title]) => `[${id}] ${title} | $10.00`), `Actions: ${actions.join(' ')}`];
  return { text: lines.join('\n'), actions };
}

const CATALOGUE: readonly (readonly [string, string])[] = [
  ['B0AAAA0001', 'red running shoe'],
  ['B0AAAA0002', 'blue running shoe'],
  ['B0AAAA0003', 'green garden hose'],
  ['B0AAAA0004', 'red garden hose'],
  ['B0AAAA0005', 'wool winter hat'],
  ['B0AAAA0006', 'cotton summer hat'],
];

/** Five searches, each answered with two of the catalogue's items, and a click on one of them. */
function shopLike(): ListingTransition[] {
  const out: ListingTransition[] = [];
  for (let i = 0; i < 5; i++) {
    const page = results(`query ${i}`, [CATALOGUE[i] as readonly [string, string], CATALOGUE[i + 1] as readonly [string, string]]);
    out.push({ state: SEARCH, action: `search[query ${i}]`, next: page });
    out.push({ state: page, action: `click[${(CATALOGUE[i] as readonly [string, string])[0]}]`, next: { text: 'Page: item', actions: ['click[buy now]'] } });
  }
  return out;
}

describe('ItemListings', () => {
  it('learns the query action and the items the data listed, and ranks them by the query\'s words', () => {
    const listings = ItemListings.learn(shopLike());
    expect(listings).not.toBeNull();
    // The search page's `[search box]` is no item: its label is not one opaque id.
    expect(listings?.size).toBe(6);
    expect(listings?.isQuery('search[anything at all]')).toBe(true);
    expect(listings?.isQuery('click[B0AAAA0001]')).toBe(false);
    expect(listings?.rank('red hose', 3)).toEqual(['B0AAAA0004', 'B0AAAA0001', 'B0AAAA0003']);
    // Equal scores: by id.
    expect(listings?.rank('running', 5)).toEqual(['B0AAAA0001', 'B0AAAA0002']);
    expect(listings?.rank('bicycle', 5)).toEqual([]);
    expect(() => listings?.rank('red', -1)).toThrow(/limit must be a non-negative integer, got -1/);
  });

  it('relists another query\'s page with this query\'s items, their clicks where the old ones were, and the action line rebuilt', () => {
    const listings = ItemListings.learn(shopLike()) as ItemListings;
    const neighbour = results('winter hat', [CATALOGUE[4] as readonly [string, string], CATALOGUE[5] as readonly [string, string]]);
    const page = listings.relist('search[garden hose]', neighbour, 'search[winter hat]');
    expect(page.actions).toEqual(['click[B0AAAA0003]', 'click[B0AAAA0004]', 'click[next >]', 'click[back to search]']);
    const lines = page.text.split('\n');
    expect(lines.slice(1, 4)).toEqual(['Page: results for "winter hat" (page 1 of 2, 20 products)', '[B0AAAA0003] green garden hose | $10.00', '[B0AAAA0004] red garden hose | $10.00']);
    expect(lines.at(-1)).toBe(`Actions: ${page.actions.join(' ')}`);
    // No more items than the page listed.
    expect(listings.relist('search[red shoe hose]', neighbour, 'search[winter hat]').actions.filter((a) => /B0/.test(a))).toHaveLength(2);
  });

  it('leaves a page alone when no listed item shares a word with the query, the two queries ask the same words, the action is no query, or the page lists nothing', () => {
    const listings = ItemListings.learn(shopLike()) as ItemListings;
    const neighbour = results('winter hat', [CATALOGUE[4] as readonly [string, string]]);
    expect(listings.relist('search[bicycle]', neighbour, 'search[winter hat]')).toBe(neighbour);
    expect(listings.relist('search[Hat, winter]', neighbour, 'search[winter hat]')).toBe(neighbour);
    expect(listings.relist('click[next >]', neighbour, 'search[winter hat]')).toBe(neighbour);
    expect(listings.relist('search[red shoe]', SEARCH, 'search[shoes]')).toBe(SEARCH);
  });

  it('ranks by the choices an opened item\'s page offers too, not by the instruction its page restates', () => {
    // Two items listed alike; the data opened each once. B0CCCC0002's page offered red, under an
    // instruction that named blue (the restated instruction line offers nothing).
    const page = (colours: readonly string[], instruction: string): Observation => ({
      text: [`Instruction: ${instruction}`, 'Page: item', `colors: ${colours.map((c) => `[${c}]`).join(' ')}`].join('\n'),
      actions: [...colours.map((c) => `click[${c}]`), 'click[buy now]'],
    });
    const both = results('socks', [
      ['B0CCCC0001', 'wool socks'],
      ['B0CCCC0002', 'wool socks'],
    ]);
    const data: ListingTransition[] = [...shopLike()];
    data.push({ state: both, action: 'click[B0CCCC0001]', next: page(['green', 'blue'], 'i need red wool socks') });
    data.push({ state: both, action: 'click[B0CCCC0002]', next: page(['red', 'gray'], 'i need blue wool socks') });
    const listings = ItemListings.learn(data) as ItemListings;
    expect(listings.rank('red wool socks', 2)).toEqual(['B0CCCC0002', 'B0CCCC0001']);
    expect(listings.rank('blue wool socks', 2)).toEqual(['B0CCCC0001', 'B0CCCC0002']);
  });

  it('needs queries answered with lists often enough; household\'s data has none', () => {
    expect(ItemListings.learn(shopLike().slice(0, 8))).toBeNull();
    const household = [...generateOfflineData(getEnvSpec('household'), { episodes: 20, seed: 3, policy: 'noisy:0.3', split: 'train' })];
    const transitions = household.flatMap(({ trajectory }) =>
      trajectory.steps.map((s, i) => ({ state: s.observation, action: s.action, next: trajectory.steps[i + 1]?.observation ?? null })),
    );
    expect(transitions.length).toBeGreaterThan(100);
    expect(ItemListings.learn(transitions)).toBeNull();
  });
});
