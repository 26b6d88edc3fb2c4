/**
 * Scripted reference policies: the "reference" row of the experiment table. They act only on
 * what an agent sees (the instruction, the current observation with its admissible actions, and
 * the episode's own earlier actions) and never on a task's goal, so they show what a simple
 * hand-written rule reaches without learning. They keep no state between calls (one actor serves
 * many parallel episodes). The household one is the environment's demonstrator
 * (`src/envs/household/explorer.ts`, which reads no goal either); shop's demonstrator is a
 * different, more careful rule (`src/envs/shop/demonstrator.ts`), so this row stays the simple
 * one described here.
 *
 * - `shop`: search with the suggested query that shares the most words with the instruction (the
 *   first suggestion; an unused one after an empty result), click the first product, click for
 *   each option group the option named in the instruction (whole words, numbers included; the
 *   longest such label), then buy.
 * - `household`: the environment's systematic explorer (`householdExplorerAction`; what it does is
 *   in its module's comment).
 */
import type { EnvName } from '../core/types.ts';
import { householdExplorerAction } from '../envs/household/explorer.ts';
import type { EvalActor, EvalContext } from './evaluate.ts';

export { parseHouseholdInstruction } from '../envs/household/explorer.ts';

/** The household reference policy's action for one context: the household explorer's (see the module comment). */
const householdReferenceAction: (ctx: EvalContext) => string = householdExplorerAction;

// ---------------------------------------------------------------------------------------------
// shop

const SHOP_FIXED_LABELS = new Set(['next >', '< prev', 'back to search', 'description', 'features', 'buy now']);

function clickLabel(action: string): string | null {
  const m = /^click\[([\s\S]*)\]$/.exec(action);
  return m ? (m[1] as string) : null;
}

function words(text: string): Set<string> {
  return new Set(text.toLowerCase().match(/[a-z0-9]+(?:\.[0-9]+)?/g) ?? []);
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/**
 * Whether `label` occurs in `text` as whole words: not inside a longer word or number ("8" is
 * not in "8.5" or "18", "large" is not in "x-large").
 */
export function containsWholeWords(text: string, label: string): boolean {
  const l = label.trim().toLowerCase();
  if (l === '') return false;
  const re = new RegExp(`(?<![a-z0-9-]|[0-9]\\.)${escapeRegExp(l)}(?![a-z0-9-]|\\.[0-9])`);
  return re.test(text.toLowerCase());
}

function shopPage(text: string): string {
  const m = /^Page: (.+)$/m.exec(text);
  const page = m ? (m[1] as string) : '';
  if (page.startsWith('search')) return 'search';
  if (page.startsWith('results')) return 'results';
  if (page.startsWith('item')) return 'item';
  if (page.startsWith('description of') || page.startsWith('features of')) return 'detail';
  return 'other';
}

/** The shop reference policy's action for one context (see the module comment). */
export function shopReferenceAction(ctx: EvalContext): string {
  const { instruction, observation, history } = ctx;
  const actions = observation.actions;
  if (actions.length === 0) return 'click[back to search]';
  const has = (a: string): boolean => actions.includes(a);
  const page = shopPage(observation.text);

  const searches = actions.filter((a) => /^search\[[\s\S]*\]$/.test(a));
  if (page === 'search' || (page === 'other' && searches.length > 0)) {
    if (searches.length === 0) return `search[${instruction.replace(/,? ?price lower than .*$/, '')}]`;
    const used = new Set(history.map((h) => h.action));
    const want = words(instruction);
    let best = searches[0] as string;
    let bestScore = Number.NEGATIVE_INFINITY;
    for (const a of searches) {
      const q = words(a.slice('search['.length, -1));
      let score = 0;
      for (const w of q) if (want.has(w)) score++;
      // A query already tried (and so led back here) comes after every untried one.
      if (used.has(a)) score -= 1000;
      if (score > bestScore) [best, bestScore] = [a, score];
    }
    return best;
  }

  if (page === 'results') {
    const product = actions.find((a) => {
      const label = clickLabel(a);
      return label !== null && !SHOP_FIXED_LABELS.has(label.toLowerCase());
    });
    if (product !== undefined) return product;
    return has('click[back to search]') ? 'click[back to search]' : (actions[0] as string);
  }

  if (page === 'item') {
    for (const line of observation.text.split('\n')) {
      const m = /^[a-z][a-z ]*: ((?:\[[^\]]*\] ?)+) \(selected: (.*)\)$/.exec(line.trim());
      if (!m) continue;
      const labels = [...(m[1] as string).matchAll(/\[([^\]]*)\]/g)].map((x) => x[1] as string);
      const selected = m[2] as string;
      let wanted: string | undefined;
      for (const label of labels) {
        if (containsWholeWords(instruction, label) && (wanted === undefined || label.length > wanted.length)) wanted = label;
      }
      if (wanted !== undefined && selected !== wanted && has(`click[${wanted}]`)) return `click[${wanted}]`;
    }
    if (has('click[buy now]')) return 'click[buy now]';
  }

  if (page === 'detail' && has('click[< prev]')) return 'click[< prev]';
  return actions[0] as string;
}

// ---------------------------------------------------------------------------------------------

function actorOf(act: (ctx: EvalContext) => string): EvalActor {
  return { choose: async (contexts) => contexts.map(act) };
}

/** The shop reference policy as an {@link EvalActor}. */
export const shopReference: EvalActor = actorOf(shopReferenceAction);
/** The household reference policy as an {@link EvalActor}. */
export const householdReference: EvalActor = actorOf(householdReferenceAction);

const REFERENCES: Readonly<Record<EnvName, EvalActor>> = { shop: shopReference, household: householdReference };

/** Whether `env` has a scripted reference policy (the built-in environments do). */
export function hasReferencePolicy(env: string): boolean {
  return Object.hasOwn(REFERENCES, env);
}

/** The scripted reference policy of environment `env`; a RangeError naming the known ones otherwise. */
export function referencePolicy(env: string): EvalActor {
  const actor = (REFERENCES as Record<string, EvalActor | undefined>)[env];
  if (actor === undefined || !Object.hasOwn(REFERENCES, env)) {
    throw new RangeError(`No reference policy for environment ${JSON.stringify(env)}: use one of ${Object.keys(REFERENCES).join(', ')}`);
  }
  return actor;
}
