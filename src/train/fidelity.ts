/**
 * How faithfully an experience model imitates a real environment, measured on held-out real
 * episodes (test-split tasks the model never saw), next to trivial simulators (`echo`,
 * `majority`, see `experience/baselines.ts`) so that every figure reads as a margin:
 * - admissible-action agreement: Jaccard similarity of predicted and real next admissible actions
 *   (teacher-forced: each step starts from the real state);
 * - next-state match: the predicted next state text equals the real one;
 * - reward accuracy: |predicted − real reward| ≤ 0.05 over all steps, over the steps the model
 *   answers (a grounded model's unknown and doubtful steps carry its penalty, not a prediction;
 *   their share is stated apart), and on final steps split by episodes that succeeded and that
 *   failed;
 * - final-step verdict: on the last step of episodes that succeeded, the share the model also
 *   calls a success (reward 1, done); on the last step of episodes that failed, the share it does
 *   not (a simulator that calls every purchase a success scores 0 there);
 * - done accuracy: predicted done equals real done;
 * - within-episode consistency (free-running: the model's own states, the real episode's
 *   actions): when an action is repeated and the real environment showed the same thing both
 *   times, the share of repeats where the model also shows what it showed the first time;
 * - initial-state match: `reset` gives the real first observation (only generated tasks need it).
 * Validity is left out: every model applies the same admissibility rule, so it cannot tell them apart.
 *
 * False success: success rates of a random and a noisy expert policy inside the simulator
 * against the same policies in the real environment, per task type, on the tasks whose data the
 * model was built from (what synthetic training uses) and on held-out tasks. Inside the
 * simulator the noisy policy asks a shadow real environment, stepped with the same actions, for
 * the expert's action, and takes it when the simulated state admits it. Two noisy goal-blind
 * policies, which act on what they are shown as a trained policy does, are measured the same
 * way: the scripted reference and the environment's demonstrator.
 *
 * The real environment is used here only to produce ground truth and the policies' choices,
 * never inside a model.
 */
import { Rng, hashString } from '../core/rng.ts';
import type { Embedder } from '../core/embedding.ts';
import { agentView, type Observation, type RealEnvironment, type Task, type Trajectory } from '../core/types.ts';
import { isAdmissible } from '../experience/admissible.ts';
import { EchoExperienceModel, MajorityRuleExperienceModel } from '../experience/baselines.ts';
import { RetrievalExperienceModel, transitionsFromTrajectories, type GroundingReport, type RetrievalModelConfig } from '../experience/retrieval/model.ts';
import { actionSignature, instructionWords, withoutInstruction } from '../experience/retrieval/evidence.ts';
import { DemonstrationIndex } from '../experience/demos.ts';
import { LLMExperienceModel } from '../experience/llm.ts';
import type { Demonstration, ExperienceModel, HistoryStep } from '../experience/types.ts';
import { generateOfflineData } from '../envs/offline.ts';
import { parsePolicy, runEpisode } from '../envs/episode.ts';
import type { AnyEnvSpec } from '../envs/spec.ts';
import { HashedEmbedder } from '../policy/hashed-embedder.ts';
import { hasReferencePolicy, referencePolicy } from './reference.ts';
import type { RunLLM } from './setup.ts';

/** Top-k real transitions for (observation, action), given to an experience model with each step. */
export type DemoSource = (observation: Observation, action: string, k: number) => Promise<Demonstration[]>;

