import * as tf from '@tensorflow/tfjs';
import { beforeAll, describe, expect, it } from 'vitest';
import { Rng } from '../src/core/rng.ts';
import { chooseBackend } from '../src/policy/backend.ts';
import { CheckpointError } from '../src/policy/checkpoint.ts';
import {
  ConfigError,
  initialValues,
  MASKED_LOGIT,
  paramSpecs,
  parsePolicyHeadConfig,
  PolicyHead,
  chooseFromLogProbs,
  takenLogProbs,
} from '../src/policy/head.ts';
import { packDecisions } from '../src/policy/input.ts';
import { syntheticDecisions } from '../src/rl/synthetic.ts';

const DIMS = { stateDim: 12, actionDim: 12 };
const decisions = syntheticDecisions({ count: 5, ...DIMS, minCandidates: 1, maxCandidates: 4, seed: 3 });
const input = packDecisions(decisions);

beforeAll(async () => {
  await chooseBackend({ prefer: 'cpu' });
});

describe('policy head configuration', () => {
  it('fills defaults and names bad fields with their values', () => {
    expect(parsePolicyHeadConfig(DIMS)).toMatchObject({ hiddenDim: 64, interaction: 'none', loraRank: 0, valueHead: false });
    expect(() => parsePolicyHeadConfig({ ...DIMS, hiddenDim: 0 })).toThrow(ConfigError);
    expect(() => parsePolicyHeadConfig({ ...DIMS, hiddenDim: 0 })).toThrow(/hiddenDim: .*\(got 0\)/);
    expect(() => parsePolicyHeadConfig({ stateDim: 4, actionDim: 8, interaction: 'product' })).toThrow(/interaction/);
    expect(() => parsePolicyHeadConfig({ ...DIMS, extra: 1 } as never)).toThrow(/extra/);
  });

  it('LoRA keeps a frozen base and trains a low-rank update, far fewer parameters', () => {
    const lora = paramSpecs(parsePolicyHeadConfig({ ...DIMS, hiddenDim: 16, loraRank: 2 }));
    expect(lora.filter((s) => !s.trainable).map((s) => s.name)).toEqual(['policy.state.base', 'policy.action.base']);
    expect(lora.find((s) => s.name === 'policy.action.loraA')?.shape).toEqual([12, 2]);
    const full = new PolicyHead({ ...DIMS, hiddenDim: 16 });
    const low = new PolicyHead({ ...DIMS, hiddenDim: 16, loraRank: 2 });
    expect(low.trainableSize).toBeLessThan(full.trainableSize / 2);
    full.dispose();
    low.dispose();
  });

  it('initialises deterministically from the seed', () => {
    const a = initialValues(parsePolicyHeadConfig({ ...DIMS, seed: 5 }));
    const b = initialValues(parsePolicyHeadConfig({ ...DIMS, seed: 5 }));
    const c = initialValues(parsePolicyHeadConfig({ ...DIMS, seed: 6 }));
    expect(Array.from(a.get('policy.state.w') as Float32Array)).toEqual(Array.from(b.get('policy.state.w') as Float32Array));
    expect(Array.from(a.get('policy.state.w') as Float32Array)).not.toEqual(Array.from(c.get('policy.state.w') as Float32Array));
    expect(Array.from(a.get('policy.hidden.b') as Float32Array).every((x) => x === 0)).toBe(true);
  });
});

describe('initial scale', () => {
  it('scales only the output and state projections, and the untrained policy is then (almost) its prior', async () => {
    const full = initialValues(parsePolicyHeadConfig({ ...DIMS, interaction: 'product', seed: 5 }));
    const small = initialValues(parsePolicyHeadConfig({ ...DIMS, interaction: 'product', seed: 5, initScale: 0.01 }));
    for (const [name, values] of full) {
      const factor = name === 'policy.out.w' || name === 'policy.state.w' ? 0.01 : 1;
      const got = small.get(name) as Float32Array;
      values.forEach((v, i) => expect(got[i]).toBeCloseTo(v * factor, 6));
    }
    expect(() => parsePolicyHeadConfig({ ...DIMS, initScale: 2 })).toThrow(/initScale/);
    // The head's raw scores shrink with the scale (both the MLP and the bilinear term).
    const spread = async (initScale: number): Promise<number> => {
      const head = new PolicyHead({ ...DIMS, interaction: 'product', seed: 5, initScale });
      const logits = await head.logits(input);
      head.dispose();
      let max = 0;
      for (let i = 0; i < input.count; i++) for (let j = 0; j < (input.candidateCounts[i] as number); j++) max = Math.max(max, Math.abs((logits[i * input.maxCandidates + j] as number) - (input.prior[i * input.maxCandidates + j] as number)));
      return max;
    };
    const wide = await spread(1);
    const narrow = await spread(0.01);
    expect(wide).toBeGreaterThan(0.2);
    expect(narrow).toBeLessThan(wide / 20);
  });
});

