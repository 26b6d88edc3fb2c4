/**
 * The shop's product catalogue: a deterministic function of one integer seed.
 */
import { Rng } from '../../core/rng.ts';
import { BRAND_SYLLABLES, CATEGORIES, type CategorySpec, type OptionKind, type ProductTypeSpec } from './vocabulary.ts';

/** The catalogue every built-in task uses. */
export const DEFAULT_CATALOGUE_SEED = 0;
/** Products in a catalogue unless asked otherwise. */
export const DEFAULT_CATALOGUE_SIZE = 1200;
const MAX_CATALOGUE_SIZE = 100_000;

/** The option values a product offers, per option kind (absent kind = not offered). */
export type ProductOptions = { readonly [K in OptionKind]?: readonly string[] };

/** One product, WebShop-style. */
export interface Product {
  /** ASIN-like id: "B0" + 8 uppercase alphanumerics, unique in its catalogue. */
  readonly id: string;
  readonly title: string;
  readonly category: string;
  readonly productType: string;
  /** 2-5 attributes from the category's vocabulary. */
  readonly attributes: readonly string[];
  readonly options: ProductOptions;
  /** Dollars, two decimals. */
  readonly price: number;
  readonly description: string;
  readonly features: readonly string[];
}

/** A generated catalogue. Shared and frozen: never mutate it. */
export interface Catalogue {
  readonly seed: number;
  readonly products: readonly Product[];
  readonly byId: ReadonlyMap<string, Product>;
  /** Category names, in vocabulary order. */
  readonly categories: readonly string[];
  /** Product type name -> its category. */
  readonly typeCategory: ReadonlyMap<string, string>;
}

// Catalogues are pure functions of (seed, size); a few are kept so tasks on the same seed
// share one catalogue (and one search index). Bounded because goal seeds come from data.
const CACHE_LIMIT = 16;
const cache = new Map<string, Catalogue>();

/**
 * Generates (or returns the cached) catalogue for `seed`: `size` products spread evenly
 * over every product type of every category.
 */
export function generateCatalogue(seed: number, size: number = DEFAULT_CATALOGUE_SIZE): Catalogue {
  if (!Number.isInteger(seed) || seed < 0 || seed > 0xffffffff) {
    throw new RangeError(`catalogue seed must be an integer in [0, 2^32), got ${seed}`);
  }
  if (!Number.isInteger(size) || size < 1 || size > MAX_CATALOGUE_SIZE) {
    throw new RangeError(`catalogue size must be an integer in [1, ${MAX_CATALOGUE_SIZE}], got ${size}`);
  }
  const key = `${seed}:${size}`;
  const hit = cache.get(key);
  if (hit) return hit;
  const catalogue = buildCatalogue(seed, size);
  if (cache.size >= CACHE_LIMIT) {
    const oldest = cache.keys().next().value;
    if (oldest !== undefined) cache.delete(oldest);
  }
  cache.set(key, catalogue);
  return catalogue;
}

/**
 * Forgets every cached catalogue, and with them their search indexes and memoised rankings
 * (src/envs/shop/search.ts keys those by catalogue), so that the next use builds them afresh.
 * For cold-start measurements; results are unchanged (catalogues are pure functions of the seed).
 */
export function clearCatalogueCache(): void {
  cache.clear();
}

/** Every (category, type) pair in vocabulary order. */
const PRODUCT_TYPES: readonly { category: CategorySpec; type: ProductTypeSpec }[] = CATEGORIES.flatMap((category) =>
  category.types.map((type) => ({ category, type })),
);

/** The size values a product type can offer, or null. */
function typeSizes(category: CategorySpec, type: ProductTypeSpec): readonly string[] | null {
  return type.sizes === undefined ? category.sizes : type.sizes;
}

/** The colour values a product type can offer, or null. */
function typeColors(category: CategorySpec, type: ProductTypeSpec): readonly string[] | null {
  return type.colors === undefined ? category.colors : type.colors;
}

const ID_ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ';

function buildCatalogue(seed: number, size: number): Catalogue {
  const rng = new Rng(seed);
  const brandsByCategory = new Map<string, string[]>();
  const brandRng = rng.fork('brands');
  const usedBrands = new Set<string>();
  for (const category of CATEGORIES) {
    const brands: string[] = [];
    while (brands.length < 6) {
      const brand = makeBrand(brandRng);
      if (usedBrands.has(brand)) continue;
      usedBrands.add(brand);
      brands.push(brand);
    }
    brandsByCategory.set(category.name, brands);
  }

  const productRng = rng.fork('products');
  const ids = new Set<string>();
  const titles = new Set<string>();
  const products: Product[] = [];
  // Round-robin over types (in a seed-dependent order) so every type has about size/nTypes products.
  const order = productRng.shuffle(PRODUCT_TYPES);
  for (let i = 0; i < size; i++) {
    const entry = order[i % order.length];
    if (!entry) throw new Error('unreachable: empty product type list');
    const brands = brandsByCategory.get(entry.category.name) ?? [];
    products.push(makeProduct(productRng, entry.category, entry.type, brands, ids, titles));
  }
  const byId = new Map(products.map((p) => [p.id, p] as const));
  const typeCategory = new Map(PRODUCT_TYPES.map(({ category, type }) => [type.name, category.name] as const));
  return Object.freeze({
    seed,
    products: Object.freeze(products),
    byId,
    categories: Object.freeze(CATEGORIES.map((c) => c.name)),
    typeCategory,
  });
}

