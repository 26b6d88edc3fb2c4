/**
 * Loud argument checks for the replay store: every failure names the bad value.
 */
import type { z } from 'zod';
import { TaskSchema, TrajectorySchema, TrajectorySourceSchema, type Task, type Trajectory, type TrajectorySource } from '../core/types.ts';
import { ReplayValidationError } from './errors.ts';
import type { NamedTensor, TensorDtype } from './schema.ts';

/** Throws unless `id` is a non-empty string. */
export function checkId(what: string, id: unknown): asserts id is string {
  if (typeof id !== 'string' || id === '') throw new TypeError(`${what} must be a non-empty string, got ${JSON.stringify(id)}`);
}

/** Throws unless `n` is a non-negative integer. */
export function checkCount(what: string, n: unknown): asserts n is number {
  if (typeof n !== 'number' || !Number.isInteger(n) || n < 0) throw new RangeError(`${what} must be a non-negative integer, got ${String(n)}`);
}

/** Throws unless `n` is a positive integer (or +Infinity when `allowInfinity`). */
export function checkPositive(what: string, n: unknown, allowInfinity = false): asserts n is number {
  const ok = typeof n === 'number' && ((Number.isInteger(n) && n > 0) || (allowInfinity && n === Number.POSITIVE_INFINITY));
  if (!ok) throw new RangeError(`${what} must be a positive integer${allowInfinity ? ' or Infinity' : ''}, got ${String(n)}`);
}

/** Validates against the Foundation schema; the error lists the first problems with their paths. */
function parseWith<T>(what: string, schema: z.ZodType<T>, value: unknown): T {
  const parsed = schema.safeParse(value);
  if (parsed.success) return parsed.data;
  const issues = parsed.error.issues
    .slice(0, 5)
    .map((i) => `${i.path.length > 0 ? i.path.map(String).join('.') : '(root)'}: ${i.message}`)
    .join('; ');
  throw new ReplayValidationError(`${what} is invalid: ${issues}`);
}

/** A validated trajectory (the schema's output). */
export function validateTrajectory(value: unknown, index: number): Trajectory {
  return parseWith(`trajectory #${index}${idSuffix(value)}`, TrajectorySchema, value);
}

/** A validated task (the schema's output). */
export function validateTask(value: unknown, index: number): Task {
  return parseWith(`task #${index}${idSuffix(value)}`, TaskSchema, value);
}

function idSuffix(value: unknown): string {
  const id = typeof value === 'object' && value !== null ? (value as { id?: unknown }).id : undefined;
  return typeof id === 'string' ? ` (${JSON.stringify(id)})` : '';
}

/** Normalises a source filter to a list, checking every name. */
export function sourceList(source: TrajectorySource | readonly TrajectorySource[] | undefined): TrajectorySource[] | undefined {
  if (source === undefined) return undefined;
  const list = typeof source === 'string' ? [source] : [...source];
  for (const s of list) {
    if (!TrajectorySourceSchema.safeParse(s).success) throw new RangeError(`unknown trajectory source ${JSON.stringify(s)} (use offline, synthetic or real)`);
  }
  return list;
}

/** Normalises a task-id filter to a list, checking every id. */
export function idList(what: string, ids: string | readonly string[] | undefined): string[] | undefined {
  if (ids === undefined) return undefined;
  const list = typeof ids === 'string' ? [ids] : [...ids];
  for (const id of list) checkId(what, id);
  return list;
}

const DTYPE_ARRAYS: Record<TensorDtype, { name: string; is: (d: unknown) => boolean }> = {
  float32: { name: 'Float32Array', is: (d) => d instanceof Float32Array },
  int32: { name: 'Int32Array', is: (d) => d instanceof Int32Array },
  bool: { name: 'Uint8Array', is: (d) => d instanceof Uint8Array },
};

/** Checks a tensor's dtype, shape and data length; returns a compact copy of its data. */
export function checkTensor(where: string, t: NamedTensor): NamedTensor {
  if (typeof t !== 'object' || t === null) throw new TypeError(`${where}: expected a tensor object, got ${String(t)}`);
  checkId(`${where} name`, t.name);
  const spec = DTYPE_ARRAYS[t.dtype];
  if (!spec) throw new RangeError(`${where} ${JSON.stringify(t.name)}: unknown dtype ${JSON.stringify(t.dtype)} (float32, int32 or bool)`);
  if (!spec.is(t.data)) throw new TypeError(`${where} ${JSON.stringify(t.name)}: dtype ${t.dtype} needs a ${spec.name}, got ${Object.prototype.toString.call(t.data)}`);
  if (!Array.isArray(t.shape) || !t.shape.every((s) => Number.isInteger(s) && s >= 0)) {
    throw new RangeError(`${where} ${JSON.stringify(t.name)}: shape must be non-negative integers, got ${JSON.stringify(t.shape)}`);
  }
  const size = t.shape.reduce((a, b) => a * b, 1);
  if (size !== t.data.length) {
    throw new RangeError(`${where} ${JSON.stringify(t.name)}: shape ${JSON.stringify(t.shape)} holds ${size} values, data has ${t.data.length}`);
  }
  return { name: t.name, dtype: t.dtype, shape: [...t.shape], data: compactCopy(t.data) };
}

/**
 * A typed array that owns exactly its bytes. Structured clone copies a view's whole underlying
 * buffer, so a view into a big buffer would store (and later load) all of it.
 */
export function compactCopy<T extends Float32Array | Int32Array | Uint8Array>(a: T): T {
  if (a.byteOffset === 0 && a.byteLength === a.buffer.byteLength && !(a.buffer instanceof SharedArrayBufferCtor())) return a;
  return a.slice() as T;
}

function SharedArrayBufferCtor(): new (...args: never[]) => unknown {
  const C = (globalThis as { SharedArrayBuffer?: new (...args: never[]) => unknown }).SharedArrayBuffer;
  return C ?? class NoSharedArrayBuffer {};
}
