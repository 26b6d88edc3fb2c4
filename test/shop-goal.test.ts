import { describe, expect, it } from 'vitest';
import type { Task } from '../src/core/types.ts';
import {
  generateCatalogue,
  generateShopTasks,
  parseInstruction,
  satisfiesGoal,
  shopInstruction,
  ShopGoalSchema,
  shopSpec,
  suggestQueries,
  validateShopTask,
  type ShopGoal,
} from '../src/envs/shop/index.ts';

const catalogue = generateCatalogue(0);
const shoes = catalogue.products.find((p) => p.productType === 'running shoes' && p.options.size && p.options.color);
if (!shoes) throw new Error('catalogue 0 has no running shoes with options');

const goal: ShopGoal = {
  catalogueSeed: 0,
  productType: shoes.productType,
  category: shoes.category,
  attributes: shoes.attributes.slice(0, 2),
  options: { size: shoes.options.size?.[0], color: shoes.options.color?.[0] },
  maxPrice: Math.ceil(shoes.price * 1.2),
  targetId: shoes.id,
};

function taskOf(g: unknown, instruction = 'i need something'): Task {
  return { id: 'shop-t', env: 'shop', instruction, goal: g as Task['goal'], split: 'train', origin: 'generated' };
}

describe('shop instructions', () => {
  it('are WebShop style, lower case, and omit clauses that do not apply', () => {
    expect(
      shopInstruction({ ...goal, productType: 'running shoes', attributes: ['lightweight', 'non slip'], options: { size: '9', color: 'black' }, maxPrice: 60 }),
    ).toBe('i need running shoes that are lightweight and non slip, in black, size 9, price lower than 60.00 dollars');
    expect(shopInstruction({ ...goal, productType: 'art set', category: 'toys & games', attributes: ['non toxic'], options: {}, maxPrice: 30 })).toBe(
      'i need an art set that is non toxic, price lower than 30.00 dollars',
    );
    expect(shopInstruction({ ...goal, productType: 'granola', category: 'grocery', attributes: ['gluten free', 'organic', 'kosher'], options: { size: 'pack of 6' }, maxPrice: 12 })).toBe(
      'i need some granola that is gluten free, organic and kosher, size pack of 6, price lower than 12.00 dollars',
    );
  });

  it('parse back to what they say', () => {
    for (const task of generateShopTasks({ split: 'train', count: 60, seed: 4 })) {
      const g = ShopGoalSchema.parse(task.goal);
      const parsed = parseInstruction(task.instruction);
      expect(parsed, task.instruction).toEqual({
        productType: g.productType,
        attributes: g.attributes,
        ...(g.options.color !== undefined ? { color: g.options.color } : {}),
        ...(g.options.size !== undefined ? { size: g.options.size } : {}),
        maxPrice: g.maxPrice,
      });
    }
    expect(parseInstruction('buy me something nice')).toBeNull();
  });
});

describe('suggestQueries', () => {
  it('derives three queries from the instruction text', () => {
    expect(suggestQueries('i need running shoes that are lightweight and non slip, in black, size 9, price lower than 60.00 dollars')).toEqual([
      'running shoes that are lightweight and non slip, in black, size 9',
      'running shoes lightweight non slip',
      'running shoes',
    ]);
  });

  it('never uses hidden goal fields: the instruction alone decides', () => {
    const instruction = shopInstruction(goal);
    const env = shopSpec.create();
    const a = env.reset(taskOf(goal, instruction));
    const other = catalogue.products.find((p) => p.id !== shoes.id && satisfiesGoal(p, { ...goal, attributes: [], options: {}, maxPrice: 1e6 }));
    const b = env.reset(taskOf({ ...goal, targetId: other?.id ?? 'B0XXXXXXXX', maxPrice: goal.maxPrice + 500 }, instruction));
    expect(a.actions).toEqual(b.actions);
    for (const q of a.actions) expect(q).not.toContain(shoes.id);
  });

  it('falls back to content words for free-form instructions', () => {
    const qs = suggestQueries('I am looking for a cosy wool sweater for winter, price lower than 40 dollars');
    expect(qs[0]).toBe('cosy wool sweater for winter');
    expect(qs).toContain('cosy wool sweater winter');
    expect(qs.length).toBeGreaterThanOrEqual(2);
    expect(new Set(qs).size).toBe(qs.length);
  });
});

