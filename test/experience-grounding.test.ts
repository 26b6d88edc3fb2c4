import { describe, expect, it } from 'vitest';
import { calibrateSuccessGate, calibrationFolds, groundedStep, HALT_SHARE, haltPenalty, MIN_SUCCESS_PRECISION, separatingThreshold, SupportCalibrator, type SupportExample, type SupportFeatures } from '../src/experience/retrieval/grounding.ts';

const features = (source: SupportFeatures['source'], similarity: number, agreement: number): SupportFeatures => ({ source, similarity, agreement, actionSeen: true, templateSeen: true });

describe('SupportCalibrator', () => {
  it('learns from held-out steps which evidence predicts right, and calls the rest unknown', () => {
    // Memory is right 9 times in 10, a lone neighbour 1 time in 10.
    const examples: SupportExample[] = [];
    for (let i = 0; i < 100; i++) examples.push({ features: features('memory', 1, 1), right: i % 10 !== 0 });
    for (let i = 0; i < 100; i++) examples.push({ features: features('neighbour', 0.4, 0.2), right: i % 10 === 0 });
    const c = SupportCalibrator.fit(examples);
    expect(c.predict(features('memory', 1, 1))).toBeCloseTo(0.9, 1);
    expect(c.predict(features('neighbour', 0.4, 0.2))).toBeCloseTo(0.1, 1);
    expect(c.threshold).toBeGreaterThan(0.1);
    expect(c.threshold).toBeLessThan(0.9);
    expect(c.examples).toBe(200);
    expect(c.rightShare).toBeCloseTo(0.5, 5);
  });

  it('gives the smoothed base rate and calls nothing unknown when every held-out step was right', () => {
    const c = SupportCalibrator.fit(Array.from({ length: 8 }, () => ({ features: features('neighbour', 0.2, 0.1), right: true })));
    expect(c.predict(features('memory', 1, 1))).toBeCloseTo(0.9, 5);
    expect(c.threshold).toBe(0);
  });

  it('refuses a bad configuration', () => {
    expect(() => SupportCalibrator.fit([], { iterations: 0 })).toThrow(/iterations/);
  });
});

describe('separatingThreshold', () => {
  it('puts the threshold where "known" agrees most with "right"', () => {
    const t = separatingThreshold([
      { p: 0.1, right: false },
      { p: 0.2, right: false },
      { p: 0.3, right: true },
      { p: 0.6, right: true },
      { p: 0.7, right: true },
    ]);
    expect(t).toBeCloseTo(0.25, 5);
    expect(separatingThreshold([{ p: 0.4, right: true }])).toBe(0);
    expect(separatingThreshold([{ p: 0.4, right: false }])).toBeGreaterThan(0.4);
  });
});

describe('calibrateSuccessGate', () => {
  it('measures the precision and recall of granted successes on a hand-made case', () => {
    // Five verdicts of success; three were real; one more real success the verdict missed.
    const verdicts = [
      { similarity: 0.95, real: true },
      { similarity: 0.9, real: true },
      { similarity: 0.85, real: true },
      { similarity: 0.5, real: false },
      { similarity: 0.4, real: false },
    ];
    const gate = calibrateSuccessGate(verdicts, 4);
    // Gating below 0.85 keeps the three real ones and drops both false ones: F1 6/7.
    expect(gate.threshold).toBe(0.85);
    expect(gate.precision).toBe(1);
    expect(gate.recall).toBe(0.75);
    expect(gate.granted).toBe(3);
    expect(gate.successes).toBe(4);
    // Every verdict right: nothing to gate, the threshold stays 0.
    const open = calibrateSuccessGate([{ similarity: 0.3, real: true }, { similarity: 0.6, real: true }], 3);
    expect(open.threshold).toBe(0);
    expect(open.precision).toBe(1);
    expect(open.recall).toBeCloseTo(2 / 3, 10);
    // No threshold reaches the precision floor (success hangs on what the recordings do not show):
    // the gate grants nothing rather than a success that is real two times in three.
    const closed = calibrateSuccessGate([{ similarity: 0.3, real: true }, { similarity: 0.9, real: false }, { similarity: 0.6, real: true }], 2);
    expect(closed.threshold).toBe(Number.POSITIVE_INFINITY);
    expect(closed.granted).toBe(0);
    expect(closed.recall).toBe(0);
    // At the floor a threshold is kept: 9 of 10 real.
    const atFloor = calibrateSuccessGate([...Array.from({ length: 9 }, () => ({ similarity: 0.8, real: true })), { similarity: 0.8, real: false }], 9);
    expect(atFloor.threshold).toBe(0);
    expect(atFloor.precision).toBeCloseTo(MIN_SUCCESS_PRECISION, 10);
    // No verdict at all: nothing to calibrate on.
    expect(calibrateSuccessGate([], 3).threshold).toBe(0);
    expect(() => calibrateSuccessGate([], -1)).toThrow(/-1/);
  });
});

