/**
 * The experience-model interface: what stands in for the real environment during synthetic
 * rollouts (DreamGym's M_exp). Two backends implement it: the LLM experience model (prompted
 * local LLM, grounded by retrieved demonstrations) and the retrieval experience model (no LLM:
 * nearest stored real transitions plus a learned reward model).
 */
import type { AgentTask, Observation } from '../core/types.ts';

/** A stored real transition retrieved from the replay buffer to ground the experience model. */
export interface Demonstration {
  /** State text before the action. */
  state: string;
  action: string;
  /** State text after the action. */
  nextState: string;
  /** Admissible actions in `nextState`. */
  nextActions: string[];
  reward: number;
  done: boolean;
  /** Whether the action was admissible. */
  valid: boolean;
  /** Cosine similarity to the query, when retrieved by embedding. */
  score?: number;
}

/** One earlier step of the current synthetic episode. */
export interface HistoryStep {
  observation: Observation;
  action: string;
}

/** What the experience model is asked to predict: the outcome of `action` in `observation`. */
export interface ExperienceStepRequest {
  /** What the agent sees of the task (never its goal: see `agentView`). */
  task: AgentTask;
  /** Earlier steps of this episode, oldest first (excluding the current one). */
  history: readonly HistoryStep[];
  observation: Observation;
  action: string;
  /** Top-k retrieved demonstrations for (observation, action). */
  demos: readonly Demonstration[];
}

/**
 * How well the recorded data supports one synthetic transition. A step whose support is too weak
 * is `unknown`: the episode halts there without success, so a policy cannot profit from what the
 * simulator made up.
 */
export interface StepGrounding {
  /** Estimated probability, calibrated on held-out recorded episodes, that the predicted outcome is what the real environment would do. */
  support: number;
  /** Whether the support fell below the calibrated threshold (the step halted its episode). */
  unknown: boolean;
  /** Whether the support fell below the threshold but not far enough to halt: the episode went on and the step paid part of the halting penalty. */
  doubtful?: boolean;
}

/** The predicted outcome: reasoning first, then the next state, reward and done. */
export interface ExperienceStep {
  reasoning: string;
  observation: Observation;
  reward: number;
  done: boolean;
  valid: boolean;
  /** The data's support for this step, when the backend measures it. */
  grounding?: StepGrounding;
}

/** An environment simulator used for synthetic rollouts. */
export interface ExperienceModel {
  /** Identifies the backend in metrics and trajectories ('llm', 'retrieval'). */
  readonly kind: string;
  /**
   * The first observation of an episode on `task`, for tasks without a recorded first
   * observation (generated ones); `demos` are retrieved initial states. A seed task's first
   * observation comes from its recorded data, not from here.
   */
  reset(task: AgentTask, demos: readonly Demonstration[]): Promise<Observation>;
  /** Predicts the outcome of one action. Never returns a half-formed step: it resolves or throws a typed error. */
  step(request: ExperienceStepRequest): Promise<ExperienceStep>;
}
