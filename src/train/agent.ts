/**
 * The acting side of the trainable policy: turns what the agent sees (instruction, actions so
 * far, observation) into decisions through a {@link Featurizer} and an optional prior, and lets
 * the trainer's head choose, for many episodes at once (one batched forward pass per step of
 * all running episodes). Rollouts, evaluation and the page all act through this.
 */
import type { Rng } from '../core/rng.ts';
import type { Observation } from '../core/types.ts';
import type { ActionPrior } from '../llm/prior.ts';
import type { Featurizer } from '../policy/features.ts';
import type { Decision } from '../policy/input.ts';
import type { Trainer } from '../rl/trainer.ts';

/** What the agent sees at one decision. */
export interface AgentContext {
  instruction: string;
  /** Earlier actions of this episode, oldest first, with the observation each was taken on. */
  history: readonly { action: string; observation?: Observation }[];
  observation: Observation;
}

/** The choices for a batch of contexts. */
export interface AgentChoice {
  /** The decision the head scored (kept for the update). */
  decision: Decision;
  /** Index of the chosen action in `observation.actions`. */
  index: number;
  action: string;
  /** log pi(action | state) under the current policy. */
  logProb: number;
}

/** A policy that acts: the trainer's head over featurized states, plus a prior. */
export class PolicyAgent {
  constructor(
    readonly trainer: Trainer,
    readonly featurizer: Featurizer,
    readonly prior: ActionPrior | null = null,
  ) {}

  /** Featurizes contexts into decisions (with the prior's log-probabilities when there is one). */
  async decisions(contexts: readonly AgentContext[]): Promise<Decision[]> {
    const priors = this.prior ? await Promise.all(contexts.map((c) => (this.prior as ActionPrior).score(c))) : undefined;
    return this.featurizer.decisions(contexts, priors);
  }

  /** Chooses one action per context: sampled with `rng`, or greedy. */
  async choose(contexts: readonly AgentContext[], options: { greedy: boolean; rng?: Rng }): Promise<AgentChoice[]> {
    if (contexts.length === 0) return [];
    const decisions = await this.decisions(contexts);
    const result = await this.trainer.act(decisions, options.greedy ? { greedy: true } : { rng: options.rng });
    return contexts.map((c, i) => {
      const index = result.actions[i] as number;
      const action = c.observation.actions[index];
      if (action === undefined) throw new RangeError(`the policy chose candidate ${index} of ${c.observation.actions.length}`);
      return { decision: decisions[i] as Decision, index, action, logProb: result.logProbs[i] as number };
    });
  }
}
