import { describe, expect, it } from 'vitest';
import { TaskSchema, type Task } from '../src/core/types.ts';
import {
  HouseholdGoalSchema,
  TASK_TYPES,
  generateLayout,
  goalSatisfied,
  householdSpec,
  householdTask,
  householdTasks,
  initialState,
  instructionFor,
  splitOfLayout,
  validateHouseholdTask,
  type HouseholdGoal,
} from '../src/envs/household/index.ts';

const goalOf = (t: Task): HouseholdGoal => HouseholdGoalSchema.parse(t.goal);

describe('household seed tasks', () => {
  it('are deterministic for a seed and differ between seeds', () => {
    const a = householdTasks({ split: 'train', count: 30, seed: 5 });
    expect(householdTasks({ split: 'train', count: 30, seed: 5 })).toEqual(a);
    const b = householdTasks({ split: 'train', count: 30, seed: 6 });
    expect(b).not.toEqual(a);
    expect(b.map((t) => t.goal)).not.toEqual(a.map((t) => t.goal));
    // A longer list extends a shorter one with the same seed.
    expect(householdTasks({ split: 'train', count: 10, seed: 5 })).toEqual(a.slice(0, 10));
  });

  it('are well-formed seed tasks with ids household-<split>-<seed>-<index>', () => {
    for (const split of ['train', 'test'] as const) {
      const tasks = householdTasks({ split, count: 24, seed: 3 });
      expect(tasks).toHaveLength(24);
      tasks.forEach((t, i) => {
        expect(TaskSchema.parse(t)).toEqual(t);
        expect(t.id).toBe(`household-${split}-3-${i}`);
        expect([t.env, t.split, t.origin]).toEqual(['household', split, 'seed']);
        expect(t.instruction).toBe(instructionFor(goalOf(t)));
        expect(JSON.parse(JSON.stringify(t))).toEqual(t);
      });
    }
  });

  it('cover the six task types evenly', () => {
    const tasks = householdTasks({ split: 'train', count: 120, seed: 9 });
    const counts = new Map<string, number>();
    for (const t of tasks) counts.set(goalOf(t).type, (counts.get(goalOf(t).type) ?? 0) + 1);
    for (const type of TASK_TYPES) expect(counts.get(type), type).toBe(20);
  });

  it('are valid, achievable and not already done at reset', () => {
    for (const split of ['train', 'test'] as const) {
      for (const t of householdTasks({ split, count: 120, seed: 21 })) {
        expect(validateHouseholdTask(t), t.id).toEqual({ ok: true });
        const g = goalOf(t);
        expect(goalSatisfied(initialState(generateLayout(g.layoutSeed)), g)).toBe(false);
      }
    }
  });

  it('use disjoint layouts for train and test', () => {
    const train = new Set<number>();
    const test = new Set<number>();
    for (const seed of [0, 1, 2, 3]) {
      for (const t of householdTasks({ split: 'train', count: 60, seed })) train.add(goalOf(t).layoutSeed);
      for (const t of householdTasks({ split: 'test', count: 60, seed })) test.add(goalOf(t).layoutSeed);
    }
    expect(train.size).toBeGreaterThan(200);
    expect(test.size).toBeGreaterThan(200);
    for (const s of train) expect(test.has(s), `layout ${s} in both splits`).toBe(false);
    for (const s of train) expect(splitOfLayout(s)).toBe('train');
    for (const s of test) expect(splitOfLayout(s)).toBe('test');
  });

  it('write instructions in ALFWorld wording', () => {
    const g = (type: HouseholdGoal['type'], object: string, receptacle?: string): HouseholdGoal =>
      receptacle === undefined ? { layoutSeed: 0, type, object } : { layoutSeed: 0, type, object, receptacle };
    expect(instructionFor(g('clean_and_place', 'apple', 'countertop'))).toBe('put a clean apple in countertop.');
    expect(instructionFor(g('pick_two_and_place', 'cellphone', 'sofa'))).toBe('put two cellphone in sofa.');
    expect(instructionFor(g('look_at_obj_in_light', 'book'))).toBe('look at book under the desklamp.');
    expect(instructionFor(g('pick_and_place', 'apple', 'fridge'))).toBe('put an apple in fridge.');
    expect(instructionFor(g('heat_and_place', 'mug', 'cabinet'))).toBe('put a hot mug in cabinet.');
    expect(instructionFor(g('cool_and_place', 'tomato', 'diningtable'))).toBe('put a cool tomato in diningtable.');
  });

  it('reject bad options loudly', () => {
    expect(() => householdTasks({ split: 'dev' as 'train', count: 1, seed: 0 })).toThrow('dev');
    expect(() => householdTasks({ split: 'train', count: -1, seed: 0 })).toThrow('-1');
    expect(() => householdTasks({ split: 'train', count: 1.5, seed: 0 })).toThrow('1.5');
    expect(() => householdTasks({ split: 'train', count: 1, seed: Number.NaN })).toThrow('NaN');
    expect(householdTasks({ split: 'test', count: 0, seed: 0 })).toEqual([]);
  });
});

