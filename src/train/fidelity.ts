/**
 * How faithfully an experience model imitates a real environment, measured on held-out real
 * transitions (test-split tasks the model never saw):
 * - admissible-action agreement: Jaccard similarity of predicted and real next admissible actions;
 * - next-state match: the predicted next state text equals the real one;
 * - reward accuracy: |predicted − real reward| ≤ 0.05, over all steps and over final steps;
 * - done accuracy: predicted done equals real done;
 * - invalid-action detection: on probe actions that are not admissible in the state (taken from
 *   other states), the share the model marks invalid; and on real valid steps, the share it
 *   wrongly marks invalid;
 * - initial-state match: `reset` gives the real first observation.
 * The real environment is used here only to produce ground truth, never inside the model.
 */
import { Rng, hashString } from '../core/rng.ts';
import type { Embedder } from '../core/embedding.ts';
import type { Observation, Task, Trajectory } from '../core/types.ts';
import { RetrievalExperienceModel } from '../experience/retrieval.ts';
import type { ExperienceModel, HistoryStep } from '../experience/types.ts';
import { generateOfflineData } from '../envs/offline.ts';
import type { EnvSpec } from '../envs/spec.ts';
import { HashedEmbedder } from '../policy/hashed-embedder.ts';

/** Fidelity figures; rates in [0, 1]. */
export interface FidelityReport {
  env: string;
  sim: string;
  trainEpisodes: number;
  trainTransitions: number;
  testEpisodes: number;
  testTransitions: number;
  actionAgreement: number;
  nextStateMatch: number;
  rewardAccuracy: number;
  finalRewardAccuracy: number;
  doneAccuracy: number;
  invalidDetection: number;
  falseInvalidRate: number;
  initialStateMatch: number;
  initialActionAgreement: number;
  ms: number;
}

/** Settings of a fidelity measurement. */
export interface FidelityOptions {
  trainEpisodes: number;
  testEpisodes: number;
  seed: number;
  /** Policy that produces both the model's data and the held-out data. */
  policy: string;
  embedder?: Embedder;
}

export const DEFAULT_FIDELITY_OPTIONS: FidelityOptions = { trainEpisodes: 300, testEpisodes: 100, seed: 0, policy: 'noisy:0.3' };

/** Jaccard similarity of two action lists as sets (1 for two empty lists). */
export function jaccard(a: readonly string[], b: readonly string[]): number {
  const sa = new Set(a);
  const sb = new Set(b);
  if (sa.size === 0 && sb.size === 0) return 1;
  let inter = 0;
  for (const x of sa) if (sb.has(x)) inter++;
  return inter / (sa.size + sb.size - inter);
}

const mean = (xs: readonly number[]): number => (xs.length === 0 ? Number.NaN : xs.reduce((s, x) => s + x, 0) / xs.length);

/** Builds the retrieval model from train-split data and measures it on test-split data. */
export async function measureRetrievalFidelity(spec: EnvSpec, options: Partial<FidelityOptions> = {}): Promise<FidelityReport> {
  const opts = { ...DEFAULT_FIDELITY_OPTIONS, ...options };
  const started = performance.now();
  const train = [...generateOfflineData(spec, { episodes: opts.trainEpisodes, seed: opts.seed, policy: opts.policy, split: 'train' })];
  const embedder = opts.embedder ?? new HashedEmbedder({ dim: 256 });
  const model = await RetrievalExperienceModel.fromTrajectories(
    train.map((p) => p.task),
    train.map((p) => p.trajectory),
    embedder,
  );
  try {
    const test = [...generateOfflineData(spec, { episodes: opts.testEpisodes, seed: opts.seed + 1, policy: opts.policy, split: 'test' })];
    const report = await measureFidelity(spec, model, test, opts.seed);
    return {
      ...report,
      env: spec.name,
      sim: model.kind,
      trainEpisodes: opts.trainEpisodes,
      trainTransitions: model.size,
      testEpisodes: opts.testEpisodes,
      ms: performance.now() - started,
    };
  } finally {
    model.dispose();
  }
}

type Measured = Omit<FidelityReport, 'env' | 'sim' | 'trainEpisodes' | 'trainTransitions' | 'testEpisodes' | 'ms'>;

/** Measures any experience model against held-out real episodes of `spec`. */
export async function measureFidelity(
  spec: EnvSpec,
  model: ExperienceModel,
  held: readonly { task: Task; trajectory: Trajectory }[],
  seed: number,
): Promise<Measured> {
  const rng = new Rng(seed ^ hashString('fidelity-probes'));
  const agreement: number[] = [];
  const stateMatch: number[] = [];
  const rewardOk: number[] = [];
  const finalRewardOk: number[] = [];
  const doneOk: number[] = [];
  const falseInvalid: number[] = [];
  const probeDetected: number[] = [];
  const initialMatch: number[] = [];
  const initialAgreement: number[] = [];
  const actionPool = [...new Set(held.flatMap((h) => h.trajectory.steps.flatMap((s) => s.observation.actions)))];
  const env = spec.create();
  let transitions = 0;

  for (const { task, trajectory } of held) {
    const steps = trajectory.steps;
    const first = steps[0];
    if (!first) continue;
    const simFirst = await model.reset(task, []);
    initialMatch.push(simFirst.text === first.observation.text ? 1 : 0);
    initialAgreement.push(jaccard(simFirst.actions, first.observation.actions));

    const history: HistoryStep[] = [];
    for (let i = 0; i < steps.length; i++) {
      const step = steps[i] as (typeof steps)[number];
      const pred = await model.step({ task, history: history.slice(), observation: step.observation, action: step.action, demos: [] });
      transitions++;
      const next = steps[i + 1]?.observation;
      if (next) {
        agreement.push(jaccard(pred.observation.actions, next.actions));
        stateMatch.push(pred.observation.text === next.text ? 1 : 0);
      }
      rewardOk.push(Math.abs(pred.reward - step.reward) <= 0.05 ? 1 : 0);
      if (step.done) finalRewardOk.push(Math.abs(pred.reward - step.reward) <= 0.05 ? 1 : 0);
      doneOk.push(pred.done === step.done ? 1 : 0);
      if (step.valid) falseInvalid.push(pred.valid ? 0 : 1);
      history.push({ observation: step.observation, action: step.action });
    }

    // One probe per episode: an action admissible somewhere else but not here, judged by the real env.
    const at = rng.int(0, steps.length - 1);
    const probeState: Observation = (steps[at] as (typeof steps)[number]).observation;
    const foreign = actionPool.filter((a) => !probeState.actions.includes(a) && !a.startsWith('search['));
    if (foreign.length === 0) continue;
    const probe = rng.pick(foreign);
    env.reset(task);
    for (let j = 0; j < at; j++) env.step((steps[j] as (typeof steps)[number]).action);
    const real = env.step(probe);
    if (real.info.valid) continue;
    const pred = await model.step({ task, history: [], observation: probeState, action: probe, demos: [] });
    probeDetected.push(pred.valid ? 0 : 1);
  }

  return {
    testTransitions: transitions,
    actionAgreement: mean(agreement),
    nextStateMatch: mean(stateMatch),
    rewardAccuracy: mean(rewardOk),
    finalRewardAccuracy: mean(finalRewardOk),
    doneAccuracy: mean(doneOk),
    invalidDetection: mean(probeDetected),
    falseInvalidRate: mean(falseInvalid),
    initialStateMatch: mean(initialMatch),
    initialActionAgreement: mean(initialAgreement),
  };
}
