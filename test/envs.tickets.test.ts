import { describe, expect, it } from 'vitest';
import { Rng } from '../src/core/rng.ts';
import type { Task } from '../src/core/types.ts';
import * as tickets from '../src/envs/tickets/index.ts';
import { checkModuleExports } from '../src/envs/module.ts';
import { blindDemonstrator, demonstrator, expert, offListChoices, play, random, seedTasks, successRate, type DemoEnvironment } from './fixtures/domain-play.ts';

const test200 = seedTasks(tickets, 'test', 200);
type Goal = { customers: string[]; layout: number };

describe('the tickets module', () => {
  it('has the exports the contract asks for', () => {
    const shapes = Object.fromEntries(Object.entries({ name: tickets.name, description: tickets.description, maxSteps: tickets.maxSteps, create: tickets.create, tasks: tickets.tasks, validateTask: tickets.validateTask }).map(([k, v]) => [k, typeof v === 'function' ? { kind: 'function' as const } : { kind: 'value' as const, value: v }]));
    expect(checkModuleExports('tickets', shapes, ['shop', 'household']).name).toBe('tickets');
  });

  it('deterministic tasks; train and test never name the same customer; every task validates', () => {
    expect(seedTasks(tickets, 'train', 30, 5)).toEqual(seedTasks(tickets, 'train', 30, 5));
    expect(seedTasks(tickets, 'train', 30, 5)).not.toEqual(seedTasks(tickets, 'train', 30, 6));
    const names = (t: Task): string[] => (t.goal as Goal).customers;
    const train = seedTasks(tickets, 'train', 400);
    const trainNames = new Set(train.flatMap(names));
    expect(test200.some((t) => names(t).some((n) => trainNames.has(n)))).toBe(false);
    expect(new Set(test200.map((t) => names(t).length))).toEqual(new Set([1, 2]));
    for (const t of [...test200, ...train.slice(0, 50)]) expect(tickets.validateTask(t)).toEqual({ ok: true });
    expect(tickets.validateTask({ ...test200[0]!, split: 'train' })).toMatchObject({ ok: false });
    expect(tickets.validateTask({ ...test200[0]!, goal: { customers: ['nobody'], layout: 1 } })).toMatchObject({ ok: false });
  });

  it('the expert solves at least 98% of 200 test tasks; uniformly random admissible actions at most 5%', () => {
    expect(successRate(tickets, test200, expert)).toBeGreaterThanOrEqual(0.98);
    expect(successRate(tickets, test200, random)).toBeLessThanOrEqual(0.05);
  });

  it('the goal-blind demonstrator solves 76.5% of 200 test tasks, reading only what the agent saw', () => {
    const blind = successRate(tickets, test200, blindDemonstrator);
    expect(blind).toBeCloseTo(0.765, 3);
    expect(successRate(tickets, test200, demonstrator)).toBe(blind);
  });

  it("a ticket's message and plan show only once it is opened", () => {
    for (const task of test200.slice(0, 60)) {
      const g = task.goal as Goal;
      for (const run of [play(tickets, task, expert, new Rng(2)), play(tickets, task, random, new Rng(3))]) {
        const shown = new Set(run.texts.flatMap((t) => t.split('\n').filter((l) => l.startsWith('Message: ')).map((l) => l.slice('Message: '.length))));
        let opened: string | null = null;
        for (const [i, text] of run.texts.entries()) {
          const action = run.actions[i - 1] ?? '';
          if (action.startsWith('open #')) opened = action.slice('open '.length);
          if (action === 'back to queue' || action === 'close ticket') opened = null;
          expect(text).not.toContain(String(g.layout));
          if (text.includes('Message: ')) expect(text).toMatch(new RegExp(`^Ticket ${opened} from `, 'm'));
          else for (const m of shown) expect(text).not.toContain(m);
          if (!text.includes('Message: ')) expect(text).not.toMatch(/Plan: /);
        }
      }
    }
  });

  it('from states random actions reach, the expert and the demonstrator choose admissible actions', () => {
    expect(offListChoices(tickets, test200)).toEqual([]);
  });

  it('the same task and actions give the same observations; an inadmissible action is invalid, not thrown', () => {
    const task = test200[3]!;
    expect(play(tickets, task, random, new Rng(9))).toEqual(play(tickets, task, random, new Rng(9)));
    const env = tickets.create() as DemoEnvironment;
    const first = env.reset(task);
    expect(first.actions.every((a) => /^open #\d+$/.test(a))).toBe(true);
    for (const bad of ['close ticket', 'classify as billing', 'open #1', '']) {
      expect(env.step(bad)).toMatchObject({ done: false, reward: 0, info: { valid: false }, observation: { actions: first.actions } });
    }
    expect(() => tickets.create().step('open #1')).toThrow(/before reset/);
  });
});
