import { describe, expect, it } from 'vitest';
import { shopReward, type Product, type ShopGoal } from '../src/envs/shop/index.ts';

const product: Product = {
  id: 'B0TEST0001',
  title: 'Acme Classic Running Shoes - Lightweight, Non Slip',
  category: 'shoes',
  productType: 'running shoes',
  attributes: ['non slip', 'lightweight', 'breathable'],
  options: { size: ['8', '9', '10'], color: ['black', 'white'] },
  price: 50,
  description: 'The Acme running shoes.',
  features: ['Non Slip'],
};

const goal: ShopGoal = {
  catalogueSeed: 0,
  productType: 'running shoes',
  category: 'shoes',
  attributes: ['lightweight', 'non slip'],
  options: { size: '9', color: 'black' },
  maxPrice: 60,
  targetId: 'B0TEST0001',
};

// n_attributes 2 + n_options 2 + price 1 = 5 criteria.
describe('shopReward', () => {
  it('is exactly 1 for a full match', () => {
    expect(shopReward(goal, product, { size: '9', color: 'black' })).toBe(1);
    expect(shopReward({ ...goal, attributes: ['lightweight', 'non slip', 'breathable'] }, product, { size: '9', color: 'black' })).toBe(1);
  });

  it('counts matched attributes', () => {
    expect(shopReward({ ...goal, attributes: ['lightweight', 'waterproof'] }, product, { size: '9', color: 'black' })).toBeCloseTo(4 / 5, 12);
    expect(shopReward({ ...goal, attributes: ['memory foam', 'waterproof'] }, product, { size: '9', color: 'black' })).toBeCloseTo(3 / 5, 12);
  });

  it('counts matched options, and an unselected option does not match', () => {
    expect(shopReward(goal, product, { size: '10', color: 'black' })).toBeCloseTo(4 / 5, 12);
    expect(shopReward(goal, product, { color: 'black' })).toBeCloseTo(4 / 5, 12);
    expect(shopReward(goal, product, {})).toBeCloseTo(3 / 5, 12);
    // Options the goal does not ask for do not count either way.
    expect(shopReward({ ...goal, options: { size: '9' } }, product, { size: '9', color: 'white' })).toBe(1);
  });

  it('loses the price point when over budget', () => {
    expect(shopReward({ ...goal, maxPrice: 49.99 }, product, { size: '9', color: 'black' })).toBeCloseTo(4 / 5, 12);
    expect(shopReward({ ...goal, maxPrice: 50 }, product, { size: '9', color: 'black' })).toBe(1);
  });

  it('scales by 0.5 for another type in the same category', () => {
    const sneakers: Product = { ...product, productType: 'sneakers' };
    expect(shopReward(goal, sneakers, { size: '9', color: 'black' })).toBe(0.5);
    expect(shopReward(goal, sneakers, { size: '9' })).toBeCloseTo(0.5 * (4 / 5), 12);
  });

  it('scales by 0.1 for another category', () => {
    const tee: Product = { ...product, category: 'clothing', productType: 't-shirt' };
    expect(shopReward(goal, tee, { size: '9', color: 'black' })).toBeCloseTo(0.1, 12);
    expect(shopReward({ ...goal, maxPrice: 10 }, tee, {})).toBeCloseTo(0.1 * (2 / 5), 12);
  });

  it('with no attributes or options is decided by type and price alone', () => {
    const bare: ShopGoal = { ...goal, attributes: [], options: {} };
    expect(shopReward(bare, product, {})).toBe(1);
    expect(shopReward({ ...bare, maxPrice: 1 }, product, {})).toBe(0);
  });
});
