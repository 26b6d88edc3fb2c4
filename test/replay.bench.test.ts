/**
 * The replay benchmark runs end to end at a tiny size and reports every figure (no timing
 * thresholds: figures are checked for presence and sanity only).
 */
import { describe, expect, it } from 'vitest';
import { benchReplay } from '../src/bench/replay.ts';
import { createMemoryIndexedDB } from '../src/replay/node.ts';

describe('benchReplay', () => {
  it('inserts, measures retrieval at each size, and cleans up its database', async () => {
    const factory = createMemoryIndexedDB();
    const rows = await benchReplay({ indexedDB: factory, label: 'tiny', dim: 16, transitions: 2000, retrievalSizes: [1000, 2000], batchTransitions: 500, queries: 5 });
    const names = rows.map((r) => r.name);
    expect(names[0]).toBe('tiny: insert 2,000 transitions (16-dim embeddings, 500 per transaction)');
    expect(rows[0]?.unit).toBe('transitions/s');
    for (const size of ['1,000', '2,000']) {
      for (const what of ['retrieve() median of 5', 'retrieve() p95 of 5', 'index scan only, median', 'bytes scanned / scan time', 'memory-read bound (plain sum over the same matrix)', 'scan time / memory-read time']) {
        expect(names).toContain(`tiny: top-8 at ${size} x 16, ${what}`);
      }
    }
    expect(names).toContain('tiny: cold load of the retrieval index (fresh store, 2,000 x 16)');
    for (const r of rows) expect(Number.isFinite(r.value) && r.value > 0, r.name).toBe(true);
    expect((await factory.databases()).map((d) => d.name)).toEqual([]);
  });

  it('refuses sizes that do not fit its batching', async () => {
    await expect(benchReplay({ indexedDB: createMemoryIndexedDB(), label: 'x', transitions: 1000, retrievalSizes: [700], batchTransitions: 500 })).rejects.toThrow(/multiples of 500/);
  });
});