/** Fidelity figures of one model; rates in [0, 1] (NaN when there was nothing to measure). */
export interface FidelityMeasures {
  testTransitions: number;
  actionAgreement: number;
  nextStateMatch: number;
  rewardAccuracy: number;
  /** Reward accuracy on the steps the model answers: neither unknown nor doubtful (all steps for a model without grounding). */
  answeredRewardAccuracy: number;
  /** Done accuracy on those steps. */
  answeredDoneAccuracy: number;
  /** Steps the model declines to predict: unknown (halting) or doubtful (penalised); 0 for a model without grounding. */
  declinedShare: number;
  /** Reward accuracy on the last step of episodes that succeeded. */
  finalRewardAccuracySuccess: number;
  /** Reward accuracy on the last step of episodes that failed. */
  finalRewardAccuracyFailure: number;
  /** Last steps of successful episodes that the model also calls a success. */
  finalVerdictSuccess: number;
  /** Last steps of failed episodes that the model does not call a success. */
  finalVerdictFailure: number;
  /** The mean of the two verdict rates: a simulator that always or never calls success scores at most 0.5 here. */
  finalVerdictBalanced: number;
  doneAccuracy: number;
  consistency: number;
  /** Repeats the consistency figure is measured on. */
  consistencyPairs: number;
  /**
   * `reset` of a held-out task (one the data never recorded, as a task the curriculum generates
   * from an unrecorded one) against its real first state. Generated children of recorded tasks
   * start in their root's recorded state, with what it quotes of the instruction quoted again
   * (measured by tests: `test/experience-retrieval.test.ts`).
   */
  initialStateMatch: number;
  initialActionAgreement: number;
  /** Teacher-forced steps the model called unknown (its grounding halted the episode there); 0 for a model without grounding. */
  unknownShare: number;
  /** Teacher-forced steps the model called doubtful (below its threshold, the episode going on at a cost); 0 for a model without grounding. */
  doubtfulShare: number;
  /** Next-state match on the steps the model called neither unknown nor doubtful. */
  knownNextStateMatch: number;
}

/**
 * Next-state match of one kind of action: its signature (the template with each entity marked as
 * named by the instruction, `qi`, an opaque id, `qid`, or neither, `qx`: `click[qid]`, `go to
 * qx`), and `again` for an action the episode took before (a return to a place or page).
 */
export interface NextStateMatchOfKind {
  kind: string;
  steps: number;
  match: number;
}

/** What {@link measureFidelity} returns: the measures, and next-state match by kind of action. */
export interface FidelityMeasured extends FidelityMeasures {
  /** Most steps first. */
  nextStateByKind: NextStateMatchOfKind[];
}

/** One row of the fidelity table. */
export interface FidelityReport extends FidelityMeasured {
  env: string;
  sim: string;
  trainEpisodes: number;
  trainTransitions: number;
  testEpisodes: number;
  ms: number;
}

/** Success of one policy inside the simulator and in the real environment, for one group of tasks. */
export interface FalseSuccessRow {
  policy: string;
  /** 'grounded' (tasks whose data built the model) or 'held-out'. */
  tasks: 'grounded' | 'held-out';
  taskType: string;
  episodes: number;
  simSuccess: number;
  realSuccess: number;
}

/** Fidelity of the retrieval (or LLM) model next to the baselines, with false-success rates. */
export interface FidelityTable {
  env: string;
  rows: FidelityReport[];
  falseSuccess: FalseSuccessRow[];
  /** The retrieval model's grounding, calibrated on its own train data (see `RetrievalExperienceModel.grounding`); absent without one. */
  grounding?: GroundingReport;
  ms: number;
}

/** Settings of a fidelity measurement. */
export interface FidelityOptions {
  trainEpisodes: number;
  testEpisodes: number;
  seed: number;
  /**
   * Policies that produce the model's data and the held-out data: one (`noisy:0.3`) or a
   * comma-separated mixture (`noisy:0.3,noisy:1`), episodes split evenly between them.
   */
  policy: string;
  embedder?: Embedder;
  /** Retrieval model settings (ablations such as `neighbourOrder: 'farthest'`). */
  model?: Partial<RetrievalModelConfig>;
  /** Episodes per policy and task group for the false-success rates; 0 skips them. */
  falseSuccessEpisodes: number;
  /** Which trivial simulators to measure next to the model. */
  baselines: readonly ('echo' | 'majority')[];
  /** The policies of the false-success rates (`random`, `noisy:EPS`); default both `random` and `noisy:0.3`. */
  falseSuccessPolicies?: readonly string[];
  /** Whether to measure the goal-blind policies' false success too (default true). */
  goalBlind?: boolean;
  /**
   * Measure the LLM experience model on this LLM instead of the retrieval model, grounded by the
   * top-3 real transitions of the train data retrieved for each step.
   */
  llm?: RunLLM | null;
}

const DEFAULT_FIDELITY_OPTIONS: FidelityOptions = {
  trainEpisodes: 300,
  testEpisodes: 100,
  seed: 0,
  // Half near-expert, half random episodes: a reward model learns what failure looks like only
  // from data that holds failures.
  policy: 'noisy:0.3,noisy:1',
  falseSuccessEpisodes: 100,
  baselines: ['echo', 'majority'],
};


