/**
 * Checkpoints: the policy's weights, the optimizer's state and the configuration as plain data,
 * and their single-file form for download and upload.
 *
 * File layout (little-endian):
 *   bytes 0..7   magic "DGCKPT\r\n"
 *   bytes 8..11  uint32 header length H
 *   bytes 12..   H bytes of UTF-8 JSON header: format, version, iteration, the environment (when
 *                known), config, the tensor table (name, shape, dtype, byte offset, length) and an FNV-1a checksum of the data
 *   then zero padding to a multiple of 4, then the float32 data of every tensor in table order.
 *
 * Sinks: {@link MemoryCheckpointSink} here, and `ReplayCheckpointSink` (./replay-sink.ts) over the
 * replay store's checkpoint API.
 */
import { z } from 'zod';

/** One named float32 tensor as plain data. */
export interface TensorRecord {
  name: string;
  shape: number[];
  dtype: 'float32';
  data: Float32Array;
}

/** The optimizer's state: its kind, step count and slot tensors (e.g. Adam's `m/NAME`, `v/NAME`). */
export interface OptimizerState {
  kind: 'adam';
  step: number;
  slots: TensorRecord[];
}

/** A JSON value (the configuration is stored as JSON). */
export type CheckpointJson = string | number | boolean | null | CheckpointJson[] | { [key: string]: CheckpointJson };

/** Everything needed to resume training. */
export interface Checkpoint {
  format: 'dreamgym-checkpoint';
  version: 1;
  /** Number of completed updates. */
  iteration: number;
  /** The environment (domain) the policy was trained in, when known: evaluating it in another is refused. */
  env?: string;
  /** The trainer configuration the weights belong to (JSON). */
  config: { [key: string]: CheckpointJson };
  weights: TensorRecord[];
  optimizer: OptimizerState;
}

/** Where checkpoints go: memory, IndexedDB (the replay store), a file. */
export interface CheckpointSink {
  save(checkpoint: Checkpoint): Promise<void>;
  /** The most recently saved checkpoint, or undefined when none was saved. */
  loadLatest(): Promise<Checkpoint | undefined>;
}

/** Why a checkpoint was refused. */
export type CheckpointErrorKind = 'corrupt' | 'incompatible';

/** Thrown for a corrupt file (bad magic, header, sizes or checksum) or an incompatible checkpoint. */
export class CheckpointError extends Error {
  override name = 'CheckpointError';
  constructor(
    readonly kind: CheckpointErrorKind,
    message: string,
  ) {
    super(`${kind} checkpoint: ${message}`);
  }
}

/** Keeps checkpoints in memory (the latest `capacity` of them); a sink for tests and the worker. */
export class MemoryCheckpointSink implements CheckpointSink {
  private readonly items: Checkpoint[] = [];
  constructor(private readonly capacity = 1) {
    if (!Number.isInteger(capacity) || capacity < 1) throw new RangeError(`MemoryCheckpointSink capacity must be an integer >= 1, got ${capacity}`);
  }
  save(checkpoint: Checkpoint): Promise<void> {
    validateCheckpoint(checkpoint);
    this.items.push(checkpoint);
    while (this.items.length > this.capacity) this.items.shift();
    return Promise.resolve();
  }
  loadLatest(): Promise<Checkpoint | undefined> {
    return Promise.resolve(this.items[this.items.length - 1]);
  }
  /** Number of checkpoints held. */
  get size(): number {
    return this.items.length;
  }
}

const MAGIC = new Uint8Array([0x44, 0x47, 0x43, 0x4b, 0x50, 0x54, 0x0d, 0x0a]); // "DGCKPT\r\n"

const TableEntrySchema = z
  .object({
    name: z.string().min(1),
    shape: z.array(z.number().int().min(0)),
    dtype: z.literal('float32'),
    offset: z.number().int().min(0),
    length: z.number().int().min(0),
  })
  .strict();

const HeaderSchema = z
  .object({
    format: z.literal('dreamgym-checkpoint'),
    version: z.number().int(),
    iteration: z.number().int().min(0),
    env: z.string().min(1).optional(),
    config: z.record(z.string(), z.json()),
    weights: z.array(TableEntrySchema),
    optimizer: z.object({ kind: z.literal('adam'), step: z.number().int().min(0), slots: z.array(TableEntrySchema) }).strict(),
    dataBytes: z.number().int().min(0),
    checksum: z.number().int().min(0),
  })
  .strict();