describe('forward pass', () => {
  it('masks padding, adds the prior and divides by the temperature', async () => {
    const head = new PolicyHead({ ...DIMS, hiddenDim: 8, seed: 1 });
    const k = input.maxCandidates;
    const plain = await head.logits(input);
    for (let i = 0; i < input.count; i++) {
      for (let j = 0; j < k; j++) {
        if (j >= (input.candidateCounts[i] as number)) expect(plain[i * k + j]).toBeLessThan(MASKED_LOGIT / 2);
        else expect(Math.abs(plain[i * k + j] as number)).toBeLessThan(100);
      }
    }
    const prior = Float32Array.from(input.prior, (_, i) => ((input.mask[i] as number) > 0 ? (i % 3) - 1 : 0));
    const withPrior = await head.logits({ ...input, prior });
    const hot = await head.logits({ ...input, prior }, 2);
    for (let i = 0; i < prior.length; i++) {
      if ((input.mask[i] as number) === 0) continue;
      expect((withPrior[i] as number) - (plain[i] as number)).toBeCloseTo(prior[i] as number, 5);
      expect(hot[i] as number).toBeCloseTo((withPrior[i] as number) / 2, 5);
    }
    head.dispose();
  });

  it('a LoRA head starts exactly where a full head with the base weights starts', async () => {
    const lora = new PolicyHead({ ...DIMS, hiddenDim: 8, loraRank: 2, seed: 4 });
    const full = new PolicyHead({ ...DIMS, hiddenDim: 8, seed: 9 });
    const weights = (await lora.exportWeights()).filter((r) => !r.name.includes('lora')).map((r) => ({ ...r, name: r.name.replace('.base', '.w') }));
    full.importWeights(weights);
    const a = await lora.logits(input);
    const b = await full.logits(input);
    a.forEach((x, i) => expect(x).toBeCloseTo(b[i] as number, 5));
    lora.dispose();
    full.dispose();
  });

  it('a LoRA head with a non-zero update and loraAlpha != loraRank matches a hand-computed forward pass', async () => {
    // Tiny sizes, every weight set by hand, all three projections LoRA (interaction 'product').
    const [dS, dA, h, r, alpha] = [3, 2, 2, 2, 5];
    const scale = alpha / r; // 2.5
    const config = { stateDim: dS, actionDim: dA, hiddenDim: h, loraRank: r, loraAlpha: alpha, interaction: 'product' as const };
    const head = new PolicyHead(config);
    // Row-major matrices, [rows][cols].
    const W: Record<string, number[][]> = {
      'policy.state.base': [[0.2, -0.1], [0.05, 0.3], [-0.25, 0.1]],
      'policy.state.loraA': [[0.3, -0.2], [0.1, 0.4], [-0.5, 0.2]],
      'policy.state.loraB': [[0.15, -0.3], [0.25, 0.1]],
      'policy.action.base': [[-0.3, 0.2], [0.1, 0.15]],
      'policy.action.loraA': [[0.2, 0.1], [-0.4, 0.3]],
      'policy.action.loraB': [[-0.2, 0.35], [0.1, -0.15]],
      'policy.interaction.base': [[0.4, -0.2], [0.3, 0.25]],
      'policy.interaction.loraA': [[-0.1, 0.5], [0.2, -0.3]],
      'policy.interaction.loraB': [[0.3, 0.2], [-0.25, 0.4]],
      'policy.hidden.b': [[0.05, -0.1]],
      'policy.out.w': [[0.7], [-0.4]],
    };
    expect(head.specs.map((s) => s.name).sort()).toEqual(Object.keys(W).sort());
    head.importWeights(head.specs.map((s) => ({ name: s.name, shape: [...s.shape], dtype: 'float32' as const, data: Float32Array.from(W[s.name]!.flat()) })));

    const matVec = (x: number[], m: number[][]): number[] => m[0]!.map((_, j) => x.reduce((acc, xi, i) => acc + xi * m[i]![j]!, 0));
    // P x = x (base + scale * A B), computed as x base + scale * (x A) B.
    const project = (x: number[], name: string): number[] => {
      const base = matVec(x, W[`${name}.base`]!);
      const low = matVec(matVec(x, W[`${name}.loraA`]!), W[`${name}.loraB`]!);
      return base.map((b, j) => b + scale * low[j]!);
    };
    const states = [[1, -0.5, 2], [0.3, 0.8, -1]];
    const cands = [[[1, 2], [-1, 0.5]], [[0.5, -0.5], [2, 1]]];
    const prior = [[0.1, -0.2], [0, 0.3]];
    const reference: number[] = [];
    states.forEach((phi, i) => {
      const u = project(phi, 'policy.state');
      for (const [j, psi] of cands[i]!.entries()) {
        const v = project(psi, 'policy.action');
        const x = project(psi.map((p, d) => p * phi[d]!), 'policy.interaction');
        const hidden = u.map((_, c) => Math.tanh(u[c]! + v[c]! + x[c]! + W['policy.hidden.b']![0]![c]!));
        const mlp = hidden.reduce((acc, y, c) => acc + y * W['policy.out.w']![c]![0]!, 0);
        const bilinear = u.reduce((acc, uc, c) => acc + uc * v[c]!, 0);
        reference.push(prior[i]![j]! + mlp + bilinear);
      }
    });
    const decisionsByHand = states.map((s, i) => ({ state: Float32Array.from(s), candidates: cands[i]!.map((c) => Float32Array.from(c)), prior: prior[i]! }));
    const got = Array.from(await head.logits(packDecisions(decisionsByHand)));
    expect(got).toHaveLength(reference.length);
    got.forEach((x, i) => expect(x).toBeCloseTo(reference[i]!, 5));
    // The update matters here: without it (scale 0) the logits differ clearly.
    const baseOnly = new PolicyHead(config);
    baseOnly.importWeights((await head.exportWeights()).map((rec) => (rec.name.endsWith('loraB') ? { ...rec, data: new Float32Array(rec.data.length) } : rec)));
    const withoutUpdate = Array.from(await baseOnly.logits(packDecisions(decisionsByHand)));
    expect(Math.max(...withoutUpdate.map((x, i) => Math.abs(x - reference[i]!)))).toBeGreaterThan(0.05);
    head.dispose();
    baseOnly.dispose();
  });

  it('gives a single-candidate state probability 1', async () => {
    const head = new PolicyHead({ ...DIMS, hiddenDim: 8 });
    const one = packDecisions([{ state: decisions[0]?.state as Float32Array, candidates: [decisions[0]?.candidates[0] as Float32Array] }]);
    const r = await head.act(one, { rng: new Rng(1) });
    expect(r.actions[0]).toBe(0);
    expect(r.logProbs[0]).toBeCloseTo(0, 6);
    head.dispose();
  });

  it('takes the chosen log-probability, also when every row has a single candidate', () => {
    const before = tf.memory().numTensors;
    const picked = tf.tidy(() => takenLogProbs(tf.tensor2d([[-0.1, -2.3], [-1.2, -0.4]]), tf.tensor1d([1, 0], 'int32')).arraySync());
    expect(picked[0]).toBeCloseTo(-2.3, 6);
    expect(picked[1]).toBeCloseTo(-1.2, 6);
    const single = tf.tidy(() => takenLogProbs(tf.tensor2d([[0], [-0.5]]), tf.tensor1d([0, 0], 'int32')).arraySync());
    expect(single).toEqual([0, -0.5]);
    expect(tf.memory().numTensors).toBe(before);
  });

  it('evaluates the value head when there is one', async () => {
    const head = new PolicyHead({ ...DIMS, hiddenDim: 8, valueHead: true, valueHiddenDim: 4 });
    expect(await head.values(input)).toHaveLength(input.count);
    head.dispose();
    const noValue = new PolicyHead({ ...DIMS, hiddenDim: 8 });
    await expect(noValue.values(input)).rejects.toThrow(/no value head/);
    noValue.dispose();
  });

  it('rejects inputs of other dimensions', async () => {
    const head = new PolicyHead({ stateDim: 5, actionDim: 12 });
    await expect(head.logits(input)).rejects.toThrow(/stateDim 12 .* expects 5/);
    head.dispose();
  });
});

