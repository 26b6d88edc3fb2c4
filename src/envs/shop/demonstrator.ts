/**
 * The shop's demonstrator: a careful shopper who sees only what the agent sees (the instruction,
 * repeated on every page, and the page itself) and never the task's hidden target.
 *
 * WebShop's demonstrations were recorded by people, who browse: they open the product that looks
 * right, and go back when it does not offer what they want. The environment's expert instead
 * reads the hidden goal and clicks a satisfying product at once, so its episodes never show a
 * product passed over, and a policy cloned from them buys whatever it opened first (16 of 50
 * held-out tasks bought a product lacking the wanted colour or size; BENCHMARKS.md, "training").
 *
 * The rule: search with the first suggested query; on a results page, open the listing not yet
 * opened whose title names the most of the instruction (its product type first, then its
 * attributes), dropping listings priced at or above the limit, and turn the page when every
 * listing was opened; on a product page, go back when an option the instruction names is not
 * offered, otherwise select the named options and buy.
 */
import type { Observation } from '../../core/types.ts';
import type { Policy } from '../episode.ts';
import { parseInstruction, type ParsedInstruction } from './goal.ts';
import { SHOP_LABELS } from './env.ts';

const LISTING_RE = /^\[([^\]]+)\] (.*) \| \$(\d+(?:\.\d+)?)$/;

/** What a results line shows. */
interface Listing {
  id: string;
  score: number;
}

function lineValue(text: string, prefix: string): string | null {
  const line = text.split('\n').find((l) => l.startsWith(prefix));
  return line === undefined ? null : line.slice(prefix.length);
}

/** How well a listing's title and price fit the instruction (higher is better). */
function listingScore(title: string, price: number, want: ParsedInstruction): number {
  const t = title.toLowerCase();
  let score = t.includes(want.productType) ? 10 : 0;
  for (const attribute of want.attributes) if (t.includes(attribute)) score++;
  if (want.maxPrice !== undefined && price >= want.maxPrice) score -= 20;
  return score;
}

/** The listings of a results page, in page order. */
function listings(text: string, want: ParsedInstruction): Listing[] {
  const out: Listing[] = [];
  for (const line of text.split('\n')) {
    const m = LISTING_RE.exec(line);
    if (m) out.push({ id: m[1] as string, score: listingScore(m[2] as string, Number(m[3]), want) });
  }
  return out;
}

const click = (label: string): string => `click[${label}]`;

/** Whether the options line that offers `value` shows it selected. */
function isSelected(text: string, value: string): boolean {
  const line = text.split('\n').find((l) => l.includes(`[${value}]`) && l.includes('(selected: '));
  return line !== undefined && line.endsWith(`(selected: ${value})`);
}

/**
 * A fresh demonstrator for one episode (it remembers which products it opened). Deterministic;
 * it never calls the environment (so never its expert), only reads the observation.
 */
export function createShopDemonstrator(): Policy {
  const opened = new Set<string>();
  let searches = 0;
  return (_env, observation: Observation) => {
    const { text, actions } = observation;
    const instruction = lineValue(text, 'Instruction: ');
    const want = instruction === null ? null : parseInstruction(instruction);
    const page = lineValue(text, 'Page: ') ?? '';
    const fallback = actions[0] ?? click(SHOP_LABELS.backToSearch);
    if (want === null) return fallback;
    if (page === 'search') {
      const queries = actions.filter((a) => a.startsWith('search['));
      return queries[Math.min(searches++, queries.length - 1)] ?? fallback;
    }
    if (page.startsWith('results')) {
      const fresh = listings(text, want).filter((l) => !opened.has(l.id));
      if (fresh.length === 0) return actions.includes(click(SHOP_LABELS.next)) ? click(SHOP_LABELS.next) : click(SHOP_LABELS.backToSearch);
      const best = fresh.reduce((a, b) => (b.score > a.score ? b : a));
      opened.add(best.id);
      return click(best.id);
    }
    if (page.startsWith('item')) {
      const named = [want.color, want.size].filter((v): v is string => v !== undefined);
      if (!named.every((v) => actions.includes(click(v)))) return click(SHOP_LABELS.prev);
      const pending = named.find((v) => !isSelected(text, v));
      return pending === undefined ? click(SHOP_LABELS.buyNow) : click(pending);
    }
    return actions.includes(click(SHOP_LABELS.prev)) ? click(SHOP_LABELS.prev) : fallback;
  };
}
