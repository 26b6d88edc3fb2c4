import * as tf from '@tensorflow/tfjs';
import { beforeAll, describe, expect, it } from 'vitest';
import { Rng } from '../src/core/rng.ts';
import { chooseBackend } from '../src/policy/backend.ts';
import { PolicyHead } from '../src/policy/head.ts';
import { Adam } from '../src/rl/adam.ts';
import { syntheticDecisions, syntheticGrpoBatch, syntheticPpoBatch } from '../src/rl/synthetic.ts';
import { Trainer } from '../src/rl/trainer.ts';
import { runUpdate, type PreparedBatch } from '../src/rl/update.ts';
import { packDecisions } from '../src/policy/input.ts';
import { sftLoss } from '../src/rl/sft.ts';

const dims = { stateDim: 16, actionDim: 16 };

beforeAll(async () => {
  await chooseBackend({ prefer: 'cpu' });
});

describe('update loop', () => {
  it('runs epochs x minibatches and reports means', async () => {
    const head = new PolicyHead({ ...dims, hiddenDim: 8 });
    const adam = new Adam(head.trainable('policy'), { learningRate: 1e-3, beta1: 0.9, beta2: 0.999, epsilon: 1e-8 });
    const decisions = syntheticDecisions({ count: 10, ...dims, minCandidates: 2, maxCandidates: 3, seed: 1 });
    const batch: PreparedBatch = { input: packDecisions(decisions), actions: new Int32Array(10), weights: new Float32Array(10).fill(0.1), columns: {} };
    // The loss also reports its minibatch's size: 4, 4 and 2 rows per epoch, a mean of 10/3.
    const sft = sftLoss(head.config, 1);
    const counting: typeof sft = (ctx) => {
      const out = sft(ctx);
      return { ...out, metrics: { ...out.metrics, rows: tf.scalar(ctx.actions.shape[0]) } };
    };
    const r = await runUpdate(batch, counting, adam, {
      epochs: 3,
      minibatchSize: 4,
      maxGradNorm: 1,
      rng: new Rng(1),
      variables: head.trainable('policy'),
      params: head.params(),
      reference: null,
    });
    expect(r.minibatches).toBe(9);
    expect(adam.step).toBe(9);
    expect(Number.isFinite(r.loss) && Number.isFinite(r.gradNorm)).toBe(true);
    expect(Object.keys(r.metrics).sort()).toEqual(['accuracy', 'entropy', 'policyLoss', 'rows']);
    expect(r.metrics['rows']).toBeCloseTo(10 / 3, 6);
    await expect(
      runUpdate({ ...batch, weights: new Float32Array(3) }, sftLoss(head.config, 1), adam, {
        epochs: 1,
        minibatchSize: 4,
        maxGradNorm: 1,
        rng: new Rng(1),
        variables: head.trainable('policy'),
        params: head.params(),
        reference: null,
      }),
    ).rejects.toThrow(/3 weights for 10 rows/);
    adam.dispose();
    head.dispose();
  });

  it('scales minibatch weights by n / |M| so that minibatch losses estimate the full-batch loss', async () => {
    const head = new PolicyHead({ ...dims, hiddenDim: 8, seed: 2 });
    const decisions = syntheticDecisions({ count: 10, ...dims, minCandidates: 2, maxCandidates: 4, withPrior: true, seed: 7 });
    const batch: PreparedBatch = { input: packDecisions(decisions), actions: Int32Array.from(decisions, (_, i) => i % 2), weights: new Float32Array(10).fill(0.1), columns: {} };
    // The full-batch loss sum_i w_i l_i = mean cross-entropy, from the head's own log-probs.
    const logp = await head.logits(batch.input);
    const k = batch.input.maxCandidates;
    let full = 0;
    for (let i = 0; i < 10; i++) {
      const row = Array.from(logp.subarray(i * k, i * k + (batch.input.candidateCounts[i] as number)));
      const max = Math.max(...row);
      const lse = max + Math.log(row.reduce((s, x) => s + Math.exp(x - max), 0));
      full += (lse - (row[batch.actions[i] as number] as number)) / 10;
    }
    // A learning rate so small that the weights do not move between minibatches: two halves of
    // five rows each give the mean cross-entropy of their half, and their mean is the full loss.
    const run = async (minibatchSize: number) => {
      const adam = new Adam(head.trainable('policy'), { learningRate: 1e-12, beta1: 0.9, beta2: 0.999, epsilon: 1e-8 });
      const r = await runUpdate(batch, sftLoss(head.config, 1), adam, {
        epochs: 1, minibatchSize, maxGradNorm: Number.POSITIVE_INFINITY, rng: new Rng(3), variables: head.trainable('policy'), params: head.params(), reference: null,
      });
      adam.dispose();
      return r;
    };
    const whole = await run(10);
    const halves = await run(5);
    expect(whole.minibatches).toBe(1);
    expect(halves.minibatches).toBe(2);
    expect(whole.loss).toBeCloseTo(full, 5);
    expect(halves.loss).toBeCloseTo(full, 5);
    await expect(run(3)).resolves.toMatchObject({ minibatches: 4 });
    head.dispose();
  });

  it('clips the gradient norm', async () => {
    const trainer = new Trainer({ policy: { ...dims, hiddenDim: 8 }, optimizer: { maxGradNorm: 1e-6 } });
    const batch = syntheticGrpoBatch({ groups: 2, groupSize: 4, maxSteps: 2, ...dims, minCandidates: 2, maxCandidates: 4, seed: 3 });
    const before = await trainer.head.exportWeights();
    const m = await trainer.grpoUpdate(batch);
    const after = await trainer.head.exportWeights();
    expect(m.gradNorm).toBeGreaterThan(1e-6);
    // Adam normalises the step, so clipping shows in the moments, not the step size: m <= (1 - beta1) * 1e-6.
    const state = await (trainer as unknown as { adam: Adam }).adam.exportState();
    for (const slot of state.slots.filter((s) => s.name.startsWith('m/'))) for (const x of slot.data) expect(Math.abs(x)).toBeLessThanOrEqual(1.01e-7);
    expect(after.some((r, i) => r.data.some((x, j) => x !== before[i]?.data[j]))).toBe(true);
    trainer.dispose();
  });

  it('leaves tf.memory().numTensors unchanged after 100 updates (GRPO, PPO, SFT; full and LoRA heads)', async () => {
    for (const loraRank of [0, 3]) {
      const start = tf.memory().numTensors;
      const trainer = new Trainer({
        policy: { ...dims, hiddenDim: 8, valueHead: true, valueHiddenDim: 4, interaction: 'product', loraRank },
        grpo: { beta: 0.02, entropyCoef: 0.01 },
        epochs: 2,
        minibatchSize: 16,
      });
      const grpo = syntheticGrpoBatch({ groups: 3, groupSize: 4, maxSteps: 3, ...dims, minCandidates: 1, maxCandidates: 5, withPrior: true, seed: 4 });
      const ppo = syntheticPpoBatch({ trajectories: 6, maxSteps: 3, ...dims, minCandidates: 1, maxCandidates: 5, seed: 5 });
      const sft = syntheticDecisions({ count: 12, ...dims, minCandidates: 1, maxCandidates: 5, seed: 6 }).map((d) => ({ ...d, action: 0 }));
      const held = tf.memory().numTensors;
      for (let i = 0; i < 100; i++) {
        if (i % 3 === 0) await trainer.grpoUpdate(grpo);
        else if (i % 3 === 1) await trainer.ppoUpdate(ppo);
        else await trainer.sftUpdate(sft);
        if (i === 50) {
          await trainer.act(sft, { rng: new Rng(1) });
          await trainer.logits(sft);
          await trainer.checkpoint();
          trainer.syncReference();
        }
      }
      expect(tf.memory().numTensors).toBe(held);
      trainer.dispose();
      expect(tf.memory().numTensors).toBe(start);
    }
  });
});
