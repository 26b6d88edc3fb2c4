import { describe, expect, it } from 'vitest';
import { checkModuleExports, checkObservation, checkStepResult, checkTasks, checkTaskValidation, EnvModuleError, MODULE_EXPORTS, notJson, type ExportShape } from '../src/envs/module.ts';

const fn: ExportShape = { kind: 'function' };
const val = (value: unknown): ExportShape => ({ kind: 'value', value });
const good: Record<string, ExportShape> = { name: val('library'), description: val(' a library '), maxSteps: val(10), create: fn, tasks: fn, validateTask: fn };

describe('checkModuleExports', () => {
  it('returns the plain exports of a good module', () => {
    expect(checkModuleExports('m.mjs', good, ['shop'])).toEqual({ name: 'library', description: 'a library', maxSteps: 10 });
  });

  it('names every missing or malformed export at once', () => {
    const shapes = { ...good, name: val('shop'), maxSteps: val(0), create: val(3) } as Record<string, ExportShape>;
    delete shapes.tasks;
    const e = (() => {
      try {
        checkModuleExports('m.mjs', shapes, ['shop']);
      } catch (err) {
        return err;
      }
      return null;
    })();
    expect(e).toBeInstanceOf(EnvModuleError);
    const message = (e as Error).message;
    for (const key of ['name', 'maxSteps', 'create', 'tasks']) expect(message).toContain(`export "${key}"`);
    expect(message).not.toContain('export "validateTask"');
    expect(message).toMatch(/^environment module m\.mjs: /);
  });

  it('a function where a value belongs, and the other way round', () => {
    expect(() => checkModuleExports('m', { ...good, description: fn }, [])).toThrow(/export "description" must be a non-empty string, got a function/);
    expect(() => checkModuleExports('m', { ...good, tasks: val([]) }, [])).toThrow(/export "tasks" must be a function/);
    expect(Object.keys(MODULE_EXPORTS)).toEqual(['name', 'description', 'maxSteps', 'create', 'tasks', 'validateTask']);
  });

  it('the optional freeTextActions: one-slot templates, kept in the header; anything else refused', () => {
    expect(checkModuleExports('m', { ...good, freeTextActions: val(['note[{}]', 'say {}']) }, []).freeTextActions).toEqual(['note[{}]', 'say {}']);
    expect(checkModuleExports('m', { ...good, freeTextActions: { kind: 'missing' } }, [])).not.toHaveProperty('freeTextActions');
    for (const bad of [val('note[{}]'), val(['note[]']), val(['move {} to {}']), val(['{}']), fn]) {
      expect(() => checkModuleExports('m', { ...good, freeTextActions: bad }, [])).toThrow(/export "freeTextActions" \(optional\) must be a list of action templates with one \{\} slot/);
    }
  });
});

describe('checks of what a module returns', () => {
  it('observations and step results: the core shape, info.valid defaulting to true', () => {
    expect(checkObservation('reset()', { text: 'hi', actions: ['a'] })).toEqual({ text: 'hi', actions: ['a'] });
    expect(() => checkObservation('reset()', { text: 'hi' })).toThrow(/reset\(\) returned a malformed observation.*actions/);
    expect(checkStepResult('step()', { observation: { text: 'x', actions: [] }, reward: 1, done: true, info: { success: true } })).toEqual({
      observation: { text: 'x', actions: [] },
      reward: 1,
      done: true,
      info: { valid: true, success: true },
    });
    expect(() => checkStepResult('step()', { observation: { text: 'x', actions: [] }, reward: Infinity, done: true })).toThrow(/malformed step result.*reward/);
    expect(() => checkStepResult('step()', { observation: null, reward: 0, done: false })).toThrow(/malformed observation/);
  });

  it('tasks: env, split and origin filled in; wrong env or split, duplicates, too many or none refused', () => {
    const o = { split: 'test' as const, count: 2, seed: 0 };
    expect(checkTasks('tasks()', 'library', o, [{ id: 'a', instruction: 'x', goal: 1 }])).toEqual([{ id: 'a', env: 'library', instruction: 'x', goal: 1, split: 'test', origin: 'seed' }]);
    expect(() => checkTasks('tasks()', 'library', o, [{ id: 'a', instruction: 'x', goal: 1, env: 'shop' }])).toThrow(/has env "shop", not the module's name "library"/);
    expect(() => checkTasks('tasks()', 'library', o, [{ id: 'a', instruction: 'x', goal: 1, split: 'train' }])).toThrow(/split train, asked for test/);
    expect(() => checkTasks('tasks()', 'library', o, [{ id: 'a', instruction: 'x', goal: 1 }, { id: 'a', instruction: 'y', goal: 2 }])).toThrow(/appears twice/);
    expect(() => checkTasks('tasks()', 'library', o, [1, 2, 3])).toThrow(/returned 3 tasks, more than the 2/);
    expect(() => checkTasks('tasks()', 'library', o, [])).toThrow(/returned no tasks/);
    expect(() => checkTasks('tasks()', 'library', o, 'nope')).toThrow(/must return an array/);
  });

  it('a goal that is not JSON: the first offending key, with why', () => {
    expect(notJson({ a: [1, { b: 'x' }], c: null }, 'goal')).toBeNull();
    expect(notJson({ a: [1, { b: undefined }] }, 'goal')).toMatch(/^goal\.a\[1\]\.b is undefined: a goal must be JSON/);
    expect(notJson({ 'two words': Number.NaN }, 'goal')).toBe('goal["two words"] is NaN: JSON numbers are finite');
    expect(notJson({ when: new Date(0) }, 'goal')).toMatch(/^goal\.when is a Date: a goal must be JSON/);
    const o = { split: 'train' as const, count: 1, seed: 0 };
    expect(() => checkTasks('tasks()', 'library', o, [{ id: 'a', instruction: 'x' }])).toThrow(/task #0 is malformed: goal is undefined/);
  });

  it('tasks declared with several parameters is refused: it is called with one options object', () => {
    expect(() => checkModuleExports('m', { ...good, tasks: { kind: 'function', arity: 3 } }, [])).toThrow(/export "tasks" declares 3 parameters, but it is called as tasks\(\{split, count, seed\}\) with one options object/);
    expect(checkModuleExports('m', { ...good, tasks: { kind: 'function', arity: 1 } }, []).name).toBe('library');
  });

  it('validateTask results', () => {
    expect(checkTaskValidation('v', { ok: false, reason: 'no' })).toEqual({ ok: false, reason: 'no' });
    expect(() => checkTaskValidation('v', { ok: false })).toThrow(/must return \{ok: true\} or \{ok: false, reason: string\}/);
  });
});
