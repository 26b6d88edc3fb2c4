import { describe, expect, it } from 'vitest';
import { generateOfflineData } from '../src/envs/offline.ts';
import { getEnvSpec } from '../src/envs/registry.ts';
import type { ExperienceModel } from '../src/experience/types.ts';
import { jaccard, measureFidelity, measureRetrievalFidelity } from '../src/train/fidelity.ts';

/** Floors set from measurement (BENCHMARKS.md, "fidelity"), about 75% of the measured figures at this size. */
const FLOORS = {
  shop: { actionAgreement: 0.35, rewardAccuracy: 0.85, finalRewardAccuracy: 0.5, doneAccuracy: 0.9, invalidDetection: 0.9 },
  household: { actionAgreement: 0.4, nextStateMatch: 0.08, rewardAccuracy: 0.9, finalRewardAccuracy: 0.7, doneAccuracy: 0.9, invalidDetection: 0.9 },
} as const;

describe('jaccard', () => {
  it('is intersection over union of the two sets', () => {
    expect(jaccard(['a', 'b', 'c'], ['b', 'c', 'd'])).toBe(0.5);
    expect(jaccard([], [])).toBe(1);
    expect(jaccard(['a'], [])).toBe(0);
    expect(jaccard(['a', 'a'], ['a'])).toBe(1);
  });
});

describe('retrieval experience model fidelity (held-out test-split transitions)', () => {
  for (const env of ['shop', 'household'] as const) {
    it(`${env}: figures stay above the measured floors`, async () => {
      const r = await measureRetrievalFidelity(getEnvSpec(env), { trainEpisodes: 120, testEpisodes: 40, seed: 0 });
      expect(r.testTransitions).toBeGreaterThan(100);
      for (const [metric, floor] of Object.entries(FLOORS[env])) {
        expect(r[metric as keyof typeof r], metric).toBeGreaterThanOrEqual(floor);
      }
      expect(r.falseInvalidRate).toBeLessThanOrEqual(0.05);
    });
  }

  it('the measurement tells a bad simulator from a good one', async () => {
    const spec = getEnvSpec('household');
    const held = [...generateOfflineData(spec, { episodes: 10, seed: 1, policy: 'noisy:0.3', split: 'test' })];
    const rejectsEverything: ExperienceModel = {
      kind: 'reject-all',
      reset: async () => ({ text: 'nothing', actions: [] }),
      step: async ({ observation }) => ({ reasoning: '', observation, reward: 0, done: false, valid: false }),
    };
    const r = await measureFidelity(spec, rejectsEverything, held, 0);
    expect(r.invalidDetection).toBe(1);
    expect(r.falseInvalidRate).toBe(1);
    expect(r.nextStateMatch).toBeLessThan(0.1);
    expect(r.finalRewardAccuracy).toBe(0);
    expect(r.initialStateMatch).toBe(0);
  });
});
