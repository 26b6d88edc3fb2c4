import { describe, expect, it } from 'vitest';
import type { Task } from '../src/core/types.ts';
import { InstructionVariantGenerator, learnSlots, tokenize } from '../src/curriculum/variants.ts';

const task = (id: string, instruction: string, goal: Task['goal'] = { secret: id }): Task => ({ id, env: 'shop', instruction, goal, split: 'train', origin: 'seed' });

const SEEDS: Task[] = [
  task('a', 'i need a red lamp, price lower than 20.00 dollars'),
  task('b', 'i need a blue chair, price lower than 35.50 dollars'),
  task('c', 'i need a green lamp, price lower than 12.00 dollars'),
  task('d', 'put a cool apple in fridge.'),
  task('e', 'put a hot mug in shelf.'),
];

describe('tokenize', () => {
  it('keeps decimal numbers whole, splits punctuation off words, and lower-cases', () => {
    expect(tokenize('Put a Mug in fridge. Price 20.00, then').map((t) => t.text)).toEqual(['put', 'a', 'mug', 'in', 'fridge', '.', 'price', '20.00', ',', 'then']);
  });
});

describe('learnSlots', () => {
  it("finds the fillers between shared words of aligned instructions, as the instructions wrote them", () => {
    const slots = learnSlots(SEEDS.map((t) => t.instruction));
    expect([...(slots.get('a\u0000lamp')?.keys() ?? [])].sort()).toEqual(['green', 'red']);
    expect([...(slots.get('a\u0000,')?.values() ?? [])].sort()).toEqual(['blue chair', 'green lamp', 'red lamp']);
    expect([...(slots.get('than\u0000dollars')?.keys() ?? [])].sort()).toEqual(['12.00', '20.00', '35.50']);
    expect([...(slots.get('in\u0000.')?.keys() ?? [])].sort()).toEqual(['fridge', 'shelf']);
    // Stretches longer than the limit are no fillers.
    expect(learnSlots(['x one two three y', 'x four y'], 2).get('x\u0000y')).toBeUndefined();
  });
});

describe('InstructionVariantGenerator', () => {
  it('writes new instructions from the seeds\' own words, with no goal, rooted in their parent', () => {
    const { tasks, candidates } = new InstructionVariantGenerator({ seed: 3 }).variants(SEEDS, 12);
    expect(tasks.length).toBeGreaterThan(4);
    expect(candidates).toBeGreaterThanOrEqual(tasks.length);
    const seedWords = new Set(SEEDS.flatMap((t) => tokenize(t.instruction).map((w) => w.text)));
    const known = new Set(SEEDS.map((t) => t.instruction));
    const ids = new Set<string>();
    for (const t of tasks) {
      expect(known.has(t.instruction)).toBe(false);
      known.add(t.instruction);
      for (const w of tokenize(t.instruction)) expect(seedWords.has(w.text)).toBe(true);
      expect(t.goal).toBeNull();
      expect(JSON.stringify(t)).not.toContain('secret');
      expect(t.origin).toBe('generated');
      expect(t.generation).toBe(1);
      const parent = SEEDS.find((s) => s.id === t.parentId) as Task;
      expect(t.rootId).toBe(parent.id);
      expect(t.env).toBe(parent.env);
      // Same shape as the parent: only slot fillers changed.
      expect(tokenize(t.instruction)[0]?.text).toBe(tokenize(parent.instruction)[0]?.text);
      ids.add(t.id);
    }
    expect(ids.size).toBe(tasks.length);
  });

  it('is reproducible from its seed, carries its stream over calls and through saveState', () => {
    const a = new InstructionVariantGenerator({ seed: 5 });
    const b = new InstructionVariantGenerator({ seed: 5 });
    const first = a.variants(SEEDS, 3).tasks.map((t) => t.instruction);
    expect(b.variants(SEEDS, 3).tasks.map((t) => t.instruction)).toEqual(first);
    const state = a.saveState();
    const next = a.variants(SEEDS, 3).tasks.map((t) => t.instruction);
    const c = new InstructionVariantGenerator({ seed: 99 });
    c.restoreState(state);
    expect(c.variants(SEEDS, 3).tasks.map((t) => t.instruction)).toEqual(next);
    expect(() => c.restoreState({})).toThrow(RangeError);
  });

  it('gives nothing from fewer than two seeds or from instructions with no shared slot, and checks its settings', async () => {
    const g = new InstructionVariantGenerator();
    expect(g.variants(SEEDS.slice(0, 1), 5).tasks).toEqual([]);
    expect(await g.generate([task('x', 'alpha beta'), task('y', 'gamma delta')], 5)).toEqual([]);
    expect(g.variants(SEEDS, 0).tasks).toEqual([]);
    expect(() => g.variants(SEEDS, -1)).toThrow(RangeError);
    expect(() => new InstructionVariantGenerator({ maxSwaps: 0 })).toThrow(RangeError);
  });
});
