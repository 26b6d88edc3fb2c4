/**
 * WebShop's purchase reward.
 */
import type { Product } from './catalogue.ts';
import type { SelectedOptions, ShopGoal } from './goal.ts';
import { OPTION_KINDS } from './vocabulary.ts';

/** Type factor when the bought product is of the wrong type but the right category. */
export const SAME_CATEGORY_FACTOR = 0.5;
/** Type factor when the bought product is from another category. */
export const OTHER_CATEGORY_FACTOR = 0.1;

/**
 * Reward for buying `product` with `selected` options, given `goal`:
 * r_type × (attributes matched + options matched + [price <= maxPrice]) / (n_attributes + n_options + 1).
 * r_type is 1 for the goal's product type, 0.5 for another type in the same category, 0.1 otherwise.
 * Counts are integers, so a full match is exactly 1.
 */
export function shopReward(goal: ShopGoal, product: Product, selected: SelectedOptions): number {
  const rType = product.productType === goal.productType ? 1 : product.category === goal.category ? SAME_CATEGORY_FACTOR : OTHER_CATEGORY_FACTOR;
  let matched = 0;
  let total = 1;
  for (const attribute of goal.attributes) {
    total++;
    if (product.attributes.includes(attribute)) matched++;
  }
  for (const kind of OPTION_KINDS) {
    const wanted = goal.options[kind];
    if (wanted === undefined) continue;
    total++;
    if (selected[kind] === wanted) matched++;
  }
  if (product.price <= goal.maxPrice) matched++;
  return matched === total ? rType : (rType * matched) / total;
}