/** The measures of the fidelity table, in order, with their labels. */
export const FIDELITY_MEASURES: readonly [keyof FidelityMeasures, string][] = [
  ['actionAgreement', 'admissible-action agreement (Jaccard)'],
  ['nextStateMatch', 'next-state match'],
  ['unknownShare', 'unknown steps (the episode halts)'],
  ['doubtfulShare', 'doubtful steps (the episode goes on at a cost)'],
  ['knownNextStateMatch', 'next-state match on known steps'],
  ['consistency', 'within-episode consistency'],
  ['declinedShare', 'steps declined (unknown or doubtful)'],
  ['rewardAccuracy', 'reward accuracy, all steps'],
  ['answeredRewardAccuracy', 'reward accuracy, steps answered'],
  ['finalRewardAccuracySuccess', 'reward accuracy, final steps of successes'],
  ['finalRewardAccuracyFailure', 'reward accuracy, final steps of failures'],
  ['finalVerdictSuccess', 'successes called successes'],
  ['finalVerdictFailure', 'failures not called successes'],
  ['finalVerdictBalanced', 'final-step verdict, balanced'],
  ['doneAccuracy', 'done accuracy'],
  ['answeredDoneAccuracy', 'done accuracy, steps answered'],
  ['initialStateMatch', 'initial state match (tasks without a recorded episode)'],
];

/** The model's margin over the best baseline on one measure (NaN when there is no baseline figure). */
export function fidelityMargin(rows: readonly FidelityReport[], key: keyof FidelityMeasures): number {
  const [model, ...baselines] = rows;
  const best = Math.max(...baselines.map((r) => r[key]).filter((x) => Number.isFinite(x)));
  return model && Number.isFinite(best) ? model[key] - best : Number.NaN;
}

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

/** The task type used to split false-success rates: the goal's `type` where there is one. */
function taskType(task: Task): string {
  const g = task.goal;
  return g !== null && typeof g === 'object' && !Array.isArray(g) && typeof g.type === 'string' ? g.type : 'all';
}

/** Builds the retrieval model from train-split data and measures it and the baselines on test-split data. */
export async function measureFidelityTable(spec: AnyEnvSpec, options: Partial<FidelityOptions> = {}): Promise<FidelityTable> {
  const opts = { ...DEFAULT_FIDELITY_OPTIONS, ...options };
  const started = performance.now();
  const train = mixedOfflineData(spec, opts.policy, opts.trainEpisodes, opts.seed, 'train');
  const test = mixedOfflineData(spec, opts.policy, opts.testEpisodes, opts.seed + 1, 'test');
  const tasks = train.map((p) => p.task);
  const trajectories = train.map((p) => p.trajectory);
  const embedder = opts.embedder ?? new HashedEmbedder({ dim: 256 });
  const declared = spec.freeTextActions ?? [];
  const retrieval = opts.llm ? null : await RetrievalExperienceModel.fromTrajectories(tasks, trajectories, embedder, { freeTextActions: declared, ...opts.model });
  let demos: DemoSource | undefined;
  if (opts.llm) {
    const index = await DemonstrationIndex.fromTrajectories(trajectories, embedder);
    demos = (observation, action, k) => index.top(observation, action, k);
  }
  const model: ExperienceModel = retrieval ?? new LLMExperienceModel((opts.llm as RunLLM).engine, { ...(opts.llm?.model !== undefined ? { model: opts.llm.model } : {}), contextWindowTokens: opts.llm?.contextWindowSize ?? null, environmentDescription: spec.description, freeTextActions: declared });
  const transitions = transitionsFromTrajectories(tasks, trajectories);
  const sims: ExperienceModel[] = [model];
  for (const b of opts.baselines) sims.push(b === 'echo' ? new EchoExperienceModel(declared) : new MajorityRuleExperienceModel(transitions, declared));
  try {
    const rows: FidelityReport[] = [];
    for (const sim of sims) {
      const t0 = performance.now();
      const measured = await measureFidelity(sim, test, sim === model ? demos : undefined, declared);
      rows.push({
        ...measured,
        env: spec.name,
        sim: sim.kind,
        trainEpisodes: opts.trainEpisodes,
        trainTransitions: transitions.filter((t) => t.valid).length,
        testEpisodes: opts.testEpisodes,
        ms: performance.now() - t0,
      });
    }
    const falseSuccess: FalseSuccessRow[] = [];
    if (opts.falseSuccessEpisodes > 0) {
      const groups = {
        grounded: tasks.slice(0, opts.falseSuccessEpisodes),
        'held-out': test.slice(0, opts.falseSuccessEpisodes).map((p) => p.task),
      } as const;
      for (const policy of opts.falseSuccessPolicies ?? ['random', 'noisy:0.3']) {
        for (const group of ['grounded', 'held-out'] as const) {
          falseSuccess.push(...(await measureFalseSuccess(spec, model, groups[group], policy, opts.seed, group, demos)));
        }
      }
      if (opts.goalBlind !== false && hasReferencePolicy(spec.name)) {
        for (const group of ['grounded', 'held-out'] as const) falseSuccess.push(...(await measureGoalBlindFalseSuccess(spec, model, groups[group], 'scripted', 0.3, opts.seed, group, demos)));
      }
      // A demonstrator that asks its environment (a module's) cannot act inside the simulator.
      if (opts.goalBlind !== false && spec.demonstrator && !spec.demonstratorNeedsEnvironment) {
        for (const group of ['grounded', 'held-out'] as const) falseSuccess.push(...(await measureGoalBlindFalseSuccess(spec, model, groups[group], 'demonstrator', 0.3, opts.seed, group, demos)));
      }
    }
    const grounding = retrieval?.grounding;
    return { env: spec.name, rows, falseSuccess, ...(grounding ? { grounding } : {}), ms: performance.now() - started };
  } finally {
    retrieval?.dispose();
  }
}

