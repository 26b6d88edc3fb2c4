import * as tf from '@tensorflow/tfjs';
import { beforeAll, describe, expect, it } from 'vitest';
import { chooseBackend } from '../src/policy/backend.ts';
import { inputTensors, packDecisions, PolicyInputError, validateInput, type Decision } from '../src/policy/input.ts';

const v = (...xs: number[]): Float32Array => Float32Array.from(xs);

const decisions: Decision[] = [
  { state: v(1, 2), candidates: [v(1, 0, 0), v(0, 1, 0)], prior: [0.5, -0.5] },
  { state: v(3, 4), candidates: [v(0, 0, 1), v(1, 1, 0), v(2, 2, 2)] },
  { state: v(5, 6), candidates: [v(9, 9, 9)] },
];

beforeAll(async () => {
  await chooseBackend({ prefer: 'cpu' });
});

describe('packDecisions', () => {
  it('packs candidates back to back, with the mask and zero prior padded to the largest count', () => {
    const p = packDecisions(decisions);
    expect(p).toMatchObject({ count: 3, maxCandidates: 3, stateDim: 2, actionDim: 3 });
    expect(Array.from(p.states)).toEqual([1, 2, 3, 4, 5, 6]);
    expect(Array.from(p.mask)).toEqual([1, 1, 0, 1, 1, 1, 1, 0, 0]);
    expect(Array.from(p.prior)).toEqual([0.5, -0.5, 0, 0, 0, 0, 0, 0, 0]);
    expect(Array.from(p.candidateCounts)).toEqual([2, 3, 1]);
    expect(Array.from(p.candidates)).toEqual([1, 0, 0, 0, 1, 0, 0, 0, 1, 1, 1, 0, 2, 2, 2, 9, 9, 9]);
    validateInput(p);
  });

  it('pads to a fixed maxCandidates when asked, and refuses one that is too small', () => {
    expect(packDecisions(decisions, undefined, 5).maxCandidates).toBe(5);
    expect(() => packDecisions(decisions, undefined, 2)).toThrow(/maxCandidates .* 3, got 2/);
  });

  it('names the bad decision and value', () => {
    expect(() => packDecisions([])).toThrow(PolicyInputError);
    expect(() => packDecisions([{ state: v(1), candidates: [] }])).toThrow(/decision 0: no candidate/);
    expect(() => packDecisions([decisions[0] as Decision, { state: v(1, 2, 3), candidates: [v(1, 1, 1)] }])).toThrow(/decision 1: state has length 3, expected 2/);
    expect(() => packDecisions([{ state: v(1, 2), candidates: [v(1, 1, 1), v(1, 1)] }])).toThrow(/candidate 1: length 2, expected 3/);
    expect(() => packDecisions([{ state: v(1, 2), candidates: [v(1, 1, 1)], prior: [0, 1] }])).toThrow(/prior has 2 entries for 1/);
    expect(() => packDecisions([{ state: v(1, 2), candidates: [v(1, 1, 1)], prior: [Number.NaN] }])).toThrow(/prior\[0\] is NaN/);
    expect(() => packDecisions([{ state: [1, 2] as unknown as Float32Array, candidates: [v(1)] }])).toThrow(/Float32Array/);
  });
});

describe('inputTensors of selected rows', () => {
  /** Every tensor's shape and values, by name. */
  const dump = (t: ReturnType<typeof inputTensors>) => {
    const named: Record<string, tf.Tensor> = { states: t.states, candidateRow: t.candidateRow, slots: t.slots, mask: t.mask, prior: t.prior, ...Object.fromEntries(Object.entries(t.candidates).map(([k, x]) => [`candidates.${k}`, x])), ...Object.fromEntries(Object.entries(t.products ?? {}).map(([k, x]) => [`products.${k}`, x])) };
    const out = Object.fromEntries(Object.entries(named).map(([k, x]) => [k, { shape: x.shape, values: Array.from(x.dataSync()) }]));
    tf.dispose(Object.values(named));
    return out;
  };
  const wide: Decision[] = [
    { state: v(1, 2, 3, 4), candidates: [v(1, 0, 5), v(0, 1, 6)], prior: [0.5, -0.5] },
    { state: v(3, 4, 1, 1), candidates: [v(0, 0, 1), v(1, 0, 5), v(2, 2, 2)], prior: [1, 2, 3] },
    { state: v(1, 2, 9, 9), candidates: [v(9, 9, 9)] },
  ];

  it('equal the tensors of a batch packed from those decisions alone, in that order, padded to their own largest count', () => {
    const all = packDecisions(wide);
    for (const layout of [{}, { leadDim: 2, products: true }, { leadDim: 0, products: true }]) {
      for (const rows of [[2, 0], [1], [0, 1, 2], [1, 1]]) {
        expect(dump(inputTensors(all, layout, rows))).toEqual(dump(inputTensors(packDecisions(rows.map((r) => wide[r] as Decision)), layout)));
      }
    }
    expect(dump(inputTensors(all, {}, [2, 0])).mask).toEqual({ shape: [2, 2], values: [1, 0, 1, 1] });
    // Read again (an update reads its batch for the reference pass, then every epoch): the same tensors.
    const layout = { leadDim: 2, products: true };
    expect(dump(inputTensors(all, layout, [1, 2]))).toEqual(dump(inputTensors(all, layout, [1, 2])));
    expect(dump(inputTensors(all, layout))).toEqual(dump(inputTensors(packDecisions(wide), layout)));
    expect(() => inputTensors(all, {}, [3])).toThrow(/row 3 is outside \[0, 3\)/);
  });
});

