import { describe, expect, it } from 'vitest';
import { EnvironmentStateError, InvalidTaskError, type StepResult, type Task } from '../src/core/types.ts';
import {
  HouseholdEnv,
  HouseholdGoalSchema,
  OBJECTS,
  householdSpec,
  householdTasks,
  goalSatisfied,
  isAccessible,
  objectById,
  type HouseholdGoal,
  type HouseholdTaskType,
} from '../src/envs/household/index.ts';

const POOL = householdTasks({ split: 'train', count: 240, seed: 11 });

function goalOf(task: Task): HouseholdGoal {
  return HouseholdGoalSchema.parse(task.goal);
}

/** The first pooled task of `type` that passes `ok` (for setting up a specific situation). */
function taskOf(type: HouseholdTaskType, ok: (env: HouseholdEnv, goal: HouseholdGoal) => boolean = () => true): Task {
  for (const task of POOL) {
    if (goalOf(task).type !== type) continue;
    const env = new HouseholdEnv();
    env.reset(task);
    if (ok(env, goalOf(task))) return task;
  }
  throw new Error(`no ${type} task in the pool fits`);
}

/** Steps `action` and insists it was valid. */
function act(env: HouseholdEnv, action: string): StepResult {
  const r = env.step(action);
  expect(r.info.valid, `${action}: ${r.info.message ?? ''}`).toBe(true);
  return r;
}

/** Walks to a receptacle and opens it if needed; returns the last result, if any step was taken. */
function reach(env: HouseholdEnv, id: string): StepResult | undefined {
  let r: StepResult | undefined;
  if (env.snapshot().location !== id) r = act(env, `go to ${id}`);
  if (!isAccessible(env.snapshot(), id)) r = act(env, `open ${id}`);
  return r;
}

/** Hand-written fetch: go to the object's receptacle, open it, take the object. */
function fetch(env: HouseholdEnv, objectId: string): StepResult {
  const o = objectById(env.snapshot(), objectId);
  if (!o?.location) throw new Error(`${objectId} is not lying anywhere`);
  const from = o.location;
  reach(env, from);
  return act(env, `take ${objectId} from ${from}`);
}

function put(env: HouseholdEnv, receptacleId: string): StepResult {
  reach(env, receptacleId);
  const held = env.snapshot().held;
  if (held === null) throw new Error('put with empty hands');
  return act(env, `put ${held} in/on ${receptacleId}`);
}

function expectOngoing(r: StepResult): void {
  expect([r.reward, r.done, r.info.success]).toEqual([0, false, undefined]);
}

function expectSuccess(r: StepResult): void {
  expect([r.reward, r.done, r.info.success]).toEqual([1, true, true]);
}

function idsOf(env: HouseholdEnv, type: string): string[] {
  return env.snapshot().objects.filter((o) => o.type === type).map((o) => o.id);
}

function receptaclesOf(env: HouseholdEnv, type: string | undefined): string[] {
  return env.snapshot().layout.receptacles.filter((r) => r.type === type).map((r) => r.id);
}

function first<T>(items: readonly T[]): T {
  const x = items[0];
  if (x === undefined) throw new Error('empty list');
  return x;
}

/** Type of the receptacle an object instance lies in (e.g. "countertop"). */
function locType(env: HouseholdEnv, objectId: string): string | undefined {
  return objectById(env.snapshot(), objectId)?.location?.replace(/ \d+$/, '');
}

