/** The page's run index (src/train/runs/records.ts) over fake-indexeddb. */
import { IDBFactory } from 'fake-indexeddb';
import { describe, expect, it } from 'vitest';
import { installIdbGlobals } from '../src/replay/node.ts';
import { parseTrainingConfig } from '../src/train/config.ts';
import { isUnfinished, newRunId, RunIndex, UnknownPageRunError, type PageRunRecord } from '../src/train/runs/records.ts';

installIdbGlobals();

const config = parseTrainingConfig({ env: 'shop', mode: 'dreamgym' }, 'quick');
const record = (id: string, createdAt: number, status: PageRunRecord['status']): PageRunRecord => ({
  id,
  createdAt,
  updatedAt: createdAt,
  config,
  status,
  iteration: 0,
  totalIterations: 10,
  realTransitions: 0,
  offlineTransitions: 0,
  trainWallMs: 0,
});

describe('run index', () => {
  it('stores, lists oldest first, updates and deletes records', async () => {
    const indexedDB = new IDBFactory();
    const index = await RunIndex.open({ indexedDB });
    await index.put(record('b', 2, 'done'));
    await index.put(record('a', 1, 'running'));
    expect((await index.list()).map((r) => r.id)).toEqual(['a', 'b']);
    const updated = await index.update('a', { iteration: 4, status: 'paused' });
    expect(updated).toMatchObject({ id: 'a', createdAt: 1, iteration: 4, status: 'paused' });
    expect(updated.updatedAt).toBeGreaterThan(1);
    await expect(index.update('zzz', { iteration: 1 })).rejects.toThrow(UnknownPageRunError);
    index.close();

    // Another connection (a reload) sees the same data.
    const again = await RunIndex.open({ indexedDB });
    expect(await again.get('a')).toMatchObject({ iteration: 4, status: 'paused' });
    expect(await again.delete('b')).toBe(true);
    expect(await again.delete('b')).toBe(false);
    expect((await again.list()).map((r) => r.id)).toEqual(['a']);
    again.close();
  });

  it('finds the latest unfinished run', async () => {
    const index = await RunIndex.open({ indexedDB: new IDBFactory() });
    expect(await index.latestUnfinished()).toBeUndefined();
    await index.put(record('old', 1, 'paused'));
    await index.put(record('new', 3, 'running'));
    await index.put(record('done', 5, 'done'));
    await index.put(record('failed', 6, 'failed'));
    expect((await index.latestUnfinished())?.id).toBe('new');
    expect(['seeding', 'running', 'paused', 'evaluating'].every((s) => isUnfinished({ status: s as PageRunRecord['status'] }))).toBe(true);
    expect(isUnfinished({ status: 'done' }) || isUnfinished({ status: 'failed' })).toBe(false);
    index.close();
  });

  it('makes readable, distinct run ids', () => {
    const now = new Date(Date.UTC(2026, 0, 2, 3, 4, 5));
    expect(newRunId(config, now, () => 0.5)).toMatch(/^20260102-030405-shop-dreamgym-s0-[0-9a-z]{4}$/);
    expect(newRunId(config, now, () => 0.1)).not.toBe(newRunId(config, now, () => 0.2));
  });
});
