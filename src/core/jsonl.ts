/**
 * The dreamgym JSONL format for tasks and trajectories, version 1.
 *
 * One JSON object per line, each self-describing:
 *   {"v":1,"type":"task","task":{...Task}}
 *   {"v":1,"type":"trajectory","trajectory":{...Trajectory}}
 * Blank lines are ignored. Import validates every line; a file with any bad line imports nothing.
 */
import { z } from 'zod';
import { TaskSchema, TrajectorySchema, type Task, type Trajectory } from './types.ts';

/** The format version this build writes and reads. */
const JSONL_VERSION = 1;

const TaskRecordSchema = z.object({ v: z.literal(JSONL_VERSION), type: z.literal('task'), task: TaskSchema });
const TrajectoryRecordSchema = z.object({
  v: z.literal(JSONL_VERSION),
  type: z.literal('trajectory'),
  trajectory: TrajectorySchema,
});

/** One line of a dreamgym JSONL file. */
const JsonlRecordSchema = z.discriminatedUnion('type', [TaskRecordSchema, TrajectoryRecordSchema]);
export type JsonlRecord = z.infer<typeof JsonlRecordSchema>;

/** Tasks and trajectories, in file order. */
export interface Dataset {
  tasks: Task[];
  trajectories: Trajectory[];
}

/** One problem found on one line. `field` is a dotted path such as `trajectory.steps.3.reward`. */
export interface JsonlIssue {
  line: number;
  field?: string;
  message: string;
}

/**
 * Thrown by `parseJsonl` and the importers when any line is bad; lists the problems found (up to
 * a cap) and says how many there were in all when the list was cut.
 */
export class JsonlError extends Error {
  override name = 'JsonlError';
  /** How many problems were found; more than `issues.length` when the list was cut. */
  readonly total: number;
  constructor(
    readonly issues: JsonlIssue[],
    total: number = issues.length,
  ) {
    const n = Math.max(total, issues.length);
    const counted = n > issues.length ? `${n} problems, the first ${issues.length} listed` : `${n} problem${n === 1 ? '' : 's'}`;
    super(`Invalid dreamgym JSONL (${counted}; nothing imported):\n` + issues.map(formatIssue).join('\n'));
    this.total = n;
  }
}

/** The deepest nesting of arrays and objects a line may have (a task goal needs a handful). */
const MAX_JSON_DEPTH = 64;

/** Whether `text` nests arrays/objects deeper than `max`, found without parsing (deep input would overflow the stack). */
export function nestsDeeperThan(text: string, max: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) i++; // backslash: skip the escaped character
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x5b || c === 0x7b) {
      if (++depth > max) return true;
    } else if (c === 0x5d || c === 0x7d) depth--;
  }
  return false;
}

/** `line 3, field task.id: expected string` */
export function formatIssue(issue: JsonlIssue): string {
  return `line ${issue.line}${issue.field ? `, field ${issue.field}` : ''}: ${issue.message}`;
}

/** The line for one task. */
export function taskLine(task: Task): string {
  return JSON.stringify({ v: JSONL_VERSION, type: 'task', task } satisfies JsonlRecord);
}

/** The line for one trajectory. */
export function trajectoryLine(trajectory: Trajectory): string {
  return JSON.stringify({ v: JSONL_VERSION, type: 'trajectory', trajectory } satisfies JsonlRecord);
}

/** Serialises a dataset: tasks first, then trajectories, one record per line, newline-terminated. */
export function toJsonl(data: Dataset): string {
  const lines = [...data.tasks.map(taskLine), ...data.trajectories.map(trajectoryLine)];
  return lines.length === 0 ? '' : `${lines.join('\n')}\n`;
}

/**
 * Parses and validates one line. Returns the record, `null` for a blank line, or the issues.
 * Exposed for streaming importers that read a file chunk by chunk.
 */
export function parseJsonlLine(text: string, line: number): JsonlRecord | null | JsonlIssue[] {
  if (text.trim() === '') return null;
  if (nestsDeeperThan(text, MAX_JSON_DEPTH)) return [{ line, message: `nested deeper than ${MAX_JSON_DEPTH} levels` }];
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    return [{ line, message: `not valid JSON (${(err as Error).message})` }];
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return [{ line, message: 'expected a JSON object' }];
  }
  const version = (value as { v?: unknown }).v;
  if (version !== JSONL_VERSION) {
    return [
      {
        line,
        field: 'v',
        message:
          version === undefined
            ? `missing format version (this build reads version ${JSONL_VERSION})`
            : `unsupported format version ${JSON.stringify(version)} (this build reads version ${JSONL_VERSION})`,
      },
    ];
  }
  const parsed = JsonlRecordSchema.safeParse(value);
  if (parsed.success) return parsed.data;
  return parsed.error.issues.map((issue) => ({
    line,
    field: issue.path.length > 0 ? issue.path.map(String).join('.') : undefined,
    message: issue.message,
  }));
}

/** How many issues a `JsonlError` lists (the rest are counted). */
const MAX_JSONL_ISSUES = 50;

/**
 * Parses a whole JSONL text. All or nothing: throws `JsonlError` naming every bad line
 * (line numbers are 1-based) and returns nothing if any line is bad.
 */
export function parseJsonl(text: string): Dataset {
  const data: Dataset = { tasks: [], trajectories: [] };
  const issues: JsonlIssue[] = [];
  let total = 0;
  // A UTF-8 byte order mark is not part of the first record.
  const lines = (text.charCodeAt(0) === 0xfeff ? text.slice(1) : text).split('\n');
  for (let i = 0; i < lines.length; i++) {
    const raw = lines[i] as string;
    const result = parseJsonlLine(raw.endsWith('\r') ? raw.slice(0, -1) : raw, i + 1);
    if (result === null) continue;
    if (Array.isArray(result)) {
      total += result.length;
      issues.push(...result.slice(0, Math.max(0, MAX_JSONL_ISSUES - issues.length)));
    } else if (result.type === 'task') data.tasks.push(result.task);
    else data.trajectories.push(result.trajectory);
  }
  if (issues.length > 0) throw new JsonlError(issues, total);
  return data;
}
