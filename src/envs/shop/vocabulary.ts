/**
 * The fixed vocabulary the shop catalogue is generated from: categories, product types,
 * attributes and option values. Kept apart from the generator so the data is easy to review.
 *
 * Constraints the rest of the shop relies on (checked by tests):
 * - product type names are unique across categories;
 * - no attribute or option value contains a comma or the word "and" (instructions are parsed back);
 * - within one product type, size values and colour values never coincide (both are `click[...]` labels).
 */

/** The option kinds a product can offer. */
export const OPTION_KINDS = ['size', 'color'] as const;
export type OptionKind = (typeof OPTION_KINDS)[number];

/** One product type, e.g. "running shoes". */
export interface ProductTypeSpec {
  readonly name: string;
  /** Price range in dollars, [min, max]. */
  readonly price: readonly [number, number];
  /** Size values for this type; `null` = no size option; absent = the category's sizes. */
  readonly sizes?: readonly string[] | null;
  /** Colour values for this type; `null` = no colour option; absent = the category's colours. */
  readonly colors?: readonly string[] | null;
  /** Uncountable ("some granola") rather than "a granola". */
  readonly mass?: boolean;
}

/** One product category with its attribute vocabulary and default option values. */
export interface CategorySpec {
  readonly name: string;
  readonly attributes: readonly string[];
  readonly sizes: readonly string[] | null;
  readonly colors: readonly string[] | null;
  /** Words used in titles ("Classic", "Premium"). */
  readonly adjectives: readonly string[];
  /** Filler sentences for descriptions. */
  readonly blurbs: readonly string[];
  readonly types: readonly ProductTypeSpec[];
}

const LETTER_SIZES = ['xs', 's', 'm', 'l', 'xl', 'xxl'];
const PET_SIZES = ['small', 'medium', 'large', 'x-large'];
const GENERIC_ADJECTIVES = ['Classic', 'Premium', 'Everyday', 'Essential', 'Pro', 'Deluxe', 'Basic', 'Ultra'];

