/**
 * The retrieval experience model: no LLM, no download. It stands in for the environment using
 * only stored real transitions:
 * - next state: the stored transition with the same (state, action) if there is one, else the
 *   nearest stored transition with the same action verb (cosine similarity of the embedding of
 *   state + action), with its entities rewritten for the new task and action;
 * - validity: the action must be one of the state's admissible actions (a listed `search[...]`
 *   accepts any query, as in the abstract state format);
 * - reward and done: a small classifier learned on the offline data (`reward-model.ts`), plus
 *   the rate at which each action template ended episodes in the data.
 *
 * It never imports or calls an environment's code (a test checks the import graph), so where
 * the data does not cover a situation its predictions are wrong: a real sim-to-real gap.
 */
import { transitionText, type Embedder } from '../core/embedding.ts';
import type { Observation, Task, Trajectory } from '../core/types.ts';
import { RetrievalIndex } from '../replay/retrieval.ts';
import { isAdmissible } from './admissible.ts';
import { RewardModel, type RewardExample, type RewardModelConfig } from './reward-model.ts';
import { actionTemplate, actionVerb, applySubstitution, buildSubstitution } from './substitution.ts';
import type { Demonstration, ExperienceModel, ExperienceStep, ExperienceStepRequest } from './types.ts';

/** One real transition the model learns from. `next` is null after an episode's last step. */
export interface RealTransition {
  task: Task;
  state: Observation;
  action: string;
  next: Observation | null;
  reward: number;
  done: boolean;
  valid: boolean;
}

/** Settings of the retrieval experience model. */
export interface RetrievalModelConfig {
  /** Neighbours examined per step. Default 8. */
  k: number;
  /** A template that ended at least this fraction of its episodes in the data ends episodes. Default 0.5. */
  terminalRate: number;
  /** Reward model training settings. */
  rewardModel: Partial<RewardModelConfig>;
}

export const DEFAULT_RETRIEVAL_MODEL_CONFIG: RetrievalModelConfig = { k: 8, terminalRate: 0.5, rewardModel: {} };

/** Text of the observation that follows an episode's last step (the data does not record it). */
export const EPISODE_OVER_TEXT = 'The episode is over.';

/** Thrown when the model is built from no usable data. */
export class RetrievalDataError extends Error {
  override name = 'RetrievalDataError';
}

interface VerbIndex {
  index: RetrievalIndex;
  /** Row seq -> transition position. */
  rows: number[];
}

/** Flattens trajectories into real transitions, pairing each with its task. Unknown tasks are an error. */
export function transitionsFromTrajectories(tasks: readonly Task[], trajectories: readonly Trajectory[]): RealTransition[] {
  const byId = new Map(tasks.map((t) => [t.id, t]));
  const out: RealTransition[] = [];
  for (const traj of trajectories) {
    const task = byId.get(traj.taskId);
    if (!task) throw new RetrievalDataError(`trajectory ${JSON.stringify(traj.id)} refers to unknown task ${JSON.stringify(traj.taskId)}`);
    traj.steps.forEach((step, i) => {
      const next = traj.steps[i + 1];
      out.push({
        task,
        state: step.observation,
        action: step.action,
        next: next ? next.observation : null,
        reward: step.reward,
        done: step.done,
        valid: step.valid,
      });
    });
  }
  return out;
}

/** An exact action needs this many occurrences before its own terminal rate is trusted. */
const MIN_EXACT_COUNT = 5;

const exactKey = (state: string, action: string): string => transitionText(state, action);

/** The DreamGym experience-model interface over nearest real transitions. */
export class RetrievalExperienceModel implements ExperienceModel {
  readonly kind = 'retrieval';
  private constructor(
    private readonly config: RetrievalModelConfig,
    private readonly embedder: Embedder,
    private readonly transitions: readonly RealTransition[],
    private readonly exact: ReadonlyMap<string, number>,
    private readonly verbs: ReadonlyMap<string, VerbIndex>,
    /** Episodes' first states, indexed by the embedding of their task instruction. */
    private readonly initial: { index: RetrievalIndex; states: RealTransition[] },
    /** How often an exact action, or an action template, ended its episode in the data. */
    private readonly terminalByTemplate: ReadonlyMap<string, { rate: number; count: number }>,
    private readonly binaryRewards: boolean,
    readonly rewardModel: RewardModel,
  ) {}

