/**
 * Training on seed data alone, with no environment (`train --data FILE`): the experience model is
 * grounded on the data only, the loop trains purely in simulation, and the policy is evaluated on
 * held-out seed tasks in the synthetic environment. A synthetic success rate is what the
 * experience model says happened, not what a real environment would: every figure from here is
 * labelled as such.
 *
 * The split is by task: a held-out task's trajectories never ground the experience model (so
 * evaluation cannot replay them); only their first observation, the state an episode starts in,
 * is used to start the held-out episode.
 */
import { hashString } from '../core/rng.ts';
import { agentView, type Observation, type Task, type Trajectory } from '../core/types.ts';
import type { AnyEnvSpec } from '../envs/spec.ts';
import type { Demonstration, ExperienceModel } from '../experience/types.ts';
import { bootstrapInterval, type EvalActor, type EvalContext, type EvalResult, type EpisodeOutcome, type Interval } from './evaluate.ts';
import { recordedEpisodes, type RecordedAgreement, type RecordedEpisode } from './selection.ts';
import type { OfflineData } from './loop.ts';

/** Fewest seed tasks (with trajectories) that ground the experience model. */
export const MIN_GROUNDING_TASKS = 10;
/** Fewest held-out seed tasks evaluated on. */
export const MIN_HELD_OUT_TASKS = 5;
/** Share of the seed tasks held out for evaluation (at least {@link MIN_HELD_OUT_TASKS}). */
export const HELD_OUT_SHARE = 0.2;
/**
 * Share of the other seed tasks whose recorded successes are held out for model selection: taken
 * only where that gives at least {@link MIN_RECORDED} tasks and leaves {@link MIN_GROUNDING_TASKS}
 * to ground the model.
 */
export const SELECTION_SHARE = 0.1;

/** Thrown when seed data cannot carry a data-only run; the message names what is missing and how much is needed. */
export class SeedDataError extends Error {
  override name = 'SeedDataError';
}

/** How a data-only run uses its seed data. */
export interface SeedDataPlan {
  /** The data's one domain. */
  domain: string;
  /** What grounds the experience model and behaviour cloning (its recorded episodes, weighed by `sft.cloning`). */
  grounding: OfflineData;
  /** Held-out tasks, evaluated in the synthetic environment. */
  heldOut: Task[];
  /** The first observation of each held-out task (where its episode starts). */
  heldOutStarts: Map<string, Observation>;
  /** The held-out tasks' recorded successes (the policy's replay of them estimates its real success; see `syntheticTrust`). */
  heldOutRecorded: RecordedEpisode[];
  /** The longest recorded episode: the synthetic episodes' step limit. */
  maxSteps: number;
  counts: SeedDataCounts;
}

/** What the summary says about the data. */
export interface SeedDataCounts {
  groundingTasks: number;
  groundingTrajectories: number;
  groundingTransitions: number;
  heldOutTasks: number;
  heldOutTrajectories: number;
  /** Tasks whose recorded successes are held out for model selection (neither grounding nor evaluation). */
  selectionTasks: number;
}

const sample = (ids: readonly string[]): string => `${ids.slice(0, 3).map((id) => JSON.stringify(id)).join(', ')}${ids.length > 3 ? `, and ${ids.length - 3} more` : ''}`;

/**
 * Checks seed data for a data-only run and splits it by task (deterministic for `seed`). Throws a
 * {@link SeedDataError} for: no data, more than one domain, tasks without a trajectory,
 * trajectories without a task, fewer tasks than {@link MIN_GROUNDING_TASKS} +
 * {@link MIN_HELD_OUT_TASKS}, or no successful trajectory among those that ground the model.
 */
