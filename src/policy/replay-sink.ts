/**
 * A {@link CheckpointSink} over the replay store's checkpoint API (IndexedDB in the page,
 * fake-indexeddb in Node): policy checkpoints are saved as named checkpoints of a run, and the
 * run's latest checkpoint is what a recovery reloads.
 */
import type { CheckpointInput, CheckpointRecord } from '../replay/index.ts';
import { CheckpointNotFoundError } from '../replay/index.ts';
import { CheckpointError, validateCheckpoint, type Checkpoint, type CheckpointJson, type CheckpointSink, type TensorRecord } from './checkpoint.ts';

/** The part of the replay store this sink uses (`ReplayStore` has it). */
export interface ReplayCheckpointApi {
  saveCheckpoint(runId: string, input: CheckpointInput): Promise<unknown>;
  loadCheckpoint(runId: string, name?: string): Promise<CheckpointRecord>;
}

/** Saves policy checkpoints as named checkpoints of one replay-store run. */
export class ReplayCheckpointSink implements CheckpointSink {
  constructor(
    private readonly store: ReplayCheckpointApi,
    readonly runId: string,
    /** Checkpoint name for an iteration (default `policy-iter000042`). */
    private readonly nameOf: (iteration: number) => string = (i) => `policy-iter${String(i).padStart(6, '0')}`,
  ) {}

  async save(checkpoint: Checkpoint): Promise<void> {
    validateCheckpoint(checkpoint);
    await this.store.saveCheckpoint(this.runId, {
      name: this.nameOf(checkpoint.iteration),
      iteration: checkpoint.iteration,
      tensors: checkpoint.weights,
      optimizer: { tensors: checkpoint.optimizer.slots, config: { kind: checkpoint.optimizer.kind, step: checkpoint.optimizer.step } },
      config: { format: checkpoint.format, version: checkpoint.version, trainer: checkpoint.config },
    });
  }

  /** The run's latest checkpoint, or undefined when it has none. Throws {@link CheckpointError} for a foreign one. */
  async loadLatest(): Promise<Checkpoint | undefined> {
    let record: CheckpointRecord;
    try {
      record = await this.store.loadCheckpoint(this.runId);
    } catch (e) {
      if (e instanceof CheckpointNotFoundError) return undefined;
      throw e;
    }
    return fromRecord(record);
  }
}

function asObject(value: unknown): Record<string, unknown> | null {
  return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : null;
}

function float32(tensors: CheckpointRecord['tensors'], where: string): TensorRecord[] {
  return tensors.map((t) => {
    if (t.dtype !== 'float32' || !(t.data instanceof Float32Array)) throw new CheckpointError('incompatible', `${where}: ${t.name} is ${t.dtype}, expected float32`);
    return { name: t.name, shape: [...t.shape], dtype: 'float32', data: t.data };
  });
}

/** A replay-store checkpoint record as a policy checkpoint. */
export function fromRecord(record: CheckpointRecord): Checkpoint {
  const config = asObject(record.config);
  if (config?.['format'] !== 'dreamgym-checkpoint') {
    throw new CheckpointError('incompatible', `replay checkpoint ${JSON.stringify(record.name)} is not a policy checkpoint (format ${JSON.stringify(config?.['format'])})`);
  }
  if (config['version'] !== 1) throw new CheckpointError('incompatible', `replay checkpoint ${JSON.stringify(record.name)} has version ${JSON.stringify(config['version'])}`);
  const trainer = asObject(config['trainer']);
  const optimizer = asObject(record.optimizer.config);
  const step = optimizer?.['step'];
  if (!trainer || optimizer?.['kind'] !== 'adam' || typeof step !== 'number') {
    throw new CheckpointError('corrupt', `replay checkpoint ${JSON.stringify(record.name)} lacks its trainer config or optimizer state`);
  }
  const cp: Checkpoint = {
    format: 'dreamgym-checkpoint',
    version: 1,
    iteration: record.iteration,
    config: trainer as { [key: string]: CheckpointJson },
    weights: float32(record.tensors, 'weights'),
    optimizer: { kind: 'adam', step, slots: float32(record.optimizer.tensors, 'optimizer') },
  };
  validateCheckpoint(cp);
  return cp;
}
