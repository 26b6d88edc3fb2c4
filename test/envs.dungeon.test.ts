import { describe, expect, it } from 'vitest';
import { Rng } from '../src/core/rng.ts';
import type { Observation, Task } from '../src/core/types.ts';
import { checkModuleExports } from '../src/envs/module.ts';
import { create, description, explore, maxSteps, name, tasks, validateTask, type SeenStep } from '../src/envs/dungeon/index.ts';
import * as dungeon from '../src/envs/dungeon/index.ts';
import { demonstrator, expert, play, playAll, random, replay, seedTasks, solvedShare, successRate, type DemoEnvironment } from './fixtures/domain-play.ts';

const fresh = (): DemoEnvironment => create() as DemoEnvironment;

const roomOf = (o: Observation): string | null => /You are in the ([a-z ]+)\./.exec(o.text)?.[1] ?? null;
const exitsOf = (o: Observation): string[] => (/Exits: ([^.]*)\./.exec(o.text)?.[1] ?? '').split(', ');
const test200 = seedTasks(dungeon, 'test', 200);
type Goal = { world: number; item: string };
const goalOf = (t: Task): Goal => t.goal as Goal;

describe('the dungeon module (a text adventure with keys and doors)', () => {
  it('has the exports the contract asks for', () => {
    const shapes = Object.fromEntries(Object.entries({ name, description, maxSteps, create, tasks, validateTask }).map(([k, v]) => [k, typeof v === 'function' ? { kind: 'function' as const } : { kind: 'value' as const, value: v }]));
    expect(checkModuleExports('dungeon/index.ts', shapes, ['shop', 'household']).name).toBe('dungeon');
  });

  it('deterministic tasks per seed; train and test never share a map; every task validates; a bad goal, split or instruction does not', () => {
    expect(seedTasks(dungeon, 'train', 30, 4)).toEqual(seedTasks(dungeon, 'train', 30, 4));
    expect(seedTasks(dungeon, 'train', 30, 4)).not.toEqual(seedTasks(dungeon, 'train', 30, 5));
    const train = seedTasks(dungeon, 'train', 500);
    const trainWorlds = new Set(train.map((t) => goalOf(t).world));
    expect(test200.some((t) => trainWorlds.has(goalOf(t).world))).toBe(false);
    for (const t of [...test200, ...train.slice(0, 100)]) expect(validateTask(t)).toEqual({ ok: true });
    const t0 = test200[0] as Task;
    expect(validateTask({ ...t0, split: 'train' })).toMatchObject({ ok: false, reason: expect.stringMatching(/belongs to the test split/) });
    expect(validateTask({ ...t0, goal: { world: goalOf(t0).world, item: 'rubber duck' } })).toMatchObject({ ok: false });
    expect(validateTask({ ...t0, instruction: 'find something' })).toMatchObject({ ok: false, reason: expect.stringMatching(/must state the goal/) });
  });

  it('the expert solves at least 98% of 200 test tasks; uniformly random admissible actions at most 5%', () => {
    const solved = playAll(dungeon, test200, expert);
    expect(solvedShare(solved)).toBeGreaterThanOrEqual(0.98);
    // Every task needs a key: the treasure lies behind a locked door.
    expect(solved.every((p) => p.actions.some((a) => a.startsWith('unlock ')))).toBe(true);
    expect(successRate(dungeon, test200, random, 11)).toBeLessThanOrEqual(0.05);
  });

  it('the goal-blind demonstrator brings the right treasure on 92.0% of 200 test tasks: decent, not perfect (it searches features last)', () => {
    const r = successRate(dungeon, test200, demonstrator);
    expect(r).toBeCloseTo(0.92, 3);
  });

  it('the demonstrator acts on the instruction and the observations alone: the same as a function given only those', () => {
    for (const task of test200.slice(0, 40)) {
      const env = fresh();
      const seen: SeenStep[] = [{ action: null, observation: env.reset(task) }];
      for (let t = 0; t < maxSteps; t++) {
        const action = env.demonstratorAction();
        expect(explore(task.instruction, seen)).toBe(action);
        const r = env.step(action);
        seen.push({ action, observation: r.observation });
        if (r.done) break;
      }
    }
  });

  it('the goal shows only through the instruction: observations do not depend on the treasure asked for, and never name the world seed', () => {
    for (const task of test200.slice(0, 50)) {
      const g = goalOf(task);
      const played = play(dungeon, task, expert, new Rng(0));
      for (const o of played.observations) expect(o.text).not.toContain(String(g.world));
      const other: Task = { ...task, goal: { ...g, item: g.item === 'jade idol' ? 'bone flute' : 'jade idol' } };
      expect(replay(dungeon, other, played.actions).slice(0, -1)).toEqual(played.observations.slice(0, -1));
    }
  });

  it('the treasure is hidden until its chest is opened or its feature examined; locked doors hold until unlocked with their key', () => {
    for (const task of test200.slice(0, 50)) {
      const { item } = goalOf(task);
      const played = play(dungeon, task, expert, new Rng(0));
      const firstSeen = played.observations.findIndex((o) => o.text.includes(item));
      expect(firstSeen).toBeGreaterThan(0);
      expect(played.actions[firstSeen - 1]).toMatch(/^(open|examine) /);
      // Before the first unlock, walking through that door is refused and leaves the agent where it was.
      const i = played.actions.findIndex((a) => a.startsWith('unlock '));
      const color = (played.actions[i] as string).split(' ')[1] as string;
      const before = played.observations[i] as Observation;
      const dir = (exitsOf(before).find((e) => e.endsWith(`(locked ${color} door)`)) as string).split(' ')[0] as string;
      const env = fresh();
      env.reset(task);
      for (const a of played.actions.slice(0, i)) env.step(a);
      const blocked = env.step(`go ${dir}`);
      expect(blocked.observation.text).toContain(`The ${color} door is locked.`);
      expect(roomOf(blocked.observation)).toBe(roomOf(before));
    }
    // A locked door right off the hall: unlocking it empty-handed does nothing.
    const task = test200.find((t) => fresh().reset(t).actions.some((a) => a.startsWith('unlock '))) as Task;
    expect(task).toBeDefined();
    const env = fresh();
    const hall = env.reset(task);
    const tried = env.step(hall.actions.find((a) => a.startsWith('unlock ')) as string).observation;
    expect(tried.text).toMatch(/^You need the (red|blue) key\. You are in the entrance hall\./);
    expect(tried.text).toContain('locked');
  });

  it('maps have dead ends that the expert walks into and back out of', () => {
    let backtracked = 0;
    for (const task of test200) {
      const rooms = play(dungeon, task, expert, new Rng(0)).observations.map((o) => ({ room: roomOf(o), exits: exitsOf(o).length }));
      // A room with one exit, entered and left back the way it came.
      if (rooms.some((r, i) => i > 0 && r.exits === 1 && r.room !== null && rooms[i - 1]?.room !== r.room && rooms.slice(i + 1).some((n) => n.room === rooms[i - 1]?.room))) backtracked++;
    }
    expect(backtracked / test200.length).toBeGreaterThan(0.5);
  });

  it('an inadmissible action is invalid, not thrown; the step limit ends the episode unrewarded; episodes are deterministic', () => {
    const task = test200[1] as Task;
    const env = fresh();
    const first = env.reset(task);
    const bad = env.step('fly away');
    expect(bad).toMatchObject({ done: false, reward: 0, info: { valid: false } });
    expect(bad.observation.actions).toEqual(first.actions);
    let last = bad;
    for (let t = 2; t <= maxSteps; t++) last = env.step('dance');
    expect(last).toMatchObject({ done: true, reward: 0, info: { success: false } });
    expect(last.observation.actions).toEqual([]);
    const rng = new Rng(3);
    const a = play(dungeon, task, random, rng);
    expect(replay(dungeon, task, a.actions)).toEqual(a.observations);
    expect(fresh().reset(task)).toEqual(first);
  });
});
