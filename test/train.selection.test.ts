import { describe, expect, it } from 'vitest';
import type { Observation, Task, Trajectory } from '../src/core/types.ts';
import type { EvalActor, EvalContext } from '../src/train/evaluate.ts';
import type { ExperienceModel, ExperienceStepRequest } from '../src/experience/types.ts';
import { evaluateSynthetic } from '../src/train/seed-data.ts';
import { RECORDED_DECISIVE_SE, recordedAgreement, recordedEpisodes, replacesKept, SelectionError, selectionScore, spearman, type SelectionCriterion, type ValidationFigures } from '../src/train/selection.ts';

/**
 * A tiny domain of another shape: six items in a list, the task names one to delete. The right
 * episode opens the named item, deletes it and finishes. The shortcut opens the 6th item whatever
 * the task says, deletes it and finishes; a simulator that invents what it has not seen rewards it.
 */
const ITEMS = ['alpha', 'bravo', 'charlie', 'delta', 'echo', 'foxtrot'];
const list: Observation = { text: `items: ${ITEMS.join(', ')}`, actions: [...ITEMS.map((_, i) => `open ${i + 1}`), 'finish'] };
const opened = (i: number): Observation => ({ text: `item ${ITEMS[i - 1]}`, actions: ['delete', 'back'] });
const deleted: Observation = { text: 'deleted', actions: ['finish', 'back'] };

const task = (i: number): Task => ({ id: `t${i}`, env: 'lists', instruction: `delete ${ITEMS[i - 1]}`, goal: { item: i }, split: 'train', origin: 'seed' });
const right = (i: number): Trajectory => ({
  id: `rec-${i}`,
  taskId: `t${i}`,
  env: 'lists',
  source: 'offline',
  steps: [
    { observation: list, action: `open ${i}`, reward: 0, done: false, valid: true },
    { observation: opened(i), action: 'delete', reward: 0, done: false, valid: true },
    { observation: deleted, action: 'finish', reward: 1, done: true, valid: true },
  ],
  reward: 1,
  success: true,
});

/** Reads the item off the instruction: the policy that reproduces the recorded successes. */
const faithful: EvalActor = {
  choose: async (contexts: readonly EvalContext[]) =>
    contexts.map((c) => {
      if (c.history.length === 0) return `open ${ITEMS.indexOf(c.instruction.replace('delete ', '')) + 1}`;
      return c.history.length === 1 ? 'delete' : 'finish';
    }),
};
/** Opens the 6th item whatever the task, deletes, finishes: the shortcut. */
const shortcut: EvalActor = { choose: async (contexts: readonly EvalContext[]) => contexts.map((c) => (c.history.length === 0 ? 'open 6' : c.history.length === 1 ? 'delete' : 'finish')) };

/**
 * The simulator that was not built for this domain: it has seen the 6th item only, so opening it
 * is what it knows and it rewards "finish" after "delete"; opening any other item it guesses
 * wrong half of the time (it shows a neighbour's item, on which "delete" ends in failure).
 */
const inventive: ExperienceModel = {
  kind: 'retrieval',
  reset: async () => list,
  step: async (r: ExperienceStepRequest) => {
    if (r.action.startsWith('open ')) {
      const i = Number(r.action.slice(5));
      const guessedWrong = i !== 6 && Number(r.task.id.slice(1)) % 2 === 0;
      return guessedWrong ? { reasoning: '', observation: { text: 'item ?', actions: [] }, reward: 0, done: true, valid: true } : { reasoning: '', observation: opened(i), reward: 0, done: false, valid: true };
    }
    if (r.action === 'delete') return { reasoning: '', observation: deleted, reward: 0, done: false, valid: true };
    return { reasoning: '', observation: { text: 'done', actions: [] }, reward: r.action === 'finish' ? 1 : 0, done: true, valid: true };
  },
};