describe('ShopGoalSchema and satisfiesGoal', () => {
  it('accepts a goal and rejects malformed ones', () => {
    expect(ShopGoalSchema.safeParse(goal).success).toBe(true);
    expect(ShopGoalSchema.safeParse({ ...goal, maxPrice: -1 }).success).toBe(false);
    expect(ShopGoalSchema.safeParse({ ...goal, options: { flavor: 'vanilla' } }).success).toBe(false);
    expect(ShopGoalSchema.safeParse({ ...goal, extra: 1 }).success).toBe(false);
    expect(ShopGoalSchema.safeParse({ ...goal, catalogueSeed: 0.5 }).success).toBe(false);
  });

  it('checks type, every attribute, option availability and price', () => {
    expect(satisfiesGoal(shoes, goal)).toBe(true);
    expect(satisfiesGoal(shoes, { ...goal, productType: 'sneakers' })).toBe(false);
    expect(satisfiesGoal(shoes, { ...goal, attributes: [...goal.attributes, 'not an attribute'] })).toBe(false);
    expect(satisfiesGoal(shoes, { ...goal, options: { color: 'chartreuse' } })).toBe(false);
    expect(satisfiesGoal(shoes, { ...goal, maxPrice: shoes.price - 0.01 })).toBe(false);
    expect(satisfiesGoal(shoes, { ...goal, maxPrice: shoes.price })).toBe(true);
  });
});

describe('validateShopTask', () => {
  it('accepts generated tasks of both splits', () => {
    for (const split of ['train', 'test'] as const) {
      for (const task of generateShopTasks({ split, count: 30, seed: 9 })) expect(validateShopTask(task)).toEqual({ ok: true });
    }
  });

  it('rejects unachievable goals with a plain-words reason', () => {
    const noAttr = validateShopTask(taskOf({ ...goal, attributes: ['glow in the dark'] }));
    expect(noAttr).toEqual({ ok: false, reason: expect.stringContaining('glow in the dark') });
    const tooCheap = validateShopTask(taskOf({ ...goal, maxPrice: 0.01 }));
    expect(tooCheap).toEqual({ ok: false, reason: expect.stringMatching(/0\.01 dollars or less/) });
    const noColor = validateShopTask(taskOf({ ...goal, options: { color: 'chartreuse' } }));
    expect(noColor).toEqual({ ok: false, reason: expect.stringContaining('chartreuse') });
    const noType = validateShopTask(taskOf({ ...goal, productType: 'hovercraft' }));
    expect(noType).toEqual({ ok: false, reason: expect.stringContaining('hovercraft') });
    const wrongCategory = validateShopTask(taskOf({ ...goal, category: 'beauty' }));
    expect(wrongCategory).toEqual({ ok: false, reason: expect.stringContaining('"shoes", not "beauty"') });
  });

  it('rejects tasks for another env or with a malformed goal', () => {
    expect(validateShopTask({ ...taskOf(goal), env: 'household' })).toEqual({ ok: false, reason: expect.stringContaining('household') });
    const bad = validateShopTask(taskOf({ ...goal, maxPrice: 'cheap' }));
    expect(bad.ok).toBe(false);
    if (!bad.ok) expect(bad.reason).toMatch(/maxPrice/);
    expect(validateShopTask(taskOf(null)).ok).toBe(false);
    expect(shopSpec.validateTask(taskOf(goal))).toEqual({ ok: true });
  });
});
