import { describe, expect, it } from 'vitest';
import {
  CheckpointError,
  checkpointFileName,
  MemoryCheckpointSink,
  parseCheckpoint,
  serializeCheckpoint,
  validateCheckpoint,
  type Checkpoint,
} from '../src/policy/checkpoint.ts';

function sample(iteration = 7): Checkpoint {
  return {
    format: 'dreamgym-checkpoint',
    version: 1,
    iteration,
    config: { policy: { stateDim: 3, actionDim: 2 }, note: 'ünïcode ok', list: [1, 2, null] },
    weights: [
      { name: 'policy.state.w', shape: [3, 2], dtype: 'float32', data: Float32Array.from([1, -2, 3.5, 0, 1e-7, -1e30]) },
      { name: 'policy.out.w', shape: [2, 1], dtype: 'float32', data: Float32Array.from([0.25, Number.MIN_VALUE]) },
      { name: 'scalar', shape: [], dtype: 'float32', data: Float32Array.from([42]) },
    ],
    optimizer: { kind: 'adam', step: 21, slots: [{ name: 'm/policy.out.w', shape: [2, 1], dtype: 'float32', data: Float32Array.from([0.5, -0.5]) }] },
  };
}

function expectCorrupt(bytes: Uint8Array, message: RegExp): void {
  try {
    parseCheckpoint(bytes);
  } catch (e) {
    expect(e).toBeInstanceOf(CheckpointError);
    expect((e as CheckpointError).kind).toBe('corrupt');
    expect((e as Error).message).toMatch(message);
    return;
  }
  throw new Error('parseCheckpoint accepted a corrupt file');
}

describe('checkpoint file', () => {
  it('reads a file that sits at an offset inside a larger buffer (a Node Buffer from readFile)', () => {
    const cp = sample();
    const bytes = serializeCheckpoint(cp);
    const pool = new Uint8Array(bytes.length + 13);
    pool.set(bytes, 13);
    const back = parseCheckpoint(pool.subarray(13));
    expect(Array.from(back.weights[0]!.data)).toEqual(Array.from(cp.weights[0]!.data));
    expect(Array.from(parseCheckpoint(Buffer.from(bytes)).weights[1]!.data)).toEqual(Array.from(cp.weights[1]!.data));
  });

  it('round-trips every field bit for bit', () => {
    const cp = sample();
    const bytes = serializeCheckpoint(cp);
    expect(new TextDecoder().decode(bytes.subarray(0, 6))).toBe('DGCKPT');
    const back = parseCheckpoint(bytes);
    expect(back.iteration).toBe(7);
    expect(back.config).toEqual(cp.config);
    expect(back.optimizer.step).toBe(21);
    expect(back.weights.map((w) => [w.name, w.shape])).toEqual(cp.weights.map((w) => [w.name, w.shape]));
    back.weights.forEach((w, i) => expect(Array.from(w.data)).toEqual(Array.from(cp.weights[i]?.data as Float32Array)));
    expect(Array.from(back.optimizer.slots[0]?.data as Float32Array)).toEqual([0.5, -0.5]);
    // Also from an ArrayBuffer and from a view into a larger buffer.
    expect(parseCheckpoint(bytes.slice().buffer).iteration).toBe(7);
    const padded = new Uint8Array(bytes.length + 10);
    padded.set(bytes, 5);
    expect(parseCheckpoint(padded.subarray(5, 5 + bytes.length)).weights[0]?.data[2]).toBe(3.5);
  });

  it('carries the environment it was trained in when it names one; an older file without it still reads', () => {
    const named = parseCheckpoint(serializeCheckpoint({ ...sample(), env: 'household' }));
    expect(named.env).toBe('household');
    expect('env' in parseCheckpoint(serializeCheckpoint(sample()))).toBe(false);
    expect(() => serializeCheckpoint({ ...sample(), env: '' })).toThrow(/env must be a non-empty string/);
  });

  it('refuses a file that is not a checkpoint, truncated, or altered', () => {
    const bytes = serializeCheckpoint(sample());
    expectCorrupt(new TextEncoder().encode('{"format":"dreamgym-checkpoint"}'), /bad magic/);
    expectCorrupt(bytes.subarray(0, bytes.length - 4), /truncated/);
    const flipped = bytes.slice();
    flipped[flipped.length - 3] = (flipped[flipped.length - 3] as number) ^ 0xff;
    expectCorrupt(flipped, /checksum/);
    const badJson = bytes.slice();
    badJson[13] = 0x7b; // '{' inside the header
    expectCorrupt(badJson, /header/);
  });

  it('refuses a header whose tensor table no longer tiles the data (the checksum does not cover the header)', () => {
    const bytes = serializeCheckpoint(sample());
    // policy.out.w sits at byte 24; pointing it at 28 (same header length) would alias the next tensor.
    const at = new TextDecoder('latin1').decode(bytes).indexOf('"offset":24');
    expect(at).toBeGreaterThan(0);
    const altered = bytes.slice();
    altered[at + 10] = '8'.charCodeAt(0);
    expectCorrupt(altered, /expected offset 24/);
  });

  it('calls a newer format version incompatible', () => {
    const bytes = serializeCheckpoint(sample());
    const text = new TextDecoder().decode(bytes);
    const bumped = new TextEncoder().encode(text.replace('"version":1', '"version":2'));
    try {
      parseCheckpoint(bumped);
      throw new Error('accepted');
    } catch (e) {
      expect((e as CheckpointError).kind).toBe('incompatible');
      expect((e as Error).message).toMatch(/version 2/);
    }
  });

  it('validates objects before writing', () => {
    const cp = sample();
    expect(() => validateCheckpoint({ ...cp, weights: [{ ...cp.weights[0]!, shape: [4, 2] }] })).toThrow(/6 values for shape \[4, 2\]/);
    expect(() => validateCheckpoint({ ...cp, weights: [cp.weights[0]!, cp.weights[0]!] })).toThrow(/appears twice/);
    expect(() => validateCheckpoint({ ...cp, iteration: -1 })).toThrow(/iteration .* got -1/);
    expect(() => validateCheckpoint({ ...cp, optimizer: { ...cp.optimizer, step: 1.5 } })).toThrow(/optimizer step .* got 1.5/);
    expect(() => validateCheckpoint({ ...cp, optimizer: { ...cp.optimizer, slots: [cp.optimizer.slots[0]!, cp.optimizer.slots[0]!] } })).toThrow(/optimizer: m\/policy.out.w appears twice/);
    expect(() => validateCheckpoint({ ...cp, weights: undefined as unknown as [] })).toThrow(CheckpointError);
    expect(() => serializeCheckpoint({ ...cp, format: 'other' as 'dreamgym-checkpoint' })).toThrow(/format is "other"/);
  });

  it('names files by iteration', () => {
    expect(checkpointFileName({ iteration: 42 })).toBe('dreamgym-policy-iter000042.dgckpt');
  });
});

describe('MemoryCheckpointSink', () => {
  it('returns the latest checkpoint and keeps at most `capacity`', async () => {
    const sink = new MemoryCheckpointSink(2);
    expect(await sink.loadLatest()).toBeUndefined();
    await sink.save(sample(1));
    await sink.save(sample(2));
    await sink.save(sample(3));
    expect(sink.size).toBe(2);
    expect((await sink.loadLatest())?.iteration).toBe(3);
    expect(() => new MemoryCheckpointSink(0)).toThrow(/got 0/);
  });
});