describe('household validateTask', () => {
  const base = householdTasks({ split: 'train', count: 60, seed: 4 });
  const layoutSeed = goalOf(base[0] as Task).layoutSeed;
  const layout = generateLayout(layoutSeed);
  const task = (goal: unknown, extra: Partial<Task> = {}): Task => ({
    id: 'household-test-custom',
    env: 'household',
    instruction: 'do something.',
    goal: goal as Task['goal'],
    split: 'train',
    origin: 'generated',
    ...extra,
  });
  const reasonOf = (t: Task): string => {
    const v = validateHouseholdTask(t);
    return v.ok ? 'ok' : v.reason;
  };

  it('is the spec validator and accepts the generated tasks', () => {
    expect(householdSpec.validateTask).toBe(validateHouseholdTask);
    for (const t of base) expect(householdSpec.validateTask(t)).toEqual({ ok: true });
  });

  it('rejects tasks of another environment or malformed goals', () => {
    const good = base[0] as Task;
    expect(reasonOf({ ...good, env: 'shop' })).toMatch(/shop.*not household/);
    expect(reasonOf(task('put an apple somewhere'))).toMatch(/not a household goal/);
    expect(reasonOf(task({ layoutSeed, type: 'juggle', object: 'apple', receptacle: 'countertop' }))).toMatch(/type/);
    expect(reasonOf(task({ layoutSeed, type: 'pick_and_place', object: 'unicorn', receptacle: 'countertop' }))).toMatch(/unknown object type "unicorn"/);
    expect(reasonOf(task({ layoutSeed, type: 'pick_and_place', object: 'apple', receptacle: 'spaceship' }))).toMatch(/unknown receptacle type "spaceship"/);
    expect(reasonOf(task({ layoutSeed, type: 'pick_and_place', object: 'apple' }))).toMatch(/needs a receptacle/);
    expect(reasonOf(task({ layoutSeed, type: 'look_at_obj_in_light', object: 'book', receptacle: 'desk' }))).toMatch(/takes no receptacle/);
    expect(reasonOf(task({ layoutSeed: -2, type: 'look_at_obj_in_light', object: 'book' }))).toMatch(/layoutSeed/);
    expect(reasonOf(task({ layoutSeed, type: 'look_at_obj_in_light', object: 'book', colour: 'red' }))).toMatch(/colour/);
  });

  it('rejects objects that do not suit the task type', () => {
    expect(reasonOf(task({ layoutSeed, type: 'heat_and_place', object: 'book', receptacle: 'desk' }))).toMatch(/book cannot be heated/);
    expect(reasonOf(task({ layoutSeed, type: 'cool_and_place', object: 'knife', receptacle: 'countertop' }))).toMatch(/knife cannot be cooled/);
    expect(reasonOf(task({ layoutSeed, type: 'clean_and_place', object: 'book', receptacle: 'desk' }))).toMatch(/book cannot be cleaned/);
    expect(reasonOf(task({ layoutSeed, type: 'look_at_obj_in_light', object: 'apple' }))).toMatch(/apple is not something to look at/);
    expect(reasonOf(task({ layoutSeed, type: 'pick_and_place', object: 'houseplant', receptacle: 'countertop' }))).toMatch(/cannot be picked up/);
  });

  it('rejects goals whose objects or receptacles are missing from the layout', () => {
    const present = new Set<string>(layout.objects.map((o) => o.type));
    const absent = ['apple', 'book', 'mug', 'cd', 'pen', 'vase', 'egg', 'bread'].find((o) => !present.has(o));
    if (!absent) throw new Error('layout has everything');
    expect(reasonOf(task({ layoutSeed, type: 'pick_and_place', object: absent, receptacle: 'countertop' }))).toMatch(new RegExp(`has no ${absent}`));
    const counts = new Map<string, number>();
    for (const o of layout.objects) counts.set(o.type, (counts.get(o.type) ?? 0) + 1);
    const single = [...counts].find(([type, n]) => n === 1 && type !== 'houseplant' && type !== 'television')?.[0];
    if (!single) throw new Error('layout has no single object');
    expect(reasonOf(task({ layoutSeed, type: 'pick_two_and_place', object: single, receptacle: 'countertop' }))).toMatch(/only one/);
    const types = new Set<string>(layout.receptacles.map((r) => r.type));
    const missing = ['sofa', 'bed', 'armchair', 'shelf', 'desk', 'diningtable', 'stoveburner', 'garbagecan', 'dresser', 'coffeetable'].find((r) => !types.has(r));
    if (!missing) throw new Error('layout has every receptacle');
    const obj = layout.objects.find((o) => o.type !== 'houseplant' && o.type !== 'television')?.type;
    expect(reasonOf(task({ layoutSeed, type: 'pick_and_place', object: obj, receptacle: missing }))).toMatch(new RegExp(`has no ${missing}`));
  });

  it('rejects goals that already hold at reset', () => {
    const lying = layout.objects.find((o) => o.type !== 'houseplant' && o.type !== 'television');
    if (!lying) throw new Error('no object');
    const receptacle = lying.location.replace(/ \d+$/, '');
    expect(reasonOf(task({ layoutSeed, type: 'pick_and_place', object: lying.type, receptacle }))).toMatch(/already holds/);
  });

  it('rejects a layout of the other split', () => {
    const t = base[0] as Task;
    expect(reasonOf({ ...t, split: 'test' })).toMatch(/train layout but the task is in the test split/);
    const testTask = householdTasks({ split: 'test', count: 1, seed: 4 })[0] as Task;
    expect(reasonOf({ ...testTask, split: 'train' })).toMatch(/test layout/);
  });

  it('accepts a hand-made goal that fits and builds its task record', () => {
    const t = base[0] as Task;
    const made = householdTask(goalOf(t), 'household-train-made-0', 'train');
    expect(made.instruction).toBe(t.instruction);
    expect(validateHouseholdTask(made)).toEqual({ ok: true });
  });
});