  /** Builds the model from real (offline) trajectories and their tasks. */
  static async fromTrajectories(
    tasks: readonly Task[],
    trajectories: readonly Trajectory[],
    embedder: Embedder,
    config: Partial<RetrievalModelConfig> = {},
  ): Promise<RetrievalExperienceModel> {
    const real = trajectories.filter((t) => t.source !== 'synthetic');
    return RetrievalExperienceModel.fromTransitions(transitionsFromTrajectories(tasks, real), embedder, config);
  }

  /** Builds the model from real transitions. */
  static async fromTransitions(
    transitions: readonly RealTransition[],
    embedder: Embedder,
    config: Partial<RetrievalModelConfig> = {},
  ): Promise<RetrievalExperienceModel> {
    const cfg = { ...DEFAULT_RETRIEVAL_MODEL_CONFIG, ...config };
    if (!(Number.isInteger(cfg.k) && cfg.k > 0)) throw new RangeError(`k must be a positive integer, got ${cfg.k}`);
    const usable = transitions.filter((t) => t.valid);
    if (usable.length === 0) throw new RetrievalDataError('the retrieval experience model needs at least one valid real transition');

    const exact = new Map<string, number>();
    const byVerb = new Map<string, number[]>();
    const terminal = new Map<string, { done: number; total: number }>();
    usable.forEach((t, i) => {
      const key = exactKey(t.state.text, t.action);
      if (t.next && !exact.has(key)) exact.set(key, i);
      const verb = actionVerb(t.action);
      (byVerb.get(verb) ?? byVerb.set(verb, []).get(verb))?.push(i);
      // Count both the exact action (`click[buy now]`) and its template (`click[{}]`).
      for (const key of [t.action, actionTemplate(t.action).template]) {
        const s = terminal.get(key) ?? { done: 0, total: 0 };
        s.total++;
        if (t.done && !t.next) s.done++;
        terminal.set(key, s);
      }
    });

    const vectors = await embedder.embed(usable.map((t) => transitionText(t.state.text, t.action)));
    const verbs = new Map<string, VerbIndex>();
    for (const [verb, positions] of byVerb) {
      const index = new RetrievalIndex(embedder.dim, { initialRows: positions.length });
      positions.forEach((pos, seq) => index.add({ seq, source: 'real', taskId: '', vector: vectors[pos] as Float32Array }));
      verbs.set(verb, { index, rows: positions });
    }

    // Initial states: the first step of each episode, keyed by the task instruction.
    const firstStates: RealTransition[] = [];
    const seenTasks = new Set<string>();
    for (const t of transitions) {
      if (seenTasks.has(t.task.id)) continue;
      seenTasks.add(t.task.id);
      firstStates.push(t);
    }
    const instrVectors = await embedder.embed(firstStates.map((t) => t.task.instruction));
    const initialIndex = new RetrievalIndex(embedder.dim, { initialRows: Math.max(1, firstStates.length) });
    firstStates.forEach((_, seq) => initialIndex.add({ seq, source: 'real', taskId: '', vector: instrVectors[seq] as Float32Array }));

    const rewardExamples: RewardExample[] = usable.map((t) => ({
      instruction: t.task.instruction,
      state: t.state.text,
      action: t.action,
      reward: Math.min(1, Math.max(0, t.reward)),
    }));
    const rewardModel = await RewardModel.train(rewardExamples, cfg.rewardModel);
    const binaryRewards = usable.every((t) => t.reward === 0 || t.reward === 1);
    const terminalByTemplate = new Map([...terminal].map(([key, s]) => [key, { rate: s.done / s.total, count: s.total }]));

    return new RetrievalExperienceModel(
      cfg,
      embedder,
      usable,
      exact,
      verbs,
      { index: initialIndex, states: firstStates },
      terminalByTemplate,
      binaryRewards,
      rewardModel,
    );
  }

  /** Transitions the model was built from (valid ones). */
  get size(): number {
    return this.transitions.length;
  }

  /** The stored first state whose task instruction is nearest, rewritten for `task`. */
  async reset(task: Task, _demos: readonly Demonstration[] = []): Promise<Observation> {
    const [query] = await this.embedder.embed([task.instruction]);
    const hits = this.safeSearch(this.initial.index, query as Float32Array, 1);
    const hit = hits[0];
    const source = this.initial.states[hit?.seq ?? 0];
    if (!source) throw new RetrievalDataError('no stored initial state');
    const sub = buildSubstitution(source.task, task);
    return {
      text: applySubstitution(source.state.text, sub),
      actions: source.state.actions.map((a) => applySubstitution(a, sub)),
    };
  }