describe('acting', () => {
  it('greedy takes the most likely real candidate; sampling follows the probabilities', async () => {
    const head = new PolicyHead({ ...DIMS, hiddenDim: 8, seed: 2 });
    const k = input.maxCandidates;
    const greedy = await head.act(input, { greedy: true });
    for (let i = 0; i < input.count; i++) {
      const probs = Array.from(greedy.probs.subarray(i * k, i * k + (input.candidateCounts[i] as number)));
      expect(greedy.actions[i]).toBe(probs.indexOf(Math.max(...probs)));
      expect(probs.reduce((a, b) => a + b, 0)).toBeCloseTo(1, 5);
      expect(greedy.logProbs[i]).toBeCloseTo(Math.log(probs[greedy.actions[i] as number] as number), 5);
    }
    const logp = new Float32Array([Math.log(0.7), Math.log(0.2), Math.log(0.1), MASKED_LOGIT]);
    const one = { ...packDecisions([{ state: new Float32Array(2), candidates: [new Float32Array(1), new Float32Array(1), new Float32Array(1)] }], undefined, 4) };
    const counts = [0, 0, 0, 0];
    const rng = new Rng(7);
    for (let t = 0; t < 4000; t++) counts[chooseFromLogProbs(logp, one, { rng }).actions[0] as number]! += 1;
    expect(counts[3]).toBe(0);
    expect((counts[0] as number) / 4000).toBeCloseTo(0.7, 1);
    expect((counts[2] as number) / 4000).toBeCloseTo(0.1, 1);
    // A candidate count above the padded count would read the next row's log-probs: refused.
    const tooMany = Int32Array.from(input.candidateCounts);
    tooMany[0] = k + 1;
    await expect(head.act({ ...input, candidateCounts: tooMany }, { greedy: true })).rejects.toThrow(new RegExp(`candidateCounts\\[0\\] is ${k + 1}`));
    await expect(head.act(input, {})).rejects.toThrow(/needs options.rng/);
    await expect(head.act(input, { greedy: true, temperature: 0 })).rejects.toThrow(/temperature .* got 0/);
    head.dispose();
  });
});