/** Offline episodes from one policy or an even mixture of several (each on its own tasks). */
export function mixedOfflineData(spec: AnyEnvSpec, policy: string, episodes: number, seed: number, split: 'train' | 'test'): { task: Task; trajectory: Trajectory }[] {
  const policies = policy.split(',').map((p) => p.trim());
  const out: { task: Task; trajectory: Trajectory }[] = [];
  policies.forEach((p, i) => {
    const n = Math.floor(episodes / policies.length) + (i < episodes % policies.length ? 1 : 0);
    if (n > 0) out.push(...generateOfflineData(spec, { episodes: n, seed: seed + 7919 * i, policy: p, split }));
  });
  return out;
}

const sameScreen = (a: Observation, b: Observation, instruction: string): boolean =>
  jaccard(a.actions, b.actions) === 1 && withoutInstruction(a.text, instruction) === withoutInstruction(b.text, instruction);

/**
 * Measures any experience model against held-out real episodes. Models see only `agentView(task)`
 * and, when `demos` is given, the top-3 retrieved real transitions of each step.
 */
export async function measureFidelity(model: ExperienceModel, held: readonly { task: Task; trajectory: Trajectory }[], demos?: DemoSource, freeTextActions: readonly string[] = []): Promise<FidelityMeasured> {
  const freeText = new Set(freeTextActions);
  const retrieved = async (observation: Observation, action: string): Promise<Demonstration[]> => (demos ? demos(observation, action, 3) : []);
  const agreement: number[] = [];
  const stateMatch: number[] = [];
  const rewardOk: number[] = [];
  const answeredRewardOk: number[] = [];
  const answeredDoneOk: number[] = [];
  const finalOkSuccess: number[] = [];
  const finalOkFailure: number[] = [];
  const verdictSuccess: number[] = [];
  const verdictFailure: number[] = [];
  const doneOk: number[] = [];
  const consistent: number[] = [];
  const initialMatch: number[] = [];
  const initialAgreement: number[] = [];
  const byKind = new Map<string, number[]>();
  const unknown: number[] = [];
  const doubtful: number[] = [];
  const knownMatch: number[] = [];
  let transitions = 0;

  for (const { task: fullTask, trajectory } of held) {
    const task = agentView(fullTask);
    const words = instructionWords(task.instruction);
    const steps = trajectory.steps;
    const first = steps[0];
    if (!first) continue;
    const simFirst = await model.reset(task, []);
    initialMatch.push(simFirst.text === first.observation.text ? 1 : 0);
    initialAgreement.push(jaccard(simFirst.actions, first.observation.actions));

    // Teacher-forced: every step starts from the real state and the real history.
    const history: HistoryStep[] = [];
    for (let i = 0; i < steps.length; i++) {
      const step = steps[i] as (typeof steps)[number];
      const pred = await model.step({ task, history: history.slice(), observation: step.observation, action: step.action, demos: await retrieved(step.observation, step.action) });
      transitions++;
      const halted = pred.grounding?.unknown === true;
      const doubted = pred.grounding?.doubtful === true;
      unknown.push(halted ? 1 : 0);
      doubtful.push(doubted ? 1 : 0);
      const next = steps[i + 1]?.observation;
      if (next) {
        agreement.push(jaccard(pred.observation.actions, next.actions));
        const match = pred.observation.text === next.text ? 1 : 0;
        stateMatch.push(match);
        if (!halted && !doubted) knownMatch.push(match);
        const again = history.some((h) => h.action === step.action) ? ' again' : '';
        const kind = `${actionSignature(step.action, words)}${again}`;
        const ofKind = byKind.get(kind) ?? [];
        ofKind.push(match);
        byKind.set(kind, ofKind);
      }
      const ok = Math.abs(pred.reward - step.reward) <= 0.05 ? 1 : 0;
      rewardOk.push(ok);
      if (!halted && !doubted) {
        answeredRewardOk.push(ok);
        answeredDoneOk.push(pred.done === step.done ? 1 : 0);
      }
      if (step.done) {
        (trajectory.success ? finalOkSuccess : finalOkFailure).push(ok);
        const calledSuccess = pred.done && pred.reward >= 0.999;
        if (trajectory.success) verdictSuccess.push(calledSuccess ? 1 : 0);
        else verdictFailure.push(calledSuccess ? 0 : 1);
      }
      doneOk.push(pred.done === step.done ? 1 : 0);
      history.push({ observation: step.observation, action: step.action });
    }

    // Free-running: the model's own states, the real actions, until one is not admissible there.
    const simHistory: HistoryStep[] = [];
    const predicted: Observation[] = [];
    let state = first.observation;
    for (const step of steps) {
      if (!step.valid || !isAdmissible(state, step.action, freeText)) break;
      const pred = await model.step({ task, history: simHistory.slice(), observation: state, action: step.action, demos: await retrieved(state, step.action) });
      predicted.push(pred.observation);
      simHistory.push({ observation: state, action: step.action });
      if (pred.done) break;
      state = pred.observation;
    }
    for (let j = 1; j < predicted.length; j++) {
      const realJ = steps[j + 1]?.observation;
      if (!realJ) continue;
      for (let i = j - 1; i >= 0; i--) {
        const realI = steps[i + 1]?.observation;
        if (steps[i]?.action !== steps[j]?.action || !realI || !sameScreen(realI, realJ, task.instruction)) continue;
        consistent.push(sameScreen(predicted[i] as Observation, predicted[j] as Observation, task.instruction) ? 1 : 0);
        break;
      }
    }
  }

  return {
    testTransitions: transitions,
    actionAgreement: mean(agreement),
    nextStateMatch: mean(stateMatch),
    rewardAccuracy: mean(rewardOk),
    answeredRewardAccuracy: mean(answeredRewardOk),
    answeredDoneAccuracy: mean(answeredDoneOk),
    declinedShare: transitions === 0 ? Number.NaN : (transitions - answeredRewardOk.length) / transitions,
    finalRewardAccuracySuccess: mean(finalOkSuccess),
    finalRewardAccuracyFailure: mean(finalOkFailure),
    finalVerdictSuccess: mean(verdictSuccess),
    finalVerdictFailure: mean(verdictFailure),
    finalVerdictBalanced: (mean(verdictSuccess) + mean(verdictFailure)) / 2,
    doneAccuracy: mean(doneOk),
    consistency: mean(consistent),
    consistencyPairs: consistent.length,
    initialStateMatch: mean(initialMatch),
    initialActionAgreement: mean(initialAgreement),
    unknownShare: mean(unknown),
    doubtfulShare: mean(doubtful),
    knownNextStateMatch: mean(knownMatch),
    nextStateByKind: [...byKind].map(([kind, xs]) => ({ kind, steps: xs.length, match: mean(xs) })).sort((a, b) => b.steps - a.steps || a.kind.localeCompare(b.kind)),
  };
}