  /** Predicts the outcome of `request.action`. Deterministic for the same inputs. */
  async step(request: ExperienceStepRequest): Promise<ExperienceStep> {
    const { task, observation } = request;
    // Surrounding whitespace does not change an action (as in `isAdmissible` and the real envs).
    const action = request.action.trim();
    if (!isAdmissible(observation, action)) {
      return {
        reasoning: `"${action}" is not among the admissible actions of the current state, so it has no effect.`,
        observation: {
          text: `Invalid action: ${action} is not admissible here.\n${observation.text}`,
          actions: observation.actions.slice(),
        },
        reward: 0,
        done: false,
        valid: false,
      };
    }

    const [predicted] = await this.rewardModel.predict([{ instruction: task.instruction, state: observation.text, action }]);
    const r = predicted ?? 0;
    const template = actionTemplate(action).template;
    const endsByAction = this.terminalRateOf(action, template) >= this.config.terminalRate;
    const success = r >= 0.5;
    const done = endsByAction || (this.binaryRewards && success);
    const reward = !done ? 0 : this.binaryRewards ? (success ? 1 : 0) : r >= 0.95 ? 1 : Math.round(r * 1000) / 1000;

    if (done) {
      return {
        reasoning: `"${template}" ${endsByAction ? 'ends episodes in the stored data' : 'completes the task according to the learned reward model'}; predicted reward ${r.toFixed(3)}.`,
        observation: { text: EPISODE_OVER_TEXT, actions: [] },
        reward,
        done: true,
        valid: true,
      };
    }

    const exactPos = this.exact.get(exactKey(observation.text, action));
    if (exactPos !== undefined) {
      const t = this.transitions[exactPos] as RealTransition;
      const sub = buildSubstitution(t.task, task);
      return this.outcome(t, sub, 'the same state and action occur in the stored data');
    }

    const neighbour = await this.nearest(observation.text, action, template);
    if (!neighbour || !neighbour.next) {
      return {
        reasoning: `no stored transition with a "${actionVerb(action)}" action continues an episode; the state is kept.`,
        observation: { text: observation.text, actions: observation.actions.slice() },
        reward: 0,
        done: false,
        valid: true,
      };
    }
    const sub = buildSubstitution(neighbour.task, task, neighbour.action, action);
    return this.outcome(neighbour, sub, `nearest stored transition "${neighbour.action}"`);
  }

  private outcome(t: RealTransition, sub: ReturnType<typeof buildSubstitution>, why: string): ExperienceStep {
    const next = t.next as Observation;
    return {
      reasoning: `${why}; its next state is reused with entities rewritten.`,
      observation: { text: applySubstitution(next.text, sub), actions: next.actions.map((a) => applySubstitution(a, sub)) },
      reward: 0,
      done: false,
      valid: true,
    };
  }

  /** The exact action's terminal rate when it was seen often enough, else its template's. */
  private terminalRateOf(action: string, template: string): number {
    const exact = this.terminalByTemplate.get(action);
    if (exact && exact.count >= MIN_EXACT_COUNT) return exact.rate;
    return this.terminalByTemplate.get(template)?.rate ?? 0;
  }

  /** The nearest continuing transition with the same verb, preferring one with the same action template. */
  private async nearest(state: string, action: string, template: string): Promise<RealTransition | undefined> {
    const verb = this.verbs.get(actionVerb(action));
    if (!verb) return undefined;
    const [query] = await this.embedder.embed([transitionText(state, action)]);
    const hits = this.safeSearch(verb.index, query as Float32Array, this.config.k);
    const candidates = hits.map((h) => this.transitions[verb.rows[h.seq] as number] as RealTransition).filter((t) => t.next);
    return candidates.find((t) => actionTemplate(t.action).template === template) ?? candidates[0];
  }

  private safeSearch(index: RetrievalIndex, query: Float32Array, k: number): { seq: number; score: number }[] {
    // A text without any word embeds to the zero vector, for which cosine similarity is undefined.
    if (!query.some((x) => x !== 0)) return [];
    return index.search([query], k)[0] ?? [];
  }

  /** Frees the reward model's tensors. */
  dispose(): void {
    this.rewardModel.dispose();
  }
}
