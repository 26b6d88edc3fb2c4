/**
 * A run's resume point less its policy checkpoint (the loop's {@link RunSnapshot} without
 * `checkpoint`) as plain JSON data, and back: one codec for the CLI's `snapshot.json` and the
 * page's snapshot record, so both read and write the same shape. JSON has no NaN (a generated task
 * not yet scored has `vTau` NaN, and a metric may be NaN): NaN is written as null and read back as
 * NaN. Unknown fields are kept, so that a newer loop's snapshot still reads.
 */
import { z } from 'zod';
import { JsonValueSchema, TaskSchema, type JsonValue } from '../core/types.ts';
import { StoredTrainingConfigSchema } from './config.ts';
import type { IterationMetrics, RunSnapshot } from './loop.ts';

/** The loop's state without the checkpoint. */
export type RunState = Omit<RunSnapshot, 'checkpoint'>;

/** Thrown when stored data is not a run state; the message names the first bad field. */
export class RunStateFormatError extends Error {
  override name = 'RunStateFormatError';
}

const PHASES = ['sft', 'synthetic', 'real'] as const satisfies readonly IterationMetrics['phase'][];

/** One iteration's figures as stored: numbers, null for NaN. */
export const StoredMetricsSchema = z.object({ iteration: z.number().int().min(0), phase: z.enum(PHASES) }).catchall(z.number().nullable());

/** A run's synthetic-phase validation (the loop's `SyntheticValidation`). */
const share = z.number().min(0).max(1);
const ValidationCheckSchema = z.object({ iteration: z.number().int().min(0), success: share, replayed: share.optional(), agreement: share.optional(), prefix: share.optional(), perEpisode: z.array(share).optional(), unknownShare: share.optional() }).strict();
export const SyntheticValidationSchema = z
  .object({
    tasks: z.number().int().min(0),
    start: z.number().min(0).max(1),
    end: z.number().min(0).max(1).optional(),
    between: z.array(ValidationCheckSchema).optional(),
    best: ValidationCheckSchema.optional(),
    kept: z.enum(['start', 'end', 'between']).optional(),
    criterion: z.enum(['recorded', 'simulator']).optional(),
    recorded: z.number().int().min(0).optional(),
    checks: z.array(ValidationCheckSchema).optional(),
  })
  .strict();

/** The stored form of a {@link RunState}. */
export const RunStateSchema = z
  .object({
    format: z.literal('dreamgym-run'),
    version: z.literal(1),
    config: StoredTrainingConfigSchema,
    iteration: z.number().int().min(0),
    pool: z.array(TaskSchema),
    lastSeen: z.record(z.string(), z.object({ iteration: z.number().int(), vTau: z.number().nullable() }).strict()),
    metrics: z.array(StoredMetricsSchema),
    realTransitions: z.number().int().min(0),
    realResets: z.number().int().min(0),
    syntheticSteps: z.number().int().min(0),
    wallMs: z.number().min(0),
    generatorState: JsonValueSchema.optional(),
    validation: SyntheticValidationSchema.optional(),
  })
  .loose();

const nanToNull = (x: unknown): unknown => (typeof x === 'number' && Number.isNaN(x) ? null : x);
const nullToNaN = (x: unknown): unknown => (x === null ? Number.NaN : x);
const mapValues = (row: object, f: (x: unknown) => unknown): Record<string, unknown> => Object.fromEntries(Object.entries(row).map(([k, v]) => [k, f(v)]));

/** Stored per-iteration figures (null for NaN) in the loop's type. */
export function decodeMetrics(rows: readonly z.output<typeof StoredMetricsSchema>[]): IterationMetrics[] {
  return rows.map((m) => mapValues(m, nullToNaN)) as unknown as IterationMetrics[];
}

/** A run state (or a whole snapshot: its checkpoint is left out) as JSON data. */
export function encodeRunState(snapshot: RunState | RunSnapshot): JsonValue {
  const { checkpoint: _, ...state } = snapshot as RunSnapshot;
  const lastSeen = mapValues(state.lastSeen, (seen) => mapValues(seen as object, nanToNull));
  const metrics = state.metrics.map((m) => mapValues(m, nanToNull));
  return { ...state, lastSeen, metrics } as unknown as JsonValue;
}

/** The first problem of a zod error, as `field: message`. */
function problemOf(error: z.ZodError): string {
  const issue = error.issues[0];
  if (!issue) return 'invalid';
  const path = issue.path.map(String).join('.');
  return `${path ? `${path}: ` : ''}${issue.message}`;
}

/** Reads a run state back from {@link encodeRunState}'s data; throws {@link RunStateFormatError}. */
export function decodeRunState(value: unknown): RunState {
  const parsed = RunStateSchema.safeParse(value);
  if (!parsed.success) throw new RunStateFormatError(`not a run state (${problemOf(parsed.error)})`);
  const state = parsed.data;
  const lastSeen = mapValues(state.lastSeen, (seen) => mapValues(seen as object, nullToNaN)) as RunState['lastSeen'];
  return { ...state, lastSeen, metrics: decodeMetrics(state.metrics) };
}