/**
 * Success of `policy` ('random' or 'noisy:EPS') inside the simulator and in the real environment
 * on the same tasks, per task type. Simulated episodes start from the task's real first
 * observation (what its recorded data holds) and end at the environment's step limit.
 */
export async function measureFalseSuccess(
  spec: AnyEnvSpec,
  model: ExperienceModel,
  tasks: readonly Task[],
  policy: string,
  seed: number,
  group: FalseSuccessRow['tasks'],
  demos?: DemoSource,
): Promise<FalseSuccessRow[]> {
  const eps = policy === 'random' ? 1 : Number(/^noisy:(.+)$/.exec(policy)?.[1]);
  if (!(eps >= 0 && eps <= 1)) throw new RangeError(`policy must be "random" or "noisy:EPS", got ${JSON.stringify(policy)}`);
  // One stream per task and side, so that the real column does not depend on how long the
  // simulator's episodes ran.
  const streamOf = (task: Task, side: 'real' | 'sim'): Rng => new Rng(seed ^ hashString(`false-success:${policy}:${group}:${task.id}:${side}`));
  const realPolicy = policy === 'random' ? parsePolicy('noisy:1') : parsePolicy(policy);
  const outcomes: { type: string; sim: boolean; real: boolean }[] = [];
  const env = spec.create();
  const shadow = spec.create();
  for (const task of tasks) {
    const real = runEpisode(env, task, realPolicy, { rng: streamOf(task, 'real') }).success;
    const rng = streamOf(task, 'sim');
    const visible = agentView(task);
    let state = shadow.reset(task);
    let shadowDone = false;
    const history: HistoryStep[] = [];
    let simSuccess = false;
    for (let t = 0; t < spec.maxSteps; t++) {
      if (state.actions.length === 0) break;
      let action = rng.pick(state.actions);
      if (!shadowDone && !rng.chance(eps)) {
        const expert = shadow.expertAction();
        if (isAdmissible(state, expert, new Set(spec.freeTextActions))) action = expert;
      }
      if (!shadowDone) shadowDone = shadow.step(action).done;
      const pred = await model.step({ task: visible, history: history.slice(), observation: state, action, demos: demos ? await demos(state, action, 3) : [] });
      history.push({ observation: state, action });
      if (pred.done) {
        simSuccess = pred.reward >= 0.999;
        break;
      }
      state = pred.observation;
    }
    outcomes.push({ type: taskType(task), sim: simSuccess, real });
  }
  return rowsByType(policy, group, outcomes);
}

