import { describe, expect, it } from 'vitest';
import { Rng } from '../src/core/rng.ts';
import type { Task } from '../src/core/types.ts';
import * as calendar from '../src/envs/calendar/index.ts';
import { checkModuleExports } from '../src/envs/module.ts';
import { blindDemonstrator, demonstrator, expert, offListChoices, play, random, seedTasks, successRate, type DemoEnvironment } from './fixtures/domain-play.ts';

const test200 = seedTasks(calendar, 'test', 200);
type Goal = { attendees: string[]; days: string[]; hours: number; layout: number };

describe('the calendar module', () => {
  it('has the exports the contract asks for', () => {
    const shapes = Object.fromEntries(Object.entries({ name: calendar.name, description: calendar.description, maxSteps: calendar.maxSteps, create: calendar.create, tasks: calendar.tasks, validateTask: calendar.validateTask }).map(([k, v]) => [k, typeof v === 'function' ? { kind: 'function' as const } : { kind: 'value' as const, value: v }]));
    expect(checkModuleExports('calendar', shapes, ['shop', 'household']).name).toBe('calendar');
  });

  it('deterministic tasks; train and test never invite the same group; every task validates', () => {
    expect(seedTasks(calendar, 'train', 30, 5)).toEqual(seedTasks(calendar, 'train', 30, 5));
    expect(seedTasks(calendar, 'train', 30, 5)).not.toEqual(seedTasks(calendar, 'train', 30, 6));
    const group = (t: Task): string => [...(t.goal as Goal).attendees].sort().join('|');
    const train = seedTasks(calendar, 'train', 400);
    const trainGroups = new Set(train.map(group));
    expect(test200.some((t) => trainGroups.has(group(t)))).toBe(false);
    expect(new Set(test200.map((t) => (t.goal as Goal).attendees.length))).toEqual(new Set([2, 3, 4]));
    for (const t of [...test200, ...train.slice(0, 50)]) expect(calendar.validateTask(t)).toEqual({ ok: true });
    expect(calendar.validateTask({ ...test200[0]!, split: 'train' })).toMatchObject({ ok: false });
    expect(calendar.validateTask({ ...test200[0]!, goal: { ...(test200[0]!.goal as Goal), hours: 3 } })).toMatchObject({ ok: false });
  });

  it('the expert solves at least 98% of 200 test tasks; uniformly random admissible actions at most 5%', () => {
    expect(successRate(calendar, test200, expert)).toBeGreaterThanOrEqual(0.98);
    expect(successRate(calendar, test200, random)).toBeLessThanOrEqual(0.05);
  });

  it('the goal-blind demonstrator solves 87.0% of 200 test tasks, reading only what the agent saw', () => {
    const blind = successRate(calendar, test200, blindDemonstrator);
    expect(blind).toBeCloseTo(0.87, 3);
    expect(successRate(calendar, test200, demonstrator)).toBe(blind);
  });

  it("a calendar or a room's bookings show only right after viewing it; exactly one slot and room suit everyone", () => {
    for (const task of test200.slice(0, 60)) {
      const g = task.goal as Goal;
      let suitable = 0;
      const env = calendar.create() as DemoEnvironment;
      const obs = env.reset(task);
      for (const select of obs.actions.filter((a) => a.startsWith('select '))) {
        for (const room of ['cedar', 'maple', 'oak', 'pine']) {
          env.reset(task);
          env.step(select);
          if (env.step(`book ${room}`).info?.success === true) suitable++;
        }
      }
      expect(suitable).toBe(1);
      for (const run of [play(calendar, task, demonstrator, new Rng(2)), play(calendar, task, random, new Rng(3))]) {
        for (const [i, text] of run.texts.entries()) {
          expect(text).not.toContain(String(g.layout));
          const shown = /^(?:Calendar of ([a-z ]+)|Room ([a-z]+) \(seats \d+\)):/m.exec(text);
          if (shown) expect(run.actions[i - 1]).toBe(shown[1] !== undefined ? `view ${shown[1]}` : `view room ${shown[2]}`);
          else expect(text).not.toMatch(/busy \d+:00/);
        }
      }
    }
  });

  it('from states random actions reach, the expert and the demonstrator choose admissible actions', () => {
    expect(offListChoices(calendar, test200)).toEqual([]);
  });

  it('the same task and actions give the same observations; an inadmissible action is invalid, not thrown', () => {
    const task = test200[3]!;
    expect(play(calendar, task, random, new Rng(9))).toEqual(play(calendar, task, random, new Rng(9)));
    const env = calendar.create() as DemoEnvironment;
    const first = env.reset(task);
    expect(first.actions.some((a) => a.startsWith('book '))).toBe(false);
    for (const bad of ['book oak', 'select sunday 9:00', 'view nobody', '']) {
      expect(env.step(bad)).toMatchObject({ done: false, reward: 0, info: { valid: false }, observation: { actions: first.actions } });
    }
    expect(() => calendar.create().step('view ada lane')).toThrow(/before reset/);
  });
});
