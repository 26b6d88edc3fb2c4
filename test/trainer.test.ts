import * as tf from '@tensorflow/tfjs';
import { describe, expect, it } from 'vitest';
import { chooseBackend } from '../src/policy/backend.ts';
import { CheckpointError, parseCheckpoint, serializeCheckpoint, type TensorRecord } from '../src/policy/checkpoint.ts';
import { ConfigError } from '../src/policy/head.ts';
import { syntheticDecisions, syntheticGrpoBatch, syntheticPpoBatch } from '../src/rl/synthetic.ts';
import { parseTrainerConfig, Trainer, type TrainerConfigInput } from '../src/rl/trainer.ts';

const dims = { stateDim: 32, actionDim: 32 };
const config: TrainerConfigInput = {
  policy: { ...dims, hiddenDim: 16, valueHead: true, valueHiddenDim: 8, seed: 3 },
  optimizer: { learningRate: 3e-3, epsilon: 1e-8 },
  grpo: { beta: 0.04, entropyCoef: 0.01 },
  epochs: 2,
  minibatchSize: 24,
  seed: 9,
};
const grpoBatch = syntheticGrpoBatch({ groups: 4, groupSize: 4, maxSteps: 3, ...dims, minCandidates: 2, maxCandidates: 8, withPrior: true, seed: 11 });
const ppoBatch = syntheticPpoBatch({ trajectories: 8, maxSteps: 4, ...dims, minCandidates: 2, maxCandidates: 8, seed: 12 });
const probe = syntheticDecisions({ count: 10, ...dims, minCandidates: 2, maxCandidates: 8, seed: 13 });

function maxAbsDiff(a: readonly TensorRecord[], b: readonly TensorRecord[]): number {
  let m = 0;
  a.forEach((r, i) => r.data.forEach((x, j) => (m = Math.max(m, Math.abs(x - (b[i]?.data[j] as number))))));
  return m;
}

describe('trainer configuration', () => {
  it('fills defaults, keeps Adam epsilon explicit and names bad values', () => {
    const c = parseTrainerConfig({ policy: dims });
    expect(c.optimizer).toEqual({ learningRate: 1e-3, beta1: 0.9, beta2: 0.999, epsilon: 1e-8, maxGradNorm: 1 });
    expect(c.grpo).toMatchObject({ lossType: 'grpo', scaleRewards: 'group', epsLow: 0.2, epsHigh: 0.2, beta: 0.01 });
    expect(c.ppo).toMatchObject({ gamma: 0.99, gaeLambda: 0.95, clipCoef: 0.2 });
    expect(() => parseTrainerConfig({ policy: dims, grpo: { lossType: 'gspo' as 'grpo' } })).toThrow(ConfigError);
    expect(() => parseTrainerConfig({ policy: dims, grpo: { lossType: 'gspo' as 'grpo' } })).toThrow(/grpo\.lossType: .*\(got "gspo"\)/);
    expect(() => parseTrainerConfig({ policy: dims, optimizer: { epsilon: 0 } })).toThrow(/optimizer\.epsilon: .*\(got 0\)/);
    expect(() => parseTrainerConfig({ policy: dims, minibatchSize: 0 })).toThrow(/minibatchSize/);
  });
});