describe('household environment: success conditions of the six task types', () => {
  it('pick_and_place: a wrong receptacle does not count, the right one does', () => {
    const task = taskOf('pick_and_place');
    const env = new HouseholdEnv();
    env.reset(task);
    const goal = goalOf(task);
    const obj = first(idsOf(env, goal.object));
    expectOngoing(fetch(env, obj));
    const wrong = env.snapshot().layout.receptacles.find((r) => r.type !== goal.receptacle && !r.openable);
    if (!wrong) throw new Error('no wrong receptacle');
    expectOngoing(put(env, wrong.id));
    expectOngoing(fetch(env, obj));
    expectSuccess(put(env, first(receptaclesOf(env, goal.receptacle))));
  });

  it('pick_two_and_place: one object is not enough, two in the same receptacle are', () => {
    const task = taskOf('pick_two_and_place', (env, g) => idsOf(env, g.object).every((id) => locType(env, id) !== g.receptacle));
    const env = new HouseholdEnv();
    env.reset(task);
    const goal = goalOf(task);
    const [a, b] = idsOf(env, goal.object) as [string, string];
    const target = first(receptaclesOf(env, goal.receptacle));
    fetch(env, a);
    expectOngoing(put(env, target));
    fetch(env, b);
    expectSuccess(put(env, target));
  });

  it('pick_two_and_place: two objects in two different receptacles of the type do not count', () => {
    const task = taskOf(
      'pick_two_and_place',
      (env, g) => receptaclesOf(env, g.receptacle).length >= 2 && idsOf(env, g.object).every((id) => locType(env, id) !== g.receptacle),
    );
    const env = new HouseholdEnv();
    env.reset(task);
    const goal = goalOf(task);
    const [a, b] = idsOf(env, goal.object) as [string, string];
    const [r1, r2] = receptaclesOf(env, goal.receptacle) as [string, string];
    fetch(env, a);
    expectOngoing(put(env, r1));
    fetch(env, b);
    expectOngoing(put(env, r2));
    fetch(env, b);
    expectSuccess(put(env, r1));
  });

  it('clean_and_place: an unclean object in the receptacle does not count, a cleaned one does', () => {
    const task = taskOf('clean_and_place');
    const env = new HouseholdEnv();
    env.reset(task);
    const goal = goalOf(task);
    const obj = first(idsOf(env, goal.object));
    const target = first(receptaclesOf(env, goal.receptacle));
    fetch(env, obj);
    expectOngoing(put(env, target));
    expect(goalSatisfied(env.snapshot(), goal)).toBe(false);
    fetch(env, obj);
    const sink = first(receptaclesOf(env, 'sinkbasin'));
    act(env, `go to ${sink}`);
    const cleaned = act(env, `clean ${obj} with ${sink}`);
    expectOngoing(cleaned);
    expect(cleaned.observation.text).toContain(`You clean the ${obj} using the ${sink}.`);
    expect(cleaned.observation.text).toContain(`Holding: ${obj} (clean).`);
    expectSuccess(put(env, target));
  });

  it('heat_and_place: unheated, or heated then cooled, does not count; heated does', () => {
    const task = taskOf('heat_and_place');
    const env = new HouseholdEnv();
    env.reset(task);
    const goal = goalOf(task);
    const obj = first(idsOf(env, goal.object));
    const target = first(receptaclesOf(env, goal.receptacle));
    fetch(env, obj);
    expectOngoing(put(env, target));
    fetch(env, obj);
    act(env, 'go to microwave 1');
    expectOngoing(act(env, `heat ${obj} with microwave 1`));
    act(env, 'go to fridge 1');
    // Cooling undoes heating (only coolable objects can be cooled).
    if (env.step(`cool ${obj} with fridge 1`).info.valid) {
      expectOngoing(put(env, target));
      fetch(env, obj);
    }
    act(env, 'go to microwave 1');
    act(env, `heat ${obj} with microwave 1`);
    expectSuccess(put(env, target));
  });

  it('cool_and_place: uncooled, or cooled then heated, does not count; cooled does', () => {
    const task = taskOf('cool_and_place');
    const env = new HouseholdEnv();
    env.reset(task);
    const goal = goalOf(task);
    const obj = first(idsOf(env, goal.object));
    const target = first(receptaclesOf(env, goal.receptacle));
    fetch(env, obj);
    expectOngoing(put(env, target));
    fetch(env, obj);
    act(env, 'go to fridge 1');
    expectOngoing(act(env, `cool ${obj} with fridge 1`));
    act(env, 'go to microwave 1');
    if (env.step(`heat ${obj} with microwave 1`).info.valid) {
      expectOngoing(put(env, target));
      fetch(env, obj);
    }
    act(env, 'go to fridge 1');
    act(env, `cool ${obj} with fridge 1`);
    expectSuccess(put(env, target));
  });

  it('look_at_obj_in_light: holding it by the lamp while the lamp is off does not count; turning it on does', () => {
    const task = taskOf('look_at_obj_in_light');
    const env = new HouseholdEnv();
    env.reset(task);
    const goal = goalOf(task);
    const { host, id: lamp } = env.snapshot().layout.lamp;
    fetch(env, first(idsOf(env, goal.object)));
    if (env.snapshot().location !== host) expectOngoing(act(env, `go to ${host}`));
    expect(env.snapshot().lampOn).toBe(false);
    const on = act(env, `use ${lamp}`);
    expectSuccess(on);
    expect(on.observation.text).toContain(`You turn on the ${lamp}.`);
  });

  it('look_at_obj_in_light: a lit lamp with the object elsewhere, or the wrong object, does not count', () => {
    const task = taskOf('look_at_obj_in_light', (env, g) => idsOf(env, g.object).every((id) => objectById(env.snapshot(), id)?.location !== env.snapshot().layout.lamp.host));
    const env = new HouseholdEnv();
    env.reset(task);
    const goal = goalOf(task);
    const { host, id: lamp } = env.snapshot().layout.lamp;
    act(env, `go to ${host}`);
    expectOngoing(act(env, `use ${lamp}`));
    // The wrong object under a lit lamp.
    const other = env.snapshot().objects.find((o) => o.type !== goal.object && o.location !== host && OBJECTS[o.type].pickable);
    if (!other) throw new Error('no other object');
    fetch(env, other.id);
    expectOngoing(act(env, `go to ${host}`));
    expectOngoing(act(env, `put ${other.id} in/on ${host}`));
    // The right object, but away from the lamp.
    expectOngoing(fetch(env, first(idsOf(env, goal.object))));
    expectSuccess(act(env, `go to ${host}`));
  });
});

