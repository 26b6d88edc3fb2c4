/**
 * The WebShop-like environment: search page -> results -> item (-> description/features) -> buy.
 * Pages are rendered as compact abstract text with the instruction on top, so every state is
 * self-contained (DreamGym's abstract textual state space).
 */
import {
  EnvironmentStateError,
  InvalidTaskError,
  type Observation,
  type RealEnvironment,
  type StepResult,
  type Task,
} from '../../core/types.ts';
import type { Catalogue, Product } from './catalogue.ts';
import { goalCatalogue, satisfiesGoal, ShopGoalSchema, suggestQueries, validateShopTask, type SelectedOptions, type ShopGoal } from './goal.ts';
import { shopReward } from './reward.ts';
import { SEARCH_RESULT_LIMIT, searchProducts } from './search.ts';
import { OPTION_KINDS } from './vocabulary.ts';

/** Episode step limit (as in the public WebShop agent-RL scripts). */
export const SHOP_MAX_STEPS = 15;
/** Products per results page. */
export const RESULTS_PER_PAGE = 10;

/** Fixed click labels. */
export const SHOP_LABELS = {
  next: 'next >',
  prev: '< prev',
  backToSearch: 'back to search',
  description: 'description',
  features: 'features',
  buyNow: 'buy now',
} as const;

interface SearchPage {
  readonly kind: 'search';
}
interface ResultsPage {
  readonly kind: 'results';
  readonly query: string;
  readonly results: readonly Product[];
  /** Zero-based page number. */
  readonly page: number;
}
interface ItemPage {
  readonly kind: 'item';
  readonly product: Product;
  readonly from: ResultsPage;
  readonly selected: SelectedOptions;
}
interface DetailPage {
  readonly kind: 'detail';
  readonly section: 'description' | 'features';
  readonly item: ItemPage;
}
type Page = SearchPage | ResultsPage | ItemPage | DetailPage;

interface EpisodeState {
  readonly task: Task;
  readonly goal: ShopGoal;
  readonly catalogue: Catalogue;
  readonly suggestions: readonly string[];
  /** The expert's search plan: the suggestion that surfaces a satisfying product earliest. */
  readonly plan: { readonly query: string; readonly page: number };
  page: Page;
  steps: number;
  done: boolean;
}

type Outcome = { valid: true } | { valid: false; message: string } | { valid: true; bought: { product: Product; selected: SelectedOptions } };

const ACTION_RE = /^\s*(search|click)\s*\[([\s\S]*)\]\s*$/i;

/** The shop environment. One instance runs one episode at a time. */
export class ShopEnv implements RealEnvironment {
  readonly name = 'shop' as const;
  readonly maxSteps = SHOP_MAX_STEPS;
  private state: EpisodeState | null = null;

  /** Starts an episode. Throws `InvalidTaskError` if the task is not an achievable shop task. */
  reset(task: Task): Observation {
    const validation = validateShopTask(task);
    if (!validation.ok) throw new InvalidTaskError(String((task as { id?: unknown } | null)?.id ?? ''), validation.reason);
    const goal = ShopGoalSchema.parse(task.goal);
    const catalogue = goalCatalogue(goal);
    const suggestions = suggestQueries(task.instruction);
    this.state = {
      task,
      goal,
      catalogue,
      suggestions,
      plan: planSearch(catalogue, goal, suggestions),
      page: { kind: 'search' },
      steps: 0,
      done: false,
    };
    return this.observe(this.state);
  }

  /** Applies an action; an inadmissible one returns `info.valid = false` and changes nothing but the step count. */
  step(action: string): StepResult {
    const s = this.active('step');
    s.steps++;
    const outcome = this.apply(s, typeof action === 'string' ? action : String(action));
    if ('bought' in outcome) {
      const { product, selected } = outcome.bought;
      const reward = shopReward(s.goal, product, selected);
      const success = reward === 1;
      s.done = true;
      const chosen = OPTION_KINDS.flatMap((k) => (selected[k] !== undefined ? [`${k}: ${selected[k]}`] : []));
      const message = `bought ${product.id}${chosen.length ? ` (${chosen.join(', ')})` : ''} for reward ${formatReward(reward)}`;
      const text = [
        instructionLine(s),
        'Page: purchase complete',
        `You bought [${product.id}] ${product.title}${chosen.length ? ` (${chosen.join(', ')})` : ''} for $${product.price.toFixed(2)}.`,
        `Reward: ${formatReward(reward)}`,
      ].join('\n');
      return { observation: { text, actions: [] }, reward, done: true, info: { valid: true, success, message } };
    }
    const notice = outcome.valid ? undefined : `Invalid action: ${outcome.message} Admissible actions are listed below.`;
    if (s.steps >= this.maxSteps) {
      s.done = true;
      const message = `step limit of ${this.maxSteps} reached without a purchase`;
      return {
        observation: this.observe(s, notice, `Episode over: ${message}.`),
        reward: 0,
        done: true,
        info: { valid: outcome.valid, success: false, message: outcome.valid ? message : `${outcome.message} Then the ${message}.` },
      };
    }
    return {
      observation: this.observe(s, notice),
      reward: 0,
      done: false,
      info: outcome.valid ? { valid: true } : { valid: false, message: outcome.message },
    };
  }

