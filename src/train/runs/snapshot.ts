/**
 * How the page keeps a run's resume point in the replay store: the loop's {@link RunSnapshot}
 * becomes ONE checkpoint record of the run (policy weights and optimizer slots as tensors; the
 * pool, curriculum memory, counters and metrics history in its JSON config), so the policy and
 * the loop state it belongs to are written in one IndexedDB transaction and can never disagree.
 * The record is also a valid policy checkpoint for `fromRecord` (src/policy/replay-sink.ts).
 *
 * Per-iteration figures additionally go to the replay store's `metrics` table as plain numbers
 * ({@link metricValues}), the store's place for them, which other tabs hear about.
 */
import { fromRecord } from '../../policy/replay-sink.ts';
import type { CheckpointInput, CheckpointRecord } from '../../replay/index.ts';
import type { IterationMetrics, RunSnapshot } from '../../train/loop.ts';
import { decodeRunState, encodeRunState, RunStateFormatError, type RunState } from '../../train/run-state.ts';

/** Name of the checkpoint record that holds a run's latest snapshot (replaced every iteration). */
export const SNAPSHOT_CHECKPOINT = 'run-snapshot';

/** The numeric fields of {@link IterationMetrics}, in a fixed order. */
const METRIC_FIELDS = [
  'iteration', 'successRate', 'meanReward', 'loss', 'kl', 'clipFraction', 'entropy', 'vTauMean', 'vTauPositiveShare', 'vTauMax',
  'poolSize', 'generatedTasks', 'generatedShare', 'steps', 'syntheticSteps', 'syntheticStepsPerSec', 'simCalls', 'realTransitions',
  'offlineTransitions', 'updateMs', 'rolloutMs', 'wallMs',
] as const satisfies readonly Exclude<keyof IterationMetrics, 'phase'>[];

const PHASES: readonly IterationMetrics['phase'][] = ['sft', 'synthetic', 'real'];

/** Thrown when a stored snapshot or metric record cannot be read back. */
export class SnapshotFormatError extends Error {
  override name = 'SnapshotFormatError';
}

/** One iteration's figures as the numbers the replay store's metrics table takes (`phase` as its index 0/1/2). */
export function metricValues(m: IterationMetrics): Record<string, number> {
  const values: Record<string, number> = { phase: PHASES.indexOf(m.phase) };
  for (const key of METRIC_FIELDS) values[key] = m[key];
  return values;
}

/** The inverse of {@link metricValues}. */
export function metricsFromValues(values: Readonly<Record<string, number>>): IterationMetrics {
  const phase = PHASES[values['phase'] ?? -1];
  if (!phase) throw new SnapshotFormatError(`metric record has no valid phase (${String(values['phase'])})`);
  const out = { phase } as IterationMetrics;
  for (const key of METRIC_FIELDS) {
    const v = values[key];
    if (typeof v !== 'number') throw new SnapshotFormatError(`metric record lacks ${key}`);
    out[key] = v;
  }
  return out;
}

/** A snapshot as the checkpoint record {@link SNAPSHOT_CHECKPOINT} of its run. */
export function snapshotToCheckpoint(snapshot: RunSnapshot): CheckpointInput {
  const { checkpoint } = snapshot;
  return {
    name: SNAPSHOT_CHECKPOINT,
    iteration: snapshot.iteration,
    tensors: checkpoint.weights,
    optimizer: { tensors: checkpoint.optimizer.slots, config: { kind: checkpoint.optimizer.kind, step: checkpoint.optimizer.step } },
    // `updates` is the policy checkpoint's own count (trainer updates), unlike the loop iteration.
    config: { format: checkpoint.format, version: checkpoint.version, trainer: checkpoint.config, updates: checkpoint.iteration, run: encodeRunState(snapshot) },
  };
}

/** Reads a snapshot back from its checkpoint record; throws {@link SnapshotFormatError} when it is not one. */
export function snapshotFromCheckpoint(record: CheckpointRecord): RunSnapshot {
  const config = record.config !== null && typeof record.config === 'object' && !Array.isArray(record.config) ? record.config : null;
  const updates = config?.['updates'];
  if (typeof updates !== 'number') throw new SnapshotFormatError(`checkpoint ${JSON.stringify(record.name)} is not a run snapshot (no update count)`);
  let state: RunState;
  try {
    state = decodeRunState(config?.['run']);
  } catch (e) {
    if (!(e instanceof RunStateFormatError)) throw e;
    throw new SnapshotFormatError(`checkpoint ${JSON.stringify(record.name)} holds no valid run state: ${e.message}`);
  }
  // The run's environment travels with the checkpoint so a download cannot be evaluated in another one.
  const checkpoint = { ...fromRecord(record), iteration: updates, env: state.config.env };
  return { ...state, checkpoint };
}
