/**
 * Lists a query never recorded in the data, ranked from the items the data has listed.
 *
 * Some actions answer a free-text query with a list of items, one line each, opened by their id
 * (shop's `search[...]` shows `[B0AB12CD34] title | $price` lines and `click[B0AB12CD34]`). For a
 * query no stored episode made, the nearest stored transition is another query's list: another
 * product's results. Measured on shop seed 0 (556 unrecorded queries of 200 tasks), those pages
 * shared 44% of the real page's items and listed the target on 359 of the 501 real pages that
 * did; ranking every item line the data listed by the query's words (BM25 over the lines'
 * descriptions) shares 72% and lists it on 430. A search engine reads an item's page, not only
 * its list line: an item the data opened is also found by the choices its page offered (its
 * colours and sizes), so a query naming a colour lists the opened items that offer it first, as
 * the real shop, which indexes each product's description, does. Without that (and with the
 * stand-in rule of ./item-offers.ts), the goal-blind demonstrator's first product lacked a named
 * option inside the simulator on 38 of 150 unrecorded shop tasks (seed 0), against 27 in the real
 * shop; with it, 29. What is learned here is read off the data's states (a line's description,
 * which action opens it, the page it opened); ranking by the query's words is declared knowledge
 * of what a search engine does, not the environment's code or catalogue.
 */
import MiniSearch from 'minisearch';
import type { Observation } from '../core/types.ts';
import { tokenize } from '../policy/hashed-embedder.ts';
import { choiceLists, isOpaqueToken } from './evidence.ts';
import { actionTemplate } from './substitution.ts';

/** A transition as far as listing goes. */
export interface ListingTransition {
  state: Observation;
  action: string;
  next: Observation | null;
}

/** Query actions that listed items at least this often in the data count as queries. */
const MIN_QUERY_LISTS = 5;

/** Whether `text` is one opaque token, an id that identifies rather than describes (`B0AB12CD34`). */
function isItemId(text: string): boolean {
  const tokens = tokenize(text);
  return tokens.length === 1 && isOpaqueToken(tokens[0] as string);
}

/** A line `[id] description | more`, with `id` one opaque token: the id, else undefined. */
function itemIdOf(line: string): string | undefined {
  if (!line.startsWith('[')) return undefined;
  const end = line.indexOf('] ');
  if (end < 2) return undefined;
  const id = line.slice(1, end);
  return isItemId(id) ? id : undefined;
}

const listedIds = (text: string): string[] => text.split('\n').flatMap((l) => itemIdOf(l) ?? []);

/** The items a state lists, in page order: each line `[id] description | more` as its id and description. */
export function listedLines(text: string): { id: string; description: string }[] {
  return text.split('\n').flatMap((line) => {
    const id = itemIdOf(line);
    return id === undefined ? [] : [{ id, description: descriptionOf(line, id) }];
  });
}

/** A list line's description: what follows the id, up to the first ` | `. */
function descriptionOf(line: string, id: string): string {
  return (line.slice(id.length + 3).split(' | ')[0] ?? '').trim();
}

/**
 * What a list says of the item an action opens by its id: for an action whose one entity is an
 * opaque id (`click[B0AB12CD34]`) and a state line `[B0AB12CD34] description | more`, the
 * description (a product's title); undefined otherwise.
 */
export function listedItem(state: string, action: string): string | undefined {
  const { entities } = actionTemplate(action);
  if (entities.length !== 1) return undefined;
  const id = (entities[0] as string).trim();
  if (!isItemId(id)) return undefined;
  const prefix = `[${id}] `;
  const line = state.split('\n').find((l) => l.startsWith(prefix));
  const description = line === undefined ? '' : descriptionOf(line, id);
  return description ? description : undefined;
}

/** Items listed anywhere in the data, and the query templates whose next states list them. */
export class ItemListings {
  private constructor(
    /** Each listed item's line (the first seen), by id. */
    private readonly lines: ReadonlyMap<string, string>,
    /** Templates of actions that answered a query with a list (`search[{}]`). */
    private readonly queries: ReadonlySet<string>,
    /** The template of the action that opens a listed item (`click[{}]`). */
    private readonly opener: string,
    private readonly index: MiniSearch<{ id: string; description: string; choices: string }>,
  ) {}