/** False-success rows per task type (and 'all' when there are several types). */
function rowsByType(policy: string, group: FalseSuccessRow['tasks'], outcomes: readonly { type: string; sim: boolean; real: boolean }[]): FalseSuccessRow[] {
  const byType = new Map<string, { n: number; sim: number; real: number }>();
  for (const o of outcomes) {
    const s = byType.get(o.type) ?? { n: 0, sim: 0, real: 0 };
    s.n++;
    if (o.sim) s.sim++;
    if (o.real) s.real++;
    byType.set(o.type, s);
  }
  const rows: FalseSuccessRow[] = [];
  let all = { n: 0, sim: 0, real: 0 };
  for (const [type, s] of [...byType].sort(([a], [b]) => a.localeCompare(b))) {
    rows.push({ policy, tasks: group, taskType: type, episodes: s.n, simSuccess: s.sim / s.n, realSuccess: s.real / s.n });
    all = { n: all.n + s.n, sim: all.sim + s.sim, real: all.real + s.real };
  }
  if (byType.size > 1) rows.push({ policy, tasks: group, taskType: 'all', episodes: all.n, simSuccess: all.sim / all.n, realSuccess: all.real / all.n });
  return rows;
}

/** One goal-blind policy's choice in an episode; undefined when it has none. */
type EpisodeActor = (instruction: string, history: readonly HistoryStep[], observation: Observation, rng: Rng) => Promise<string | undefined>;

/**
 * Stands in for the environment a goal-blind policy is handed: any use throws, so a policy
 * measured with it provably acts on its observations alone (the same inside the simulator and
 * in the real environment).
 */