  /** The privileged expert's next action: always one of the current observation's actions. */
  expertAction(): string {
    const s = this.active('expertAction');
    const page = s.page;
    switch (page.kind) {
      case 'search':
        return `search[${s.plan.query}]`;
      case 'detail':
        return click(SHOP_LABELS.prev);
      case 'item': {
        if (!satisfiesGoal(page.product, s.goal)) return click(SHOP_LABELS.prev);
        for (const kind of OPTION_KINDS) {
          const wanted = s.goal.options[kind];
          if (wanted !== undefined && page.selected[kind] !== wanted) return click(wanted);
        }
        return click(SHOP_LABELS.buyNow);
      }
      case 'results':
        return expertOnResults(s, page);
    }
  }

  /** The current observation (for inspection; does not count as a step). */
  observation(): Observation {
    return this.observe(this.active('observation'));
  }

  private active(what: string): EpisodeState {
    if (!this.state) throw new EnvironmentStateError(`shop: ${what}() called before reset()`);
    if (this.state.done) throw new EnvironmentStateError(`shop: ${what}() called after the episode ended; call reset() first`);
    return this.state;
  }

  private apply(s: EpisodeState, action: string): Outcome {
    const m = ACTION_RE.exec(action);
    if (!m) return { valid: false, message: `${JSON.stringify(action)} is not of the form search[query] or click[label].` };
    const verb = (m[1] ?? '').toLowerCase();
    const arg = (m[2] ?? '').trim();
    const page = s.page;
    if (verb === 'search') {
      if (page.kind !== 'search') return { valid: false, message: 'search is only possible on the search page; go back to it first.' };
      if (arg === '') return { valid: false, message: 'the search query is empty.' };
      s.page = { kind: 'results', query: arg, results: searchProducts(s.catalogue, arg, SEARCH_RESULT_LIMIT), page: 0 };
      return { valid: true };
    }
    const label = arg.toLowerCase();
    const unknown: Outcome = { valid: false, message: `there is no ${JSON.stringify(arg)} to click on the ${pageName(page)} page.` };
    switch (page.kind) {
      case 'search':
        return unknown;
      case 'results': {
        const shown = pageProducts(page);
        const product = shown.find((p) => p.id.toLowerCase() === label);
        if (product) s.page = { kind: 'item', product, from: page, selected: {} };
        else if (label === SHOP_LABELS.next && hasNext(page)) s.page = { ...page, page: page.page + 1 };
        else if (label === SHOP_LABELS.prev && page.page > 0) s.page = { ...page, page: page.page - 1 };
        else if (label === SHOP_LABELS.backToSearch) s.page = { kind: 'search' };
        else return unknown;
        return { valid: true };
      }
      case 'item': {
        for (const kind of OPTION_KINDS) {
          const value = page.product.options[kind]?.find((v) => v.toLowerCase() === label);
          if (value !== undefined) {
            s.page = { ...page, selected: { ...page.selected, [kind]: value } };
            return { valid: true };
          }
        }
        if (label === SHOP_LABELS.buyNow) return { valid: true, bought: { product: page.product, selected: page.selected } };
        if (label === SHOP_LABELS.description || label === SHOP_LABELS.features) s.page = { kind: 'detail', section: label, item: page };
        else if (label === SHOP_LABELS.prev) s.page = page.from;
        else if (label === SHOP_LABELS.backToSearch) s.page = { kind: 'search' };
        else return unknown;
        return { valid: true };
      }
      case 'detail':
        if (label !== SHOP_LABELS.prev) return unknown;
        s.page = page.item;
        return { valid: true };
    }
  }

