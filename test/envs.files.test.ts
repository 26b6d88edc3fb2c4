import { describe, expect, it } from 'vitest';
import { Rng } from '../src/core/rng.ts';
import type { Task } from '../src/core/types.ts';
import * as files from '../src/envs/files/index.ts';
import { checkModuleExports } from '../src/envs/module.ts';
import { blindDemonstrator, demonstrator, expert, offListChoices, play, random, seedTasks, successRate, type DemoEnvironment } from './fixtures/domain-play.ts';

const test200 = seedTasks(files, 'test', 200);
type Goal = { op: string; kind: string; party: string; month: string; layout: number };

describe('the files module', () => {
  it('has the exports the contract asks for', () => {
    const shapes = Object.fromEntries(Object.entries({ name: files.name, description: files.description, maxSteps: files.maxSteps, create: files.create, tasks: files.tasks, validateTask: files.validateTask }).map(([k, v]) => [k, typeof v === 'function' ? { kind: 'function' as const } : { kind: 'value' as const, value: v }]));
    expect(checkModuleExports('files', shapes, ['shop', 'household']).name).toBe('files');
  });

  it('deterministic tasks; train and test never ask about the same (kind, party); every task validates', () => {
    expect(seedTasks(files, 'train', 30, 5)).toEqual(seedTasks(files, 'train', 30, 5));
    expect(seedTasks(files, 'train', 30, 5)).not.toEqual(seedTasks(files, 'train', 30, 6));
    const pair = (t: Task): string => { const g = t.goal as Goal; return `${g.kind}/${g.party}`; };
    const train = seedTasks(files, 'train', 400);
    const trainPairs = new Set(train.map(pair));
    const trainInstructions = new Set(train.map((t) => t.instruction));
    expect(test200.some((t) => trainPairs.has(pair(t)) || trainInstructions.has(t.instruction))).toBe(false);
    expect(new Set(test200.map((t) => (t.goal as Goal).op))).toEqual(new Set(['delete', 'move', 'rename']));
    for (const t of [...test200, ...train.slice(0, 50)]) expect(files.validateTask(t)).toEqual({ ok: true });
    expect(files.validateTask({ ...test200[0]!, split: 'train' })).toMatchObject({ ok: false });
    expect(files.validateTask({ ...test200[0]!, goal: { op: 'copy' } })).toMatchObject({ ok: false });
  });

  it('the expert solves at least 98% of 200 test tasks; uniformly random admissible actions at most 5%', () => {
    expect(successRate(files, test200, expert)).toBeGreaterThanOrEqual(0.98);
    expect(successRate(files, test200, random)).toBeLessThanOrEqual(0.05);
  });

  it('the goal-blind demonstrator solves 62.5% of 200 test tasks, reading only what the agent saw', () => {
    const blind = successRate(files, test200, blindDemonstrator);
    expect(blind).toBeCloseTo(0.625, 3);
    expect(successRate(files, test200, demonstrator)).toBe(blind);
  });

  it('a file shows what it holds only once opened, and the demonstrator has to back out of dead ends', () => {
    let backedOut = 0;
    for (const task of test200.slice(0, 60)) {
      const g = task.goal as Goal;
      const run = play(files, task, expert, new Rng(2));
      const demo = play(files, task, demonstrator, new Rng(2));
      if (demo.actions.includes('go up') && !demo.actions.includes('paste')) backedOut++;
      for (const r of [run, demo]) {
        for (const [i, text] of r.texts.entries()) {
          expect(text).not.toContain(String(g.layout));
          const shown = /Contents: (.*)/.exec(text);
          // Contents appear only in the view that follows an `open FILE`.
          if (shown) expect(r.actions[i - 1]).toMatch(/^open .+\..+$/);
          else expect(text).not.toMatch(new RegExp(`${g.party}.*${g.month}`));
        }
      }
    }
    expect(backedOut).toBeGreaterThan(10);
  });

  it('from states random actions reach, the expert and the demonstrator choose admissible actions', () => {
    expect(offListChoices(files, test200)).toEqual([]);
    // After cutting the document and opening another file on the way, the expert first closes it.
    const move = test200.find((t) => (t.goal as Goal).op === 'move')!;
    const env = files.create() as DemoEnvironment;
    let obs = env.reset(move);
    while (!obs.text.startsWith('You cut ')) obs = env.step(env.expertAction!()).observation;
    obs = env.step(obs.actions.find((a) => a.startsWith('open ')) ?? 'go up').observation;
    while (!obs.text.includes('Viewing file ')) obs = env.step(obs.actions.find((a) => /^open .+\./.test(a)) ?? obs.actions.find((a) => a.startsWith('open ')) ?? 'go up').observation;
    expect(env.expertAction!()).toBe('close');
  });

  it('the same task and actions give the same observations; an inadmissible action is invalid, not thrown', () => {
    const task = test200[3]!;
    expect(play(files, task, random, new Rng(9))).toEqual(play(files, task, random, new Rng(9)));
    const env = files.create() as DemoEnvironment;
    const first = env.reset(task);
    expect(first.actions).toEqual(['open documents', 'open downloads', 'open desktop', 'open archive']);
    for (const bad of ['go up', 'paste', 'delete everything', '']) {
      expect(env.step(bad)).toMatchObject({ done: false, reward: 0, info: { valid: false }, observation: { actions: first.actions } });
    }
    expect(() => files.create().step('open documents')).toThrow(/before reset/);
  });
});
