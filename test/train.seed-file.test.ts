/**
 * A dreamgym JSONL file as a new run's offline seed data (src/train/runs/seed-file.ts): checked whole,
 * errors by line, one environment, recorded episodes only.
 */
import { describe, expect, it } from 'vitest';
import { JsonlError, toJsonl } from '../src/core/jsonl.ts';
import { getEnvSpec } from '../src/envs/registry.ts';
import { parseTrainingConfig } from '../src/train/config.ts';
import { offlineSeedData } from '../src/train/setup.ts';
import { seedFileOffline, seedFileRun, SeedFileError } from '../src/train/runs/seed-file.ts';

const config = parseTrainingConfig({ env: 'shop', mode: 'dreamgym', offline: { expertEpisodes: 4, noisyEpisodes: 2, extraTasks: 0 } });
const data = offlineSeedData(getEnvSpec('shop'), config);
const text = toJsonl({ tasks: data.tasks, trajectories: data.trajectories });

describe('seed data from a file', () => {
  it('reads a dreamgym JSONL file of the environment as offline data: every episode is a cloning candidate (sft.cloning weighs them)', async () => {
    const { offline, summary } = await seedFileOffline(text, 'shop', 'mine.jsonl');
    expect(summary).toEqual({ file: 'mine.jsonl', tasks: data.tasks.length, trajectories: data.trajectories.length });
    expect(offline.trajectories.map((t) => t.id)).toEqual(data.trajectories.map((t) => t.id));
    expect(offline.tasks.map((t) => t.id)).toEqual(data.tasks.map((t) => t.id));
    expect([...offline.expertIds].sort()).toEqual(data.trajectories.map((t) => t.id).sort());
    expect(data.trajectories.some((t) => !t.success)).toBe(true);
    expect(offline.expertIds.size).toBeGreaterThan(0);
    expect(offline.extraTasks).toEqual([]);
    // The run is still evaluated on the environment's own held-out tasks.
    const run = seedFileRun(config, offline);
    expect(run.spec.name).toBe('shop');
    expect(run.evalTasks.length).toBe(config.evalEpisodes);
    expect(run.evalTasks.every((t) => t.split === 'test')).toBe(true);
  });

  it('recorded real episodes seed as offline ones; synthetic ones are refused, naming the line', async () => {
    const lines = text.trimEnd().split('\n');
    const at = lines.findIndex((l) => l.includes('"type":"trajectory"'));
    const asReal = lines.map((l, i) => (i === at ? l.replace('"source":"offline"', '"source":"real"') : l));
    expect(asReal[at]).toContain('"source":"real"');
    const { offline } = await seedFileOffline(`${asReal.join('\n')}\n`, 'shop', 'real.jsonl');
    expect(offline.trajectories.every((t) => t.source === 'offline')).toBe(true);
    const synthetic = lines.map((l, i) => (i === at ? l.replace('"source":"offline"', '"source":"synthetic"') : l));
    await expect(seedFileOffline(`${synthetic.join('\n')}\n`, 'shop', 'sim.jsonl')).rejects.toThrow(new RegExp(`sim.jsonl: line ${at + 1}: a synthetic trajectory`));
  });

  it('refuses a malformed file with the line, another environment’s data with the line, and a file without trajectories', async () => {
    const lines = text.trimEnd().split('\n');
    const broken = [lines[0], '{"v":1,"type":"task"', ...lines.slice(1)].join('\n');
    const error = await seedFileOffline(broken, 'shop', 'broken.jsonl').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(JsonlError);
    expect((error as Error).message).toMatch(/line 2/);
    await expect(seedFileOffline(text, 'household', 'shop.jsonl')).rejects.toThrow(/shop\.jsonl: line 1: a record of environment "shop", but the run trains on "household"/);
    const tasksOnly = toJsonl({ tasks: data.tasks, trajectories: [] });
    await expect(seedFileOffline(tasksOnly, 'shop', 'tasks.jsonl')).rejects.toThrow(SeedFileError);
    await expect(seedFileOffline(tasksOnly, 'shop', 'tasks.jsonl')).rejects.toThrow(/no trajectories/);
  });
});