describe('validateInput and inputTensors', () => {
  it('detects arrays of the wrong size', () => {
    const p = packDecisions(decisions);
    expect(() => validateInput({ ...p, mask: new Float32Array(2) })).toThrow(/mask has 2 values, expected 9/);
  });
  it('rejects a candidate count above the padded count, below 1 or not an integer, naming the row and value', () => {
    const p = packDecisions(decisions); // K = 3
    const bad = (counts: ArrayLike<number>) => () => validateInput({ ...p, candidateCounts: counts as Int32Array });
    expect(bad(Int32Array.of(2, 4, 1))).toThrow(RangeError);
    expect(bad(Int32Array.of(2, 4, 1))).toThrow(PolicyInputError);
    expect(bad(Int32Array.of(2, 4, 1))).toThrow(/candidateCounts\[1\] is 4, expected an integer in \[1, 3\]/);
    expect(bad(Int32Array.of(2, 3, -1))).toThrow(/candidateCounts\[2\] is -1/);
    expect(bad(Int32Array.of(0, 3, 1))).toThrow(/candidateCounts\[0\] is 0/);
    expect(bad([2, 1.5, 1])).toThrow(/candidateCounts\[1\] is 1.5/);
    expect(bad([2, Number.NaN, 1])).toThrow(/candidateCounts\[1\] is NaN/);
    validateInput({ ...p, candidateCounts: Int32Array.of(3, 2, 1) }); // up to K is fine
    // Counts must also account for every packed candidate.
    expect(bad(Int32Array.of(3, 3, 1))).toThrow(/candidates has 18 values, expected 21/);
  });
  it('builds tensors of the packed shapes, with the real candidates compacted and indexed', () => {
    const t = inputTensors(packDecisions(decisions));
    expect(t.states.shape).toEqual([3, 2]);
    expect(t.candidates.rest.shape).toEqual([6, 3]); // 2 + 3 + 1 real candidates, no padding
    expect(Array.from(t.candidates.rest.dataSync())).toEqual([1, 0, 0, 0, 1, 0, 0, 0, 1, 1, 1, 0, 2, 2, 2, 9, 9, 9]);
    expect(t.candidates.leads.shape).toEqual([1, 0]); // leadDim 0: one empty lead for all
    expect(Array.from(t.candidateRow.dataSync())).toEqual([0, 0, 1, 1, 1, 2]);
    // Padded [3, 3] positions -> candidate index; padding points one past the last (6).
    expect(Array.from(t.slots.dataSync())).toEqual([0, 1, 6, 2, 3, 4, 5, 6, 6]);
    expect(t.products).toBeNull();
    expect(t.mask.shape).toEqual([3, 3]);
    expect(t.prior.shape).toEqual([3, 3]);
    tf.dispose([t.states, t.candidateRow, t.slots, t.candidates.leads, t.candidates.leadOf, t.candidates.rest, t.mask, t.prior]);
  });
  it('stores each distinct leading block once, and multiplies products once per distinct pair', () => {
    // Leads (first 2 features) repeat: [1, 2] three times, [0, 1] once; states' leads: [1, 1] twice, [2, 0] once.
    const repeated: Decision[] = [
      { state: v(1, 1, 5, 7), candidates: [v(1, 2, 3), v(0, 1, 4)] },
      { state: v(1, 1, 6, 7), candidates: [v(1, 2, 5)] },
      { state: v(2, 0, 1, 7), candidates: [v(1, 2, 6), v(0, 1, 7)] },
    ];
    const t = inputTensors(packDecisions(repeated), { leadDim: 2, products: true });
    expect(Array.from(t.candidates.leads.dataSync())).toEqual([1, 2, 0, 1]);
    expect(Array.from(t.candidates.leadOf.dataSync())).toEqual([0, 1, 0, 0, 1]);
    expect(Array.from(t.candidates.rest.dataSync())).toEqual([3, 4, 5, 6, 7]);
    const products = t.products as NonNullable<typeof t.products>;
    // Pairs in order of first use: ([1,2],[1,1]), ([0,1],[1,1]), ([1,2],[2,0]), ([0,1],[2,0]).
    expect(Array.from(products.leads.dataSync())).toEqual([1, 2, 0, 1, 2, 0, 0, 0]);
    expect(Array.from(products.leadOf.dataSync())).toEqual([0, 1, 0, 2, 3]);
    // Rest: the candidate's third feature times the state's third.
    expect(Array.from(products.rest.dataSync())).toEqual([15, 20, 30, 6, 7]);
    expect(() => inputTensors(packDecisions(repeated), { leadDim: 4 })).toThrow(/leadDim must be an integer in \[0, 3\], got 4/);
    tf.dispose([t.states, t.candidateRow, t.slots, t.mask, t.prior, ...Object.values(t.candidates), ...Object.values(products)]);
  });
});