export function planSeedData(tasks: readonly Task[], trajectories: readonly Trajectory[], seed: number): SeedDataPlan {
  if (tasks.length === 0) throw new SeedDataError(`the data holds no tasks: a data-only run needs at least ${MIN_GROUNDING_TASKS + MIN_HELD_OUT_TASKS} seed tasks, each with at least one trajectory`);
  const domains = new Map<string, number>();
  for (const r of [...tasks, ...trajectories]) domains.set(r.env, (domains.get(r.env) ?? 0) + 1);
  if (domains.size > 1) {
    throw new SeedDataError(`the data mixes domains (${[...domains].map(([d, n]) => `${d}: ${n} records`).join(', ')}): a data-only run trains on one domain; split the file by domain`);
  }
  const domain = tasks[0]!.env;
  // Synthetic rollouts (a run's export) show what a simulator said, not what happened: they ground nothing.
  if (trajectories.length > 0 && trajectories.every((t) => t.source === 'synthetic')) {
    throw new SeedDataError(`all ${trajectories.length} trajectories are synthetic (source "synthetic", a simulator's rollouts): the experience model is grounded on recorded real episodes only; add offline or real trajectories (dreamgym data, or a run's real rollouts)`);
  }
  const seedTasks = tasks.filter((t) => t.origin === 'seed');
  const byTask = new Map<string, Trajectory[]>();
  for (const t of seedTasks) byTask.set(t.id, []);
  const known = new Set(tasks.map((t) => t.id));
  const orphans = trajectories.filter((t) => !known.has(t.taskId));
  if (orphans.length > 0) throw new SeedDataError(`${orphans.length} trajectories have no task in the data (${sample(orphans.map((t) => t.id))}): add their tasks, or drop them`);
  for (const t of trajectories) byTask.get(t.taskId)?.push(t);
  const bare = seedTasks.filter((t) => (byTask.get(t.id) ?? []).length === 0);
  if (bare.length > 0) {
    throw new SeedDataError(`${bare.length} of ${seedTasks.length} seed tasks have no trajectory (${sample(bare.map((t) => t.id))}): without an environment every seed task needs at least one recorded trajectory (its start state and outcome); add them, or drop those tasks`);
  }
  const need = MIN_GROUNDING_TASKS + MIN_HELD_OUT_TASKS;
  if (seedTasks.length < need) {
    throw new SeedDataError(`the data has ${seedTasks.length} seed tasks with trajectories: a data-only run needs at least ${need} (${MIN_GROUNDING_TASKS} to ground the experience model, ${MIN_HELD_OUT_TASKS} held out for evaluation)`);
  }
  // Deterministic split by task: order by a hash of (seed, id), hold out the first share.
  const order = [...seedTasks].sort((a, b) => hashString(`${seed}:${a.id}`) - hashString(`${seed}:${b.id}`) || (a.id < b.id ? -1 : 1));
  const nHeld = Math.max(MIN_HELD_OUT_TASKS, Math.round(HELD_OUT_SHARE * seedTasks.length));
  const heldOut = order.slice(0, nHeld);
  // Model selection gets recorded successes of its own, where the data is large enough to spare them (see `validation.criterion`).
  const rest = order.slice(nHeld);
  const succeeded = rest.filter((t) => (byTask.get(t.id) ?? []).some((tr) => tr.success && tr.source !== 'synthetic'));
  const nSelection = Math.round(SELECTION_SHARE * rest.length);
  const spare = nSelection >= MIN_RECORDED && rest.length - nSelection >= MIN_GROUNDING_TASKS && succeeded.length > nSelection;
  const selected = new Set(spare ? succeeded.slice(-nSelection).map((t) => t.id) : []);
  const grounding = rest.filter((t) => !selected.has(t.id));
  const selectionTasks = rest.filter((t) => selected.has(t.id));
  const groundingTrajectories = grounding.flatMap((t) => byTask.get(t.id) ?? []);
  const recordedGrounding = groundingTrajectories.filter((t) => t.source !== 'synthetic');
  const successes = recordedGrounding.filter((t) => t.success);
  if (successes.length === 0) {
    throw new SeedDataError(`none of the ${groundingTrajectories.length} trajectories that ground the experience model succeeds: it could never show the policy a success; add successful trajectories (at least one; more is better)`);
  }
  const heldOutStarts = new Map<string, Observation>();
  for (const t of heldOut) {
    const first = (byTask.get(t.id) ?? []).find((tr) => tr.steps.length > 0)?.steps[0]?.observation;
    if (first) heldOutStarts.set(t.id, first);
  }
  const all = [...byTask.values()].flat();
  return {
    domain,
    grounding: {
      tasks: grounding,
      trajectories: groundingTrajectories,
      // Every recorded episode is a cloning candidate, as in a recorded-log run: `sft.cloning` weighs them (reward-weighted cloning learns from partly right failures too).
      expertIds: new Set(recordedGrounding.map((t) => t.id)),
      extraTasks: [],
      ...(selectionTasks.length > 0 ? { selection: { tasks: selectionTasks, trajectories: selectionTasks.flatMap((t) => byTask.get(t.id) ?? []) } } : {}),
    },
    heldOut,
    heldOutStarts,
    heldOutRecorded: recordedEpisodes(heldOut, heldOut.flatMap((t) => byTask.get(t.id) ?? [])),
    maxSteps: Math.max(1, ...all.map((t) => t.steps.length)),
    counts: {
      groundingTasks: grounding.length,
      groundingTrajectories: groundingTrajectories.length,
      groundingTransitions: groundingTrajectories.reduce((n, t) => n + t.steps.length, 0),
      heldOutTasks: heldOut.length,
      heldOutTrajectories: heldOut.reduce((n, t) => n + (byTask.get(t.id) ?? []).length, 0),
      selectionTasks: selectionTasks.length,
    },
  };
}

