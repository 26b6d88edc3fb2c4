/**
 * How likely an item's page is to offer the choices the instruction names, learned from the data.
 *
 * A listed item no stored episode opened gets a stand-in page: the most similar opened item's
 * (see `RetrievalExperienceModel`). What that page offers (a product's colours and sizes) is the
 * stand-in's, drawn for another product, so it offered the colour or size asked for at about the
 * rate any product does, while the listing that names most of the instruction is often the very
 * product asked for. On shop seed 0's run data (150 pool tasks without a recorded episode), the
 * goal-blind demonstrator went back from a product lacking a named option 133 times inside the
 * simulator against 39 in the real shop, and succeeded on 85% of them against 95%.
 *
 * The rule, read off the data's episodes: every list a successful episode saw held the item it
 * bought (all 724 successful shop demonstrations of seed 0 that named an option), so each list
 * holds one item asked for. A task whose recorded episode succeeded asked for the item it
 * bought; otherwise the item asked for is drawn once per task and list among the listed items that may be it (never opened, or opened with a
 * page that offers the named choices), weighted by how often the data's lists held the item
 * asked for at that place (how many listed items name more of the instruction, and how many
 * naming as much come before it). The item asked for offers the named choices; any other offers
 * them at the rate the data's pages of items not asked for did, drawn once per task and item (the
 * same item shows the same page on every rollout of a task). With it, and the listing ranking that
 * reads opened items' choices (./listings.ts): 53 times back, 91% success (real 39, 95%). It reads
 * only the instruction (agent-visible), the list the agent sees and the data's pages; nothing
 * here knows an environment.
 *
 * What it does not fix: the simulator still cannot tell the product asked for from another that
 * looks as right, whose hidden attributes decide the real reward (see BENCHMARKS.md, "training").
 */
import type { Observation } from '../core/types.ts';
import { hashUnit } from '../core/rng.ts';
import { tokenize } from '../policy/hashed-embedder.ts';
import { instructionWords, namedChoices, stem, unofferedChoices, withoutInstruction } from './evidence.ts';
import { listedItem, listedLines } from './listings.ts';
import { actionTemplate } from './substitution.ts';

/** Places in a list are told apart up to this many items naming more, and as much before. */
const PLACE_CAP = 2;
/** Listings a place needs in the data to speak for itself; fewer fall back to all places. */
const MIN_PLACE_LISTINGS = 10;

/** The option values the data's lists offered (`known`), and those an instruction naming them always asks for (`reliable`). */
export interface ChoiceValues {
  known: ReadonlySet<string>;
  reliable: ReadonlySet<string>;
}

/** One recorded episode, as much of it as the rule reads. */
export interface OfferEpisode {
  taskId: string;
  instruction: string;
  steps: readonly { state: Observation; action: string; next: Observation | null }[];
  success: boolean;
}

/** The share of `instruction`'s content words that `text` names. */
export function lineMatch(instruction: string, text: string): number {
  const words = instructionWords(instruction);
  if (words.size === 0) return 0;
  const named = new Set(tokenize(text).map(stem));
  let hits = 0;
  for (const w of words) if (named.has(w)) hits++;
  return hits / words.size;
}

/**
 * Where a list places each of its items (`lines`, in page order), as keys: how many listed items
 * name more of the instruction, and how many naming as much come before it (each capped at
 * {@link PLACE_CAP}).
 */
export function listPlaces(instruction: string, lines: readonly { description: string }[]): string[] {
  const match = lines.map((l) => lineMatch(instruction, l.description));
  return match.map((mine, at) => {
    const more = match.filter((m) => m > mine).length;
    const before = match.slice(0, at).filter((m) => m === mine).length;
    return `${Math.min(more, PLACE_CAP)}:${Math.min(before, PLACE_CAP)}`;
  });
}

/** An opened item's page, and the instruction of the episode that opened it. */
interface RecordedPage {
  page: Observation;
  instruction: string;
}

interface Count {
  listings: number;
  asked: number;
}

/** What {@link ItemOffers.learn} learned. */
export class ItemOffers {
  private constructor(
    private readonly values: ChoiceValues,
    /** Per list place: listings in successful episodes' lists, and how many were the item opened last. */
    private readonly places: ReadonlyMap<string, Count>,
    private readonly all: Count,
    /** Share of known pages of items not asked for that offered the named choices. */
    readonly base: number,
    /** Each opened item's page (the first the data shows), by the action that opened it. */
    private readonly pages: ReadonlyMap<string, RecordedPage>,
    /** Per task id: the action that opened the item its successful recorded episode bought. */
    private readonly bought: ReadonlyMap<string, string>,
    /** The template of the actions that open listed items (`click[{}]`). */
    private readonly opener: string,
  ) {}

