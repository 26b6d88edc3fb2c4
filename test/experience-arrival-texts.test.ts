import * as tf from '@tensorflow/tfjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Observation } from '../src/core/types.ts';
import { agentView } from '../src/core/types.ts';
import { arrivalShape, learnArrivalTexts, splitFirstLine, withArrivalText, type ArrivalExample } from '../src/experience/retrieval/arrival-texts.ts';
import { RetrievalExperienceModel } from '../src/experience/retrieval/model.ts';
import { actionTemplate } from '../src/experience/retrieval/substitution.ts';
import type { HistoryStep } from '../src/experience/types.ts';
import { getEnvSpec } from '../src/envs/registry.ts';
import { HashedEmbedder } from '../src/policy/hashed-embedder.ts';
import { mixedOfflineData } from '../src/train/fidelity.ts';

/** Real arrivals (moves that went on) of offline household episodes. */
function arrivals(episodes: number, seed: number, split: 'train' | 'test'): ArrivalExample[] {
  return mixedOfflineData(getEnvSpec('household'), 'noisy:0.3,noisy:1', episodes, seed, split).flatMap(({ task, trajectory }) =>
    trajectory.steps.flatMap((s, i) => {
      const next = trajectory.steps[i + 1]?.observation;
      return next && s.valid && actionTemplate(s.action).template === 'go to {}' ? [{ instruction: task.instruction, action: s.action, next }] : [];
    }),
  );
}

const train = arrivals(200, 0, 'train');
const held = arrivals(60, 1, 'test');
const texts = learnArrivalTexts('go to {}', train);

const WRONG_FIRST_LINE = 'You pick up the thing 9 from the nowhere 9.';
/** `state` with its first line (after the instruction's) replaced. */
function withFirstLine(state: Observation, instruction: string, line: string): Observation {
  const first = splitFirstLine(state.text, instruction)?.firstLine as string;
  return { text: state.text.replace(first, line), actions: state.actions };
}

describe('arrivalShape', () => {
  it('numbers entities by first appearance, whole words only, the longest first', () => {
    expect(arrivalShape('Location: cabinet 1 (open); you see cup 1, cabinet 10. Holding: cup 1.', ['cabinet 1', 'cup 1', 'cabinet 10'])).toEqual({
      shape: 'Location: \u00000\u0000 (open); you see \u00001\u0000, \u00002\u0000. Holding: \u00001\u0000.',
      order: ['cabinet 1', 'cup 1', 'cabinet 10'],
    });
  });
});

describe('learnArrivalTexts', () => {
  it('learns the first line of a held-out arrival from the rest of its state', () => {
    expect(texts).not.toBeNull();
    expect(held.length).toBeGreaterThan(500);
    let restored = 0;
    let unknown = 0;
    for (const a of held) {
      const got = withArrivalText(texts, a.instruction, a.action, withFirstLine(a.next, a.instruction, WRONG_FIRST_LINE));
      if (got.text === a.next.text) restored++;
      else if (got.text.includes(WRONG_FIRST_LINE)) unknown++;
      // Never a wrong arrival text: either the real one or, where no shape fits, the state as it was.
      else expect(got.text).toBe(a.next.text);
      expect(got.actions).toBe(a.next.actions);
    }
    expect(restored / held.length).toBeGreaterThan(0.97);
    expect(unknown / held.length).toBeLessThan(0.03);
  });

  it('fits articles and places to the state (a worked case), and leaves other moves and actions alone', () => {
    const instruction = 'put a cool pot in stoveburner.';
    const state: Observation = {
      text: `Your task is to: ${instruction}\nYou pick up the pot 1 from the stoveburner 2.\nLocation: stoveburner 2; you see apple 3, egg 1. Holding: pot 1 (cool).`,
      actions: ['go to fridge 1', 'examine stoveburner 2', 'examine pot 1', 'put pot 1 in/on stoveburner 2'],
    };
    const got = withArrivalText(texts, instruction, 'go to stoveburner 2', state);
    expect(got.text.split('\n')[1]).toBe('You arrive at stoveburner 2. On the stoveburner 2, you see an apple 3, and an egg 1.');
    expect(got.text.split('\n')[2]).toBe(state.text.split('\n')[2]);
    expect(withArrivalText(texts, instruction, 'examine stoveburner 2', state)).toBe(state);
    expect(withArrivalText(null, instruction, 'go to stoveburner 2', state)).toBe(state);
  });

  it('learns nothing from data without arrivals of the move', () => {
    expect(learnArrivalTexts('walk to {}', train)).toBeNull();
  });
});

describe('the retrieval model coming back to a place', () => {
  const data = mixedOfflineData(getEnvSpec('household'), 'noisy:0.3,noisy:1', 200, 0, 'train');
  let model: RetrievalExperienceModel;
  let before = 0;
  beforeAll(async () => {
    before = tf.memory().numTensors;
    model = await RetrievalExperienceModel.fromTrajectories(
      data.map((d) => d.task),
      data.map((d) => d.trajectory),
      new HashedEmbedder({ dim: 128 }),
      { rewardModel: { epochs: 5 } },
    );
  });
  afterAll(() => {
    model.dispose();
    expect(tf.memory().numTensors).toBe(before);
  });

  /** Teacher-forced held-out revisits (a move taken before in the episode): the step, the prediction, the real next state, and whether a later action of that stay named the place. */
  async function revisits(): Promise<{ action: string; predicted: Observation; real: Observation; changed: boolean }[]> {
    const out: { action: string; predicted: Observation; real: Observation; changed: boolean }[] = [];
    for (const { task, trajectory } of mixedOfflineData(getEnvSpec('household'), 'noisy:0.3,noisy:1', 60, 1, 'test')) {
      const view = agentView(task);
      const history: HistoryStep[] = [];
      for (const [i, step] of trajectory.steps.entries()) {
        const next = trajectory.steps[i + 1]?.observation;
        const earlier = history.map((h) => h.action).lastIndexOf(step.action);
        if (next && step.valid && earlier >= 0 && actionTemplate(step.action).template === 'go to {}') {
          const place = actionTemplate(step.action).entities[0] as string;
          const changed = history.slice(earlier + 1).some((h) => actionTemplate(h.action).entities.includes(place));
          const pred = await model.step({ task: view, history: history.slice(), observation: step.observation, action: step.action, demos: [] });
          out.push({ action: step.action, predicted: pred.observation, real: next, changed });
        }
        history.push({ observation: step.observation, action: step.action });
      }
    }
    return out;
  }

  it('says what is there, as the real environment does, where the agent had changed it', async () => {
    const changed = (await revisits()).filter((r) => r.changed);
    expect(changed.length).toBeGreaterThan(30);
    const right = changed.filter((r) => r.predicted.text.split('\n')[1] === r.real.text.split('\n')[1]).length;
    // Before this rule: the last action's line ("You pick up the pot 1 from the stoveburner 2."), 45%.
    expect(right / changed.length).toBeGreaterThan(0.9);
  });

  it('offers to put what the agent holds only where the place, as it was left, takes it', async () => {
    const all = await revisits();
    const puts = all.filter((r) => r.predicted.actions.some((a) => a.startsWith('put ')));
    expect(puts.length).toBeGreaterThan(20);
    // Coming back to a drawer left closed with something in hand, the model offered `put` into it
    // (51 of the 100 held-out episodes' revisits in the fidelity data); the real one never does.
    const wrong = all.filter((r) => r.predicted.actions.some((a) => a.startsWith('put ') && !r.real.actions.includes(a)));
    expect(wrong).toEqual([]);
  });
});