function makeBrand(rng: Rng): string {
  const n = rng.int(2, 3);
  let word = '';
  for (let i = 0; i < n; i++) word += rng.pick(BRAND_SYLLABLES);
  return word.charAt(0).toUpperCase() + word.slice(1);
}

function makeId(rng: Rng, ids: Set<string>): string {
  for (;;) {
    let id = 'B0';
    for (let i = 0; i < 8; i++) id += ID_ALPHABET.charAt(rng.int(0, ID_ALPHABET.length - 1));
    if (!ids.has(id)) {
      ids.add(id);
      return id;
    }
  }
}

function titleCase(text: string): string {
  return text.replace(/(^|[\s-])([a-z])/g, (_m, sep: string, c: string) => sep + c.toUpperCase());
}

/** A contiguous run of at least 2 values (sizes read naturally as a range). */
function sizeRange(rng: Rng, values: readonly string[]): string[] {
  if (values.length <= 2) return values.slice();
  const len = rng.int(2, Math.min(6, values.length));
  const start = rng.int(0, values.length - len);
  return values.slice(start, start + len);
}

/** 2-5 colours, in vocabulary order. */
function colorSubset(rng: Rng, values: readonly string[]): string[] {
  if (values.length <= 2) return values.slice();
  const chosen = new Set(rng.sample(values, rng.int(2, Math.min(5, values.length))));
  return values.filter((v) => chosen.has(v));
}

function makeProduct(
  rng: Rng,
  category: CategorySpec,
  type: ProductTypeSpec,
  brands: readonly string[],
  ids: Set<string>,
  titles: Set<string>,
): Product {
  const id = makeId(rng, ids);
  const attrCount = rng.int(2, 5);
  const attrSet = new Set(rng.sample(category.attributes, attrCount));
  // Vocabulary order keeps attribute lists stable and readable.
  const attributes = category.attributes.filter((a) => attrSet.has(a));

  const options: { size?: string[]; color?: string[] } = {};
  const sizes = typeSizes(category, type);
  if (sizes) options.size = sizeRange(rng, sizes);
  const colors = typeColors(category, type);
  if (colors) options.color = colorSubset(rng, colors);

  const [lo, hi] = type.price;
  const price = Math.round((lo + (hi - lo) * rng.next()) * 100) / 100;

  // Unique titles keep search meaningful (an exact title finds one product).
  let brand = rng.pick(brands);
  let title = '';
  for (let attempt = 0; ; attempt++) {
    const adjective = rng.pick(category.adjectives);
    const shown = rng.sample(attributes, Math.min(attributes.length, rng.int(1, 3)));
    title = `${brand} ${adjective} ${titleCase(type.name)} - ${shown.map(titleCase).join(', ')}`;
    if (!titles.has(title)) break;
    if (attempt > 20) {
      title = `${title} (${id})`;
      break;
    }
    brand = rng.pick(brands);
  }
  titles.add(title);

  const blurb = rng.pick(category.blurbs);
  const description =
    `The ${brand} ${type.name} from our ${category.name} range. ` +
    `It is ${joinWords(attributes)}. ${blurb}`;
  const features = [
    ...attributes.map((a) => `${titleCase(a)}`),
    `Brand: ${brand}`,
    ...(options.size ? [`Available sizes: ${options.size.join(', ')}`] : []),
    ...(options.color ? [`Available colors: ${options.color.join(', ')}`] : []),
  ];

  return Object.freeze({
    id,
    title,
    category: category.name,
    productType: type.name,
    attributes: Object.freeze(attributes),
    options: Object.freeze({
      ...(options.size ? { size: Object.freeze(options.size) } : {}),
      ...(options.color ? { color: Object.freeze(options.color) } : {}),
    }),
    price,
    description,
    features: Object.freeze(features),
  });
}

/** "a", "a and b", "a, b and c". */
export function joinWords(words: readonly string[]): string {
  if (words.length <= 1) return words.join('');
  return `${words.slice(0, -1).join(', ')} and ${words[words.length - 1]}`;
}