describe('selection: the criterion ranks by what held-out recorded successes say, not by what the simulator invents', () => {
  const validating = [1, 2, 3, 4].map(task);
  const starts = new Map(validating.map((t) => [t.id, list]));
  /** Held out: recorded successes on tasks the policy and the simulator never saw. */
  const held = recordedEpisodes([2, 3, 4, 5].map(task), [2, 3, 4, 5].map(right));

  async function figures(actor: EvalActor): Promise<ValidationFigures> {
    const sim = await evaluateSynthetic(actor, inventive, validating, starts, { maxSteps: 4 });
    const rec = await recordedAgreement(actor, held);
    return { success: sim.successRate, replayed: rec.replayed, agreement: rec.agreement, prefix: rec.prefix };
  }

  /** The floor: the policy that reproduces recorded successes ranks above the shortcut. */
  async function floorHolds(criterion: SelectionCriterion): Promise<boolean> {
    const [good, bad] = [await figures(faithful), await figures(shortcut)];
    return selectionScore(good, criterion) > selectionScore(bad, criterion);
  }

  it('scores the two policies as the data says: the shortcut replays no recorded success and wins inside the simulator', async () => {
    const good = await figures(faithful);
    const bad = await figures(shortcut);
    expect(good).toEqual({ success: 0.5, replayed: 1, agreement: 1, prefix: 1 });
    // The shortcut agrees on "delete" and "finish" (2 of 3 steps) given the recorded history, but leaves every recorded route at its first step.
    expect(bad).toEqual({ success: 1, replayed: 0, agreement: 2 / 3, prefix: 0 });
    // Each episode's own figure: the faithful policy follows and agrees on all of each; the shortcut follows none and agrees on 2 of 3 steps.
    expect((await recordedAgreement(faithful, held)).perEpisode).toEqual([1, 1, 1, 1]);
    const shortcutEpisodes = (await recordedAgreement(shortcut, held)).perEpisode;
    expect(shortcutEpisodes).toHaveLength(4);
    for (const x of shortcutEpisodes) expect(x).toBeCloseTo(1 / 3, 12);
  });

  it('the recorded criterion ranks the faithful policy above the shortcut; the simulator criterion fails that floor', async () => {
    expect(await floorHolds('recorded')).toBe(true);
    expect(await floorHolds('simulator')).toBe(false);
  });

  it('scores the mean of how far the policy follows recorded successes and its per-step agreement, and falls back to the simulator without recorded figures', () => {
    expect(selectionScore({ success: 0, replayed: 0.1, prefix: 0.4, agreement: 0.6 }, 'recorded')).toBeCloseTo(0.5, 12);
    // A policy that leaves the recorded routes late keeps its credit even when it replays fewer of them whole.
    expect(selectionScore({ success: 0, replayed: 0.04, prefix: 0.46, agreement: 0.6 }, 'recorded')).toBeGreaterThan(selectionScore({ success: 1, replayed: 0.16, prefix: 0.35, agreement: 0.58 }, 'recorded'));
    // A broken policy that matches the first steps the prior gets right anyway, and little else, does not beat the one it broke.
    expect(selectionScore({ success: 0.8, replayed: 0.05, prefix: 0.34, agreement: 0.49 }, 'recorded')).toBeGreaterThan(selectionScore({ success: 0, replayed: 0, prefix: 0.38, agreement: 0.38 }, 'recorded'));
    expect(selectionScore({ success: 0.7 }, 'recorded')).toBe(0.7);
  });
});