export const CATEGORIES: readonly CategorySpec[] = [
  {
    name: 'clothing',
    attributes: [
      'machine washable', 'cotton blend', 'slim fit', 'relaxed fit', 'long sleeve', 'short sleeve',
      'moisture wicking', 'quick drying', 'wrinkle free', 'breathable', 'stretch fabric', 'button closure',
    ],
    sizes: LETTER_SIZES,
    colors: ['black', 'white', 'gray', 'navy blue', 'red', 'green', 'beige', 'pink', 'olive', 'burgundy'],
    adjectives: [...GENERIC_ADJECTIVES, 'Casual', 'Vintage'],
    blurbs: ['Soft fabric that keeps its shape wash after wash.', 'A wardrobe staple for work, travel and weekends.', 'Cut for all-day comfort.'],
    types: [
      { name: 't-shirt', price: [8, 30] },
      { name: 'hoodie', price: [20, 60] },
      { name: 'jeans', price: [25, 80] },
      { name: 'dress', price: [20, 90] },
      { name: 'jacket', price: [35, 150] },
      { name: 'sweater', price: [20, 70] },
      { name: 'polo shirt', price: [15, 45] },
      { name: 'leggings', price: [12, 40] },
      { name: 'shorts', price: [12, 40] },
    ],
  },
  {
    name: 'shoes',
    attributes: [
      'non slip', 'rubber sole', 'lightweight', 'waterproof', 'memory foam', 'breathable',
      'arch support', 'slip on', 'lace up', 'wide width', 'cushioned', 'anti odor',
    ],
    sizes: ['6', '6.5', '7', '7.5', '8', '8.5', '9', '9.5', '10', '10.5', '11', '12'],
    colors: ['black', 'white', 'gray', 'navy blue', 'brown', 'red', 'blue', 'pink', 'tan'],
    adjectives: [...GENERIC_ADJECTIVES, 'Trail', 'Comfort'],
    blurbs: ['Built for long days on your feet.', 'A supportive fit that breaks in quickly.', 'Grippy outsole for city streets and light trails.'],
    types: [
      { name: 'running shoes', price: [40, 140] },
      { name: 'sneakers', price: [30, 110] },
      { name: 'hiking boots', price: [50, 180] },
      { name: 'sandals', price: [15, 60] },
      { name: 'slippers', price: [10, 40] },
      { name: 'loafers', price: [30, 120] },
      { name: 'rain boots', price: [25, 80] },
    ],
  },
  {
    name: 'beauty',
    attributes: [
      'paraben free', 'cruelty free', 'long lasting', 'fragrance free', 'sulfate free', 'vegan',
      'dermatologist tested', 'natural ingredients', 'oil free', 'hypoallergenic', 'sensitive skin', 'moisturizing',
    ],
    sizes: ['1 fl oz', '3.4 fl oz', '8 fl oz', '16 fl oz', '32 fl oz'],
    colors: null,
    adjectives: [...GENERIC_ADJECTIVES, 'Botanical', 'Daily'],
    blurbs: ['Gentle enough for everyday use.', 'Formulated with care and tested for quality.', 'Leaves a clean, fresh finish.'],
    types: [
      { name: 'shampoo', price: [6, 30], mass: true },
      { name: 'conditioner', price: [6, 30], mass: true },
      { name: 'face moisturizer', price: [10, 45] },
      { name: 'body lotion', price: [6, 25], mass: true },
      { name: 'sunscreen', price: [8, 30], mass: true },
      { name: 'lipstick', price: [6, 28], sizes: null, colors: ['red', 'pink', 'nude', 'coral', 'berry', 'plum'] },
      { name: 'nail polish', price: [4, 16], sizes: null, colors: ['red', 'pink', 'nude', 'coral', 'berry', 'plum', 'clear'], mass: true },
      { name: 'face serum', price: [12, 55] },
      { name: 'hair oil', price: [8, 35], mass: true },
    ],
  },
  {
    name: 'electronics',
    attributes: [
      'wireless', 'noise cancelling', 'fast charging', 'water resistant', 'long battery life', 'high definition',
      'usb c', 'compact', 'shockproof', 'hands free', 'touch control', 'built in microphone',
    ],
    sizes: null,
    colors: ['black', 'white', 'silver', 'blue', 'red', 'rose gold', 'space gray'],
    adjectives: [...GENERIC_ADJECTIVES, 'Smart', 'Max'],
    blurbs: ['Pairs in seconds with phones, tablets and laptops.', 'Engineered for reliable everyday performance.', 'Backed by a one-year limited warranty.'],
    types: [
      { name: 'bluetooth headphones', price: [25, 250] },
      { name: 'wireless earbuds', price: [20, 200] },
      { name: 'portable charger', price: [15, 70] },
      { name: 'smart watch', price: [40, 300] },
      { name: 'bluetooth speaker', price: [20, 150] },
      { name: 'phone case', price: [8, 40] },
      { name: 'usb c cable', price: [6, 25], sizes: ['3 ft', '6 ft', '10 ft'] },
      { name: 'hdmi cable', price: [7, 30], sizes: ['3 ft', '6 ft', '10 ft', '15 ft'], colors: null },
      { name: 'webcam', price: [25, 120], colors: null },
    ],
  },
  {
    name: 'grocery',
    attributes: [
      'gluten free', 'non gmo', 'sugar free', 'organic', 'low carb', 'keto friendly',
      'high protein', 'kosher', 'individually wrapped', 'caffeine free', 'dairy free', 'low sodium',
    ],
    sizes: ['8 ounce', '12 ounce', '16 ounce', 'pack of 2', 'pack of 6', 'pack of 12'],
    colors: null,
    adjectives: ['Classic', 'Premium', 'Original', 'Artisan', 'Farmhouse', 'Gourmet', 'Simple', 'Natural'],
    blurbs: ['Sourced from trusted growers.', 'A pantry favourite for quick snacks and meals.', 'Packed fresh and sealed for flavour.'],
    types: [
      { name: 'coffee beans', price: [8, 35] },
      { name: 'green tea', price: [4, 20], mass: true },
      { name: 'protein bars', price: [10, 40] },
      { name: 'granola', price: [4, 15], mass: true },
      { name: 'olive oil', price: [8, 35], mass: true },
      { name: 'dark chocolate', price: [3, 18], mass: true },
      { name: 'trail mix', price: [5, 20], mass: true },
      { name: 'pasta', price: [2, 12], mass: true },
      { name: 'peanut butter', price: [3, 14], mass: true },
      { name: 'beef jerky', price: [6, 30], mass: true },
    ],
  },
  {
    name: 'home & kitchen',
    attributes: [
      'easy clean', 'dishwasher safe', 'space saving', 'non toxic', 'eco friendly', 'stain resistant',
      'bpa free', 'heavy duty', 'soft', 'machine washable', 'microwave safe', 'rust proof',
    ],
    sizes: null,
    colors: ['white', 'gray', 'beige', 'navy blue', 'black', 'green', 'blue', 'pink', 'brown'],
    adjectives: [...GENERIC_ADJECTIVES, 'Modern', 'Rustic'],
    blurbs: ['Designed to make everyday living easier.', 'Looks good in any room.', 'Quality materials that last.'],
    types: [
      { name: 'bed sheets', price: [20, 90], sizes: ['twin', 'full', 'queen', 'king'] },
      { name: 'throw pillow', price: [10, 40], sizes: ['16 x 16 inch', '18 x 18 inch', '20 x 20 inch'] },
      { name: 'bath towel', price: [8, 35] },
      { name: 'coffee mug', price: [6, 25], sizes: ['11 ounce', '15 ounce', '20 ounce'] },
      { name: 'storage basket', price: [12, 45], sizes: ['small', 'medium', 'large'] },
      { name: 'table lamp', price: [20, 90] },
      { name: 'curtains', price: [15, 70], sizes: ['52 x 63 inch', '52 x 84 inch', '52 x 96 inch'] },
      { name: 'cutting board', price: [10, 50], sizes: ['small', 'medium', 'large'], colors: null },
      { name: 'frying pan', price: [15, 80], sizes: ['8 inch', '10 inch', '12 inch'], colors: ['black', 'gray', 'red'] },
    ],
  },
  {
    name: 'sports & outdoors',
    attributes: [
      'non slip', 'lightweight', 'durable', 'eco friendly', 'sweat resistant', 'adjustable',
      'portable', 'bpa free', 'anti tear', 'high density', 'foldable', 'leak proof',
    ],
    sizes: null,
    colors: ['black', 'blue', 'purple', 'pink', 'green', 'gray', 'red', 'orange'],
    adjectives: [...GENERIC_ADJECTIVES, 'Active', 'Peak'],
    blurbs: ['Made for home workouts and the great outdoors.', 'Tough enough for daily training.', 'Packs down small for travel.'],
    types: [
      { name: 'yoga mat', price: [15, 70], sizes: ['4 mm', '6 mm', '8 mm'] },
      { name: 'dumbbells', price: [20, 120], sizes: ['5 lb', '10 lb', '15 lb', '20 lb', '25 lb'] },
      { name: 'resistance bands', price: [10, 35] },
      { name: 'water bottle', price: [8, 40], sizes: ['18 ounce', '24 ounce', '32 ounce', '40 ounce'] },
      { name: 'jump rope', price: [6, 25] },
      { name: 'gym bag', price: [15, 60] },
      { name: 'cycling gloves', price: [10, 35], sizes: ['s', 'm', 'l', 'xl'] },
      { name: 'camping tent', price: [40, 250], sizes: ['2 person', '4 person', '6 person'] },
    ],
  },
  {
    name: 'toys & games',
    attributes: [
      'educational', 'non toxic', 'battery operated', 'rechargeable', 'stem learning', 'durable',
      'safe for toddlers', 'creative play', 'easy assembly', 'bpa free', 'washable', 'travel friendly',
    ],
    sizes: null,
    colors: ['red', 'blue', 'yellow', 'green', 'pink', 'purple', 'multicolor'],
    adjectives: ['Classic', 'Super', 'Happy', 'Little', 'Mega', 'Junior', 'Fun', 'Bright'],
    blurbs: ['Hours of fun for kids and families.', 'A great gift for birthdays and holidays.', 'Encourages imagination and problem solving.'],
    types: [
      { name: 'building blocks', price: [15, 80] },
      { name: 'plush toy', price: [8, 35] },
      { name: 'jigsaw puzzle', price: [10, 30], sizes: ['300 pieces', '500 pieces', '1000 pieces'], colors: null },
      { name: 'toy car', price: [8, 40] },
      { name: 'board game', price: [15, 60], colors: null },
      { name: 'doll', price: [10, 50] },
      { name: 'remote control car', price: [25, 120] },
      { name: 'art set', price: [12, 45], colors: null },
    ],
  },
  {
    name: 'pet supplies',
    attributes: [
      'durable', 'adjustable', 'machine washable', 'non slip', 'reflective', 'odor control',
      'easy clean', 'chew resistant', 'waterproof', 'orthopedic', 'calming', 'natural ingredients',
    ],
    sizes: PET_SIZES,
    colors: ['black', 'red', 'blue', 'pink', 'green', 'gray', 'brown', 'orange'],
    adjectives: [...GENERIC_ADJECTIVES, 'Happy', 'Cozy'],
    blurbs: ['Loved by pets and their owners.', 'Vet recommended design.', 'Keeps your companion comfortable and safe.'],
    types: [
      { name: 'dog collar', price: [8, 30] },
      { name: 'dog leash', price: [8, 30], sizes: null },
      { name: 'dog bed', price: [25, 120] },
      { name: 'cat tree', price: [35, 150], colors: ['gray', 'beige', 'brown'] },
      { name: 'cat toy', price: [4, 18], sizes: null },
      { name: 'pet shampoo', price: [6, 25], sizes: ['8 fl oz', '16 fl oz', '32 fl oz'], colors: null, mass: true },
      { name: 'pet bowl', price: [6, 30] },
      { name: 'cat litter', price: [10, 40], sizes: ['10 lb', '20 lb', '40 lb'], colors: null, mass: true },
      { name: 'dog harness', price: [12, 45] },
    ],
  },
  {
    name: 'office products',
    attributes: [
      'refillable', 'quick drying', 'acid free', 'ergonomic', 'durable', 'smudge proof',
      'eco friendly', 'portable', 'waterproof', 'large capacity', 'recycled paper', 'non slip',
    ],
    sizes: null,
    colors: ['black', 'blue', 'red', 'green', 'pink', 'purple', 'white', 'gray'],
    adjectives: [...GENERIC_ADJECTIVES, 'Office', 'Studio'],
    blurbs: ['Keeps your desk organised and your work flowing.', 'Great for school, home and the office.', 'Reliable supplies for everyday tasks.'],
    types: [
      { name: 'notebook', price: [4, 20], sizes: ['a5', 'a4', 'letter'] },
      { name: 'gel pens', price: [5, 25], sizes: ['pack of 6', 'pack of 12', 'pack of 24'] },
      { name: 'desk organizer', price: [12, 45] },
      { name: 'laptop backpack', price: [25, 90] },
      { name: 'stapler', price: [6, 30] },
      { name: 'sticky notes', price: [4, 18], sizes: ['3 x 3 inch', '3 x 5 inch', '4 x 6 inch'] },
      { name: 'office chair', price: [60, 300] },
      { name: 'desk lamp', price: [18, 70] },
    ],
  },
];

/** Syllables brand names are built from (brands differ between catalogue seeds). */
export const BRAND_SYLLABLES: readonly string[] = [
  'ko', 'va', 'lin', 'tra', 'mo', 'zen', 'ri', 'ta', 'ex', 'on', 'quo', 'ar', 'bel', 'dor', 'fi', 'gra',
  'hel', 'ix', 'jo', 'ka', 'lu', 'mer', 'nov', 'or', 'pi', 'sol', 'tek', 'ul', 'vi', 'wen', 'xa', 'yo',
];
