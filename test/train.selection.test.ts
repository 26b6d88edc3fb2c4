import { describe, expect, it } from 'vitest';
import type { Observation, Task, Trajectory } from '../src/core/types.ts';
import type { EvalActor, EvalContext } from '../src/train/evaluate.ts';
import type { ExperienceModel, ExperienceStepRequest } from '../src/experience/types.ts';
import { evaluateSynthetic } from '../src/train/seed-data.ts';
import { recordedAgreement, recordedEpisodes, SelectionError, selectionScore, spearman, type SelectionCriterion, type ValidationFigures } from '../src/train/selection.ts';

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