describe('replacesKept: the recorded figure decides only where the held-out episodes tell two policies apart', () => {
  /** Per-episode figures around `mean`: a fixed spread whose paired differences cancel when two share it. */
  const around = (mean: number, spread: number): number[] => Array.from({ length: 40 }, (_, i) => mean + (i % 2 === 0 ? spread : -spread));
  const figures = (success: number, perEpisode: number[]): ValidationFigures => {
    const m = perEpisode.reduce((s, x) => s + x, 0) / perEpisode.length;
    return { success, prefix: m, agreement: m, perEpisode };
  };

  it('a policy decisively better on the recorded successes replaces the kept one, and one decisively worse never does, whatever the simulator says', () => {
    expect(replacesKept(figures(0.5, around(0.7, 0.1)), figures(0.9, around(0.5, 0.1)), 'recorded')).toBe(true);
    // The warm start's failure: the simulator praises a policy that left the demonstrations (100% against 96%).
    expect(replacesKept(figures(1, around(0.5, 0.1)), figures(0.96, around(0.77, 0.1)), 'recorded')).toBe(false);
  });

  it('closer than the paired noise allows, the simulator decides; comparing the means alone (the broken variant) swaps on noise', () => {
    // Candidate 1 point higher on average, but its episodes differ from the kept one's by +-0.3: indistinguishable.
    const kept = around(0.5, 0);
    const noisy = kept.map((x, i) => x + 0.01 + (i % 2 === 0 ? 0.3 : -0.3));
    expect(replacesKept(figures(0.4, noisy), figures(0.6, kept), 'recorded')).toBe(false);
    expect(replacesKept(figures(0.8, noisy), figures(0.6, kept), 'recorded')).toBe(true);
    expect(selectionScore(figures(0.4, noisy), 'recorded') > selectionScore(figures(0.6, kept), 'recorded')).toBe(true);
    // The same 1-point gain on every episode is beyond any noise: decisive.
    expect(replacesKept(figures(0.4, kept.map((x) => x + 0.01)), figures(0.6, kept), 'recorded')).toBe(true);
    // The margin is the documented number of standard errors: a gain just under it is not decisive, just over it is.
    // Paired differences of +-0.3 around their mean: sample deviation 0.3 * sqrt(40 / 39), standard error that over sqrt(40).
    const se = 0.3 / Math.sqrt(39);
    const shifted = (k: number): number[] => noisy.map((x) => x - 0.01 + k * se);
    expect(replacesKept(figures(0.4, shifted(RECORDED_DECISIVE_SE * 0.95)), figures(0.6, kept), 'recorded')).toBe(false);
    expect(replacesKept(figures(0.4, shifted(RECORDED_DECISIVE_SE * 1.05)), figures(0.6, kept), 'recorded')).toBe(true);
  });

  it("where the recorded figure cannot tell them apart, the simulator's success decides only beyond its own noise over the validation episodes", () => {
    const kept = around(0.5, 0);
    const noisy = kept.map((x, i) => x - 0.01 + (i % 2 === 0 ? 0.3 : -0.3));
    // One validation task of 25 more inside the simulator (96% -> 100%): noise; without the count, any gain decides (the broken variant).
    expect(replacesKept(figures(1, noisy), figures(0.96, kept), 'recorded', 25)).toBe(false);
    expect(replacesKept(figures(1, noisy), figures(0.96, kept), 'recorded')).toBe(true);
    // 50% -> 90% of 25 tasks is beyond two standard errors (about 0.24): it decides.
    expect(replacesKept(figures(0.9, noisy), figures(0.5, kept), 'recorded', 25)).toBe(true);
    // Just under and just over the margin over 100 tasks: 2 * sqrt((0.25 + p(1 - p)) / 100) is 0.139 at p = 0.63, 0.138 at 0.66.
    expect(replacesKept(figures(0.63, noisy), figures(0.5, kept), 'recorded', 100)).toBe(false);
    expect(replacesKept(figures(0.66, noisy), figures(0.5, kept), 'recorded', 100)).toBe(true);
    // A decisive recorded figure still decides alone, and the simulator criterion keeps comparing successes plainly.
    expect(replacesKept(figures(0.4, kept.map((x) => x + 0.01)), figures(0.6, kept), 'recorded', 25)).toBe(true);
    expect(replacesKept(figures(0.64, kept), figures(0.6, kept), 'simulator', 25)).toBe(true);
  });

  it('without per-episode figures (or on other episodes) it compares the recorded figures; the simulator criterion compares successes', () => {
    expect(replacesKept({ success: 0, prefix: 0.6, agreement: 0.6 }, { success: 1, prefix: 0.5, agreement: 0.5 }, 'recorded')).toBe(true);
    expect(replacesKept(figures(0, around(0.6, 0)), figures(1, around(0.5, 0).slice(1)), 'recorded')).toBe(true);
    expect(replacesKept(figures(0.6, around(0.1, 0)), figures(0.5, around(0.9, 0)), 'simulator')).toBe(true);
    expect(replacesKept(figures(0.5, around(0.9, 0)), figures(0.5, around(0.1, 0)), 'simulator')).toBe(false);
  });
});

describe('recordedEpisodes and recordedAgreement', () => {
  it('keep real recorded successes only, and refuse to score nothing or an action the state did not offer', async () => {
    const failed = { ...right(2), id: 'f', success: false };
    const simulated = { ...right(3), id: 's', source: 'synthetic' as const };
    const unoffered = { ...right(4), id: 'u', steps: [{ ...right(4).steps[0]!, action: 'open 9' }] };
    const episodes = recordedEpisodes([2, 3, 4, 5].map(task), [failed, simulated, unoffered, right(5)]);
    expect(episodes.map((e) => e.taskId)).toEqual(['t5']);
    await expect(recordedAgreement(faithful, [])).rejects.toThrow(SelectionError);
    const bad = [{ taskId: 'x', instruction: 'delete alpha', steps: [{ observation: list, action: 'open 9' }] }];
    await expect(recordedAgreement(faithful, bad)).rejects.toThrow(/records action "open 9", which its state did not offer/);
  });
});

describe('spearman', () => {
  it('is 1 for the same order, -1 for the reverse, handles ties, and is NaN where a side is constant or too short', () => {
    expect(spearman([1, 2, 3, 4], [10, 20, 30, 40])).toBeCloseTo(1, 12);
    expect(spearman([1, 2, 3, 4], [4, 3, 2, 1])).toBeCloseTo(-1, 12);
    // Ranks with ties at their mean: x ranks 1.5, 1.5, 3, 4; y ranks 1, 2, 3, 4.
    expect(spearman([0, 0, 1, 2], [1, 2, 3, 4])).toBeCloseTo(4.5 / Math.sqrt(4.5 * 5), 12);
    expect(spearman([1, 1, 1], [1, 2, 3])).toBeNaN();
    expect(spearman([1, 2], [1, 2])).toBeNaN();
    expect(() => spearman([1, 2, 3], [1, 2])).toThrow(/3 values against 2/);
    expect(() => spearman([1, Number.NaN, 3], [1, 2, 3])).toThrow(/finite, got NaN/);
  });
});
