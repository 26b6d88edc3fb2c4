/**
 * The WebShop-like `shop` environment: public API.
 */
import type { EnvSpec } from '../spec.ts';
import { ShopEnv, SHOP_MAX_STEPS } from './env.ts';
import { createShopDemonstrator } from './demonstrator.ts';
import { validateShopTask } from './goal.ts';
import { generateShopTasks, iterateShopTasks } from './tasks.ts';

export {
  DEFAULT_CATALOGUE_SEED,
  DEFAULT_CATALOGUE_SIZE,
  clearCatalogueCache,
  generateCatalogue,
  type Catalogue,
  type Product,
  type ProductOptions,
} from './catalogue.ts';
export { SEARCH_RESULT_LIMIT, searchProducts } from './search.ts';
export {
  parseInstruction,
  satisfiesGoal,
  shopInstruction,
  ShopGoalSchema,
  suggestQueries,
  validateShopTask,
  type ParsedInstruction,
  type SelectedOptions,
  type ShopGoal,
} from './goal.ts';
export { createShopDemonstrator } from './demonstrator.ts';
export { OTHER_CATEGORY_FACTOR, SAME_CATEGORY_FACTOR, shopReward } from './reward.ts';
export { RESULTS_PER_PAGE, SHOP_LABELS, SHOP_MAX_STEPS, ShopEnv } from './env.ts';
export { EXPERT_STEP_BUDGET, generateShopTasks, iterateShopTasks, productSplit } from './tasks.ts';
export { CATEGORIES, OPTION_KINDS, type CategorySpec, type OptionKind, type ProductTypeSpec } from './vocabulary.ts';

/** The shop environment's spec, for the environment registry. */
export const shopSpec: EnvSpec = {
  name: 'shop',
  description: 'WebShop-like online shop: search the catalogue, open a product, pick its options and buy what the instruction asks for',
  maxSteps: SHOP_MAX_STEPS,
  // The search page lists suggested queries, and its box takes any other.
  freeTextActions: ['search[{}]'],
  create: () => new ShopEnv(),
  tasks: (options) => generateShopTasks(options),
  iterateTasks: (options) => iterateShopTasks(options),
  validateTask: validateShopTask,
  demonstrator: createShopDemonstrator,
};