  /**
   * Learns from the data's episodes; null when no successful episode's instruction names a
   * choice or lists items (household's do neither).
   */
  static learn(episodes: readonly OfferEpisode[], values: ChoiceValues): ItemOffers | null {
    const pages = new Map<string, RecordedPage>();
    for (const e of episodes) for (const s of e.steps) if (s.next && !pages.has(s.action) && listedItem(s.state.text, s.action) !== undefined) pages.set(s.action, { page: s.next, instruction: e.instruction });
    const places = new Map<string, Count>();
    const all: Count = { listings: 0, asked: 0 };
    const others = { pages: 0, offered: 0 };
    const bought = new Map<string, string>();
    const templates = new Map<string, number>();
    for (const action of pages.keys()) templates.set(actionTemplate(action).template, (templates.get(actionTemplate(action).template) ?? 0) + 1);
    const opener = [...templates].sort((a, b) => b[1] - a[1])[0]?.[0];
    if (opener === undefined) return null;
    const probe = new ItemOffers(values, places, all, 0, pages, bought, opener);
    for (const e of episodes) {
      if (!e.success) continue;
      const opened = e.steps.filter((s) => s.next && listedItem(s.state.text, s.action) !== undefined);
      const asked = opened[opened.length - 1]?.action;
      if (asked === undefined) continue;
      if (!bought.has(e.taskId)) bought.set(e.taskId, asked);
      if (!probe.namesChoice(e.instruction)) continue;
      // Each list once per episode: a list returned to holds the same items at the same places.
      const lists = new Set<string>();
      for (const s of e.steps) {
        const lines = listedLines(s.state.text);
        const key = lines.map((l) => l.id).join('\u0001');
        if (lines.length === 0 || lists.has(key)) continue;
        lists.add(key);
        const placed = listPlaces(e.instruction, lines);
        for (const [i, { id }] of lines.entries()) {
          const opens = openerOf(opener, id);
          const place = placed[i] as string;
          const c = places.get(place) ?? (places.set(place, { listings: 0, asked: 0 }).get(place) as Count);
          const isAsked = opens === asked;
          for (const x of [c, all]) {
            x.listings++;
            if (isAsked) x.asked++;
          }
          const page = pages.get(opens);
          if (!isAsked && page) {
            others.pages++;
            if (probe.offersNamed(e.instruction, page.page, page.instruction)) others.offered++;
          }
        }
      }
    }
    if (all.listings === 0) return null;
    return new ItemOffers(values, places, all, (others.offered + 1) / (others.pages + 2), pages, bought, opener);
  }

  /**
   * Whether `page` offers every choice `instruction` names (counting only reliable values);
   * undefined when it names none. `pageInstruction` is the instruction the page was recorded
   * under, whose restating lines are not the page's: another task's page restates its own
   * instruction, and "size m" there is no size m offered here.
   */
  offersNamed(instruction: string, page: Observation, pageInstruction = instruction): boolean | undefined {
    if (!this.namesChoice(instruction)) return undefined;
    return unofferedChoices(instruction, withoutInstruction(page.text, pageInstruction), page.actions, this.values.known, this.values.reliable) === 0;
  }

  /** Whether `instruction` names a choice the data's lists always offered when asked for. */
  private namesChoice(instruction: string): boolean {
    return namedChoices(instruction, this.values.known).some((v) => this.values.reliable.has(v));
  }

  /** The share of listings at `place` (see {@link listPlaces}) that were the item asked for. */
  askedShare(place: string): number {
    const here = this.places.get(place);
    const c = here && here.listings >= MIN_PLACE_LISTINGS ? here : this.all;
    return c.asked / c.listings;
  }

  /**
   * The action opening the item asked for, in task `taskId` (generated from `rootId`, if any) at
   * the list `state`. A task whose recorded episode succeeded asked for the item it bought. Else,
   * as every list a successful episode saw held the item it bought, each list holds one: drawn
   * once per task and list among the items that may be it (never opened, or opened with a page
   * that offers the choices the instruction names), weighted by {@link askedShare} at their
   * places. Undefined when the list lists nothing or no item may be it.
   */
  askedFor(taskId: string, rootId: string | undefined, instruction: string, state: string): string | undefined {
    const recorded = this.bought.get(taskId) ?? (rootId === undefined ? undefined : this.bought.get(rootId));
    if (recorded !== undefined) return recorded;
    const lines = listedLines(state);
    const named = this.namesChoice(instruction);
    const placed = listPlaces(instruction, lines);
    const candidates = lines.flatMap((l, i) => {
      const page = this.pages.get(openerOf(this.opener, l.id));
      const may = !named || page === undefined || this.offersNamed(instruction, page.page, page.instruction) === true;
      return may ? [{ id: l.id, weight: this.askedShare(placed[i] as string) }] : [];
    });
    const total = candidates.reduce((a, c) => a + c.weight, 0);
    if (total <= 0) return undefined;
    let u = hashUnit(`${taskId}\u0000${lines.map((l) => l.id).join('\u0001')}`) * total;
    const asked = candidates.find((c) => (u -= c.weight) < 0) ?? candidates[candidates.length - 1];
    return asked === undefined ? undefined : openerOf(this.opener, asked.id);
  }

  /**
   * Whether a stand-in page for the item `action` opens from `state` (a list) offers the named
   * choices: the item asked for ({@link askedFor}) does; any other with probability {@link base},
   * drawn once per task and item. Undefined when the instruction names no choice or `state` does
   * not list the item.
   */
  standInOffers(taskId: string, rootId: string | undefined, instruction: string, state: string, action: string): boolean | undefined {
    if (!this.namesChoice(instruction)) return undefined;
    if (listedItem(state, action) === undefined) return undefined;
    if (this.askedFor(taskId, rootId, instruction, state) === action) return true;
    return hashUnit(`${taskId}\u0000${action}`) < this.base;
  }
}

/** The action that opens item `id`, by the template of the actions that open items. */
const openerOf = (template: string, id: string): string => template.replace('{}', id);