describe('household environment: observations and actions', () => {
  const task = taskOf('clean_and_place');

  it('starts in the middle of the room, with the task on top and the room listed', () => {
    const env = new HouseholdEnv();
    const obs = env.reset(task);
    const lines = obs.text.split('\n');
    expect(lines[0]).toBe(`Your task is to: ${task.instruction}`);
    expect(lines[1]).toMatch(/^You are in the middle of a room\. Looking quickly around you, you see .*a cabinet 1, .*a countertop 1, .*a fridge 1, .*a microwave 1, .*a sinkbasin 1.*\.$/);
    expect(lines[2]).toBe('Location: middle of the room. Holding: nothing.');
    expect(obs.actions).toContain('go to countertop 1');
    expect(obs.actions).toContain('look');
    expect(obs.actions.some((a) => a.startsWith('take '))).toBe(false);
  });

  it('describes closed and opened receptacles the ALFWorld way', () => {
    const env = new HouseholdEnv();
    env.reset(task);
    const r = act(env, 'go to fridge 1');
    expect(r.observation.text).toContain('You arrive at fridge 1. The fridge 1 is closed.');
    expect(r.observation.text).toContain('Location: fridge 1 (closed). Holding: nothing.');
    expect(r.observation.actions).toContain('open fridge 1');
    expect(r.observation.actions.some((a) => a.startsWith('take '))).toBe(false);
    const opened = act(env, 'open fridge 1');
    expect(opened.observation.text).toMatch(/You open the fridge 1\. In it, you see (nothing|an? [a-z]+ \d.*)\./);
    expect(opened.observation.actions).toContain('close fridge 1');
    const inside = env.snapshot().objects.filter((o) => o.location === 'fridge 1');
    for (const o of inside) expect(opened.observation.actions).toContain(`take ${o.id} from fridge 1`);
  });

  it('every listed action is valid, and take is listed only with empty hands', () => {
    const env = new HouseholdEnv();
    let obs = env.reset(task);
    // Walk a fixed path through several kinds of state and try every listed action in a replay.
    const path: string[] = [];
    for (let i = 0; i < 8; i++) {
      for (const a of obs.actions) {
        const probe = new HouseholdEnv();
        probe.reset(task);
        for (const p of path) probe.step(p);
        expect(probe.step(a).info.valid, `${a} after ${path.join(' ; ')}`).toBe(true);
      }
      if (env.snapshot().held !== null) expect(obs.actions.some((a) => a.startsWith('take '))).toBe(false);
      const next = env.expertAction();
      path.push(next);
      const r = env.step(next);
      if (r.done) break;
      obs = r.observation;
    }
    expect(path.length).toBeGreaterThan(3);
  });

  it('states the task at the top of every observation', () => {
    const env = new HouseholdEnv();
    env.reset(task);
    for (const a of ['look', 'inventory', 'dance', 'go to countertop 1', 'examine countertop 1']) {
      expect(env.step(a).observation.text.startsWith(`Your task is to: ${task.instruction}\n`)).toBe(true);
    }
  });

  it('forgives case, spacing, a final period and "in" or "on" for "in/on"', () => {
    const env = new HouseholdEnv();
    env.reset(task);
    const here = env.snapshot().objects.find((o) => o.location !== null && !o.location.startsWith('cabinet') && !o.location.startsWith('drawer') && OBJECTS[o.type].pickable);
    if (!here?.location) throw new Error('no object in the open');
    const spot = here.location;
    expect(env.step(`  Go To   ${spot.toUpperCase()}. `).info.valid).toBe(true);
    if (!isAccessible(env.snapshot(), spot)) act(env, `open ${spot}`);
    expect(env.step(`Take ${here.id} from ${spot}.`).info.valid).toBe(true);
    expect(env.step(`put ${here.id} on ${spot}`).info.valid).toBe(true);
    expect(env.snapshot().held).toBeNull();
    expect(env.step(`take ${here.id} from ${spot}`).info.valid).toBe(true);
    expect(env.step(`put ${here.id} in ${spot}`).info.valid).toBe(true);
    expect(env.step(`put ${here.id} into ${spot}`).info.valid).toBe(false);
  });
});

