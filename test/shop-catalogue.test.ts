import { describe, expect, it } from 'vitest';
import { CATEGORIES, DEFAULT_CATALOGUE_SEED, generateCatalogue, OPTION_KINDS } from '../src/envs/shop/index.ts';

describe('generateCatalogue', () => {
  const catalogue = generateCatalogue(DEFAULT_CATALOGUE_SEED);

  it('has at least 1,000 products in at least 8 categories, several types each', () => {
    expect(DEFAULT_CATALOGUE_SEED).toBe(0);
    expect(catalogue.products.length).toBe(1200);
    const categories = new Set(catalogue.products.map((p) => p.category));
    expect(categories.size).toBeGreaterThanOrEqual(8);
    for (const category of categories) {
      const types = new Set(catalogue.products.filter((p) => p.category === category).map((p) => p.productType));
      expect(types.size, category).toBeGreaterThanOrEqual(5);
    }
    // Round-robin over types: every type is well stocked.
    const perType = new Map<string, number>();
    for (const p of catalogue.products) perType.set(p.productType, (perType.get(p.productType) ?? 0) + 1);
    expect(Math.min(...perType.values())).toBeGreaterThanOrEqual(10);
  });

  it('gives every product a unique ASIN-like id and a unique title naming its type', () => {
    const ids = new Set(catalogue.products.map((p) => p.id));
    expect(ids.size).toBe(catalogue.products.length);
    for (const p of catalogue.products) {
      expect(p.id).toMatch(/^B0[0-9A-Z]{8}$/);
      expect(catalogue.byId.get(p.id)).toBe(p);
      expect(p.title.toLowerCase()).toContain(p.productType);
    }
    expect(new Set(catalogue.products.map((p) => p.title)).size).toBe(catalogue.products.length);
  });

  it('draws 2-5 attributes and the option values from the product category vocabulary', () => {
    for (const p of catalogue.products) {
      const category = CATEGORIES.find((c) => c.name === p.category);
      const type = category?.types.find((t) => t.name === p.productType);
      if (!category || !type) throw new Error(`unknown category/type ${p.category}/${p.productType}`);
      expect(p.attributes.length).toBeGreaterThanOrEqual(2);
      expect(p.attributes.length).toBeLessThanOrEqual(5);
      for (const a of p.attributes) expect(category.attributes).toContain(a);
      const sizes = type.sizes === undefined ? category.sizes : type.sizes;
      const colors = type.colors === undefined ? category.colors : type.colors;
      expect(p.options.size === undefined).toBe(sizes === null);
      expect(p.options.color === undefined).toBe(colors === null);
      for (const v of p.options.size ?? []) expect(sizes).toContain(v);
      for (const v of p.options.color ?? []) expect(colors).toContain(v);
      expect(Math.round(p.price * 100) / 100).toBe(p.price);
      expect(p.price).toBeGreaterThanOrEqual(type.price[0]);
      expect(p.price).toBeLessThanOrEqual(type.price[1]);
      // Descriptions mention every attribute, so search can find them.
      for (const a of p.attributes) expect(p.description).toContain(a);
      expect(p.features.length).toBeGreaterThanOrEqual(p.attributes.length + 1);
    }
  });

  it('respects the vocabulary constraints the instruction parser and click labels rely on', () => {
    const typeNames = CATEGORIES.flatMap((c) => c.types.map((t) => t.name));
    expect(new Set(typeNames).size).toBe(typeNames.length);
    for (const c of CATEGORIES) {
      for (const word of [...c.attributes, ...(c.sizes ?? []), ...(c.colors ?? [])]) {
        expect(word, word).not.toMatch(/,|\band\b/);
        expect(word).toBe(word.toLowerCase());
      }
      for (const t of c.types) {
        const sizes = t.sizes === undefined ? c.sizes : t.sizes;
        const colors = t.colors === undefined ? c.colors : t.colors;
        for (const v of [...(sizes ?? []), ...(colors ?? [])]) expect(v, v).not.toMatch(/,|\band\b/);
        const overlap = (sizes ?? []).filter((s) => (colors ?? []).includes(s));
        expect(overlap, t.name).toEqual([]);
      }
    }
    expect(OPTION_KINDS).toEqual(['size', 'color']);
  });

  it('is deterministic per seed and differs between seeds', () => {
    const again = generateCatalogue(0);
    expect(again).toBe(catalogue); // cached
    expect(JSON.stringify(generateCatalogue(0, 1201).products.slice(0, 1200))).toBe(JSON.stringify(catalogue.products));
    const other = generateCatalogue(1);
    expect(other.products.length).toBe(1200);
    expect(other.products.map((p) => p.id)).not.toEqual(catalogue.products.map((p) => p.id));
    expect(other.products.map((p) => p.title)).not.toEqual(catalogue.products.map((p) => p.title));
  });

  it('rejects bad seeds and sizes loudly', () => {
    expect(() => generateCatalogue(-1)).toThrow(/seed.*-1/);
    expect(() => generateCatalogue(1.5)).toThrow(RangeError);
    expect(() => generateCatalogue(0, 0)).toThrow(/size.*0/);
    expect(() => generateCatalogue(0, Number.NaN)).toThrow(RangeError);
  });

  it('freezes the shared catalogue', () => {
    expect(Object.isFrozen(catalogue.products)).toBe(true);
    expect(Object.isFrozen(catalogue.products[0])).toBe(true);
  });
});