  /** Renders the current page; `ended` replaces the action list once the episode is over. */
  private observe(s: EpisodeState, notice?: string, ended?: string): Observation {
    const lines = [instructionLine(s)];
    if (notice) lines.push(notice);
    const page = s.page;
    switch (page.kind) {
      case 'search':
        // The suggested queries are the listed actions; any other search[query] works too.
        lines.push('Page: search', '[search box] type search[your query]');
        break;
      case 'results': {
        const total = page.results.length;
        if (total === 0) {
          lines.push(`Page: results for ${JSON.stringify(page.query)}`, 'No products match this query.');
        } else {
          const pages = Math.ceil(total / RESULTS_PER_PAGE);
          lines.push(`Page: results for ${JSON.stringify(page.query)} (page ${page.page + 1} of ${pages}, ${total} products)`);
          for (const p of pageProducts(page)) lines.push(`[${p.id}] ${p.title} | $${p.price.toFixed(2)}`);
        }
        break;
      }
      case 'item': {
        const p = page.product;
        lines.push(`Page: item ${p.id}`, p.title, `Price: $${p.price.toFixed(2)}`);
        for (const kind of OPTION_KINDS) {
          const values = p.options[kind];
          if (!values) continue;
          const chosen = page.selected[kind];
          lines.push(`${kind}: ${values.map((v) => `[${v}]`).join(' ')} (selected: ${chosen ?? 'none'})`);
        }
        break;
      }
      case 'detail': {
        const p = page.item.product;
        lines.push(`Page: ${page.section} of ${p.id}`);
        if (page.section === 'description') lines.push(p.description);
        else for (const f of p.features) lines.push(`- ${f}`);
        break;
      }
    }
    const actions = ended === undefined ? admissibleActions(s) : [];
    lines.push(ended ?? `Actions: ${actions.join(' ')}`);
    return { text: lines.join('\n'), actions };
  }
}

function click(label: string): string {
  return `click[${label}]`;
}

function instructionLine(s: EpisodeState): string {
  return `Instruction: ${s.task.instruction}`;
}

function formatReward(r: number): string {
  return Number.isInteger(r) ? String(r) : r.toFixed(3);
}

function pageName(page: Page): string {
  return page.kind === 'detail' ? page.section : page.kind;
}

function pageProducts(page: ResultsPage): readonly Product[] {
  return page.results.slice(page.page * RESULTS_PER_PAGE, (page.page + 1) * RESULTS_PER_PAGE);
}

function hasNext(page: ResultsPage): boolean {
  return (page.page + 1) * RESULTS_PER_PAGE < page.results.length;
}

function admissibleActions(s: EpisodeState): string[] {
  const page = s.page;
  switch (page.kind) {
    case 'search':
      return s.suggestions.map((q) => `search[${q}]`);
    case 'results':
      return [
        ...pageProducts(page).map((p) => click(p.id)),
        ...(hasNext(page) ? [click(SHOP_LABELS.next)] : []),
        ...(page.page > 0 ? [click(SHOP_LABELS.prev)] : []),
        click(SHOP_LABELS.backToSearch),
      ];
    case 'item':
      return [
        ...OPTION_KINDS.flatMap((kind) => (page.product.options[kind] ?? []).map(click)),
        click(SHOP_LABELS.description),
        click(SHOP_LABELS.features),
        click(SHOP_LABELS.prev),
        click(SHOP_LABELS.backToSearch),
        click(SHOP_LABELS.buyNow),
      ];
    case 'detail':
      return [click(SHOP_LABELS.prev)];
  }
}

/** The suggestion whose results show a goal-satisfying product on the earliest page. */
function planSearch(catalogue: Catalogue, goal: ShopGoal, suggestions: readonly string[]): { query: string; page: number } {
  let best = { query: suggestions[0] ?? 'products', page: Number.POSITIVE_INFINITY };
  for (const query of suggestions) {
    const index = searchProducts(catalogue, query, SEARCH_RESULT_LIMIT).findIndex((p) => satisfiesGoal(p, goal));
    if (index < 0) continue;
    const page = Math.floor(index / RESULTS_PER_PAGE);
    if (page < best.page) best = { query, page };
  }
  return best;
}

/** On a results page: click a satisfying product if shown, else take the cheapest route to one. */
function expertOnResults(s: EpisodeState, page: ResultsPage): string {
  const shown = pageProducts(page).find((p) => satisfiesGoal(p, s.goal));
  if (shown) return click(shown.id);
  const first = page.page * RESULTS_PER_PAGE;
  let ahead = Number.POSITIVE_INFINITY;
  let behind = Number.POSITIVE_INFINITY;
  page.results.forEach((p, i) => {
    if (!satisfiesGoal(p, s.goal)) return;
    const target = Math.floor(i / RESULTS_PER_PAGE);
    if (i >= first + RESULTS_PER_PAGE) ahead = Math.min(ahead, target - page.page);
    else if (i < first) behind = Math.min(behind, page.page - target);
  });
  // Starting over costs "back to search" + the search + the plan's page turns.
  const restart = 2 + s.plan.page;
  if (ahead <= behind && ahead <= restart && Number.isFinite(ahead)) return click(SHOP_LABELS.next);
  if (behind <= restart && Number.isFinite(behind)) return click(SHOP_LABELS.prev);
  return click(SHOP_LABELS.backToSearch);
}
