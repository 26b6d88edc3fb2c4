import { describe, expect, it } from 'vitest';
import { JsonlError, nestsDeeperThan, parseJsonl, taskLine, toJsonl, trajectoryLine, type Dataset } from '../src/core/jsonl.ts';
import type { Task, Trajectory } from '../src/core/types.ts';

const task: Task = {
  id: 'shop-train-0-0',
  env: 'shop',
  instruction: 'i need a t-shirt that is machine washable, in red, size m, price lower than 30.00 dollars',
  goal: { productType: 't-shirt', attributes: ['machine washable'], options: { color: 'red', size: 'm' }, maxPrice: 30 },
  split: 'train',
  origin: 'seed',
};
const generated: Task = { ...task, id: 'gen-1', origin: 'generated', parentId: 'shop-train-0-0', split: 'test' };
const trajectory: Trajectory = {
  id: 'shop-train-0-0:expert',
  taskId: task.id,
  env: 'shop',
  source: 'offline',
  steps: [
    { observation: { text: 'search page', actions: ['search[t-shirt]'] }, action: 'search[t-shirt]', reward: 0, done: false, valid: true },
    {
      observation: { text: 'item "quoted" \u00e9 \n newline', actions: ['click[buy now]'] },
      action: 'click[buy now]',
      reward: 0.6666666666666666,
      done: true,
      valid: true,
      reasoning: 'the item matches',
    },
  ],
  reward: 0.6666666666666666,
  success: false,
};
const data: Dataset = { tasks: [task, generated], trajectories: [trajectory] };

describe('dreamgym JSONL v1', () => {
  it('round-trips: export then import is the identity', () => {
    const text = toJsonl(data);
    expect(text.split('\n')).toHaveLength(4); // 3 records + trailing newline
    expect(parseJsonl(text)).toEqual(data);
    expect(toJsonl(parseJsonl(text))).toBe(text);
  });

  it('ignores blank lines and CRLF line endings', () => {
    const text = `\n${taskLine(task)}\r\n\r\n${trajectoryLine(trajectory)}\r\n`;
    expect(parseJsonl(text)).toEqual({ tasks: [task], trajectories: [trajectory] });
  });

  it('an empty dataset is an empty file', () => {
    expect(toJsonl({ tasks: [], trajectories: [] })).toBe('');
    expect(parseJsonl('')).toEqual({ tasks: [], trajectories: [] });
  });

  function issuesOf(text: string): JsonlError {
    try {
      parseJsonl(text);
    } catch (err) {
      expect(err).toBeInstanceOf(JsonlError);
      return err as JsonlError;
    }
    throw new Error('expected parseJsonl to throw');
  }

  it('names the line of bad JSON and imports nothing', () => {
    const err = issuesOf(`${taskLine(task)}\n{"v":1,"type":"task",\n${trajectoryLine(trajectory)}\n`);
    expect(err.issues).toHaveLength(1);
    expect(err.issues[0]).toMatchObject({ line: 2 });
    expect(err.issues[0]?.message).toMatch(/not valid JSON/);
    expect(err.message).toMatch(/line 2/);
  });

  it('names the missing field with its path', () => {
    const { instruction: _omit, ...noInstruction } = task;
    const err = issuesOf(`${taskLine(task)}\n${JSON.stringify({ v: 1, type: 'task', task: noInstruction })}\n`);
    expect(err.issues).toEqual([expect.objectContaining({ line: 2, field: 'task.instruction' })]);
  });

  it('names a wrong type deep inside a trajectory', () => {
    const bad = structuredClone(trajectory) as unknown as { steps: { reward: unknown }[] };
    (bad.steps[1] as { reward: unknown }).reward = 'one';
    const err = issuesOf(JSON.stringify({ v: 1, type: 'trajectory', trajectory: bad }));
    expect(err.issues).toEqual([expect.objectContaining({ line: 1, field: 'trajectory.steps.1.reward' })]);
  });

  it('rejects unknown record types, bad enums, non-objects and other versions', () => {
    const lines = [
      JSON.stringify({ v: 1, type: 'episode', task }),
      JSON.stringify({ v: 1, type: 'task', task: { ...task, split: 'dev' } }),
      '[1,2,3]',
      JSON.stringify({ v: 2, type: 'task', task }),
      JSON.stringify({ type: 'task', task }),
      JSON.stringify({ v: 1, type: 'trajectory', trajectory: { ...trajectory, source: 'imagined' } }),
    ];
    const err = issuesOf(lines.join('\n'));
    const byLine = new Map(err.issues.map((i) => [i.line, i]));
    expect([...byLine.keys()]).toEqual([1, 2, 3, 4, 5, 6]);
    expect(byLine.get(2)?.field).toBe('task.split');
    expect(byLine.get(3)?.message).toMatch(/JSON object/);
    expect(byLine.get(4)).toMatchObject({ field: 'v' });
    expect(byLine.get(4)?.message).toMatch(/unsupported format version 2/);
    expect(byLine.get(5)?.message).toMatch(/missing format version/);
    expect(byLine.get(6)?.field).toBe('trajectory.source');
  });

  it('rejects non-finite rewards', () => {
    const text = trajectoryLine(trajectory).replace('"reward":0.6666666666666666,"success"', '"reward":1e999,"success"');
    const err = issuesOf(text);
    expect(err.issues[0]).toMatchObject({ line: 1, field: 'trajectory.reward' });
  });

  it('bounds JSON nesting with a JsonlError naming the line, not a RangeError', () => {
    const deep = `{"v":1,"type":"task","task":${'['.repeat(5000)}${']'.repeat(5000)}}`;
    expect(() => parseJsonl(`\n${deep}\n`)).toThrow(JsonlError);
    expect(() => parseJsonl(`\n${deep}\n`)).toThrow(/line 2: nested deeper than 64 levels/);
    // Brackets inside strings do not count.
    expect(nestsDeeperThan(`{"a":"${'['.repeat(100)}"}`, 64)).toBe(false);
    expect(nestsDeeperThan(`{"a":"\\"${'['.repeat(100)}"}`, 64)).toBe(false);
  });

  it('accepts a UTF-8 byte order mark and counts every problem past the first 50', () => {
    const text = toJsonl({ tasks: [], trajectories: [] }) + '{"v":1,"type":"task","task":{"id":"a","env":"shop","instruction":"i","goal":{},"split":"train","origin":"seed"}}\n';
    expect(parseJsonl(`\ufeff${text}`).tasks).toHaveLength(1);
    const e = (() => {
      try {
        parseJsonl(Array.from({ length: 70 }, () => '[').join('\n'));
      } catch (x) {
        return x as JsonlError;
      }
      return null;
    })();
    expect(e?.total).toBe(70);
    expect(e?.issues).toHaveLength(50);
    expect(e?.message).toMatch(/70 problems, the first 50 listed/);
  });
});