  /**
   * Learns from the data; null when its states list no items or no action answers a query with
   * a list (household's states do neither).
   */
  static learn(transitions: readonly ListingTransition[]): ItemListings | null {
    const lines = new Map<string, string>();
    const openers = new Map<string, number>();
    const choices = new Map<string, string>();
    const queryLists = new Map<string, number>();
    for (const t of transitions) {
      const listedHere = new Set<string>();
      for (const line of t.state.text.split('\n')) {
        const id = itemIdOf(line);
        if (id === undefined) continue;
        listedHere.add(id);
        if (!lines.has(id)) lines.set(id, line);
      }
      const { template, entities } = actionTemplate(t.action);
      if (entities.length === 1 && listedHere.has(entities[0] as string)) {
        openers.set(template, (openers.get(template) ?? 0) + 1);
        const id = entities[0] as string;
        if (t.next && !choices.has(id)) choices.set(id, [...choiceLists(t.next.text, t.next.actions).keys()].join(' '));
      }
      // A query: one free-text entity, asked where nothing was listed, answered with a list.
      if (t.next && entities.length === 1 && listedHere.size === 0 && !isItemId(entities[0] as string) && listedIds(t.next.text).length > 0) {
        queryLists.set(template, (queryLists.get(template) ?? 0) + 1);
      }
    }
    const queries = new Set([...queryLists].filter(([, n]) => n >= MIN_QUERY_LISTS).map(([q]) => q));
    const opener = [...openers].sort((a, b) => b[1] - a[1])[0]?.[0];
    if (lines.size === 0 || queries.size === 0 || opener === undefined) return null;
    const index = new MiniSearch<{ id: string; description: string; choices: string }>({
      fields: ['description', 'choices'],
      idField: 'id',
      // Classical BM25 over whole words; any word of the query may match.
      searchOptions: { bm25: { k: 1.2, b: 0.75, d: 0 }, fuzzy: false, prefix: false, combineWith: 'OR' },
    });
    index.addAll([...lines].map(([id, line]) => ({ id, description: descriptionOf(line, id), choices: choices.get(id) ?? '' })));
    return new ItemListings(lines, queries, opener, index);
  }

  /** How many items the data listed. */
  get size(): number {
    return this.lines.size;
  }

  /** Whether `action` asks a query that answers with a list. */
  isQuery(action: string): boolean {
    const { template, entities } = actionTemplate(action);
    return entities.length === 1 && this.queries.has(template);
  }

  /** Listed items best matching `query`, best first (ties by id), at most `limit`. */
  rank(query: string, limit: number): string[] {
    if (!(Number.isInteger(limit) && limit >= 0)) throw new RangeError(`limit must be a non-negative integer, got ${limit}`);
    const hits = this.index.search(query).map((h) => ({ id: String(h.id), score: h.score }));
    hits.sort((a, b) => b.score - a.score || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    return hits.slice(0, limit).map((h) => h.id);
  }

  /**
   * `page` (the list `pageAction`, another query, showed, rewritten for this step) listing the
   * items that best match `action`'s query instead of its own, as many as it listed, each with its
   * opening action in place of the old ones. Unchanged when the two queries ask the same words,
   * the page lists nothing, or no item matches a word of the query (the data cannot say what such
   * a query shows).
   */
  relist(action: string, page: Observation, pageAction: string): Observation {
    if (!this.isQuery(action)) return page;
    // The same words asked in another order or case: the same list.
    const words = (a: string): string => [...new Set(tokenize(actionTemplate(a).entities[0] ?? ''))].sort().join(' ');
    if (this.isQuery(pageAction) && words(pageAction) === words(action)) return page;
    const old = listedIds(page.text);
    if (old.length === 0) return page;
    const ranked = this.rank(actionTemplate(action).entities[0] as string, old.length);
    if (ranked.length === 0) return page;
    const textLines = page.text.split('\n');
    const at = textLines.findIndex((l) => itemIdOf(l) !== undefined);
    const kept = textLines.filter((l) => itemIdOf(l) === undefined);
    kept.splice(at, 0, ...ranked.map((id) => this.lines.get(id) as string));
    const opens = new Set(old.map((id) => this.opener.replace('{}', id)));
    const first = page.actions.findIndex((a) => opens.has(a));
    const actions = page.actions.filter((a) => !opens.has(a));
    actions.splice(first < 0 ? 0 : first, 0, ...ranked.map((id) => this.opener.replace('{}', id)));
    // The action list is the page's last line in the abstract format: rebuild it when it is shown.
    const last = kept.length - 1;
    const shown = `Actions: ${page.actions.join(' ')}`;
    if (kept[last] === shown) kept[last] = `Actions: ${actions.join(' ')}`;
    return { text: kept.join('\n'), actions };
  }
}
