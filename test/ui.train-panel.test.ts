import { describe, expect, it } from 'vitest';
import { parseTrainingConfig } from '../src/train/config.ts';
import { initialTrainingState, type TrainingViewState } from '../src/ui/state/training-state.ts';
import { statusText } from '../src/ui/train/TrainPanel.tsx';

const config = parseTrainingConfig({ env: 'household', mode: 'dreamgym', iterations: 45 });
const running: TrainingViewState = {
  ...initialTrainingState(),
  status: 'running',
  runId: 'a',
  record: { id: 'a', createdAt: 1, updatedAt: 1, config, status: 'running', iteration: 10, totalIterations: 45, realTransitions: 0, offlineTransitions: 50, trainWallMs: 0 },
  iteration: 10,
  totalIterations: 45,
  phase: 'synthetic',
};

describe('training panel text', () => {
  it('says when the policy is being validated inside the simulator, and how far', () => {
    expect(statusText(running)).toBe('Training household dreamgym: iteration 11 of 45 (synthetic).');
    expect(statusText({ ...running, validating: { done: 12, total: 50, iteration: 10 } })).toBe(
      'Training household dreamgym: validating the policy inside the simulator after iteration 10 of 45: 12 of 50 tasks.',
    );
  });
});