/**
 * The spec of a domain known only from data: its name and step limit. There is no real
 * environment, so creating one, asking for tasks or validating one throws: a data-only run must
 * never reach the real environment, and this makes any path that would say so.
 */
export function dataOnlySpec(domain: string, maxSteps: number): AnyEnvSpec {
  const none = (what: string): never => {
    throw new SeedDataError(`no real environment for ${JSON.stringify(domain)}: this run trains on seed data alone (${what})`);
  };
  return {
    name: domain,
    description: `${domain}: seed data only, no environment`,
    maxSteps,
    create: () => none('create'),
    tasks: () => none('tasks'),
    validateTask: () => ({ ok: false, reason: 'no environment to check the task against' }),
  };
}

/** Options of {@link evaluateSynthetic}. */
export interface SyntheticEvalOptions {
  maxSteps: number;
  /** Top-k real transitions for the experience model (the LLM model uses them). */
  demos?: ((observation: Observation, action: string) => Promise<Demonstration[]>) | null;
  onProgress?: (done: number, total: number) => void;
  signal?: AbortSignal;
}

/** {@link evaluateSynthetic}'s result: `evaluate`'s shape, and what the simulator said of its own steps. */
export interface SyntheticEvalResult extends EvalResult {
  /** Simulator steps taken, how many of them carried the simulator's grounding, and how many of those it called unknown or doubtful. */
  grounding: { steps: number; reported: number; unknown: number; doubtful: number };
}

/**
 * Runs each held-out task once, greedily, inside the experience model (no real environment):
 * success when an episode ends with reward 1, as the synthetic phases count it. The result has
 * the shape of `evaluate`'s, with `realSteps` 0; callers must label it synthetic.
 */