describe('checkpoints', () => {
  it('resume exactly: a restored trainer continues bit-identically', async () => {
    await chooseBackend({ prefer: 'cpu' });
    const a = new Trainer(config);
    await a.grpoUpdate(grpoBatch);
    await a.ppoUpdate(ppoBatch);
    const file = serializeCheckpoint(await a.checkpoint());
    const b = Trainer.fromCheckpoint(parseCheckpoint(file));
    expect(b.iteration).toBe(2);
    expect(Array.from(await b.logits(probe))).toEqual(Array.from(await a.logits(probe)));
    const ma = await a.grpoUpdate(grpoBatch);
    const mb = await b.grpoUpdate(grpoBatch);
    expect(mb.loss).toBe(ma.loss);
    expect(mb.kl).toBe(ma.kl);
    expect(maxAbsDiff(await a.head.exportWeights(true), await b.head.exportWeights(true))).toBe(0);
    a.dispose();
    b.dispose();
  });

  it('refuses a checkpoint of another head shape as incompatible', async () => {
    await chooseBackend({ prefer: 'cpu' });
    const a = new Trainer(config);
    const cp = await a.checkpoint();
    const other = new Trainer({ ...config, policy: { ...dims, hiddenDim: 8, valueHead: true } });
    expect(() => other.loadCheckpoint(cp)).toThrow(CheckpointError);
    expect(() => other.loadCheckpoint(cp)).toThrow(/policy head settings differ/);
    expect(() => Trainer.fromCheckpoint({ ...cp, config: { policy: { stateDim: -1 } } })).toThrow(/incompatible/);
    // A checkpoint whose optimizer state does not fit is refused before the weights change.
    const moved = new Trainer(config);
    await moved.grpoUpdate(grpoBatch);
    const moves = await moved.checkpoint();
    const before = await a.logits(probe);
    const badOptimizer = { ...moves, optimizer: { ...moves.optimizer, slots: moves.optimizer.slots.slice(1) } };
    expect(() => a.loadCheckpoint(badOptimizer)).toThrow(/slot .* is missing/);
    expect(Array.from(await a.logits(probe))).toEqual(Array.from(before));
    expect(a.iteration).toBe(0);
    moved.dispose();
    a.dispose();
    other.dispose();
  });

  it('syncReference makes the KL to the reference zero', async () => {
    await chooseBackend({ prefer: 'cpu' });
    const t = new Trainer(config);
    await t.grpoUpdate(grpoBatch);
    expect((await t.grpoUpdate(grpoBatch)).kl).toBeGreaterThan(0);
    t.syncReference();
    const m = await t.grpoUpdate({ ...grpoBatch });
    expect(m.kl).toBeLessThan(1e-3);
    t.dispose();
  });

  it('restoreReference puts the reference weights back and keeps the reference', async () => {
    await chooseBackend({ prefer: 'cpu' });
    const t = new Trainer(config);
    const start = Array.from(await t.logits(probe));
    t.syncReference();
    await t.grpoUpdate(grpoBatch);
    await t.grpoUpdate(grpoBatch);
    expect(Array.from(await t.logits(probe))).not.toEqual(start);
    const tensors = tf.memory().numTensors;
    t.restoreReference();
    expect(tf.memory().numTensors).toBe(tensors);
    expect(Array.from(await t.logits(probe))).toEqual(start);
    // The reference stays: the KL to it is zero again.
    expect((await t.grpoUpdate({ ...grpoBatch })).kl).toBeLessThan(1e-3);
    t.dispose();
  });

  it('keepWeights / restoreKept put a kept copy back; checkpoints carry the copy until dropKept', async () => {
    await chooseBackend({ prefer: 'cpu' });
    const before = tf.memory().numTensors;
    const t = new Trainer(config);
    t.syncReference();
    expect(t.restoreKept()).toBe(false);
    await t.grpoUpdate(grpoBatch);
    t.keepWeights();
    const kept = Array.from(await t.logits(probe));
    await t.grpoUpdate(grpoBatch);
    await t.grpoUpdate(grpoBatch);
    expect(Array.from(await t.logits(probe))).not.toEqual(kept);
    // A trainer restored from a checkpoint puts the same copy back.
    const checkpoint = await t.checkpoint();
    expect(checkpoint.weights.filter((w) => w.name.startsWith('kept/')).length).toBe(t.head.specs.length);
    const other = Trainer.fromCheckpoint(checkpoint);
    expect(other.restoreKept()).toBe(true);
    expect(Array.from(await other.logits(probe))).toEqual(kept);
    other.dispose();
    const tensors = tf.memory().numTensors;
    expect(t.restoreKept()).toBe(true);
    expect(tf.memory().numTensors).toBe(tensors);
    expect(Array.from(await t.logits(probe))).toEqual(kept);
    // Not the reference: the KL to it is not zero.
    expect((await t.grpoUpdate({ ...grpoBatch })).kl).toBeGreaterThan(1e-3);
    t.dropKept();
    expect(t.restoreKept()).toBe(false);
    expect((await t.checkpoint()).weights.some((w) => w.name.startsWith('kept/'))).toBe(false);
    t.dispose();
    expect(tf.memory().numTensors).toBe(before);
  });
});

describe('cpu vs wasm', () => {
  it('the same GRPO and PPO updates give parameters that agree within 1e-4', async () => {
    const run = async (backend: 'cpu' | 'wasm') => {
      await chooseBackend({ prefer: backend });
      expect(tf.getBackend()).toBe(backend);
      const t = new Trainer(config);
      steps = (await t.grpoUpdate(grpoBatch)).minibatches + (await t.ppoUpdate(ppoBatch)).minibatches;
      const weights = await t.head.exportWeights();
      t.dispose();
      return weights;
    };
    let steps = 0;
    const cpu = await run('cpu');
    const wasm = await run('wasm');
    const init = new Trainer(config);
    const moved = maxAbsDiff(cpu, await init.head.exportWeights());
    init.dispose();
    const diff = maxAbsDiff(cpu, wasm);
    console.info(`[parity] cpu vs wasm after 1 GRPO + 1 PPO update (${steps} Adam steps): max |diff| = ${diff.toExponential(2)}; largest parameter change ${moved.toExponential(2)}`);
    expect(moved).toBeGreaterThan(1e-3);
    expect(diff).toBeLessThan(1e-4);
  });
});