describe('reference copy and weights', () => {
  it('keeps the reference frozen until reset', async () => {
    const head = new PolicyHead({ ...DIMS, hiddenDim: 8 });
    head.resetReference();
    const w = head.params()['policy.out.w'] as tf.Variable;
    w.assign(tf.mul(w, 3));
    const ref = head.referenceParams()['policy.out.w'] as tf.Tensor;
    const now = await w.data();
    Array.from(await ref.data()).forEach((x, i) => expect(x * 3).toBeCloseTo(now[i] as number, 5));
    head.resetReference();
    expect(Array.from(await (head.referenceParams()['policy.out.w'] as tf.Tensor).data())).toEqual(Array.from(await w.data()));
    head.dispose();
  });

  it('round-trips weights and refuses ones that do not fit', async () => {
    const a = new PolicyHead({ ...DIMS, hiddenDim: 8, seed: 1 });
    const b = new PolicyHead({ ...DIMS, hiddenDim: 8, seed: 2 });
    a.resetReference();
    b.importWeights(await a.exportWeights(true));
    expect(Array.from(await b.logits(input))).toEqual(Array.from(await a.logits(input)));
    const records = await a.exportWeights();
    expect(() => b.importWeights(records.slice(1))).toThrow(CheckpointError);
    const bad = records.map((r) => (r.name === 'policy.out.w' ? { ...r, shape: [4, 2] } : r));
    expect(() => b.importWeights(bad)).toThrow(/policy.out.w has shape \[4, 2\], expected \[8, 1\]/);
    a.dispose();
    b.dispose();
  });

  it('imports the reference copy all or nothing, and without one makes the loaded weights the reference', async () => {
    const a = new PolicyHead({ ...DIMS, hiddenDim: 8, seed: 1 });
    const b = new PolicyHead({ ...DIMS, hiddenDim: 8, seed: 2 });
    a.resetReference();
    b.resetReference();
    const refOf = async (h: PolicyHead) => Array.from(await (h.referenceParams()['policy.out.w'] as tf.Tensor).data());
    const bRef = await refOf(b);
    const withRef = await a.exportWeights(true);
    // Only some reference records: refused, and b keeps its weights and reference.
    const bWeights = Array.from(await (b.params()['policy.out.w'] as tf.Tensor).data());
    expect(() => b.importWeights(withRef.filter((r) => r.name !== 'reference/policy.out.w'))).toThrow(/reference\/policy.out.w" is missing/);
    expect(Array.from(await (b.params()['policy.out.w'] as tf.Tensor).data())).toEqual(bWeights);
    expect(await refOf(b)).toEqual(bRef);
    // No reference records: the reference follows the loaded weights, not b's old ones.
    b.importWeights(await a.exportWeights());
    expect(await refOf(b)).toEqual(Array.from(await (a.params()['policy.out.w'] as tf.Tensor).data()));
    expect(await refOf(b)).not.toEqual(bRef);
    a.dispose();
    b.dispose();
  });

  it('frees every tensor on dispose', () => {
    const before = tf.memory().numTensors;
    const head = new PolicyHead({ ...DIMS, hiddenDim: 8, valueHead: true, loraRank: 2 });
    head.resetReference();
    head.dispose();
    expect(tf.memory().numTensors).toBe(before);
    expect(() => head.params()).toThrow(/after dispose/);
  });
});