function fnv1aBytes(bytes: Uint8Array): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < bytes.length; i++) {
    h ^= bytes[i] as number;
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

const isLittleEndian = new Uint8Array(new Uint32Array([1]).buffer)[0] === 1;

function checkRecord(r: TensorRecord, where: string): void {
  if (typeof r.name !== 'string' || r.name.length === 0) throw new CheckpointError('corrupt', `${where}: a tensor has no name`);
  if (!(r.data instanceof Float32Array)) throw new CheckpointError('corrupt', `${where}: ${r.name} data is not a Float32Array`);
  if (!Array.isArray(r.shape) || r.shape.some((d) => !Number.isInteger(d) || d < 0)) {
    throw new CheckpointError('corrupt', `${where}: ${r.name} has an invalid shape ${JSON.stringify(r.shape)}`);
  }
  const size = r.shape.reduce((a, b) => a * b, 1);
  if (size !== r.data.length) throw new CheckpointError('corrupt', `${where}: ${r.name} has ${r.data.length} values for shape [${r.shape.join(', ')}]`);
}

/** Checks a checkpoint object's structure; throws {@link CheckpointError}. */
export function validateCheckpoint(cp: Checkpoint): void {
  if (cp === null || typeof cp !== 'object') throw new CheckpointError('corrupt', `expected an object, got ${cp === null ? 'null' : typeof cp}`);
  if (cp.format !== 'dreamgym-checkpoint') throw new CheckpointError('incompatible', `format is ${JSON.stringify(cp.format)}, expected "dreamgym-checkpoint"`);
  if (cp.version !== 1) throw new CheckpointError('incompatible', `version ${JSON.stringify(cp.version)} is not supported (this build reads version 1)`);
  if (!Number.isInteger(cp.iteration) || cp.iteration < 0) throw new CheckpointError('corrupt', `iteration must be an integer >= 0, got ${cp.iteration}`);
  if (cp.env !== undefined && (typeof cp.env !== 'string' || cp.env === '')) throw new CheckpointError('corrupt', `env must be a non-empty string, got ${JSON.stringify(cp.env)}`);
  if (cp.optimizer?.kind !== 'adam') throw new CheckpointError('incompatible', `optimizer kind ${JSON.stringify(cp.optimizer?.kind)} is not supported`);
  if (!Number.isInteger(cp.optimizer.step) || cp.optimizer.step < 0) throw new CheckpointError('corrupt', `optimizer step must be an integer >= 0, got ${cp.optimizer.step}`);
  for (const [where, records] of [
    ['weights', cp.weights],
    ['optimizer', cp.optimizer.slots],
  ] as const) {
    if (!Array.isArray(records)) throw new CheckpointError('corrupt', `${where}: expected an array of tensors`);
    const names = new Set<string>();
    for (const r of records) {
      checkRecord(r, where);
      if (names.has(r.name)) throw new CheckpointError('corrupt', `${where}: ${r.name} appears twice`);
      names.add(r.name);
    }
  }
}

/** The checkpoint as one file (see the module comment for the layout). */
export function serializeCheckpoint(cp: Checkpoint): Uint8Array {
  validateCheckpoint(cp);
  if (!isLittleEndian) throw new CheckpointError('incompatible', 'serialising needs a little-endian platform');
  let offset = 0;
  const table = (records: readonly TensorRecord[]) =>
    records.map((r) => {
      const entry = { name: r.name, shape: [...r.shape], dtype: 'float32' as const, offset, length: r.data.length };
      offset += r.data.length * 4;
      return entry;
    });
  const weights = table(cp.weights);
  const slots = table(cp.optimizer.slots);
  const dataBytes = offset;
  const data = new Uint8Array(dataBytes);
  let at = 0;
  for (const r of [...cp.weights, ...cp.optimizer.slots]) {
    data.set(new Uint8Array(r.data.buffer, r.data.byteOffset, r.data.byteLength), at);
    at += r.data.byteLength;
  }
  const header = {
    format: cp.format,
    version: cp.version,
    iteration: cp.iteration,
    ...(cp.env !== undefined ? { env: cp.env } : {}),
    config: cp.config,
    weights,
    optimizer: { kind: cp.optimizer.kind, step: cp.optimizer.step, slots },
    dataBytes,
    checksum: fnv1aBytes(data),
  };
  const json = new TextEncoder().encode(JSON.stringify(header));
  const headerEnd = MAGIC.length + 4 + json.length;
  const dataStart = Math.ceil(headerEnd / 4) * 4;
  const out = new Uint8Array(dataStart + dataBytes);
  out.set(MAGIC, 0);
  new DataView(out.buffer).setUint32(MAGIC.length, json.length, true);
  out.set(json, MAGIC.length + 4);
  out.set(data, dataStart);
  return out;
}

/** Reads a checkpoint file; throws {@link CheckpointError} for anything corrupt or incompatible. */
export function parseCheckpoint(file: Uint8Array | ArrayBuffer): Checkpoint {
  const bytes = file instanceof Uint8Array ? file : new Uint8Array(file);
  if (bytes.length < MAGIC.length + 4 || MAGIC.some((b, i) => bytes[i] !== b)) {
    throw new CheckpointError('corrupt', 'not a dreamgym checkpoint file (bad magic bytes)');
  }
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const headerLength = view.getUint32(MAGIC.length, true);
  const headerEnd = MAGIC.length + 4 + headerLength;
  if (headerEnd > bytes.length) throw new CheckpointError('corrupt', `header length ${headerLength} exceeds the file size ${bytes.length}`);
  let raw: unknown;
  try {
    raw = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes.subarray(MAGIC.length + 4, headerEnd)));
  } catch (e) {
    throw new CheckpointError('corrupt', `header is not valid JSON (${e instanceof Error ? e.message : String(e)})`);
  }
  const version = (raw as { version?: unknown } | null)?.version;
  if (version !== 1) throw new CheckpointError('incompatible', `version ${JSON.stringify(version)} is not supported (this build reads version 1)`);
  const parsed = HeaderSchema.safeParse(raw);
  if (!parsed.success) {
    throw new CheckpointError('corrupt', `invalid header: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`);
  }
  const header = parsed.data;
  const dataStart = Math.ceil(headerEnd / 4) * 4;
  if (dataStart + header.dataBytes !== bytes.length) {
    throw new CheckpointError('corrupt', `file has ${bytes.length - dataStart} data bytes, header says ${header.dataBytes} (truncated or padded)`);
  }
  // A copy in a fresh buffer: a Node Buffer's slice shares the pool's memory at an offset.
  const data = new Uint8Array(bytes.subarray(dataStart, dataStart + header.dataBytes));
  const checksum = fnv1aBytes(data);
  if (checksum !== header.checksum) throw new CheckpointError('corrupt', `checksum mismatch (file ${header.checksum}, computed ${checksum})`);
  // The header is not covered by the checksum: the table must tile the data exactly as
  // serializeCheckpoint lays it out (consecutive, in table order), so an altered offset cannot
  // make two tensors share bytes or leave bytes unread.
  let expectedOffset = 0;
  const read = (entry: z.infer<typeof TableEntrySchema>): TensorRecord => {
    const size = entry.shape.reduce((a, b) => a * b, 1);
    if (size !== entry.length) throw new CheckpointError('corrupt', `${entry.name}: length ${entry.length} does not match shape [${entry.shape.join(', ')}]`);
    if (entry.offset !== expectedOffset || entry.offset + entry.length * 4 > data.length) {
      throw new CheckpointError('corrupt', `${entry.name}: bytes ${entry.offset}..${entry.offset + entry.length * 4} are not the next ${entry.length * 4} bytes of the data (expected offset ${expectedOffset})`);
    }
    expectedOffset += entry.length * 4;
    return { name: entry.name, shape: entry.shape, dtype: 'float32', data: new Float32Array(data.buffer, entry.offset, entry.length).slice() };
  };
  const cp: Checkpoint = {
    format: header.format,
    version: 1,
    iteration: header.iteration,
    ...(header.env !== undefined ? { env: header.env } : {}),
    config: header.config as Checkpoint['config'],
    weights: header.weights.map(read),
    optimizer: { kind: header.optimizer.kind, step: header.optimizer.step, slots: header.optimizer.slots.map(read) },
  };
  if (expectedOffset !== data.length) throw new CheckpointError('corrupt', `the tensor table covers ${expectedOffset} of ${data.length} data bytes`);
  validateCheckpoint(cp);
  return cp;
}

/** A file name for downloading a checkpoint. */
export function checkpointFileName(cp: Pick<Checkpoint, 'iteration'>, prefix = 'dreamgym-policy'): string {
  return `${prefix}-iter${String(cp.iteration).padStart(6, '0')}.dgckpt`;
}