const BLIND_ENVIRONMENT = new Proxy({} as RealEnvironment, {
  get: (_target, key) => {
    throw new Error(`a goal-blind policy read its environment (${String(key)}): it must act on observations only`);
  },
});

/**
 * The goal-blind policies measured: `scripted`, the scripted reference policy (see
 * `referencePolicy`); `demonstrator`, the environment's demonstrator (`EnvSpec.demonstrator`, the
 * rule behind the behaviour-cloning data; a fresh one per episode, handed an environment that
 * throws on any use).
 */
export type GoalBlindPolicy = 'scripted' | 'demonstrator';

/**
 * Success of a goal-blind policy (rows labelled `scripted:EPS` or `demonstrator:EPS`) taking a
 * random action with probability `eps`, inside the simulator and in the real environment, on the
 * same tasks. Unlike the noisy expert, which asks a shadow real environment what to do, such a
 * policy acts only on what it is shown, so inside the simulator it follows the simulated world:
 * a place whose contents the data never showed is searched, not held against the model.
 * Simulated episodes start from the task's real first observation and end at the environment's
 * step limit.
 */
export async function measureGoalBlindFalseSuccess(
  spec: AnyEnvSpec,
  model: ExperienceModel,
  tasks: readonly Task[],
  which: GoalBlindPolicy,
  eps: number,
  seed: number,
  group: FalseSuccessRow['tasks'],
  demos?: DemoSource,
): Promise<FalseSuccessRow[]> {
  if (!(eps >= 0 && eps <= 1)) throw new RangeError(`eps must be in [0, 1], got ${eps}`);
  const actorFor = goalBlindActors(spec, which);
  const policy = `${which}:${eps}`;
  const env = spec.create();
  const outcomes: { type: string; sim: boolean; real: boolean }[] = [];
  // One episode of the noisy policy, stepping through `step` (the real environment or the model).
  const play = async (task: Task, side: 'real' | 'sim', first: Observation, step: (history: readonly HistoryStep[], observation: Observation, action: string) => Promise<{ observation: Observation; done: boolean; reward: number }>): Promise<boolean> => {
    const rng = new Rng(seed ^ hashString(`false-success:${policy}:${group}:${task.id}:${side}`));
    const act = actorFor();
    const history: HistoryStep[] = [];
    let observation = first;
    for (let t = 0; t < spec.maxSteps; t++) {
      if (observation.actions.length === 0) return false;
      const chosen = await act(task.instruction, history, observation, rng);
      const action = !rng.chance(eps) && chosen !== undefined && isAdmissible(observation, chosen, new Set(spec.freeTextActions)) ? chosen : rng.pick(observation.actions);
      const r = await step(history, observation, action);
      history.push({ observation, action });
      if (r.done) return r.reward >= 0.999;
      observation = r.observation;
    }
    return false;
  };
  for (const task of tasks) {
    const first = env.reset(task);
    const real = await play(task, 'real', first, async (_h, _o, action) => env.step(action));
    const visible = agentView(task);
    const sim = await play(task, 'sim', spec.create().reset(task), async (history, observation, action) =>
      model.step({ task: visible, history: history.slice(), observation, action, demos: demos ? await demos(observation, action, 3) : [] }),
    );
    outcomes.push({ type: taskType(task), sim, real });
  }
  return rowsByType(policy, group, outcomes);
}

/** An actor for each episode of a goal-blind policy of `spec` (see {@link GoalBlindPolicy}). */
function goalBlindActors(spec: AnyEnvSpec, policy: GoalBlindPolicy): () => EpisodeActor {
  if (policy === 'scripted') {
    const actor = referencePolicy(spec.name);
    const act: EpisodeActor = async (instruction, history, observation) => (await actor.choose([{ instruction, history: history.map((h) => ({ action: h.action, observation: h.observation })), observation }]))[0];
    return () => act;
  }
  const make = spec.demonstrator;
  if (!make) throw new RangeError(`environment ${spec.name} has no demonstrator`);
  return () => {
    const demonstrator = make.call(spec);
    return async (_instruction, _history, observation, rng) => demonstrator(BLIND_ENVIRONMENT, observation, rng);
  };
}
