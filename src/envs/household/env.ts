/**
 * The household environment: an ALFWorld-like text world with a rule-based expert.
 */
import type { Observation, RealEnvironment, StepResult, Task } from '../../core/types.ts';
import { EnvironmentStateError, InvalidTaskError } from '../../core/types.ts';
import { admissibleActions, applyAction, invalidReason, normalizeAction } from './actions.ts';
import { expertAction } from './expert.ts';
import type { HouseholdGoal } from './goal.ts';
import { HouseholdGoalSchema, goalSatisfied, instructionFor } from './goal.ts';
import { generateLayout } from './layout.ts';
import type { HouseholdState } from './state.ts';
import { cloneState, initialState } from './state.ts';
import { validateHouseholdTask } from './tasks.ts';
import { observationText, roomSentence } from './text.ts';

/** Step limit of a household episode (as in ALFWorld agent-RL setups). */
export const HOUSEHOLD_MAX_STEPS = 50;

interface Episode {
  readonly taskId: string;
  readonly goal: HouseholdGoal;
  readonly instruction: string;
  readonly state: HouseholdState;
  steps: number;
  done: boolean;
}

/**
 * An ALFWorld-like household. Observations state the task first, then what the last action did,
 * then a compact line with the agent's location, what it sees there and what it holds.
 * The instruction shown is generated from the goal, so it always matches what is rewarded.
 */
export class HouseholdEnv implements RealEnvironment {
  readonly name = 'household' as const;
  readonly maxSteps = HOUSEHOLD_MAX_STEPS;
  private episode: Episode | null = null;

  /** Starts an episode; throws InvalidTaskError if `task` is not a valid household task. */
  reset(task: Task): Observation {
    const validation = validateHouseholdTask(task);
    if (!validation.ok) throw new InvalidTaskError(String((task as { id?: unknown } | null)?.id ?? ''), validation.reason);
    const goal = HouseholdGoalSchema.parse(task.goal);
    const state = initialState(generateLayout(goal.layoutSeed));
    const instruction = instructionFor(goal);
    this.episode = { taskId: task.id, goal, instruction, state, steps: 0, done: false };
    return {
      text: observationText(instruction, `You are in the middle of a room. ${roomSentence(state.layout)}`, state),
      actions: admissibleActions(state),
    };
  }

  /**
   * Applies `action` (case, spacing and a final period are forgiven; "put X in Y" and
   * "put X on Y" mean "put X in/on Y"). An inadmissible action changes nothing, says
   * "Nothing happens." and returns `info.valid = false`; it still counts as a step.
   */
  step(action: string): StepResult {
    const ep = this.active('step');
    ep.steps++;
    const normalized = normalizeAction(typeof action === 'string' ? action : String(action));
    const admissible = admissibleActions(ep.state);
    const valid = admissible.includes(normalized);
    const feedback = valid ? applyAction(ep.state, normalized) : 'Nothing happens.';
    const reason = valid ? undefined : `invalid action: ${invalidReason(ep.state, normalized)}`;
    const text = observationText(ep.instruction, feedback, ep.state);
    // An invalid action changes nothing, and the goal did not hold before it.
    if (valid && goalSatisfied(ep.state, ep.goal)) {
      ep.done = true;
      return { observation: { text, actions: [] }, reward: 1, done: true, info: { valid, success: true, message: 'The task is complete.' } };
    }
    if (ep.steps >= this.maxSteps) {
      ep.done = true;
      const limit = `the ${this.maxSteps}-step limit is reached without completing the task`;
      return {
        observation: { text, actions: [] },
        reward: 0,
        done: true,
        info: { valid, success: false, message: reason === undefined ? limit : `${reason}; ${limit}` },
      };
    }
    const info = reason === undefined ? { valid } : { valid, message: reason };
    return { observation: { text, actions: valid ? admissibleActions(ep.state) : admissible }, reward: 0, done: false, info };
  }

  /** The expert's next action from the true state; always one of the current observation's actions. */
  expertAction(): string {
    const ep = this.active('expertAction');
    const action = expertAction(ep.state, ep.goal);
    // A broken expert would silently poison offline data; fail loudly instead.
    if (!admissibleActions(ep.state).includes(action)) {
      throw new Error(`household expert chose inadmissible ${JSON.stringify(action)} in task ${ep.taskId}`);
    }
    return action;
  }

  /** A copy of the true state (for tests and tools); throws before the first reset. */
  snapshot(): HouseholdState {
    if (!this.episode) throw new EnvironmentStateError('household: snapshot() called before reset()');
    return cloneState(this.episode.state);
  }

  /** The current episode's goal; throws before the first reset. */
  get goal(): HouseholdGoal {
    if (!this.episode) throw new EnvironmentStateError('household: goal read before reset()');
    return this.episode.goal;
  }

  /** Steps taken in the current episode (0 before the first reset). */
  get stepsTaken(): number {
    return this.episode?.steps ?? 0;
  }

  private active(what: string): Episode {
    if (!this.episode) throw new EnvironmentStateError(`household: ${what}() called before reset()`);
    if (this.episode.done) throw new EnvironmentStateError(`household: ${what}() called after the episode ended; call reset() first`);
    return this.episode;
  }
}
