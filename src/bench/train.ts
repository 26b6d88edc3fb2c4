/**
 * Training-loop suite: how fast synthetic experience is made inside the loop against the raw
 * step rate of the retrieval experience model on the same states, so the loop's overhead
 * (featurizing, acting, bookkeeping) shows as a share; and the cost of one GRPO update.
 * Measured side by side in one run, warm (the model built and the featurizer's cache filled by a
 * first iteration that is not counted).
 */
import { Rng } from '../core/rng.ts';
import { agentView, type EnvName } from '../core/types.ts';
import type { HistoryStep } from '../experience/types.ts';
import { installRowCopyGather, uninstallRowCopyGather } from '../policy/wasm-gather.ts';
import { parseTrainingConfig } from '../train/config.ts';
import { runTraining, type IterationMetrics } from '../train/loop.ts';
import { prepareRun } from '../train/setup.ts';
import type { BenchRow } from './types.ts';

/** Raw model steps per second: random admissible actions from recorded states, as rollouts would ask. */
async function rawStepRate(env: EnvName, steps: number): Promise<number> {
  const config = parseTrainingConfig({ env, mode: 'dreamgym', seed: 0 }, 'quick');
  const run = await prepareRun(config);
  try {
    const model = run.experience;
    if (!model) throw new Error('no experience model');
    const rng = new Rng(1);
    const trajectories = run.deps.offline.trajectories;
    const byId = new Map(run.deps.offline.tasks.map((t) => [t.id, agentView(t)]));
    // Warm-up pass, then the timed one.
    let timed = 0;
    let ms = 0;
    for (const pass of [0, 1]) {
      let n = 0;
      const t0 = performance.now();
      while (n < steps) {
        const traj = rng.pick(trajectories);
        const task = byId.get(traj.taskId);
        if (!task) continue;
        const history: HistoryStep[] = [];
        let observation = traj.steps[0]?.observation;
        for (let t = 0; t < 10 && observation && observation.actions.length > 0 && n < steps; t++) {
          const action = rng.pick(observation.actions);
          const out = await model.step({ task, history: history.slice(), observation, action, demos: [] });
          n++;
          history.push({ observation, action });
          if (out.done) break;
          observation = out.observation;
        }
      }
      if (pass === 1) {
        timed = n;
        ms = performance.now() - t0;
      }
    }
    return timed / (ms / 1000);
  } finally {
    run.dispose();
  }
}

interface LoopRates {
  stepsPerSec: number;
  msPerStep: number;
  updateMs: number;
  rolloutMs: number;
  steps: number;
  /** Update milliseconds per synthetic step (update cost grows with the decisions it holds). */
  updateMsPerStep: number;
}

function ratesOf(timed: readonly IterationMetrics[]): LoopRates {
  const steps = timed.reduce((s, m) => s + m.syntheticSteps, 0);
  const rolloutMs = timed.reduce((s, m) => s + m.rolloutMs, 0);
  const updateTotal = timed.reduce((s, m) => s + m.updateMs, 0);
  return { stepsPerSec: steps / (rolloutMs / 1000), msPerStep: rolloutMs / steps, updateMs: updateTotal / timed.length, rolloutMs: rolloutMs / timed.length, steps, updateMsPerStep: updateTotal / steps };
}

/**
 * Loop figures of a short dreamgym run warm-started from behaviour cloning (so that groups have
 * reward to learn from); the first RL iteration is a warm-up. On wasm the synthetic iterations
 * alternate between tfjs-wasm's own gather kernel and the row-copy one the product installs
 * (`src/policy/wasm-gather.ts`): both give the same bits, so the run is the same either way and
 * the two are timed side by side on the same run. `rates` is the row-copy iterations' (what the
 * product runs), `ownGather` the others' (null off wasm).
 */
async function loopRates(env: EnvName, wasm: boolean): Promise<{ rates: LoopRates; ownGather: LoopRates | null }> {
  const config = parseTrainingConfig({ env, mode: 'dreamgym', warmStart: 'sft', seed: 0, iterations: wasm ? 9 : 5, curriculum: { enabled: false } }, 'quick');
  const run = await prepareRun(config);
  const ownGather = new Set<number>();
  try {
    const res = await runTraining(config, run.deps, {
      onProgress: (p) => {
        if (!wasm || p.metrics || p.phase !== 'synthetic') return;
        // Odd iterations on the wasm backend's own kernel, even ones on the row copy.
        if (p.iteration % 2 === 1) {
          uninstallRowCopyGather();
          ownGather.add(p.iteration);
        } else installRowCopyGather();
      },
    });
    res.trainer.dispose();
    const timed = res.metrics.filter((m) => m.phase === 'synthetic').slice(1);
    const own = timed.filter((m) => ownGather.has(m.iteration));
    return { rates: ratesOf(timed.filter((m) => !ownGather.has(m.iteration))), ownGather: own.length > 0 ? ratesOf(own) : null };
  } finally {
    if (wasm) installRowCopyGather();
    run.dispose();
  }
}

/** Runs the suite for both environments. */
export async function benchTrain(backend: string): Promise<BenchRow[]> {
  const rows: BenchRow[] = [];
  for (const env of ['shop', 'household'] as const) {
    const raw = await rawStepRate(env, 1500);
    const { rates: loop, ownGather } = await loopRates(env, backend === 'wasm');
    rows.push(
      { name: `${env}: retrieval model alone, steps/s (warm)`, value: raw, unit: 'steps/s', note: `${(1000 / raw).toFixed(2)} ms/step; tfjs ${backend}` },
      { name: `${env}: synthetic rollouts in the loop, steps/s (warm)`, value: loop.stepsPerSec, unit: 'steps/s', note: `${loop.msPerStep.toFixed(2)} ms/step over ${loop.steps} steps` },
      { name: `${env}: loop overhead share of a synthetic step`, value: 100 * Math.max(0, 1 - loop.stepsPerSec / raw), unit: '%', note: 'featurizing, acting and bookkeeping' },
      { name: `${env}: GRPO update per iteration`, value: loop.updateMs / 1000, unit: 's', note: `warm-started; rollouts ${(loop.rolloutMs / 1000).toFixed(2)} s per iteration (quick preset: 8 tasks x 6 rollouts)` },
    );
    if (ownGather) {
      // Per step, since the alternate iterations hold different batches.
      rows.push(
        { name: `${env}: synthetic step in the loop, row-copy gather / wasm's own`, value: loop.msPerStep / ownGather.msPerStep, unit: 'x', note: `${loop.msPerStep.toFixed(2)} / ${ownGather.msPerStep.toFixed(2)} ms per step, alternate iterations of one run` },
        { name: `${env}: GRPO update per step, row-copy gather / wasm's own`, value: loop.updateMsPerStep / ownGather.updateMsPerStep, unit: 'x', note: `${loop.updateMsPerStep.toFixed(3)} / ${ownGather.updateMsPerStep.toFixed(3)} ms per step` },
      );
    }
  }
  return rows;
}
