/**
 * Learning checks on a contextual bandit built from `shop` expert episodes: each state's
 * admissible actions are the arms and the expert's action pays 1. GRPO must lift greedy accuracy
 * from chance to >= 95% within a fixed budget; behaviour cloning on offline expert data must
 * reach >= 95%. Fixed seeds, wasm backend, no timing thresholds.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { generateOfflineData } from '../src/envs/offline.ts';
import { getEnvSpec } from '../src/envs/registry.ts';
import { chooseBackend } from '../src/policy/backend.ts';
import { Featurizer, type StateContext } from '../src/policy/features.ts';
import { HashedEmbedder } from '../src/policy/hashed-embedder.ts';
import { expertStates, greedyAccuracy, sftExamples, trainBanditGrpo } from '../src/rl/bandit.ts';
import { Trainer } from '../src/rl/trainer.ts';

const DIM = 256;

beforeAll(async () => {
  await chooseBackend({ prefer: 'wasm' });
});

describe('GRPO on a shop contextual bandit', () => {
  it('lifts greedy accuracy from chance to >= 95% within 200 updates', async () => {
    const states = expertStates(getEnvSpec('shop'), { tasks: 200, seed: 7, maxStates: 300 });
    expect(states).toHaveLength(300);
    const chance = states.reduce((a, s) => a + 1 / s.context.observation.actions.length, 0) / states.length;
    // The algorithm's test: the plain text layout, where each state's expert choice (often a product id) can be learned.
    const featurizer = new Featurizer(new HashedEmbedder({ dim: DIM }), { mode: 'text' });
    const decisions = await featurizer.decisions(states.map((s) => s.context));
    const trainer = new Trainer({
      policy: { stateDim: featurizer.stateDim, actionDim: featurizer.actionDim, hiddenDim: 32, seed: 1 },
      optimizer: { learningRate: 1e-2, epsilon: 1e-8 },
      grpo: { beta: 0, entropyCoef: 0.3 },
      epochs: 4,
      minibatchSize: 1024,
      seed: 1,
    });
    const result = await trainBanditGrpo(
      trainer,
      decisions,
      states.map((s) => s.expert),
      { iterations: 200, statesPerIteration: 32, groupSize: 8, seed: 3, evalEvery: 10, targetAccuracy: 0.95 },
    );
    console.info(
      `[bandit] GRPO: chance ${chance.toFixed(3)}, greedy accuracy ${result.initialAccuracy.toFixed(3)} -> ${result.finalAccuracy.toFixed(3)} ` +
        `in ${result.iterations} updates; curve ${result.curve.map((c) => `${c.iteration}:${c.accuracy.toFixed(2)}`).join(' ')}`,
    );
    trainer.dispose();
    expect(result.initialAccuracy).toBeLessThan(chance + 0.1);
    expect(result.finalAccuracy).toBeGreaterThanOrEqual(0.95);
  });
});

describe('behaviour cloning on offline shop data', () => {
  it('reaches >= 95% accuracy on the expert actions within 30 epochs', async () => {
    const spec = getEnvSpec('shop');
    const contexts: StateContext[] = [];
    const expert: number[] = [];
    for (const { task, trajectory } of generateOfflineData(spec, { episodes: 70, seed: 11, policy: 'expert', split: 'train' })) {
      const history: { action: string }[] = [];
      for (const step of trajectory.steps) {
        contexts.push({ instruction: task.instruction, history: [...history], observation: step.observation });
        expert.push(step.observation.actions.indexOf(step.action));
        history.push({ action: step.action });
      }
    }
    expect(expert.every((e) => e >= 0)).toBe(true);
    // The algorithm's test: the plain text layout, where each state's expert choice (often a product id) can be learned.
    const featurizer = new Featurizer(new HashedEmbedder({ dim: DIM }), { mode: 'text' });
    const decisions = await featurizer.decisions(contexts);
    const trainer = new Trainer({
      policy: { stateDim: featurizer.stateDim, actionDim: featurizer.actionDim, hiddenDim: 32, seed: 2 },
      optimizer: { learningRate: 1e-2, epsilon: 1e-8 },
      minibatchSize: 64,
      seed: 2,
    });
    const initial = await greedyAccuracy(trainer, decisions, expert);
    const examples = sftExamples(decisions, expert);
    let accuracy = initial;
    let epochs = 0;
    while (epochs < 30 && accuracy < 0.95) {
      await trainer.sftUpdate(examples);
      epochs++;
      if (epochs % 2 === 0) accuracy = await greedyAccuracy(trainer, decisions, expert);
    }
    console.info(`[bandit] BC: ${decisions.length} offline expert decisions, accuracy ${initial.toFixed(3)} -> ${accuracy.toFixed(3)} in ${epochs} epochs`);
    trainer.dispose();
    expect(accuracy).toBeGreaterThanOrEqual(0.95);
  });
});