export async function evaluateSynthetic(actor: EvalActor, experience: ExperienceModel, tasks: readonly Task[], starts: ReadonlyMap<string, Observation>, options: SyntheticEvalOptions): Promise<SyntheticEvalResult> {
  if (tasks.length === 0) throw new RangeError('evaluateSynthetic: no tasks to evaluate');
  interface Running {
    task: Task;
    observation: Observation;
    history: { observation: Observation; action: string }[];
    reward: number;
    done: boolean;
    success: boolean;
  }
  const episodes: Running[] = [];
  for (const task of tasks) {
    const observation = starts.get(task.id) ?? (await experience.reset(agentView(task), []));
    episodes.push({ task, observation, history: [], reward: 0, done: false, success: false });
  }
  let finished = 0;
  const grounding = { steps: 0, reported: 0, unknown: 0, doubtful: 0 };
  for (let t = 0; t < options.maxSteps; t++) {
    if (options.signal?.aborted) throw options.signal.reason ?? new DOMException('evaluation aborted', 'AbortError');
    const running = episodes.filter((e) => !e.done && e.observation.actions.length > 0);
    if (running.length === 0) break;
    const contexts: EvalContext[] = running.map((e) => ({ instruction: e.task.instruction, history: e.history.map((h) => ({ action: h.action, observation: h.observation })), observation: e.observation }));
    const actions = await actor.choose(contexts);
    for (let i = 0; i < running.length; i++) {
      const e = running[i]!;
      const action = actions[i]!;
      const demos = options.demos ? await options.demos(e.observation, action) : [];
      const r = await experience.step({ task: agentView(e.task), history: e.history.slice(), observation: e.observation, action, demos });
      grounding.steps++;
      if (r.grounding) {
        grounding.reported++;
        if (r.grounding.unknown) grounding.unknown++;
        else if (r.grounding.doubtful) grounding.doubtful++;
      }
      e.history.push({ observation: e.observation, action });
      e.reward += r.reward;
      e.observation = r.observation;
      if (r.done) {
        e.done = true;
        e.success = r.reward >= 0.999;
        options.onProgress?.(++finished, tasks.length);
      }
    }
  }
  const perTask: EpisodeOutcome[] = episodes.map((e) => ({ taskId: e.task.id, success: e.success, reward: e.done ? e.reward : 0, steps: e.history.length }));
  const success = bootstrapInterval(perTask.map((o) => (o.success ? 1 : 0)));
  const reward = bootstrapInterval(perTask.map((o) => o.reward));
  return { episodes: perTask.length, successRate: success.mean, meanReward: reward.mean, success, reward, perTask, realSteps: 0, grounding };
}

/** Above this share of unknown or doubtful steps the synthetic figure rests on too little data to rank policies by. */
export const THIN_GROUNDING = 0.2;
/** Fewest held-out recorded successes that give a replay estimate. */
export const MIN_RECORDED = 5;

/**
 * Why a synthetic evaluation cannot rank policies: the simulator reports no grounding (its figure
 * may rest on what it made up), reports too many unknown or doubtful steps, the held-out data holds too few
 * recorded successes for an estimate, or the simulator's figure is above anything the recorded
 * successes support (its interval lies wholly above the replay estimate's).
 */
export type TrustFlag = 'grounding-unreported' | 'grounding-thin' | 'few-recorded' | 'claim-above-recorded';

/** What a synthetic evaluation can be trusted for. */
export interface SyntheticTrust {
  /** Share of the evaluation's simulator steps the simulator called unknown; null when it reports no grounding. */
  unknownShare: number | null;
  /**
   * Share it called doubtful (answered, at a cost: the data supports them only weakly); absent
   * when it reports no grounding. Where steps are mostly doubtful, the figure rests on guesses as
   * surely as where they halt.
   */
  doubtfulShare?: number;
  /**
   * The policy's greedy replay of the held-out tasks' recorded successes: the share it reproduces
   * step for step, a real success wherever the environment repeats itself, so an estimate of
   * real success from below; null under {@link MIN_RECORDED} recorded successes.
   */
  recorded: { episodes: number; replayed: Interval; agreement: number } | null;
  flags: TrustFlag[];
}

