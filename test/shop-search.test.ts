import { describe, expect, it } from 'vitest';
import { generateCatalogue, SEARCH_RESULT_LIMIT, searchProducts } from '../src/envs/shop/index.ts';

describe('searchProducts', () => {
  const catalogue = generateCatalogue(0);

  it('ranks a product first for its exact title (almost always; never below second)', () => {
    let first = 0;
    for (const p of catalogue.products) {
      const ranked = searchProducts(catalogue, p.title);
      const rank = ranked.findIndex((r) => r.id === p.id);
      expect(rank, p.title).toBeGreaterThanOrEqual(0);
      expect(rank, p.title).toBeLessThanOrEqual(1);
      if (rank === 0) first++;
    }
    expect(first / catalogue.products.length).toBeGreaterThanOrEqual(0.99);
  });

  it('puts products of the queried type with the queried attributes on top', () => {
    const wanted = catalogue.products.filter((p) => p.productType === 'running shoes' && p.attributes.includes('waterproof'));
    expect(wanted.length).toBeGreaterThanOrEqual(2);
    const ranked = searchProducts(catalogue, 'running shoes waterproof', 10);
    expect(ranked).toHaveLength(10);
    expect(new Set(ranked.slice(0, wanted.length).map((p) => p.id))).toEqual(new Set(wanted.map((p) => p.id)));
    // Next come the other running shoes.
    expect(ranked[wanted.length]?.productType).toBe('running shoes');
    const plain = searchProducts(catalogue, 'yoga mat', 10);
    expect(plain.every((p) => p.productType === 'yoga mat')).toBe(true);
  });

  it('is case-insensitive, deterministic, and breaks ties by product id', () => {
    const a = searchProducts(catalogue, 'Gluten Free');
    const b = searchProducts(catalogue, 'gluten free');
    expect(a.map((p) => p.id)).toEqual(b.map((p) => p.id));
    expect(a.length).toBeGreaterThan(10);
    // A single-token query on an attribute field scores many products alike: equal
    // description/attribute lengths must come out in id order.
    const kosher = searchProducts(catalogue, 'kosher');
    // Same field lengths (MiniSearch counts distinct terms) and same fields containing the
    // term => exactly the same BM25 score.
    const tokens = (text: string): number => new Set(text.toLowerCase().split(/[\n\r\p{Z}\p{P}]+/u).filter((t) => t !== '')).size;
    const groups = new Map<string, string[]>();
    for (const p of kosher) {
      const key = [tokens(p.title), tokens(p.attributes.join(' ')), tokens(p.description), /kosher/i.test(p.title)].join(':');
      groups.set(key, [...(groups.get(key) ?? []), p.id]);
    }
    let groupsChecked = 0;
    for (const ids of groups.values()) {
      if (ids.length < 2) continue;
      groupsChecked++;
      expect(ids).toEqual([...ids].sort());
    }
    expect(groupsChecked).toBeGreaterThan(0);
  });

  it('only returns products matching some query term, with an optional limit', () => {
    expect(searchProducts(catalogue, 'zzzunknownword')).toEqual([]);
    expect(searchProducts(catalogue, '   ')).toEqual([]);
    const all = searchProducts(catalogue, 'dog');
    expect(all.length).toBeGreaterThan(SEARCH_RESULT_LIMIT);
    for (const p of all) expect(`${p.title} ${p.description}`.toLowerCase()).toMatch(/\bdog\b/);
    expect(searchProducts(catalogue, 'dog', SEARCH_RESULT_LIMIT).map((p) => p.id)).toEqual(all.slice(0, SEARCH_RESULT_LIMIT).map((p) => p.id));
    expect(() => searchProducts(catalogue, 'dog', -1)).toThrow(/-1/);
  });

  it('searches each catalogue with its own index', () => {
    const other = generateCatalogue(3);
    const p = other.products[0];
    if (!p) throw new Error('empty catalogue');
    expect(searchProducts(other, p.title)[0]?.id).toBe(p.id);
    expect(searchProducts(catalogue, p.title).some((r) => r.id === p.id)).toBe(false);
  });
});