describe('household environment: invalid actions', () => {
  const task = taskOf('pick_and_place');

  it('never throw, change nothing, say why, and the episode goes on', () => {
    const env = new HouseholdEnv();
    const start = env.reset(task);
    const before = JSON.stringify(env.snapshot());
    const bad = ['', 'dance', 'fly to the moon', 'take', 'go to', 'put apple 1', 'go to nowhere 9', 'open countertop 1', 'take apple 1 from fridge 1', 'use desklamp 1', 'examine drawer 1', 'look around'];
    for (const a of bad) {
      const r = env.step(a);
      expect(r.info.valid, a).toBe(false);
      expect([r.reward, r.done]).toEqual([0, false]);
      expect(r.info.message, a).toMatch(/^invalid action: .+/);
      expect(r.observation.text.split('\n')[1]).toBe('Nothing happens.');
      expect(r.observation.text.split('\n')[2]).toBe(start.text.split('\n')[2]);
      expect(r.observation.actions).toEqual(start.actions);
      expect(JSON.stringify(env.snapshot())).toBe(before);
    }
    expect(env.stepsTaken).toBe(bad.length);
    expect(env.step('go to countertop 1').info.valid).toBe(true);
  });

  it('explain unknown, malformed and inapplicable actions in plain words', () => {
    const env = new HouseholdEnv();
    env.reset(task);
    expect(env.step('dance').info.message).toContain('not a known command');
    expect(env.step('take apple').info.message).toContain('take OBJECT from RECEPTACLE');
    expect(env.step('open drawer 1').info.message).toContain('you are not at drawer 1');
    act(env, 'go to drawer 1');
    expect(env.step('go to drawer 1').info.message).toContain('already at drawer 1');
    expect(env.step('close drawer 1').info.message).toContain('already closed');
    const hidden = env.snapshot().objects.find((o) => o.location === 'drawer 1');
    if (hidden) expect(env.step(`take ${hidden.id} from drawer 1`).info.message).toContain('drawer 1 is closed');
  });

  it('taking while holding something is refused (ALFWorld holds one object)', () => {
    const env = new HouseholdEnv();
    env.reset(task);
    const layout = env.snapshot().layout;
    // A receptacle without a door that holds two pickable objects.
    const pickable = (r: string) => env.snapshot().objects.filter((o) => o.location === r && OBJECTS[o.type].pickable);
    const spot = layout.receptacles.find((r) => !r.openable && pickable(r.id).length >= 2);
    if (!spot) throw new Error('no receptacle with two objects');
    const [a, b] = pickable(spot.id).map((o) => o.id) as [string, string];
    act(env, `go to ${spot.id}`);
    act(env, `take ${a} from ${spot.id}`);
    const r = env.step(`take ${b} from ${spot.id}`);
    expect(r.info.valid).toBe(false);
    expect(r.info.message).toContain(`already holding ${a}`);
    expect(r.observation.actions.some((x) => x.startsWith('take '))).toBe(false);
    expect(env.snapshot().held).toBe(a);
    expect(act(env, `put ${a} in/on ${spot.id}`).observation.text).toContain(`You put the ${a} in/on the ${spot.id}.`);
    expect(act(env, `take ${b} from ${spot.id}`).observation.text).toContain(`Holding: ${b}.`);
  });
});

