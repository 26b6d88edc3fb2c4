/**
 * BM25 product search over a catalogue (title, attributes, description), via MiniSearch.
 */
import MiniSearch from 'minisearch';
import type { Catalogue, Product } from './catalogue.ts';

/** How many ranked results the shop shows for one query (WebShop's engine returns 50). */
export const SEARCH_RESULT_LIMIT = 50;

interface IndexedProduct {
  id: string;
  title: string;
  attributes: string;
  description: string;
}

interface SearchState {
  index: MiniSearch<IndexedProduct>;
  /** Memoised rankings: the expert and task generation repeat the same few queries. */
  results: Map<string, readonly Product[]>;
}

const RESULT_CACHE_LIMIT = 4096;
const states = new WeakMap<Catalogue, SearchState>();

function stateFor(catalogue: Catalogue): SearchState {
  let state = states.get(catalogue);
  if (state) return state;
  const index = new MiniSearch<IndexedProduct>({
    fields: ['title', 'attributes', 'description'],
    idField: 'id',
    searchOptions: {
      // Classical BM25: MiniSearch defaults to BM25+ (d = 0.5); d = 0 turns that off.
      bm25: { k: 1.2, b: 0.75, d: 0 },
      fuzzy: false,
      prefix: false,
      combineWith: 'OR',
    },
  });
  index.addAll(
    catalogue.products.map((p) => ({ id: p.id, title: p.title, attributes: p.attributes.join(' '), description: p.description })),
  );
  state = { index, results: new Map() };
  states.set(catalogue, state);
  return state;
}

/**
 * Products matching any query term, best first, by classical BM25 summed over the indexed
 * fields. Ties are broken by product id so the ranking is deterministic.
 * `limit` caps the result count (default: all matches).
 */
export function searchProducts(catalogue: Catalogue, query: string, limit?: number): Product[] {
  if (typeof query !== 'string') throw new TypeError(`search query must be a string, got ${typeof query}`);
  if (limit !== undefined && !(Number.isInteger(limit) && limit >= 0)) {
    throw new RangeError(`search limit must be a non-negative integer, got ${limit}`);
  }
  const state = stateFor(catalogue);
  const key = query.trim().toLowerCase();
  let ranked = state.results.get(key);
  if (!ranked) {
    ranked = rank(state.index, catalogue, key);
    if (state.results.size >= RESULT_CACHE_LIMIT) state.results.clear();
    state.results.set(key, ranked);
  }
  return limit === undefined ? ranked.slice() : ranked.slice(0, limit);
}

function rank(index: MiniSearch<IndexedProduct>, catalogue: Catalogue, query: string): readonly Product[] {
  if (query === '') return [];
  const hits = index.search(query).map((hit) => ({
    id: String(hit.id),
    // MiniSearch multiplies each score by the number of distinct query terms matched;
    // dividing it out leaves the plain BM25 sum.
    score: hit.score / Math.max(1, hit.queryTerms.length),
  }));
  hits.sort((a, b) => b.score - a.score || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  const out: Product[] = [];
  for (const hit of hits) {
    const product = catalogue.byId.get(hit.id);
    if (product) out.push(product);
  }
  return Object.freeze(out);
}