/** What `result` (a synthetic evaluation) and the policy's replay of held-out recorded successes (`replay`, when there were any) can be trusted for. */
export function syntheticTrust(result: Pick<SyntheticEvalResult, 'success' | 'grounding'>, replay: RecordedAgreement | null): SyntheticTrust {
  const { reported, unknown, doubtful } = result.grounding;
  const unknownShare = reported > 0 ? unknown / reported : null;
  const doubtfulShare = reported > 0 ? doubtful / reported : undefined;
  const recorded = replay && replay.episodes >= MIN_RECORDED ? { episodes: replay.episodes, replayed: replay.replayedInterval, agreement: replay.agreement } : null;
  const flags: TrustFlag[] = [];
  if (unknownShare === null) flags.push('grounding-unreported');
  else if (unknownShare + (doubtfulShare ?? 0) > THIN_GROUNDING) flags.push('grounding-thin');
  if (recorded === null) flags.push('few-recorded');
  else if (result.success.low > recorded.replayed.high) flags.push('claim-above-recorded');
  return { unknownShare, ...(doubtfulShare !== undefined ? { doubtfulShare } : {}), recorded, flags };
}

const pct = (x: number): string => `${(100 * x).toFixed(1)}%`;

/**
 * The trust of a synthetic evaluation in words: its grounding, its replay estimate, and what
 * limits it (`grounding: 12.0% of simulator steps unknown; recorded replay 40.0% [26.0%, 54.0%]
 * of 50 held-out recorded successes (an estimate of real success from below); the simulator's
 * figure is above what the recorded successes support`).
 */
export function trustPhrase(t: SyntheticTrust): string {
  const doubtful = t.doubtfulShare !== undefined && t.doubtfulShare > 0 ? `, ${pct(t.doubtfulShare)} doubtful` : '';
  const thin = t.flags.includes('grounding-thin') ? ` (too thin to rank by: over ${pct(THIN_GROUNDING)}${doubtful ? ' unknown or doubtful' : ''})` : '';
  const parts = [t.unknownShare === null ? 'grounding: not reported by this simulator' : `grounding: ${pct(t.unknownShare)} of simulator steps unknown${doubtful}${thin}`];
  parts.push(
    t.recorded === null
      ? `recorded replay: fewer than ${MIN_RECORDED} held-out recorded successes, no estimate`
      : `recorded replay ${pct(t.recorded.replayed.mean)} [${pct(t.recorded.replayed.low)}, ${pct(t.recorded.replayed.high)}] of ${t.recorded.episodes} held-out recorded successes (an estimate of real success from below)`,
  );
  if (t.flags.includes('claim-above-recorded')) parts.push("the simulator's figure is above what the recorded successes support");
  return parts.join('; ');
}

/** A data-only run's evaluation as the ranking reads it. */
export interface RankedEvaluation {
  id: string;
  trust: SyntheticTrust;
}

/**
 * Orders data-only runs by their replay estimates, or says why it cannot: a run without an
 * estimate cannot be placed, and neighbours whose intervals overlap cannot be told apart. The
 * replay runs no simulator, so thin grounding (which disqualifies the synthetic figure) does not
 * keep a run out. Returns the order (best first) and, one per pair or run, what cannot be ranked.
 */
export function rankSynthetic(runs: readonly RankedEvaluation[]): { order: string[]; cannot: string[] } {
  const cannot: string[] = [];
  const placed: RankedEvaluation[] = [];
  for (const r of runs) {
    if (r.trust.recorded === null) cannot.push(`${r.id}: no replay estimate (fewer than ${MIN_RECORDED} held-out recorded successes)`);
    else placed.push(r);
  }
  const est = (r: RankedEvaluation): Interval => (r.trust.recorded as NonNullable<SyntheticTrust['recorded']>).replayed;
  placed.sort((a, b) => est(b).mean - est(a).mean);
  for (let i = 0; i + 1 < placed.length; i++) {
    const [a, b] = [placed[i] as RankedEvaluation, placed[i + 1] as RankedEvaluation];
    if (est(b).high >= est(a).low) cannot.push(`${a.id} and ${b.id}: replay intervals overlap`);
  }
  return { order: placed.map((r) => r.id), cannot };
}