describe('household environment: episode boundaries', () => {
  const task = taskOf('heat_and_place');

  it('ends after 50 steps with reward 0, counting invalid steps, then refuses to step', () => {
    const env = new HouseholdEnv();
    env.reset(task);
    expect(env.maxSteps).toBe(50);
    for (let i = 1; i < 50; i++) {
      const r = env.step(i % 2 === 0 ? 'look' : 'jump');
      expect(r.done, `step ${i}`).toBe(false);
    }
    const last = env.step('look');
    expect([last.reward, last.done, last.info.success]).toEqual([0, true, false]);
    expect(last.info.message).toContain('50-step limit');
    expect(() => env.step('look')).toThrow(EnvironmentStateError);
    expect(() => env.expertAction()).toThrow(EnvironmentStateError);
    // reset starts afresh.
    env.reset(task);
    expect(env.step('look').done).toBe(false);
  });

  it('a goal reached on the 50th step still succeeds', () => {
    const probe = new HouseholdEnv();
    probe.reset(task);
    let n = 0;
    for (;;) {
      n++;
      if (probe.step(probe.expertAction()).done) break;
    }
    const env = new HouseholdEnv();
    env.reset(task);
    for (let i = 0; i < 50 - n; i++) env.step('look');
    let r: StepResult | undefined;
    for (let i = 0; i < n; i++) r = env.step(env.expertAction());
    expect(env.stepsTaken).toBe(50);
    expect(r && [r.reward, r.done, r.info.success]).toEqual([1, true, true]);
  });

  it('refuses to step before reset and after success', () => {
    const env = new HouseholdEnv();
    expect(() => env.step('look')).toThrow(EnvironmentStateError);
    expect(() => env.expertAction()).toThrow(EnvironmentStateError);
    env.reset(task);
    let r: StepResult;
    do r = env.step(env.expertAction());
    while (!r.done);
    expect(r.info.success).toBe(true);
    expect(r.observation.actions).toEqual([]);
    expect(() => env.step('look')).toThrow(EnvironmentStateError);
  });

  it('reset throws InvalidTaskError for an invalid task', () => {
    const env = new HouseholdEnv();
    const bad: Task = { ...task, goal: { ...goalOf(task), object: 'unicorn' } };
    expect(() => env.reset(bad)).toThrow(InvalidTaskError);
    expect(() => env.reset({ ...task, env: 'shop' })).toThrow(/not household/);
    // Not a task at all (e.g. a bad JSONL line): still the typed error, not a TypeError.
    expect(() => env.reset(null as unknown as Task)).toThrow(InvalidTaskError);
  });

  it('goalSatisfied is pure and refuses a goal of another layout', () => {
    const env = new HouseholdEnv();
    env.reset(task);
    const state = env.snapshot();
    const copy = JSON.stringify(state);
    expect(goalSatisfied(state, goalOf(task))).toBe(false);
    expect(JSON.stringify(state)).toBe(copy);
    expect(() => goalSatisfied(state, { ...goalOf(task), layoutSeed: goalOf(task).layoutSeed + 2 })).toThrow(/layout/);
  });

  it('the spec creates household environments with the 50-step limit', () => {
    expect(householdSpec.name).toBe('household');
    expect(householdSpec.maxSteps).toBe(50);
    const env = householdSpec.create();
    expect(env.name).toBe('household');
    expect(env.reset(task).text).toContain(task.instruction);
  });
});