describe('haltPenalty', () => {
  it('costs what an average recorded episode earns', () => {
    expect(haltPenalty([1, 0, 0, 1])).toBe(-0.5);
    expect(haltPenalty([0, 0])).toBe(0);
    expect(haltPenalty([])).toBe(0);
  });
});

describe('calibrationFolds', () => {
  it('holds a task\'s episodes out together, and does not hold out whole kinds of tasks recorded in a cycle', () => {
    // 60 tasks of 6 kinds recorded in turn, two episodes each, in recorded order: dealt by
    // position into 3 folds, a fold held out kinds 0 and 3 whole.
    const keys = Array.from({ length: 60 }, (_, i) => [`task-${i}`, `task-${i}`]).flat();
    const kindOf = (key: string): number => Number(key.slice(5)) % 6;
    const { fold, folds } = calibrationFolds(keys, 3);
    expect(folds).toBe(3);
    expect(fold).toHaveLength(keys.length);
    for (let i = 0; i < keys.length; i += 2) expect(fold[i]).toBe(fold[i + 1]);
    for (let f = 0; f < 3; f++) {
      const kinds = new Set(keys.filter((_, i) => fold[i] === f).map(kindOf));
      expect(kinds.size).toBe(6);
      // Tasks are dealt in turn: the folds differ in size by at most one task.
      expect(fold.filter((x) => x === f).length / 2).toBeGreaterThanOrEqual(19);
    }
    // The same keys in another order land in the same folds.
    const reversed = calibrationFolds([...keys].reverse(), 3).fold.reverse();
    expect(reversed).toEqual(fold);
  });

  it('deals episodes one by one when there are fewer than two tasks, and never makes more folds than units', () => {
    expect(calibrationFolds(['a', 'a', 'a', 'a'], 3)).toMatchObject({ folds: 3 });
    expect(new Set(calibrationFolds(['a', 'a', 'a', 'a'], 3).fold).size).toBe(3);
    expect(calibrationFolds(['a', 'b'], 3).folds).toBe(2);
    expect(calibrationFolds([], 3).folds).toBe(0);
    expect(() => calibrationFolds(['a'], 0)).toThrow(/folds/);
  });
});

describe('groundedStep', () => {
  it('knows a step at the threshold, halts one far below it, and charges one in between more the lower its support', () => {
    const t = 0.4;
    expect(groundedStep(0.4, t, -0.8)).toEqual({ kind: 'known' });
    expect(groundedStep(0.9, t, -0.8)).toEqual({ kind: 'known' });
    expect(groundedStep(HALT_SHARE * t - 1e-6, t, -0.8)).toEqual({ kind: 'unknown' });
    expect(groundedStep(0, t, -0.8)).toEqual({ kind: 'unknown' });
    const near = groundedStep(0.39, t, -0.8);
    const far = groundedStep(HALT_SHARE * t, t, -0.8);
    if (near.kind !== 'doubtful' || far.kind !== 'doubtful') throw new Error(`expected doubtful steps, got ${JSON.stringify([near, far])}`);
    expect(near.penalty).toBeCloseTo(-0.8 * (1 - 0.39 / 0.4), 10);
    expect(far.penalty).toBeCloseTo(-0.8 * (1 - HALT_SHARE), 10);
    expect(far.penalty).toBeLessThan(near.penalty);
    // A doubtful step never costs more than halting would.
    expect(far.penalty).toBeGreaterThan(-0.8);
  });

  it('halts every step under the threshold when soft is off, and knows every step when nothing is unknown', () => {
    expect(groundedStep(0.39, 0.4, -0.8, false)).toEqual({ kind: 'unknown' });
    expect(groundedStep(0, 0, -0.8)).toEqual({ kind: 'known' });
    // No penalty where the data earned nothing.
    expect(groundedStep(0.3, 0.4, 0)).toEqual({ kind: 'doubtful', penalty: 0 });
  });
});
