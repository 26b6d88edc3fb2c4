/**
 * Trivial simulators that a real experience model must beat for its fidelity figures to mean
 * anything (DESIGN.md §4): they are yardsticks for `npx dreamgym fidelity`, never used to train.
 * - `echo`: the next state is the current state; reward 0; never done.
 * - `majority`: the next state is the current state; reward and done are the most frequent
 *   outcome of the action's kind in the data (the exact action when it occurred at least five
 *   times, else its template), e.g. "this action ends with reward 1".
 * Both apply the shared admissibility rule, like every experience model, with the free-text
 * actions the environment declares (and, for `majority`, those its data shows).
 */
import type { AgentTask, Observation } from '../core/types.ts';
import { isAdmissible, learnFreeTextActions, type FreeTextActions } from './admissible.ts';
import { EPISODE_OVER_TEXT, type RealTransition } from './retrieval/model.ts';
import { actionTemplate } from './retrieval/substitution.ts';
import type { Demonstration, ExperienceModel, ExperienceStep, ExperienceStepRequest } from './types.ts';

function invalidStep(observation: Observation, action: string): ExperienceStep {
  return {
    reasoning: `"${action}" is not admissible here.`,
    observation: { text: `Invalid action: ${action} is not admissible here.\n${observation.text}`, actions: observation.actions.slice() },
    reward: 0,
    done: false,
    valid: false,
  };
}

/** Next state = current state, reward 0, never done. */
export class EchoExperienceModel implements ExperienceModel {
  readonly kind = 'echo';
  private readonly freeText: FreeTextActions;

  constructor(freeTextActions: readonly string[] = []) {
    this.freeText = new Set(freeTextActions);
  }

  /** Knows no first state: the instruction alone. */
  async reset(task: AgentTask, _demos: readonly Demonstration[] = []): Promise<Observation> {
    return { text: task.instruction, actions: [] };
  }

  async step({ observation, action }: ExperienceStepRequest): Promise<ExperienceStep> {
    const a = action.trim();
    if (!isAdmissible(observation, a, this.freeText)) return invalidStep(observation, a);
    return { reasoning: 'echo: nothing changes.', observation: { text: observation.text, actions: observation.actions.slice() }, reward: 0, done: false, valid: true };
  }
}

/** Next state = current state; reward and done = the most frequent outcome of the action's kind. */
export class MajorityRuleExperienceModel implements ExperienceModel {
  readonly kind = 'majority';
  private readonly outcomes = new Map<string, { reward: number; done: boolean }>();
  private readonly freeText: FreeTextActions;

  constructor(transitions: readonly RealTransition[], freeTextActions: readonly string[] = []) {
    this.freeText = new Set([...freeTextActions, ...learnFreeTextActions(transitions.map((t) => ({ observation: t.state, action: t.action, valid: t.valid })))]);
    const counts = new Map<string, Map<string, number>>();
    for (const t of transitions) {
      if (!t.valid) continue;
      const outcome = `${Math.round(t.reward * 20) / 20}|${t.done && !t.next ? 1 : 0}`;
      for (const key of [`a:${t.action}`, `t:${actionTemplate(t.action).template}`]) {
        const m = counts.get(key) ?? counts.set(key, new Map()).get(key);
        m?.set(outcome, (m.get(outcome) ?? 0) + 1);
      }
    }
    for (const [key, m] of counts) {
      let total = 0;
      let best: [string, number] = ['0|0', -1];
      for (const entry of m) {
        total += entry[1];
        if (entry[1] > best[1]) best = entry;
      }
      if (key.startsWith('a:') && total < 5) continue;
      const [reward, done] = best[0].split('|');
      this.outcomes.set(key, { reward: Number(reward), done: done === '1' });
    }
  }

  /** Knows no first state: the instruction alone. */
  async reset(task: AgentTask): Promise<Observation> {
    return { text: task.instruction, actions: [] };
  }

  async step({ observation, action }: ExperienceStepRequest): Promise<ExperienceStep> {
    const a = action.trim();
    if (!isAdmissible(observation, a, this.freeText)) return invalidStep(observation, a);
    const o = this.outcomes.get(`a:${a}`) ?? this.outcomes.get(`t:${actionTemplate(a).template}`) ?? { reward: 0, done: false };
    return {
      reasoning: 'majority outcome of this kind of action in the data.',
      observation: o.done ? { text: EPISODE_OVER_TEXT, actions: [] } : { text: observation.text, actions: observation.actions.slice() },
      reward: o.done ? o.reward : 0,
      done: o.done,
      valid: true,
    };
  }
}
