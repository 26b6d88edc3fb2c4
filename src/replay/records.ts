/**
 * Conversions between the Foundation types (Trajectory, Step) and the stored records.
 */
import type { Step, Trajectory } from '../core/types.ts';
import type { TrajectoryRecord, TransitionRecord } from './schema.ts';

/** The transitions of one trajectory, seqs `firstStep ...`, with their embeddings. */
export function toTransitionRecords(runId: string, trajectory: Trajectory, firstStep: number, embeddings: readonly Float32Array[]): TransitionRecord[] {
  const steps = trajectory.steps;
  return steps.map((step, i) => {
    const next = steps[i + 1];
    const record: TransitionRecord = {
      runId,
      seq: firstStep + i,
      trajectoryId: trajectory.id,
      taskId: trajectory.taskId,
      source: trajectory.source,
      step: i,
      state: step.observation.text,
      actions: step.observation.actions,
      action: step.action,
      nextState: next ? next.observation.text : null,
      nextActions: next ? next.observation.actions : null,
      reward: step.reward,
      done: step.done,
      valid: step.valid,
      embedding: embeddings[i] as Float32Array,
    };
    if (step.reasoning !== undefined) record.reasoning = step.reasoning;
    return record;
  });
}

/** The step a transition stores (fields in schema order, `reasoning` only when present). */
export function stepOf(t: TransitionRecord): Step {
  const step: Step = {
    observation: { text: t.state, actions: t.actions },
    action: t.action,
    reward: t.reward,
    done: t.done,
    valid: t.valid,
  };
  if (t.reasoning !== undefined) step.reasoning = t.reasoning;
  return step;
}

/** Reassembles a trajectory from its header and its transitions in step order. */
export function trajectoryOf(header: TrajectoryRecord, transitions: readonly TransitionRecord[]): Trajectory {
  if (transitions.length !== header.length) {
    throw new Error(`trajectory ${JSON.stringify(header.id)} of run ${JSON.stringify(header.runId)} has ${transitions.length} stored steps, expected ${header.length}`);
  }
  return {
    id: header.id,
    taskId: header.taskId,
    env: header.env,
    source: header.source,
    steps: transitions.map(stepOf),
    reward: header.reward,
    success: header.success,
  };
}
